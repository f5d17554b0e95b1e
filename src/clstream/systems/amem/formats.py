"""The texts of the linked-note memory (``amem``; docs/agentic.md, "amem") and the line formats
of its two update calls.

Two sides read them, both in this package: the method (:mod:`clstream.systems.amem`) writes
prompts with them and parses the replies with :func:`parse_note` and :func:`parse_links`, and
the builtin model's replies (:mod:`clstream.systems.amem.builtin_replies`) recognise those
prompts and answer in the formats they ask for. All wording is this project's own.

Replies are read line by line, each line stripped of surrounding spaces. Only lines of the
forms below count; any other line is ignored, and so is a line of one of the forms that is
malformed (no value, a number not shown, a field repeated with different values). Nothing a
reply says beyond those lines changes memory.

* Note construction: ``KEYWORDS: a, b``, ``TAGS: a, b`` and ``CONTEXT: <one sentence>``.
* Link decision: ``LINK <n>`` links stored note n (as numbered in the prompt) to the new note;
  ``TAGS <n>: a, b`` and ``CONTEXT <n>: <sentence>`` replace the tags or the context of a
  note the reply links (of a note it does not link, they are ignored); ``NONE`` links nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

PROMPT_TEMPLATE_VERSION = "amem-v1"

SYSTEM = (
    "You maintain the long-term memory of an agent as a network of short notes that link to "
    "one another. Reply only with lines in the exact format asked for."
)

NOTE_PROMPT = (
    "A new note is being added to memory; its content is the text between the two marker "
    "lines below. Describe the note so it can be found again later: its keywords (the names, "
    "places, things and terms that carry its meaning, most important first), a few tags that "
    "classify it, and one sentence of context saying what it is about.\n\n"
    "<<< note content\n{content}\n>>> end of note content\n\n"
    "Reply with exactly three lines:\n"
    "KEYWORDS: <keyword>, <keyword>, ...\n"
    "TAGS: <tag>, <tag>, ...\n"
    "CONTEXT: <one sentence>"
)

LINK_PROMPT = (
    "A new note has been added to memory. Below it are the stored notes most similar to it, "
    "numbered. Link the new note to each stored note that is really related to it (the same "
    "people, places, things or topic). A linked note may also be revised in the light of the "
    "new one: give it new tags, a new context sentence, or both.\n\n"
    "New note:\n{note}\n\n"
    "Stored notes:\n{neighbours}\n\n"
    "Reply with one line LINK <number> per stored note to link, each optionally followed by "
    "TAGS <number>: <tag>, <tag>, ... and CONTEXT <number>: <one sentence> to revise it; "
    "reply with the single line NONE to link nothing."
)

NEW_NOTE_LABEL = "[new]"
NOTE_LINE_TEMPLATE = "{label} keywords: {keywords} | tags: {tags} | context: {context}"
CONTENT_LABEL = "content:"

MEMORY_HEADER = (
    "Memory notes related to the question, in the order they were written (each with its "
    "keywords, tags and context, then its content):\n\n"
)

CONTENT_CHARS = 1500  # clip of a note's content shown in a link prompt
CONTEXT_CHARS = 300  # the longest context sentence kept
MAX_ITEMS = 12  # keywords or tags kept from one line
ITEM_CHARS = 60  # the longest keyword or tag kept

_TEMPLATE_NAMES = ("SYSTEM", "NOTE_PROMPT", "LINK_PROMPT", "NOTE_LINE_TEMPLATE", "CONTENT_LABEL",
                   "MEMORY_HEADER")


def template_fingerprint() -> str:
    """sha256 of the version and the templates; the method reports it in ``describe()``."""
    text = "\n".join([PROMPT_TEMPLATE_VERSION,
                      *(f"{name}={globals()[name]}" for name in _TEMPLATE_NAMES)])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def note_line(label: str, keywords: Sequence[str], tags: Sequence[str], context: str) -> str:
    """One note's description on one line (``label`` is ``[new]`` or ``[<number>]``)."""
    return NOTE_LINE_TEMPLATE.format(label=label, keywords=", ".join(keywords) or "-",
                                     tags=", ".join(tags) or "-",
                                     context=" ".join(context.split()) or "-")


