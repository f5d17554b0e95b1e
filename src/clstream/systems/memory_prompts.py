"""Prompts of the SeqMem-Eval memory methods (SeqMem-Eval App. A.3 and D; SPECS §2.3).

All wording is this project's own. One answering layout serves every method:

* a system message, the same for all methods and tasks;
* one user message: the memory sections the method chose (lessons, workflows, a cheatsheet,
  past tasks), then the current task last, opened by a line starting ``Question:``, its
  lettered options (``A. ...``) if any, and the answer-format instruction for its kind.

Past tasks are shown as *exemplars*, one block each, oldest first::

    Past task: <the task text>
    Answer given: <final answer of that attempt>
    Outcome: correct | wrong
    Feedback: <the evaluator's feedback text>

The feedback line comes last so that a reader that prefers the latest matching statement
(the builtin offline reader does) takes the evaluator's word over the answer that was given.
The ``Answer given`` line holds the text after the attempt's last ``Answer:`` marker when there
is one (the whole output otherwise, clipped), so quoted reasoning from an earlier attempt
cannot pose as evidence. Task text is whitespace-collapsed only for one-line tasks; code and
multi-line tasks keep their lines.

Update prompts (curator, workflow induction, rule updates, reflection, insights) ask for a
strict line format that the methods parse; any other text leaves memory unchanged.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from clstream.core.types import Message, Query

PROMPT_TEMPLATE_VERSION = "seqmem-v1"

SOLVER_SYSTEM = (
    "You solve a sequence of tasks, one at a time. Before the current task you may be shown "
    "what was kept from earlier tasks: past tasks with the answer given and the feedback it "
    "received, a cheatsheet, workflows or lessons. Use that material only where it fits the "
    "current task. Feedback on a past task is reliable about that task, including any correct "
    "answer it states. Then solve the current task and follow its answer format exactly."
)

KIND_INSTRUCTIONS = {
    "code": (
        "Write the complete Python function with the same name and signature (any other "
        "functions it needs go above it) in a single ```python fenced block. Do not add any "
        "other code block."
    ),
    "math": "Reason briefly, then put only the final answer in the last \\boxed{...} of your reply.",
    "mc": "Reason briefly, then end with one line '## Answer: <letter>' naming the correct option.",
    "api": (
        "Reply in this format: <<<domain>>>: <domain>, <<<api_call>>>: <one line of Python that "
        "calls the API>, <<<api_provider>>>: <framework>, <<<explanation>>>: <short "
        "explanation>, <<<code>>>: <short Python code>."
    ),
}
DEFAULT_INSTRUCTION = "End your reply with one line '## Answer: <answer>' holding only the answer."

QUESTION_LABEL = "Question:"
EXEMPLARS_HEADER = "Past tasks, oldest first, with the answer given and its feedback:"
FAILED_EXEMPLARS_HEADER = "Past tasks that went wrong, with their feedback:"
CHEATSHEET_HEADER = "Cheatsheet kept from earlier tasks:"
WORKFLOWS_HEADER = "Reusable workflows learned from solved tasks:"
RULES_HEADER = "Lessons learned from earlier tasks:"
INSIGHTS_HEADER = "Insights learned from earlier tasks:"
REFLECTIONS_HEADER = (
    "Your earlier attempts at this very task were judged wrong. Notes on what went wrong:"
)

OUTPUT_CHARS = 1500  # clip of a past answer shown in an exemplar
FEEDBACK_CHARS = 800  # clip of a past feedback text
TASK_CHARS = 4000  # clip of a past task text

_MARKER = re.compile(r"""["'*#]*\s*answer\s*["'*#]*\s*:""", re.IGNORECASE)


@dataclass(frozen=True)
class Exemplar:
    """A past task as memory keeps it."""

    question: str
    output: str
    feedback: str
    success: bool


def clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def final_answer_text(output: str) -> str:
    """What an attempt answered: the rest of the line after its last answer marker, else the
    whole output (kept whole for code, which has no marker)."""
    markers = list(_MARKER.finditer(output))
    if markers:
        rest = output[markers[-1].end():].strip()
        line = rest.splitlines()[0].strip() if rest else ""
        if line:
            return line
    return output.strip()


def _task_text(question: str) -> str:
    lines = [ln.rstrip() for ln in question.strip().splitlines()]
    if len([ln for ln in lines if ln.strip()]) <= 1:
        return " ".join(question.split())
    return clip("\n".join(lines), TASK_CHARS)


def exemplar_block(ex: Exemplar) -> str:
    answer = clip(final_answer_text(ex.output), OUTPUT_CHARS) or "(no answer)"
    outcome = "correct" if ex.success else "wrong"
    feedback = clip(" ".join(ex.feedback.split()), FEEDBACK_CHARS) or "(none)"
    return (f"Past task: {_task_text(ex.question)}\nAnswer given: {answer}\n"
            f"Outcome: {outcome}\nFeedback: {feedback}\n")


def exemplars_section(exemplars: Sequence[Exemplar], header: str = EXEMPLARS_HEADER) -> str:
    if not exemplars:
        return ""
    return header + "\n\n" + "\n".join(exemplar_block(e) for e in exemplars)


def list_section(header: str, items: Iterable[str], numbered: bool = True) -> str:
    lines = [" ".join(i.split()) for i in items if i.strip()]
    if not lines:
        return ""
    body = "\n".join(f"{n}. {t}" if numbered else f"- {t}" for n, t in enumerate(lines, 1))
    return f"{header}\n{body}\n"


def text_section(header: str, text: str) -> str:
    return f"{header}\n{text.strip()}\n" if text.strip() else ""


def question_block(query: Query) -> str:
    """The current task, last in the user message: question, options, answer format."""
    text = query.text.strip()
    parts = [f"{QUESTION_LABEL} {text}\n"]
    if query.options:
        parts.append("Options:\n")
        for i, option in enumerate(query.options):
            parts.append(f"{chr(ord('A') + i)}. {' '.join(option.split())}\n")
    parts.append(KIND_INSTRUCTIONS.get(query.kind, DEFAULT_INSTRUCTION))
    return "".join(parts)


def solver_messages(sections: Sequence[str], query: Query) -> tuple[Message, ...]:
    """System message, then the memory sections and the current task in one user message."""
    memory = "\n".join(s.rstrip() + "\n" for s in sections if s.strip())
    body = (memory + "\n" if memory else "") + question_block(query)
    return (Message(role="system", content=SOLVER_SYSTEM), Message(role="user", content=body))


# --- update prompts ----------------------------------------------------------------------

UPDATE_SYSTEM = (
    "You maintain the memory of a problem solver that works through a stream of tasks. "
    "Reply only in the exact format requested."
)

CURATOR_PROMPT = (
    "Rewrite the solver's cheatsheet so it helps with the task below and with similar tasks "
    "later. Keep what is still useful from the current cheatsheet, add general strategies, "
    "formulas, code patterns or facts shown by the similar past tasks (their feedback says "
    "what was right), and drop what proved wrong. Do not solve the task itself.\n\n"
    "Current cheatsheet:\n{cheatsheet}\n\n{examples}\nUpcoming task:\n{question}\n\n"
    "Reply with the complete new cheatsheet between the lines <cheatsheet> and </cheatsheet>."
)

INDUCTION_PROMPT = (
    "The task below was solved correctly. Describe the reusable procedure behind the solution "
    "as one or more workflows: each a short title and the general steps, with task-specific "
    "values replaced by placeholders so the workflow applies to similar tasks.\n\n"
    "{example}\nWrite each workflow on one line of the form\n"
    "WORKFLOW: <title> :: <step 1>; <step 2>; ..."
)

RULES_BATCH_PROMPT = (
    "Below are the solver's current lessons (numbered) and tasks it recently solved correctly. "
    "Compare them and revise the lessons so they capture what generalizes. There can be at most "
    "{max_rules} lessons.\n\nCurrent lessons:\n{rules}\n\nRecently solved tasks:\n\n{examples}\n"
    "Reply with operations, one per line, using only these forms:\n"
    "ADD: <new lesson>\nEDIT <number>: <revised lesson>\nREMOVE <number>\nAGREE <number>"
)

RULES_PAIR_PROMPT = (
    "The solver first failed the task below and then solved it. Compare the failed attempt "
    "with the successful one and revise the lessons (numbered) so the difference is not missed "
    "again. There can be at most {max_rules} lessons.\n\nCurrent lessons:\n{rules}\n\n"
    "Failed attempt:\n{failed}\nSuccessful attempt:\n{succeeded}\n"
    "Reply with operations, one per line, using only these forms:\n"
    "ADD: <new lesson>\nEDIT <number>: <revised lesson>\nREMOVE <number>\nAGREE <number>"
)

REFLECTION_PROMPT = (
    "The attempt below was judged wrong. In two or three sentences, say what most likely went "
    "wrong and what to do differently on the next attempt at the same task.\n\n{attempt}\n"
    "Reply with one line starting REFLECTION: followed by your notes."
)

INSIGHT_PROMPT = (
    "Two similar tasks had different outcomes: one was solved, one was not. Compare them and "
    "state general insights that would help on similar tasks.\n\nCurrent insights:\n{insights}\n"
    "\nSolved:\n{succeeded}\nNot solved:\n{failed}\n"
    "Write each new insight on its own line of the form\nINSIGHT: <insight>"
)

_TEMPLATE_NAMES = (
    "PROMPT_TEMPLATE_VERSION", "SOLVER_SYSTEM", "DEFAULT_INSTRUCTION", "EXEMPLARS_HEADER",
    "FAILED_EXEMPLARS_HEADER", "CHEATSHEET_HEADER", "WORKFLOWS_HEADER", "RULES_HEADER",
    "INSIGHTS_HEADER", "REFLECTIONS_HEADER", "UPDATE_SYSTEM", "CURATOR_PROMPT",
    "INDUCTION_PROMPT", "RULES_BATCH_PROMPT", "RULES_PAIR_PROMPT", "REFLECTION_PROMPT",
    "INSIGHT_PROMPT",
)


def template_fingerprint() -> str:
    """sha256 of every template string, recorded by runs to tell prompt versions apart."""
    texts = [f"{name}={globals()[name]}" for name in _TEMPLATE_NAMES]
    texts += [f"kind:{k}={v}" for k, v in sorted(KIND_INSTRUCTIONS.items())]
    return hashlib.sha256("\x00".join(texts).encode()).hexdigest()


def update_messages(prompt: str) -> tuple[Message, ...]:
    return (Message(role="system", content=UPDATE_SYSTEM), Message(role="user", content=prompt))


def numbered(items: Sequence[str]) -> str:
    return "\n".join(f"{n}. {t}" for n, t in enumerate(items, 1)) if items else "(none yet)"


# --- parsing update replies ----------------------------------------------------------------

_CHEATSHEET = re.compile(r"<cheatsheet>\s*(.*?)\s*</cheatsheet>", re.DOTALL | re.IGNORECASE)
_WORKFLOW = re.compile(r"^[ \t]*(?:[-*][ \t]*)?WORKFLOW[ \t]*:[ \t]*(\S.*?)[ \t]*$",
                       re.IGNORECASE | re.MULTILINE)
_REFLECTION = re.compile(r"^[ \t]*REFLECTION[ \t]*:[ \t]*(\S.*?)[ \t]*$",
                         re.IGNORECASE | re.MULTILINE)
_INSIGHT = re.compile(r"^[ \t]*(?:[-*][ \t]*)?INSIGHT[ \t]*:[ \t]*(\S.*?)[ \t]*$",
                      re.IGNORECASE | re.MULTILINE)
_RULE_OP = re.compile(
    r"^[ \t]*(?:[-*][ \t]*|\d+[.)][ \t]*)?(ADD|EDIT|REMOVE|AGREE)\b[ \t]*(?:rule[ \t]*)?#?"
    r"(\d+)?[ \t]*[:.\-]?[ \t]*(.*?)[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)


def parse_cheatsheet(text: str) -> str | None:
    """The last non-empty <cheatsheet> block, or None when the reply has none."""
    found = [m.group(1).strip() for m in _CHEATSHEET.finditer(text) if m.group(1).strip()]
    return found[-1] if found else None


def parse_workflows(text: str) -> list[str]:
    return [m.group(1) for m in _WORKFLOW.finditer(text)]


def parse_reflection(text: str) -> str | None:
    found = [m.group(1) for m in _REFLECTION.finditer(text)]
    return " ".join(found) if found else None


def parse_insights(text: str) -> list[str]:
    return [m.group(1) for m in _INSIGHT.finditer(text)]


@dataclass(frozen=True)
class RuleOp:
    op: str  # ADD | EDIT | REMOVE | AGREE
    number: int | None  # 1-based rule number (EDIT/REMOVE/AGREE)
    text: str  # lesson text (ADD/EDIT)


def parse_rule_ops(text: str) -> list[RuleOp]:
    """Well-formed operations only: ADD needs text (a number after it is ignored), EDIT a number
    and text, REMOVE and AGREE a number. Any other line is ignored."""
    ops = []
    for m in _RULE_OP.finditer(text):
        op, number, body = m.group(1).upper(), m.group(2), m.group(3).strip()
        n = int(number) if number else None
        if op == "ADD" and body:
            ops.append(RuleOp(op, None, body))
        elif op == "EDIT" and n is not None and body:
            ops.append(RuleOp(op, n, body))
        elif op in ("REMOVE", "AGREE") and n is not None:
            ops.append(RuleOp(op, n, ""))
    return ops


# --- reading the layout back (for simple reader models) --------------------------------------
#
# A reader that cannot reason can still learn from memory the way a person skimming notes
# would: find the past task that asks the same thing as the current one and reuse the answer
# its feedback states (or the answer given, when the outcome was correct). These functions
# read the solver layout above for such a reader; the builtin offline model uses them.

_STOPWORDS = frozenset(
    """a an the of to in on at for by with from and or is are was were be what which who whom
    whose how many much does do did please me my you your it its this that these those into
    there their then than as""".split()
)
_TOKEN = re.compile(r"[A-Za-z]+|\d+")
_QUOTED = re.compile(r"'([^'\s][^']*)'|\"([^\"]+)\"")
_STATED = re.compile(
    r"correct (?:answer|option|result)\s*(?:is|was|:)\s*:?\s*(.+?)\s*(?:\.(?=\s)|\.?$)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ParsedExemplar:
    question: str
    answer: str
    success: bool
    feedback: str


def parse_exemplars(text: str) -> list[ParsedExemplar]:
    """The exemplar blocks of a solver prompt, in the order shown."""
    out: list[ParsedExemplar] = []
    current: dict[str, Any] | None = None
    field_name = ""

    def close() -> None:
        if current is not None and "feedback" in current:
            out.append(ParsedExemplar(current["question"].strip(), current.get("answer", ""),
                                      current.get("outcome") == "correct", current["feedback"]))

    for line in text.splitlines():
        if line.startswith("Past task:"):
            close()
            current, field_name = {"question": line[len("Past task:"):].strip()}, "question"
        elif current is None:
            continue
        elif line.startswith("Answer given:"):
            current["answer"], field_name = line[len("Answer given:"):].strip(), "answer"
        elif line.startswith("Outcome:"):
            current["outcome"], field_name = line[len("Outcome:"):].strip().lower(), "outcome"
        elif line.startswith("Feedback:"):
            current["feedback"] = line[len("Feedback:"):].strip()
            close()
            current, field_name = None, ""
        elif field_name in ("question", "answer"):
            current[field_name] += "\n" + line
    return out


def current_question(text: str) -> str:
    """The first line of the current task (after the last ``Question:`` label), or ''."""
    at = text.rfind("\n" + QUESTION_LABEL)
    start = at + 1 if at >= 0 else (0 if text.startswith(QUESTION_LABEL) else -1)
    if start < 0:
        return ""
    rest = text[start + len(QUESTION_LABEL):].strip()
    return rest.splitlines()[0].strip() if rest else ""


def _keys_and_words(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(key terms: numbers, quoted words, capitalised words after the first; content words)."""
    tokens = _TOKEN.findall(text)
    keys = {t.lower() for t in tokens if t.isdigit()}
    keys |= {(a or b).lower() for a, b in _QUOTED.findall(text)}
    keys |= {t.lower() for t in tokens[1:] if t[0].isupper() and t.lower() not in _STOPWORDS}
    words = {t.lower() for t in tokens if t.lower() not in _STOPWORDS}
    return frozenset(keys), frozenset(words)


def stated_answer(feedback: str) -> str | None:
    """The answer a feedback text states as correct ("Correct answer: X."), if any."""
    found = _STATED.findall(feedback)
    return found[-1].strip().strip("'\"") if found else None


def recall_answer(prompt: str) -> str | None:
    """The answer a matching exemplar gives for the current question, else None.

    A past task matches when it names the same key terms (numbers, quoted words, names) and
    shares at least half of its content words with the question (Jaccard >= 0.5). Matches are
    tried best first (then latest first); the first that states a correct answer in its
    feedback, or whose outcome was correct, gives the answer.
    """
    if "Past task:" not in prompt:  # no records: skip parsing (long OAKS contexts)
        return None
    question = current_question(prompt)
    if not question:
        return None
    q_keys, q_words = _keys_and_words(question)
    if not q_words:
        return None
    ranked: list[tuple[float, int, ParsedExemplar]] = []
    for n, ex in enumerate(parse_exemplars(prompt)):
        keys, words = _keys_and_words(ex.question)
        overlap = len(words & q_words) / len(words | q_words) if words else 0.0
        if keys == q_keys and overlap >= 0.5:
            ranked.append((overlap, n, ex))
    for _, _, ex in sorted(ranked, key=lambda r: (-r[0], -r[1])):
        answer = stated_answer(ex.feedback)
        if answer:
            return answer
        if ex.success and ex.answer and ex.answer != "(no answer)":
            return ex.answer
    return None
