"""The two contracts everything else is built on (DESIGN.md, "The one idea").

A :class:`System` is the thing under test: a memory method over a model. A :class:`Model`
turns requests into completions. Both are async because model calls are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from clstream.core.events import Event
from clstream.core.types import GenerationRequest, GenerationResult, Query, Response


@runtime_checkable
class Tokenizer(Protocol):
    """Counts tokens. ``exact`` is False for the offline approximation."""

    name: str
    exact: bool

    def count(self, text: str) -> int: ...

    def truncate_left(self, text: str, budget: int) -> str:
        """Keep the last ``budget`` tokens' worth of text."""
        ...


@runtime_checkable
class Model(Protocol):
    """Async, batched generation with n samples and usage on every result."""

    name: str
    tokenizer: Tokenizer

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """One result per request, same order. A failed request yields ``error``, not a guess."""
        ...

    def describe(self) -> dict[str, Any]:
        """What a run records about the model (backend, name, version, baseline label)."""
        ...


@runtime_checkable
class System(Protocol):
    """A memory method under test.

    ``respond`` must leave long-term memory unchanged (a probe is not an update).
    ``snapshot``/``restore`` carry the whole memory as JSON-serializable data, used for resuming,
    re-evaluation under later memory, and showing memory in reports.
    """

    name: str

    async def reset(self) -> None: ...

    async def observe(self, event: Event) -> list[GenerationResult]:
        """Take in an event; returns the model calls made while updating memory (maybe none)."""
        ...

    async def respond(self, query: Query) -> Response: ...

    def snapshot(self) -> dict[str, Any]: ...

    def restore(self, state: dict[str, Any]) -> None: ...

    def describe(self) -> dict[str, Any]: ...


async def respond_all(system: System, queries: Sequence[Query]) -> list[Response]:
    """Ask several queries of one memory state; systems may override with a batched version."""
    batched = getattr(system, "respond_batch", None)
    if batched is not None:
        return list(await batched(queries))
    return [await system.respond(q) for q in queries]
