"""The texts of the ``hipporag`` memory method (docs/agentic.md "hipporag") and the line
formats of its two requests: the triples extracted from a passage and the entities named by a
question.

Two sides read them, both in this package: the method (:mod:`clstream.systems.hipporag`)
writes its requests with them and parses the replies, and the builtin model's replies
(:mod:`clstream.systems.hipporag.builtin_replies`) recognise the requests and answer in the
formats they ask for. All wording is this project's own.

Reply formats, one item per line, anything else on a line ignored:

* extraction: ``TRIPLE: <subject> | <relation> | <object>`` (three non-empty parts separated
  by ``|``; a line with more or fewer parts is dropped), or the single line ``NONE``;
* question entities: ``ENTITY: <name>``, or the single line ``NONE``.
"""

from __future__ import annotations

import hashlib
import re

from clstream.core import layout
from clstream.core.types import Message

PROMPT_TEMPLATE_VERSION = "hipporag-v1"

GRAPH_SYSTEM = (
    "You turn texts into a knowledge graph of entities and the relations between them. "
    "Reply only in the exact line format asked for."
)

PASSAGE_OPEN = "<<<PASSAGE"
PASSAGE_CLOSE = "PASSAGE>>>"
QUESTION_OPEN = "<<<QUESTION"
QUESTION_CLOSE = "QUESTION>>>"

TRIPLE_LABEL = "TRIPLE:"
ENTITY_LABEL = "ENTITY:"
NONE_LINE = "NONE"

EXTRACT_PROMPT = (
    "Extract the facts stated in the passage between the markers as triples of subject, "
    "relation and object. Subject and object are entities -- people, places, objects, "
    "groups, dates, amounts or other named things -- written as short noun phrases, each "
    "entity by the same name wherever it recurs; the relation is a short verb phrase read "
    "from the subject to the object. Keep only what the passage itself states.\n\n"
    f"{PASSAGE_OPEN}\n{{passage}}\n{PASSAGE_CLOSE}\n\n"
    f"Reply with one line per fact, in the form\n{TRIPLE_LABEL} <subject> | <relation> | "
    f"<object>\nor with the single line {NONE_LINE} when the passage states no fact."
)

QUERY_PROMPT = (
    "Name the entities that the question between the markers mentions or asks about: "
    "people, places, objects, groups, dates and other named things, each as a short noun "
    "phrase.\n\n"
    f"{QUESTION_OPEN}\n{{question}}\n{QUESTION_CLOSE}\n\n"
    f"Reply with one line per entity, in the form\n{ENTITY_LABEL} <name>\n"
    f"or with the single line {NONE_LINE} when it names none."
)

PASSAGE_CHARS = 12_000  # of a passage shown to extraction (its start is kept)
QUESTION_CHARS = 4_000  # of a question shown to entity extraction (its start is kept)

_TEMPLATES = ("GRAPH_SYSTEM", "EXTRACT_PROMPT", "QUERY_PROMPT")


def template_fingerprint() -> str:
    """sha256 of the method's templates, clips and version plus the layout's own."""
    texts = [f"{name}={globals()[name]}" for name in _TEMPLATES]
    texts += [f"version={PROMPT_TEMPLATE_VERSION}", f"clips={PASSAGE_CHARS},{QUESTION_CHARS}"]
    return hashlib.sha256("\x00".join([*texts, layout.template_fingerprint()]).encode()
                          ).hexdigest()


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit - 3] + "..."


def extract_messages(passage: str) -> tuple[Message, ...]:
    """The extraction request for one passage."""
    return (Message(role="system", content=GRAPH_SYSTEM),
            Message(role="user", content=EXTRACT_PROMPT.format(
                passage=_clip(passage, PASSAGE_CHARS))))


def query_messages(question: str) -> tuple[Message, ...]:
    """The entity request for one question."""
    return (Message(role="system", content=GRAPH_SYSTEM),
            Message(role="user", content=QUERY_PROMPT.format(
                question=_clip(question, QUESTION_CHARS))))


def triple_line(subject: str, relation: str, obj: str) -> str:
    return f"{TRIPLE_LABEL} {subject} | {relation} | {obj}"


def entity_line(name: str) -> str:
    return f"{ENTITY_LABEL} {name}"


def _labelled(text: str, label: str) -> list[str]:
    """The rest of every line opening with ``label`` (case aside), stripped."""
    out = []
    for line in text.splitlines():
        line = line.strip().lstrip("-*").strip()
        if line[:len(label)].upper() == label:
            out.append(line[len(label):].strip())
    return out


def parse_triples(text: str) -> list[tuple[str, str, str]]:
    """The well-formed triple lines of a reply, in order (module docstring)."""
    triples = []
    for rest in _labelled(text, TRIPLE_LABEL):
        if rest.startswith("(") and rest.endswith(")"):
            rest = rest[1:-1]
        parts = [p.strip().strip("\"'") for p in rest.split("|")]
        if len(parts) == 3 and all(parts):
            triples.append((parts[0], parts[1], parts[2]))
    return triples


def parse_entities(text: str) -> list[str]:
    """The entity names of a reply, in order, each once."""
    names = [n.strip().strip("\"'") for n in _labelled(text, ENTITY_LABEL)]
    return list(dict.fromkeys(n for n in names if n))


def between(text: str, start: str, end: str) -> str | None:
    """The text between the first ``start`` marker line and the next ``end`` (None if not
    both present)."""
    match = re.search(rf"{re.escape(start)}\n(.*?)\n{re.escape(end)}", text, re.DOTALL)
    return match.group(1) if match else None
