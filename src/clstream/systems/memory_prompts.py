"""The memory methods' own prompts and headers (the methods of SeqMem-Eval App. A.3 and D;
docs/seqmem.md §6): what each method shows, and the update calls that build its memory.

All wording is this project's own. The query -- the rules and the question block -- comes
from the protocol; a method adds memory sections in the layout of :mod:`clstream.core.layout`
(past experiences, tagged passages) plus the sections below: lessons, workflows, a
cheatsheet, insights, reflections.

Update prompts (curator, workflow induction, rule updates, reflection, insights) ask for a
strict line format that the methods parse; any other text leaves memory unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from clstream.core import layout
from clstream.core.types import Message

PROMPT_TEMPLATE_VERSION = "memory-methods-v1"

CHEATSHEET_HEADER = "Cheatsheet kept from earlier tasks:"
WORKFLOWS_HEADER = "Reusable workflows learned from solved tasks:"
RULES_HEADER = "Lessons learned from earlier tasks:"
INSIGHTS_HEADER = "Insights learned from earlier tasks:"
REFLECTIONS_HEADER = (
    "Your earlier attempts at this very task were judged wrong. Notes on what went wrong:"
)


def list_section(header: str, items: Iterable[str], numbered: bool = True) -> str:
    lines = [" ".join(i.split()) for i in items if i.strip()]
    if not lines:
        return ""
    body = "\n".join(f"{n}. {t}" if numbered else f"- {t}" for n, t in enumerate(lines, 1))
    return f"{header}\n{body}\n"


def text_section(header: str, text: str) -> str:
    return f"{header}\n{text.strip()}\n" if text.strip() else ""


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
    "PROMPT_TEMPLATE_VERSION", "CHEATSHEET_HEADER", "WORKFLOWS_HEADER", "RULES_HEADER",
    "INSIGHTS_HEADER", "REFLECTIONS_HEADER", "UPDATE_SYSTEM", "CURATOR_PROMPT",
    "INDUCTION_PROMPT", "RULES_BATCH_PROMPT", "RULES_PAIR_PROMPT", "REFLECTION_PROMPT",
    "INSIGHT_PROMPT",
)


def template_fingerprint() -> str:
    """sha256 of the methods' templates and the shared layout's (what a method shows and how
    it updates); a method reports it in ``describe()``."""
    return layout.fingerprint(f"{name}={globals()[name]}" for name in _TEMPLATE_NAMES)


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
