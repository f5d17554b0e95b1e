"""Prompts, headers and reply formats of the conversation-style memory methods (docs/clbench.md
§6): ``icl``, ``notepad``, ``mem0`` and ``ace``.

All wording is this project's own. The query -- the protocol's rules and its question or step
block -- comes from the protocol; a method adds what its memory shows (a transcript of earlier
turns, a notepad, retrieved memories, a playbook) in the layout of :mod:`clstream.core.layout`.

Every update call asks for a strict line format, parsed here. A reply with no well-formed line
changes nothing; the parsers never guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from clstream.core import layout
from clstream.core.types import Message

PROMPT_TEMPLATE_VERSION = "conversation-methods-v1"

# --- transcript turns (every method that keeps a conversation) ----------------------------

RESULT_TEMPLATE = "Result of your last action:\n{text}"
INSTANCE_DONE = "This instance is now complete."
FEEDBACK_HEADER = "The evaluator's verdict on your answer above:"
VERDICT_CHARS = 300  # clip of the task line and answer restated in a verdict
NO_REPLY = "(no reply)"
NO_REQUEST = "(request not kept)"

# --- notepad -------------------------------------------------------------------------------

NOTEPAD_RULES = (
    "You also keep a notepad that stays with you from one instance of the work to the next, "
    "while the conversation itself is cleared whenever an instance ends. Use it for whatever "
    "you want to carry forward: facts about the environment, what worked, what failed, plans. "
    "When the notepad is not empty it is shown before the current request. To change it, put "
    "a block in your reply that opens with a line <notepad> and closes with a line </notepad>: "
    "the text between the two lines becomes the whole new notepad, replacing the old one, so "
    "repeat anything you still need. Leave the block out to keep the notepad as it is. The "
    "block is taken out of your reply before the reply is read, so never put your answer or "
    "action inside it."
)
NOTEPAD_HEADER = "Your notepad, as you last wrote it:"
CARRY_HEADER = "Feedback received at the end of the previous instance:"

# --- mem0-style fact memory ------------------------------------------------------------------

MEMORY_SYSTEM = (
    "You keep the long-term memory of an agent that works through a stream of tasks, texts "
    "and environment steps. Reply only in the exact format asked for."
)
MEMORIES_HEADER = "Memories kept from earlier steps, most relevant first:"

EXTRACT_PROMPT = (
    "Below is one step of the agent's work, or a text it read. List the facts worth keeping "
    "for later steps and later tasks: how the environment or the task behaves, what worked "
    "and what failed and why, values and names that may come up again. Make each fact short "
    "and self-contained, so that it is clear without this step (name things instead of "
    "writing 'it' or 'this'). Leave out what only concerns the wording of this one step.\n\n"
    "{step}\n\n"
    "Reply with one line per fact, in the form\nFACT: <fact>\n"
    "or with the single line NONE when nothing is worth keeping."
)

MEMORY_UPDATE_PROMPT = (
    "A new fact was found. Compare it with the stored memories most similar to it, numbered "
    "below, and choose one operation:\n"
    "ADD -- the fact is new: store it as a memory of its own.\n"
    "UPDATE <number>: <text> -- the fact refines or corrects memory <number>: replace that "
    "memory with <text>, written to hold what is still true of both.\n"
    "DELETE <number> -- the fact shows that memory <number> no longer holds: remove it.\n"
    "NONE -- the memories already say this: change nothing.\n\n"
    "Stored memories:\n{memories}\n\nNew fact: {fact}\n\n"
    "Reply with exactly one line holding the operation."
)

# --- ace-style playbook ----------------------------------------------------------------------

PLAYBOOK_HEADER = (
    "Playbook learned from earlier instances, most helpful bullets first (each with its id and "
    "how often it helped or misled):"
)
PLAYBOOK_RULES = (
    "A playbook of bullets learned from earlier instances may be shown before the current "
    "request. When a bullet guides what you do, cite its id in square brackets (for example "
    "[b3]) in your reasoning, so its usefulness can be tracked."
)

REFLECT_PROMPT = (
    "The agent has just finished one instance of its work. Below are the playbook bullets it "
    "cited and the record of the instance: what it was shown, what it replied and what came "
    "back.\n\nBullets the agent cited:\n{bullets}\n\nRecord of the instance:\n{trace}\n\n"
    "{outcome}Judge each cited bullet: did it help here, did it mislead, or did it not "
    "matter? Then state what this instance teaches that would help in later instances: "
    "general strategies, how the environment behaves, mistakes to avoid -- not the details "
    "of this one instance.\n\n"
    "Reply only with lines of these forms:\nTAG <bullet id>: helpful | harmful | neutral\n"
    "LESSON: <one lesson>"
)
OUTCOME_TEMPLATE = "The evaluator judged the final answer {outcome}.\n\n"

CURATE_PROMPT = (
    "You curate the playbook of an agent: short, reusable bullets that help it in later "
    "instances of its work. Below are the current playbook and the lessons drawn from the "
    "instance just finished. Add a bullet only for a lesson the playbook does not already "
    "cover; make each bullet one self-contained, actionable statement. Existing bullets stay "
    "as they are.\n\nCurrent playbook:\n{playbook}\n\nLessons from the last instance:\n"
    "{lessons}\n\nReply with one line per new bullet, in the form\nADD: <bullet text>\n"
    "or with the single line NONE when nothing needs adding."
)

_TEMPLATE_NAMES = (
    "PROMPT_TEMPLATE_VERSION", "RESULT_TEMPLATE", "INSTANCE_DONE", "FEEDBACK_HEADER",
    "VERDICT_CHARS", "NO_REPLY", "NO_REQUEST", "NOTEPAD_RULES", "NOTEPAD_HEADER", "CARRY_HEADER", "MEMORY_SYSTEM",
    "MEMORIES_HEADER", "EXTRACT_PROMPT", "MEMORY_UPDATE_PROMPT", "PLAYBOOK_HEADER",
    "PLAYBOOK_RULES", "REFLECT_PROMPT", "OUTCOME_TEMPLATE", "CURATE_PROMPT",
)


def template_fingerprint() -> str:
    """sha256 of these templates and the shared layout's; methods report it in ``describe()``."""
    return layout.fingerprint(f"{name}={globals()[name]}" for name in _TEMPLATE_NAMES)