def shown_note(label: str, keywords: Sequence[str], tags: Sequence[str], context: str,
               content: str) -> str:
    """A note as a link prompt shows it: its description line, then its content (clipped)."""
    return (f"{note_line(label, keywords, tags, context)}\n{CONTENT_LABEL}\n"
            f"{clip(content, CONTENT_CHARS)}")


def note_prompt(content: str) -> str:
    return NOTE_PROMPT.format(content=content.strip())


def link_prompt(note: str, neighbours: Sequence[str]) -> str:
    return LINK_PROMPT.format(note=note, neighbours="\n\n".join(neighbours))


# --- reading replies -----------------------------------------------------------------------


@dataclass(frozen=True)
class NoteFields:
    """What a note-construction reply says (empty where it says nothing well-formed)."""

    keywords: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    context: str = ""


@dataclass(frozen=True)
class Evolution:
    """A link decision: the stored notes to link (numbers as shown, in reply order) and the
    new tags and context of linked notes."""

    links: tuple[int, ...] = ()
    tags: dict[int, tuple[str, ...]] = field(default_factory=dict)
    contexts: dict[int, str] = field(default_factory=dict)


def parse_items(value: str) -> tuple[str, ...]:
    """A comma-separated list: items stripped, empty, overlong or ``|``-holding ones dropped,
    repeats (case aside) dropped, at most :data:`MAX_ITEMS`."""
    out: list[str] = []
    seen: set[str] = set()
    for raw in value.split(","):
        item = " ".join(raw.split())
        if not item or len(item) > ITEM_CHARS or "|" in item or item.lower() in seen:
            continue
        seen.add(item.lower())
        out.append(item)
    return tuple(out[:MAX_ITEMS])


def _single(values: list[str]) -> str | None:
    """The value when every well-formed line gave the same one, else None."""
    return values[0] if values and all(v == values[0] for v in values) else None


_FIELD = re.compile(r"^(KEYWORDS|TAGS|CONTEXT):\s*(\S.*)$")


def parse_note(text: str) -> NoteFields:
    """The fields of a note-construction reply (module docstring)."""
    found: dict[str, list[str]] = {"KEYWORDS": [], "TAGS": [], "CONTEXT": []}
    for line in text.splitlines():
        match = _FIELD.match(line.strip())
        if match:
            found[match.group(1)].append(match.group(2).strip())
    keywords = _single(found["KEYWORDS"])
    tags = _single(found["TAGS"])
    context = _single(found["CONTEXT"])
    return NoteFields(parse_items(keywords) if keywords else (),
                      parse_items(tags) if tags else (),
                      clip(context, CONTEXT_CHARS) if context else "")


_LINK = re.compile(r"^LINK (\d+)$")
_REVISION = re.compile(r"^(TAGS|CONTEXT) (\d+):\s*(\S.*)$")


def parse_links(text: str, shown: int) -> Evolution:
    """The decision of a link reply over ``shown`` numbered notes (module docstring)."""
    links: list[int] = []
    revisions: dict[tuple[str, int], list[str]] = {}
    for line in text.splitlines():
        line = line.strip()
        link = _LINK.match(line)
        if link:
            number = int(link.group(1))
            if 1 <= number <= shown and number not in links:
                links.append(number)
            continue
        revision = _REVISION.match(line)
        if revision and 1 <= int(revision.group(2)) <= shown:
            key = (revision.group(1), int(revision.group(2)))
            revisions.setdefault(key, []).append(revision.group(3).strip())
    tags: dict[int, tuple[str, ...]] = {}
    contexts: dict[int, str] = {}
    for (kind, number), values in revisions.items():
        value = _single(values)
        if value is None or number not in links:
            continue
        if kind == "TAGS":
            items = parse_items(value)
            if items:
                tags[number] = items
        else:
            contexts[number] = clip(value, CONTEXT_CHARS)
    return Evolution(tuple(links), tags, contexts)
