"""Prompts, headers and reply formats of the conversation-style memory methods (docs/clbench.md
§6): ``icl``, ``notepad``, ``mem0`` and ``ace``.

All wording is this project's own. The query -- the protocol's rules and its question or step
block -- comes from the protocol; a method adds what its memory shows (a transcript of earlier
turns, a notepad, retrieved memories, a playbook) in the layout of :mod:`clstream.core.layout`.

Every update call asks for a strict line format, parsed here. A reply with no well-formed line
changes nothing; the parsers never guess. The builtin model's replies to these prompts are
beside them (:mod:`clstream.systems.conversation.builtin_replies`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from clstream.core import layout
from clstream.core.types import Message

PROMPT_TEMPLATE_VERSION = "conversation-methods-v2"

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

STEP_REQUEST_LABEL = "Request:"
STEP_REPLY_LABEL = "Reply:"

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
    "New facts were found. Below are the stored memories most similar to them, numbered, and "
    "the new facts, numbered too. For each new fact choose one operation:\n"
    "ADD -- the fact is new: store it as a memory of its own.\n"
    "UPDATE <memory number>: <text> -- the fact refines or corrects that memory: replace the "
    "memory with <text>, written to hold what is still true of both.\n"
    "DELETE <memory number> -- the fact shows that memory no longer holds: remove it.\n"
    "NONE -- the memories already say this: change nothing.\n\n"
    "Stored memories:\n{memories}\n\nNew facts:\n{facts}\n\n"
    "Reply with one line per new fact, in the form\nFACT <fact number>: <operation>\n"
    "for example FACT 2: UPDATE 1: <text>."
)
NO_MEMORIES = "(none stored yet)"

# --- ace-style playbook ----------------------------------------------------------------------

PLAYBOOK_SECTIONS = (
    ("strategies", "Strategies and insights"),
    ("formulas", "Formulas and calculations"),
    ("code", "Code snippets and templates"),
    ("mistakes", "Mistakes to avoid"),
    ("heuristics", "Problem-solving heuristics"),
    ("clues", "Clues and indicators to look for"),
    ("other", "Other"),
)
"""(key, heading) of the playbook's sections, in the order shown; the curator names the key."""
SECTION_TEMPLATE = "## {heading} ({key})"
PLAYBOOK_HEADER = (
    "Playbook learned from earlier instances, by section (each bullet with its id and how "
    "often it helped or misled):"
)
BULLETS_USED_LABEL = "Bullets used:"
PLAYBOOK_RULES = (
    "A playbook of bullets learned from earlier instances may be shown before the current "
    "request. End your reply with one line naming the ids of the bullets that guided it, "
    "such as 'Bullets used: b1, b4' (or 'Bullets used: none'); that line is taken out before "
    "your reply is read, and it lets the usefulness of each bullet be tracked."
)

REFLECT_PROMPT = (
    "The agent has just finished one instance of its work. Below are the playbook bullets it "
    "said it used and the record of the instance: what it was shown, what it replied and what "
    "came back.\n\nBullets the agent used:\n{bullets}\n\nRecord of the instance:\n{trace}\n\n"
    "{outcome}Judge each bullet used: did it help here, did it mislead, or did it not "
    "matter? Then state what this instance teaches that would help in later instances: "
    "general strategies, how the environment behaves, mistakes to avoid -- not the details "
    "of this one instance.\n\n"
    "Reply only with lines of these forms:\nTAG <bullet id>: helpful | harmful | neutral\n"
    "LESSON: <one lesson>"
)
TRACE_SHOWN_LABEL = "[Shown to the agent]"
TRACE_REPLY_LABEL = "[The agent replied]"
OUTCOME_TEMPLATE = "The evaluator judged the final answer {outcome}.\n\n"

CURATE_PROMPT = (
    "You curate the playbook of an agent: short, reusable bullets that help it in later "
    "instances of its work, kept in sections. Below are the current playbook, the request "
    "that opened the instance just finished, and the lessons drawn from it. Add a bullet only "
    "for a lesson the playbook does not already cover; make each bullet one self-contained, "
    "actionable statement, and place it in the section it fits. Existing bullets stay as "
    "they are. The playbook may hold at most {budget} tokens and holds {used} now; bullets "
    "that would take it past that are not added.\n\nSections: {sections}\n\n"
    "Current playbook:\n{playbook}\n\nRequest that opened the instance:\n{context}\n\n"
    "Lessons from the last instance:\n{lessons}\n\n"
    "Reply with one line per new bullet, in the form\nADD <section>: <bullet text>\n"
    "or with the single line NONE when nothing needs adding."
)
CONTEXT_CHARS = 4000  # clip of the request shown to the curator