def update_messages(prompt: str) -> tuple[Message, ...]:
    return (Message(role="system", content=MEMORY_SYSTEM), Message(role="user", content=prompt))


def section(header: str, lines: Iterable[str]) -> str:
    """A header and its lines, or '' when there are none."""
    body = [line for line in lines if line.strip()]
    return f"{header}\n" + "\n".join(body) + "\n" if body else ""


def text_section(header: str, text: str) -> str:
    return f"{header}\n{text.strip()}\n" if text.strip() else ""


# --- the notepad field -----------------------------------------------------------------------

_NOTEPAD = re.compile(  # a block alone in a code fence goes with its fence
    r"```[\w+-]*[ \t]*\n\s*<notepad>(.*?)</notepad>\s*?\n[ \t]*```|<notepad>(.*?)</notepad>",
    re.IGNORECASE | re.DOTALL,
)


def split_notepad(reply: str) -> tuple[str, str | None]:
    """(the reply without its notepad blocks, the new notepad or None).

    A block is the text between ``<notepad>`` and ``</notepad>`` (any case, on their own
    lines or not); the last complete block is the new notepad (an empty block empties it).
    Complete blocks are cut out of the reply (with their code fence when a block fills one); an
    opening tag that is never closed is left in place and updates nothing.
    """
    blocks = list(_NOTEPAD.finditer(reply))
    if not blocks:
        return reply, None
    rest = re.sub(r"\n{3,}", "\n\n", _NOTEPAD.sub("", reply)).strip()
    last = blocks[-1]
    return rest, (last.group(1) if last.group(1) is not None else last.group(2)).strip()


# --- mem0 replies ----------------------------------------------------------------------------

_FACT = re.compile(r"^[ \t]*(?:[-*][ \t]*|\d+[.)][ \t]*)?FACT[ \t]*:[ \t]*(\S.*?)[ \t]*$",
                   re.IGNORECASE | re.MULTILINE)
