"""The builtin model's side of the linked-note memory (``amem``; docs/agentic.md, "amem").

Two requests are recognised, by the method's system message and the opening of its prompts
(:mod:`clstream.systems.amem.formats`); every other request gets None here.

* Note construction, read from the note's content alone, extractively:
  keywords -- the names (capitalised words that are not sentence-initial function words), then
  the most frequent content words (stopwords and words under three letters left out; ties
  by first appearance), :data:`KEYWORDS` at most; tags -- the names and the places (the noun
  after "to/into/in/at the"), :data:`TAGS` at most; context -- the first sentence, clipped.
* Link decision: each shown note that shares a keyword or a tag with the new note (case
  aside) is linked; its tags grow by the new note's names that it shares (found among its
  own keywords or tags), written only when that changes them. Contexts are left as they are.

Deterministic; reads only the prompt. The builtin model reaches :func:`reply` through the
registry (kind ``"builtin_reply"``, entry ``amem``: :func:`replier`), never by import.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from clstream.core.registry import BuiltinReply, PolicyLookup
from clstream.core.types import Message
from clstream.models.builtin.reader import CAP_STOP, is_name, split_sentences
from clstream.systems.amem import formats

KEYWORDS = 8
TAGS = 6
CONTEXT_CHARS = 160
# Function words never taken as keywords, names or places.
STOPWORDS = CAP_STOP | frozenset(
    """be been being am about above again against below between both down during few further
    more most nor only other own than too very just now out off up us them him me itself
    themselves what's it's""".split())

_NOTE_OPEN = formats.NOTE_PROMPT.partition("{content}")[0]
_NOTE_CLOSE = formats.NOTE_PROMPT.partition("{content}")[2].partition("\n\n")[0]
_LINK_OPEN = formats.LINK_PROMPT.partition("{note}")[0]
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*|\d+")
_PLACE = re.compile(r"\b(?:to|into|in|at) the ([a-z][a-z\-]+)")
_LINE = re.compile(r"^(\[new\]|\[(\d+)\]) keywords: (.*) \| tags: (.*) \| context: (.*)$",
                   re.MULTILINE)


def _names(text: str) -> list[str]:
    """Capitalised words that are names (as the reader decides), in order of appearance."""
    out: list[str] = []
    for sentence in split_sentences(text):
        for token in _WORD.findall(sentence):
            if is_name(token) and token.lower() not in STOPWORDS and token not in out:
                out.append(token)
    return out


def describe(content: str) -> str:
    """The note-construction reply for ``content`` (module docstring)."""
    names = _names(content)
    named = {n.lower() for n in names}
    words = [w.lower() for w in _WORD.findall(content)]
    counts = Counter(w for w in words if len(w) >= 3 and w not in STOPWORDS and w not in named
                     and not w.isdigit())
    frequent = sorted(counts, key=lambda w: -counts[w])  # stable: first appearance on ties
    keywords = [*names, *frequent][:KEYWORDS]
    places = [p for p in dict.fromkeys(_PLACE.findall(content)) if p not in STOPWORDS]
    tags = list(dict.fromkeys([*names, *places]))[:TAGS]
    sentences = split_sentences(content)
    context = formats.clip(" ".join(sentences[0].split()), CONTEXT_CHARS) if sentences else ""
    lines = []
    if keywords:
        lines.append(f"KEYWORDS: {', '.join(keywords)}")
    if tags:
        lines.append(f"TAGS: {', '.join(tags)}")
    if context:
        lines.append(f"CONTEXT: {context}")
    return "\n".join(lines) or "CONTEXT: (empty note)"


def _items(text: str) -> list[str]:
    return [] if text.strip() == "-" else list(formats.parse_items(text))


def decide(prompt: str) -> str:
    """The link reply for a link prompt (module docstring)."""
    new_keywords: list[str] = []
    new_names: list[str] = []
    lines: list[str] = []
    for match in _LINE.finditer(prompt):
        keywords, tags = _items(match.group(3)), _items(match.group(4))
        if match.group(2) is None:
            new_keywords, new_names = keywords, tags
            continue
        mine = {w.lower() for w in [*new_keywords, *new_names]}
        theirs = {w.lower() for w in [*keywords, *tags]}
        if not mine & theirs:
            continue
        number = match.group(2)
        lines.append(f"LINK {number}")
        held = {t.lower() for t in tags}
        shared = [n for n in new_names if n.lower() in theirs and n.lower() not in held]
        if shared:
            lines.append(f"TAGS {number}: {', '.join([*tags, *shared])}")
    return "\n".join(lines) or "NONE"


def reply(messages: Sequence[Message]) -> str | None:
    """The reply to an amem update request, or None for any other request."""
    if len(messages) != 2 or messages[0].role != "system" \
            or messages[0].content != formats.SYSTEM:
        return None
    prompt = messages[1].content
    if prompt.startswith(_NOTE_OPEN):
        body = prompt[len(_NOTE_OPEN):]
        end = body.rfind(_NOTE_CLOSE)
        return describe(body[:end] if end >= 0 else body)
    if prompt.startswith(_LINK_OPEN):
        return decide(prompt)
    return None


def replier(policy_of: PolicyLookup) -> BuiltinReply:
    """The registered replier: :func:`reply`, which needs no policy."""
    return reply