_TEMPLATE_NAMES = (
    "PROMPT_TEMPLATE_VERSION", "RESULT_TEMPLATE", "INSTANCE_DONE", "FEEDBACK_HEADER",
    "VERDICT_CHARS", "NO_REPLY", "NO_REQUEST", "NOTEPAD_RULES", "NOTEPAD_HEADER",
    "CARRY_HEADER", "MEMORY_SYSTEM", "MEMORIES_HEADER", "STEP_REQUEST_LABEL",
    "STEP_REPLY_LABEL", "EXTRACT_PROMPT", "MEMORY_UPDATE_PROMPT", "NO_MEMORIES",
    "PLAYBOOK_SECTIONS", "SECTION_TEMPLATE", "PLAYBOOK_HEADER", "BULLETS_USED_LABEL",
    "PLAYBOOK_RULES", "REFLECT_PROMPT", "TRACE_SHOWN_LABEL", "TRACE_REPLY_LABEL", "OUTCOME_TEMPLATE", "CURATE_PROMPT", "CONTEXT_CHARS",
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


_FACT_OP = re.compile(r"^[ \t]*(?:[-*][ \t]*)?FACT[ \t]+#?(\d+)[ \t]*:[ \t]*(.*?)[ \t]*$",
                      re.MULTILINE)


def parse_memory_ops(text: str, facts: int, shown: int) -> dict[int, MemoryOp]:
    """Fact number (1-based) -> its operation, from a batched decision reply.

    A line ``FACT <i>: <operation>`` gives fact i its operation (the grammar of
    :func:`parse_memory_op`, with memory numbers 1..``shown``); a fact with no well-formed
    line, or with lines that differ, gets none. Malformed lines and numbers out of range are
    ignored.
    """
    found: dict[int, set[MemoryOp]] = {}
    for m in _FACT_OP.finditer(text):
        n = int(m.group(1))
        op = parse_memory_op(m.group(2), shown) if 1 <= n <= facts else None
        if op is not None:
            found.setdefault(n, set()).add(op)
    return {n: next(iter(ops)) for n, ops in sorted(found.items()) if len(ops) == 1}


# --- ace replies -----------------------------------------------------------------------------

_BULLETS_USED = re.compile(r"^[ \t]*(?:[-*][ \t]*)?Bullets used[ \t]*:[ \t]*(.*?)[ \t]*$",
                           re.IGNORECASE | re.MULTILINE)
_BULLET = re.compile(r"\bb\d+\b")


def split_bullets_used(reply: str) -> tuple[str, list[str]]:
    """(the reply without its ``Bullets used:`` lines, the bullet ids they name, in order).

    Every such line is cut out; the last one names the bullets (``none`` or no id: none).
    """
    lines = list(_BULLETS_USED.finditer(reply))
    if not lines:
        return reply, []
    ids = list(dict.fromkeys(_BULLET.findall(lines[-1].group(1).lower())))
    rest = re.sub(r"\n{3,}", "\n\n", _BULLETS_USED.sub("", reply)).strip()
    return rest, ids


_TAG = re.compile(
    r"^[ \t]*(?:[-*][ \t]*)?TAG[ \t]+\[?(b\d+)\]?[ \t]*[:=\-]?[ \t]*(helpful|harmful|neutral)"
    r"[ \t.]*$",
    re.IGNORECASE | re.MULTILINE,
)
_LESSON = re.compile(r"^[ \t]*(?:[-*][ \t]*|\d+[.)][ \t]*)?LESSON[ \t]*:[ \t]*(\S.*?)[ \t]*$",
                     re.IGNORECASE | re.MULTILINE)
_ADD = re.compile(r"^[ \t]*(?:[-*][ \t]*|\d+[.)][ \t]*)?ADD(?:[ \t]+\(?([A-Za-z]+)\)?)?[ \t]*:"
                  r"[ \t]*(\S.*?)[ \t]*$", re.MULTILINE)


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


def parse_additions(text: str, limit: int) -> list[tuple[str, str]]:
    """(section key, text) of the ``ADD <section>: <text>`` lines of a curator reply
    (upper-case keyword), in order, at most ``limit``; a missing or unknown section is
    ``other``."""
    keys = {key for key, _ in PLAYBOOK_SECTIONS}
    out = []
    for m in _ADD.finditer(text):
        section = (m.group(1) or "").lower()
        out.append((section if section in keys else "other", " ".join(m.group(2).split())))
    return out[:limit]