_MEMORY_OP = re.compile(
    r"^[ \t]*(?:[-*][ \t]*)?(ADD|UPDATE|DELETE|NONE)(?![A-Za-z])[ \t]*#?(\d+)?[ \t]*"
    r"(?:[:\-][ \t]*)?(.*?)[ \t]*$",
    re.MULTILINE,
)


def parse_facts(text: str, limit: int) -> list[str]:
    """The distinct ``FACT:`` lines, in order, at most ``limit``."""
    out: list[str] = []
    for m in _FACT.finditer(text):
        fact = " ".join(m.group(1).split())
        if fact and fact not in out:
            out.append(fact)
    return out[:limit]


@dataclass(frozen=True)
class MemoryOp:
    op: str  # ADD | UPDATE | DELETE | NONE
    number: int | None  # 1-based, as the prompt listed the memories (UPDATE, DELETE)
    text: str  # ADD: optional replacement of the fact; UPDATE: the new memory text


def parse_memory_op(text: str, shown: int) -> MemoryOp | None:
    """The one operation of an update reply, or None.

    Keywords are upper case. Well-formed: ``ADD`` (optionally ``ADD: <text>``), ``UPDATE <n>:
    <text>``, ``DELETE <n>`` and ``NONE`` (either may add a reason), with 1 <= n <= ``shown``.
    Other lines are ignored; no well-formed line, or several that differ, is no operation.
    """
    found: list[MemoryOp] = []
    for m in _MEMORY_OP.finditer(text):
        op, number, body = m.group(1), m.group(2), " ".join(m.group(3).split())
        if not re.search(r"\w", body):  # punctuation alone ("NONE.") is no text
            body = ""
        n = int(number) if number else None
        if op == "ADD" and n is None:
            found.append(MemoryOp(op, None, body))
        elif op == "UPDATE" and n is not None and 1 <= n <= shown and body:
            found.append(MemoryOp(op, n, body))
        elif op == "DELETE" and n is not None and 1 <= n <= shown:
            found.append(MemoryOp(op, n, ""))  # a stated reason is ignored
        elif op == "NONE" and n is None:
            found.append(MemoryOp(op, None, ""))
    distinct = set(found)
    return found[0] if len(distinct) == 1 else None


# --- ace replies -----------------------------------------------------------------------------

BULLET_ID = re.compile(r"\[(b\d+)\]")
_TAG = re.compile(
    r"^[ \t]*(?:[-*][ \t]*)?TAG[ \t]+\[?(b\d+)\]?[ \t]*[:=\-]?[ \t]*(helpful|harmful|neutral)"
    r"[ \t.]*$",
    re.IGNORECASE | re.MULTILINE,
)
_LESSON = re.compile(r"^[ \t]*(?:[-*][ \t]*|\d+[.)][ \t]*)?LESSON[ \t]*:[ \t]*(\S.*?)[ \t]*$",
                     re.IGNORECASE | re.MULTILINE)
_ADD = re.compile(r"^[ \t]*(?:[-*][ \t]*|\d+[.)][ \t]*)?ADD[ \t]*:[ \t]*(\S.*?)[ \t]*$",
                  re.MULTILINE)


def parse_tags(text: str, allowed: Iterable[str]) -> dict[str, str]:
    """Bullet id -> helpful | harmful | neutral, for ids in ``allowed``; a bullet tagged twice
    keeps its first tag."""
    ok = set(allowed)
    tags: dict[str, str] = {}
    for m in _TAG.finditer(text):
        bullet, label = m.group(1).lower(), m.group(2).lower()
        if bullet in ok and bullet not in tags:
            tags[bullet] = label
    return tags


def parse_lessons(text: str) -> list[str]:
    out: list[str] = []
    for m in _LESSON.finditer(text):
        lesson = " ".join(m.group(1).split())
        if lesson not in out:
            out.append(lesson)
    return out


def parse_additions(text: str, limit: int) -> list[str]:
    """The ``ADD:`` lines of a curator reply (upper-case keyword), in order, at most ``limit``."""
    return [" ".join(m.group(1).split()) for m in _ADD.finditer(text)][:limit]
