"""A request's prompt as its parts, the form a plan counts without building it (docs/plan.md §2).

Every request of a context system is the one prompt structure of :mod:`clstream.core.layout`:
a system message (the query's instructions) and a user message made of memory sections, then
the query block. A section is a header and tagged passages, and the same passages recur in
many prompts: the full context of an interval is the previous interval's plus one passage, and
every question of an interval shows it; a retrieved passage recurs wherever it is retrieved.
:class:`PromptParts` keeps a prompt as those pieces, each a string object held once, so that
``clstream plan`` counts and hashes each piece once per state it follows
(:meth:`clstream.models.planning.ChatTokens.blocked_parts`) instead of building and reading
every prompt, whose length grows with the stream. The request the run sends is built from the
same parts (:func:`user_text`, :func:`messages_of`), so the two cannot differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from clstream.core import layout
from clstream.core.types import GenerationRequest, Message, Query


class Section:
    """A memory section as its segments (a header, then one segment per passage): ``text`` is
    the section as :mod:`clstream.core.layout` lays it out, joined once when first asked for."""

    __slots__ = ("segments", "_text")

    def __init__(self, segments: tuple[str, ...]):
        self.segments = segments
        self._text: str | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = "".join(self.segments)
        return self._text


@dataclass(frozen=True, slots=True)
class PromptParts:
    """One request as its parts: the query it answers, the system message, the memory
    sections and the query block (``layout.query_block``), with the completion bound of its
    sampling (``max_tokens`` and ``n``) and its stage."""

    query: Query
    instructions: str
    sections: tuple[Section, ...]
    block: str
    max_tokens: int
    n: int
    stage: str = "generate"


def parts_of(query: Query, sections: Sequence[Section], head_index: int | None,
             max_tokens: int, n: int) -> PromptParts:
    """The parts of what a system sends for ``query`` with ``sections`` of memory (and a head
    index): the pieces of :func:`clstream.core.layout.query_messages`."""
    return PromptParts(query, layout.instructions_of(query), tuple(sections),
                       layout.query_block(query, head_index), max_tokens, n)


def user_runs(parts: PromptParts) -> list[tuple[Section | None, tuple[str, ...]]]:
    """The user message as runs of segments, whose texts one after another are
    :func:`clstream.core.layout.user_text` of the sections' texts: each section that holds
    more than whitespace, as its own segments (and with the section itself) where it is
    placed as it stands (it ends with a blank line, :func:`clstream.core.layout.placed`), else
    its placed text as one segment; then the query block. Every run ends with whitespace but
    the last."""
    runs: list[tuple[Section | None, tuple[str, ...]]] = []
    for section in parts.sections:
        segments = section.segments
        if not any(s and not s.isspace() for s in segments):
            continue
        if segments and segments[-1].endswith("\n\n"):
            runs.append((section, segments))
        else:
            runs.append((None, (layout.placed(section.text),)))
    runs.append((None, (parts.block,)))
    return runs


def user_text(parts: PromptParts) -> str:
    """The user message of ``parts`` (:func:`user_runs` joined; a section shown as it stands
    is joined once, however many prompts show it)."""
    return "".join(section.text if section is not None else "".join(segments)
                   for section, segments in user_runs(parts))


def messages_of(parts: PromptParts) -> tuple[Message, ...]:
    """The messages of ``parts``, those :func:`clstream.core.layout.query_messages` builds."""
    return (Message(role="system", content=parts.instructions),
            Message(role="user", content=user_text(parts)))


@runtime_checkable
class PartsPlanner(Protocol):
    """A system that gives its requests as :class:`PromptParts` under the memory held now
    (:meth:`plan_parts`, nothing sent), and the request it sends for parts
    (:meth:`request_of`): a plan counts the parts, the run sends the requests."""

    def plan_parts(self, queries: Sequence[Query]) -> list[PromptParts]: ...

    def request_of(self, parts: PromptParts) -> GenerationRequest: ...
