"""Task evaluators for SeqMem-Eval streams: a score in {0, 1} plus feedback (docs/seqmem.md §2.1, §4).

After each online task the evaluator's verdict goes back to the system under test as
feedback. ``score`` alone decides success (docs/seqmem.md §2.1: never match a feedback string); the
feedback text is for the memory method to learn from, and ``detail`` is for the run record.

- :class:`CodeEvaluator`: HumanEval style. Code comes from the last fenced Python block that
  defines the entry point (else the last fenced block, else the text after the last
  ``ANSWER:``/``Answer:`` label, else the whole output). A completion that defines the entry
  point is appended to the prompt (which keeps the prompt's imports and auxiliary functions);
  one without it continues the prompt. That program runs with ``__name__`` not
  ``"__main__"`` (demo blocks in answers are skipped) in one sandbox and the task's tests in
  another (:mod:`clstream.judges.codecheck`), so the verdict cannot be forged by the program.
  Without bubblewrap the evaluator refuses to run code (:class:`IsolationUnavailable`) unless
  ``allow_unisolated`` is set; ``detail["isolation"]`` records what confined each program.
- :class:`MathEvaluator`: last ``\\boxed{}``, see :mod:`clstream.judges.math_eval`.
- :class:`ChoiceEvaluator`: a letter A-J, read case-insensitively from ``\\boxed{x}``, after
  an answer marker, or from "(x)"; an output with none of these gets no letter. Code and
  letter extraction live in :mod:`clstream.judges.extraction`.
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
from typing import Any, ClassVar, Protocol, runtime_checkable

from clstream.core.errors import DataError, SpecError
from clstream.core.params import Param
from clstream.judges.api_eval import MatchMode, build_pool, match_api_call
from clstream.judges.codecheck import check_solution
from clstream.judges.extraction import extract_choice, extract_code
from clstream.judges.isolation import IsolationUnavailable as IsolationUnavailable
from clstream.judges.isolation import resolve
from clstream.judges.math_eval import last_boxed, math_equal, normalize_math
from clstream.judges.sandbox import clean_text


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

def build_solution(prompt: str, completion: str, entry_point: str) -> str:
    """Prompt + completion (+ separator when the completion redefines the entry point)."""
    pattern = re.compile(rf"^\s*(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(", re.M)
    if pattern.search(completion):
        body = prompt.rstrip() + "\n\n\n" + completion
    else:
        body = prompt + completion
    return body.rstrip() + "\n"


def build_program(prompt: str, completion: str, test: str, entry_point: str) -> str:
    """The solution followed by the tests and ``check(<entry_point>)``: the single-process
    layout of HumanEval, kept for reading; the evaluator runs the two parts apart."""
    solution = build_solution(prompt, completion, entry_point)
    return f"{solution.rstrip()}\n\n\n{test.rstrip()}\n\n\ncheck({entry_point})\n"


_REVEAL = Param(False, "add the reference answer to the feedback of a failed task")
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b")


@dataclass
class CodeEvaluator:
    summary: ClassVar[str] = "runs the program and the task's tests in two sandboxes (HumanEval)"
    params: ClassVar[dict[str, Param]] = {
        "timeout_s": Param(10.0, "seconds the program may run", minimum=0.01),
        "memory_mb": Param(512, "memory limit of the program in MB", minimum=1),
        "reveal_target": _REVEAL,
        "allow_unisolated": Param(
            False, "without bubblewrap, run model-written code unisolated (unsafe) instead of "
            "refusing; recorded in every verdict"),
    }

    timeout_s: float = 10.0
    memory_mb: int = 512
    reveal_target: bool = False
    allow_unisolated: bool = False
    name: str = "code"

    def preflight(self) -> str:
        """What will confine the code (one line), or :class:`IsolationUnavailable` now rather
        than at the first task."""
        return resolve(self.allow_unisolated).label()

    def evaluate(self, task: TaskLike, output: str) -> Verdict:
        entry_point = str(_meta_field(task, "entry_point"))
        test = str(_meta_field(task, "test"))
        code = extract_code(output, entry_point)
        result = check_solution(
            build_solution(task.prompt, code, entry_point), entry_point, test, task.prompt,
            timeout_s=self.timeout_s, memory_mb=self.memory_mb,
            allow_unisolated=self.allow_unisolated,
        )
        reason = clean_text(result.reason)[:300]
        if result.passed:
            feedback = "Correct: the program passed all tests."
        elif result.status == "fail":
            error = reason if _EXCEPTION_LINE.match(reason) else ""
            feedback = "Incorrect: the tests failed" + (
                f" with {error}." if error else f" ({reason})." if reason else ".")
        elif result.status == "timeout":
            feedback = f"Incorrect: the program did not finish within {self.timeout_s:g} s."
        elif result.status == "memory":
            feedback = f"Incorrect: the program exceeded the {self.memory_mb} MB memory limit."
        elif result.status == "forbidden":
            feedback = f"Incorrect: the program attempted a forbidden operation ({reason})."
        else:
            feedback = f"Incorrect: the program could not be checked ({reason})."
        if self.reveal_target and not result.passed and task.target:
            feedback += f"\nA correct solution:\n{task.target}"
        detail = {
            "status": result.status,
            "reason": reason,
            "code": clean_text(code),
            "stderr_tail": clean_text(result.stderr[-2000:]),
            "duration_s": round(result.duration, 4),
            "calls": result.calls,
            "isolation": result.isolation,
            "unisolated": result.unisolated,
        }
        return Verdict(1.0 if result.passed else 0.0, clean_text(feedback), detail)


# ------------------------------------------------------------------------------------ math


@dataclass
class MathEvaluator:
    summary: ClassVar[str] = "last \\boxed{} answer, compared symbolically with the reference"
    params: ClassVar[dict[str, Param]] = {
        "timeout_s": Param(2.0, "seconds for one symbolic comparison", minimum=0.01),
        "reveal_target": _REVEAL,
    }

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

@dataclass
class ChoiceEvaluator:
    summary: ClassVar[str] = "multiple choice: the option letter A-J the answer settles on"
    params: ClassVar[dict[str, Param]] = {"reveal_target": _REVEAL}

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

    summary: ClassVar[str] = "API call matched by syntax tree against the stream's API pool"
    params: ClassVar[dict[str, Param]] = {
        "mode": Param("domain", "what must match: the task's domain or the exact API",
                      choices=("domain", "api")),
        "reveal_target": _REVEAL,
    }
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
    summary: ClassVar[str] = "exact match for the procedural SeqMem stream; feedback shows the rule"
    params: ClassVar[dict[str, Param]] = {}

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
