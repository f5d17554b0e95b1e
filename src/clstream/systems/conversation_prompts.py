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
from clstream.core.conversation_formats import (
    BULLETS_USED_LABEL as BULLETS_USED_LABEL,
)
from clstream.core.conversation_formats import (
    CARRY_HEADER as CARRY_HEADER,
)
from clstream.core.conversation_formats import (
    CONTEXT_CHARS as CONTEXT_CHARS,
)
from clstream.core.conversation_formats import (
    CURATE_PROMPT as CURATE_PROMPT,
)
from clstream.core.conversation_formats import (
    EXTRACT_PROMPT as EXTRACT_PROMPT,
)
from clstream.core.conversation_formats import (
    FEEDBACK_HEADER as FEEDBACK_HEADER,
)
from clstream.core.conversation_formats import (
    INSTANCE_DONE as INSTANCE_DONE,
)
from clstream.core.conversation_formats import (
    MEMORIES_HEADER as MEMORIES_HEADER,
)
from clstream.core.conversation_formats import (
    MEMORY_SYSTEM as MEMORY_SYSTEM,
)
from clstream.core.conversation_formats import (
    MEMORY_UPDATE_PROMPT as MEMORY_UPDATE_PROMPT,
)
from clstream.core.conversation_formats import (
    NO_MEMORIES as NO_MEMORIES,
)
from clstream.core.conversation_formats import (
    NO_REPLY as NO_REPLY,
)
from clstream.core.conversation_formats import (
    NO_REQUEST as NO_REQUEST,
)
from clstream.core.conversation_formats import (
    NOTEPAD_HEADER as NOTEPAD_HEADER,
)
from clstream.core.conversation_formats import (
    NOTEPAD_RULES as NOTEPAD_RULES,
)
from clstream.core.conversation_formats import (
    OUTCOME_TEMPLATE as OUTCOME_TEMPLATE,
)
from clstream.core.conversation_formats import (
    PLAYBOOK_HEADER as PLAYBOOK_HEADER,
)
from clstream.core.conversation_formats import (
    PLAYBOOK_RULES as PLAYBOOK_RULES,
)
from clstream.core.conversation_formats import (
    PLAYBOOK_SECTIONS as PLAYBOOK_SECTIONS,
)
from clstream.core.conversation_formats import (  # the texts, shared with the builtin model
    PROMPT_TEMPLATE_VERSION as PROMPT_TEMPLATE_VERSION,
)
from clstream.core.conversation_formats import (
    REFLECT_PROMPT as REFLECT_PROMPT,
)
from clstream.core.conversation_formats import (
    RESULT_TEMPLATE as RESULT_TEMPLATE,
)
from clstream.core.conversation_formats import (
    SECTION_TEMPLATE as SECTION_TEMPLATE,
)
from clstream.core.conversation_formats import (
    STEP_REPLY_LABEL as STEP_REPLY_LABEL,
)
from clstream.core.conversation_formats import (
    STEP_REQUEST_LABEL as STEP_REQUEST_LABEL,
)
from clstream.core.conversation_formats import (
    TRACE_REPLY_LABEL as TRACE_REPLY_LABEL,
)
from clstream.core.conversation_formats import (
    TRACE_SHOWN_LABEL as TRACE_SHOWN_LABEL,
)
from clstream.core.conversation_formats import (
    VERDICT_CHARS as VERDICT_CHARS,
)
from clstream.core.types import Message

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
