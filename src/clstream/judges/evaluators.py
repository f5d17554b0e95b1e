"""Task evaluators for SeqMem-Eval streams: a score in {0, 1} plus feedback (SPECS §2.1, §2.3).

After each online task the evaluator's verdict goes back to the system under test as
feedback. ``score`` alone decides success (SPECS §2.3: never match a feedback string); the
feedback text is for the memory method to learn from, and ``detail`` is for the run record.

- :class:`CodeEvaluator`: HumanEval style. Code comes from the last fenced Python block that
  defines the entry point (else the last block, else the whole output). A completion that
  defines the entry point is appended to the prompt (which keeps the prompt's imports and
  auxiliary functions); one without it continues the prompt. The task's tests and
  ``check(<entry_point>)`` follow, and the program runs in :mod:`clstream.judges.sandbox`
  with ``__name__`` not ``"__main__"`` (demo blocks in answers are skipped).
- :class:`MathEvaluator`: last ``\\boxed{}``, see :mod:`clstream.judges.math_eval`.
- :class:`ChoiceEvaluator`: a letter A-J: the last ``\\boxed{X}``, else the first standalone
  letter after the last answer marker, else the last standalone letter of the output.
- :class:`ApiCallEvaluator`: AST match against an API pool, see :mod:`clstream.judges.api_eval`.
- :class:`SyntheticEvaluator`: exact match for the procedural stream of
  :mod:`clstream.protocols.seqmem.synthetic`; its feedback reveals the hidden rule instance.

``reveal_target=True`` adds the reference answer to the feedback of the dataset evaluators
(off by default: the paper's methods learn from success and failure, not from gold answers).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from clstream.core.errors import DataError, SpecError
from clstream.judges.api_eval import MatchMode, build_pool, match_api_call
from clstream.judges.math_eval import last_boxed, math_equal, normalize_math
from clstream.judges.sandbox import run_python


class TaskLike(Protocol):
    """What an evaluator reads from a task (``clstream.protocols.seqmem.tasks.SeqTask``)."""

    @property
    def id(self) -> str: ...

    @property
    def prompt(self) -> str: ...

    @property
    def target(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def meta(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class Verdict:
    """``score`` is 0.0 or 1.0; ``success`` derives from it alone."""

    score: float
    feedback: str
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def success(self) -> bool:
        return self.score >= 1.0


@runtime_checkable
class Evaluator(Protocol):
    name: str

    def evaluate(self, task: TaskLike, output: str) -> Verdict: ...


def _meta_field(task: TaskLike, name: str) -> Any:
    if name not in task.meta:
        raise DataError(
            task.meta.get("source", "<task>"),
            task.id,
            name,
            f"the {task.kind} evaluator needs this task field",
        )
    return task.meta[name]


# ------------------------------------------------------------------------------------ code

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


def extract_code(output: str, entry_point: str | None = None) -> str:
    """The code in a model output (rule in the module docstring)."""
    blocks = _FENCE.findall(output)
    if not blocks:
        return output
    python = [body for lang, body in blocks if lang.lower() in ("python", "py", "python3", "")]
    candidates = python or [body for _, body in blocks]
    if entry_point:
        pattern = re.compile(rf"^\s*(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(", re.M)
        defining = [body for body in candidates if pattern.search(body)]
        if defining:
            return defining[-1]
    return candidates[-1]


def build_program(prompt: str, completion: str, test: str, entry_point: str) -> str:
    """Prompt + completion (+ separator when the completion redefines the entry point) + tests."""
    pattern = re.compile(rf"^\s*(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(", re.M)
    if pattern.search(completion):
        body = prompt.rstrip() + "\n\n\n" + completion
    else:
        body = prompt + completion
    return f"{body.rstrip()}\n\n\n{test.rstrip()}\n\n\ncheck({entry_point})\n"


def _error_line(stderr: str) -> str:
    lines = [
        ln.strip()
        for ln in stderr.splitlines()
        if ln.strip() and not ln.startswith("clstream-sandbox:")
    ]
    for line in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", line):
            return line[:300]
    return lines[-1][:300] if lines else ""


@dataclass
class CodeEvaluator:
    timeout_s: float = 10.0
    memory_mb: int = 512
    reveal_target: bool = False
    name: str = "code"

    def evaluate(self, task: TaskLike, output: str) -> Verdict:
        entry_point = str(_meta_field(task, "entry_point"))
        test = str(_meta_field(task, "test"))
        code = extract_code(output, entry_point)
        program = build_program(task.prompt, code, test, entry_point)
        result = run_python(
            program, timeout_s=self.timeout_s, memory_mb=self.memory_mb, run_as_main=False
        )
        if result.passed:
            feedback = "Correct: the program passed all tests."
        elif result.status == "fail":
            error = _error_line(result.stderr)
            feedback = "Incorrect: the tests failed" + (f" with {error}." if error else ".")
        elif result.status == "timeout":
            feedback = f"Incorrect: the program did not finish within {self.timeout_s:g} s."
        elif result.status == "memory":
            feedback = f"Incorrect: the program exceeded the {self.memory_mb} MB memory limit."
        elif result.status == "forbidden":
            feedback = f"Incorrect: the program attempted a forbidden operation ({result.reason})."
        else:
            feedback = f"Incorrect: the program crashed ({result.reason})."
        if self.reveal_target and not result.passed and task.target:
            feedback += f"\nA correct solution:\n{task.target}"
        detail = {
            "status": result.status,
            "reason": result.reason,
            "code": code,
            "stderr_tail": result.stderr[-2000:],
            "duration_s": round(result.duration, 4),
        }
        return Verdict(1.0 if result.passed else 0.0, feedback, detail)


# ------------------------------------------------------------------------------------ math


@dataclass
class MathEvaluator:
    timeout_s: float = 2.0
    reveal_target: bool = False
    name: str = "math"

    def evaluate(self, task: TaskLike, output: str) -> Verdict:
        gold = last_boxed(task.target) if "\\boxed" in task.target else task.target
        pred = last_boxed(output)
        detail: dict[str, Any] = {"extracted": pred, "normalized": None}
        if pred is None:
            feedback = "Incorrect: no final answer in \\boxed{...} was found."
            score = 0.0
        else:
            detail["normalized"] = normalize_math(pred)
            score = 1.0 if gold is not None and math_equal(pred, gold, self.timeout_s) else 0.0
            feedback = "Correct." if score else f"Incorrect: the answer {pred} is wrong."
        if self.reveal_target and not score:
            feedback += f" The correct answer is {gold}."
        return Verdict(score, feedback, detail)


# ------------------------------------------------------------------------------------ choice

_LETTERS = "ABCDEFGHIJ"
_MARKER = re.compile(r"""["'*#]*\s*answer\s*(?:is)?\s*["'*#]*\s*[:：]""", re.IGNORECASE)
_ANSWER_IS = re.compile(r"answer\s+is\s*", re.IGNORECASE)


def extract_choice(output: str, n_options: int = 10) -> str:
    """The chosen letter (rule in the module docstring), '' when there is none."""
    valid = _LETTERS[: max(1, min(n_options, len(_LETTERS)))]
    letter = re.compile(rf"(?<![A-Za-z0-9])([{valid}])(?![A-Za-z0-9])")
    boxed = last_boxed(output)
    if boxed is not None:
        inner = re.sub(r"\\text\{([^{}]*)\}", r"\1", boxed).strip().strip("()").strip()
        if len(inner) == 1 and inner in valid:
            return inner
    markers = list(_MARKER.finditer(output)) + list(_ANSWER_IS.finditer(output))
    if markers:
        tail = output[max(m.end() for m in markers) :]
        first = letter.search(tail.split("\n\n")[0])
        if first:
            return first.group(1)
    found = letter.findall(output)
    return found[-1] if found else ""


@dataclass
class ChoiceEvaluator:
    reveal_target: bool = False
    name: str = "mc"

    def evaluate(self, task: TaskLike, output: str) -> Verdict:
        options = task.meta.get("options") or ()
        chosen = extract_choice(output, len(options) if options else 10)
        score = 1.0 if chosen and chosen == task.target.strip().upper() else 0.0
        if score:
            feedback = "Correct."
        elif chosen:
            feedback = f"Incorrect: option {chosen} is wrong."
        else:
            feedback = "Incorrect: no option letter was found in the answer."
        if self.reveal_target and not score:
            feedback += f" The correct option is {task.target}."
        return Verdict(score, feedback, {"extracted": chosen})


# ------------------------------------------------------------------------------------ api


class ApiCallEvaluator:
    """APIBench-HF judging against ``pool`` (records with ``api_call``, ``domain``, ...)."""

    name = "api"

    def __init__(
        self,
        pool: Sequence[Mapping[str, Any]],
        mode: MatchMode = "domain",
        reveal_target: bool = False,
    ):
        if mode not in ("domain", "api"):
            raise SpecError(f"api evaluator: mode must be 'domain' or 'api', got {mode!r}")
        self.pool = build_pool(pool)
        self.mode: MatchMode = mode
        self.reveal_target = reveal_target

    def evaluate(self, task: TaskLike, output: str) -> Verdict:
        api_data = task.meta.get("api_data") or {}
        match = match_api_call(output, self.pool, api_data, task.target, self.mode)
        messages = {
            "correct": "Correct.",
            "wrong_domain": "Incorrect: the call matches an API for a different task domain.",
            "wrong_api": "Incorrect: the call is a real API but not the one this task needs.",
            "no_pool_match": "Incorrect: the call matches no known API (hallucinated).",
            "no_call": "Incorrect: no API call could be parsed from the answer.",
        }
        feedback = messages[match.reason]
        if self.reveal_target and not match.correct:
            feedback += f" A correct call is {task.target}."
        detail = {
            "reason": match.reason,
            "hallucinated": match.hallucinated,
            "predicted": match.predicted,
            "matched_index": match.matched.index if match.matched else None,
            "matched_api": match.matched.api_name if match.matched else None,
        }
        return Verdict(1.0 if match.correct else 0.0, feedback, detail)


# ------------------------------------------------------------------------------------ synthetic

_ANSWER_MARKER = re.compile(r"""["'*#]*\s*answer\s*["'*#]*\s*:""", re.IGNORECASE)


def final_answer(output: str) -> str:
    """Text after the last answer marker (to the end of its line), else the last line."""
    markers = list(_ANSWER_MARKER.finditer(output))
    if markers:
        rest = output[markers[-1].end() :].strip()
        return rest.splitlines()[0] if rest else ""
    lines = [ln for ln in output.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def normalize_exact(text: str) -> str:
    """Casefold, keep letters, digits and inner spaces: the exact-match form."""
    return " ".join(re.sub(r"[^\w\s-]", " ", text.casefold()).replace("_", " ").split())


@dataclass
class SyntheticEvaluator:
    name: str = "synthetic"

    def evaluate(self, task: TaskLike, output: str) -> Verdict:
        answer = final_answer(output)
        score = 1.0 if normalize_exact(answer) == normalize_exact(task.target) else 0.0
        reveal = str(task.meta.get("reveal", f"The correct answer is {task.target}."))
        feedback = ("Correct. " if score else "Incorrect. ") + reveal
        return Verdict(score, feedback, {"extracted": answer})


def evaluator_for(
    kind: str, *, api_pool: Sequence[Mapping[str, Any]] | None = None, **options: Any
) -> Evaluator:
    """The evaluator for a task kind: code, math, mc, api (needs ``api_pool``), synthetic."""
    table: dict[str, Any] = {
        "code": CodeEvaluator,
        "math": MathEvaluator,
        "mc": ChoiceEvaluator,
        "synthetic": SyntheticEvaluator,
    }
    try:
        if kind == "api":
            if api_pool is None:
                raise SpecError("api evaluator: an API pool is required")
            return ApiCallEvaluator(api_pool, **options)
        if kind not in table:
            raise SpecError(f"unknown task kind {kind!r} (known: api, code, math, mc, synthetic)")
        evaluator: Evaluator = table[kind](**options)
        return evaluator
    except TypeError as exc:
        raise SpecError(f"{kind} evaluator: {exc}") from None
