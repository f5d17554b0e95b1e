"""The model calls of one cell, held until the records they served are committed.

Why here (docs/design.md §5.1): every model call goes through the model middleware
(:mod:`clstream.models.middleware`), which does not know the run, the store or the record a
call serves; the results store (:mod:`clstream.store.transcripts`) knows the records but not
the calls. The driver opens a :class:`CallCapture` for each cell it runs (:func:`capturing`);
the middleware notes every call it answers into the capture of the task it runs in
(:func:`note_calls`), and the store takes the calls that served a batch of records when it
commits the batch, in the same transaction. A cell's asyncio tasks share its capture (a task
starts with a copy of its parent's context, and the copy holds the same capture), while two
cells run together never see each other's calls.

Outside a capture (transcripts off, a test calling a model directly) nothing is noted.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from clstream.core.types import GenerationRequest, GenerationResult


@dataclass(frozen=True)
class NotedCall:
    """One model call as the middleware saw it: the request as sent, its result, and when it
    ended (seconds since the epoch)."""

    request: GenerationRequest
    result: GenerationResult
    ended_at: float


@dataclass
class CallCapture:
    """The calls of one cell not yet stored, in the order they ended, found by their result
    as well: by the result object, or by its usage object, which a shallow copy of the result
    (a system rewriting its samples) still holds."""

    _pending: dict[int, NotedCall] = field(default_factory=dict)
    _by_result: dict[int, NotedCall] = field(default_factory=dict)

    @property
    def pending(self) -> list[NotedCall]:
        return list(self._pending.values())

    def add(self, call: NotedCall) -> None:
        self._pending[id(call)] = call
        self._by_result[id(call.result)] = call
        self._by_result.setdefault(id(call.result.usage), call)

    def made(self, result: GenerationResult) -> NotedCall | None:
        """The waiting call whose result ``result`` is (or is a shallow copy of)."""
        return self._by_result.get(id(result)) or self._by_result.get(id(result.usage))

    def take(self, calls: Sequence[NotedCall]) -> None:
        """Forget ``calls`` (they were stored)."""
        for call in calls:
            if self._pending.pop(id(call), None) is not None:
                for ident in (id(call.result), id(call.result.usage)):
                    if self._by_result.get(ident) is call:
                        del self._by_result[ident]

    def drain(self) -> list[NotedCall]:
        out = self.pending
        self._pending, self._by_result = {}, {}
        return out


_CAPTURE: ContextVar[CallCapture | None] = ContextVar("clstream_call_capture", default=None)


def current_capture() -> CallCapture | None:
    """The capture of the running cell; None outside one."""
    return _CAPTURE.get()


@contextmanager
def capturing(enabled: bool = True) -> Iterator[CallCapture | None]:
    """A fresh capture for the block (None, and nothing noted, when not ``enabled``)."""
    capture = CallCapture() if enabled else None
    token = _CAPTURE.set(capture)
    try:
        yield capture
    finally:
        _CAPTURE.reset(token)


def note_calls(requests: Sequence[GenerationRequest],
               results: Sequence[GenerationResult]) -> None:
    """Note each request with its result in the running cell's capture, if any."""
    capture = _CAPTURE.get()
    if capture is None:
        return
    now = time.time()
    for request, result in zip(requests, results, strict=False):
        capture.add(NotedCall(request, result, now))
