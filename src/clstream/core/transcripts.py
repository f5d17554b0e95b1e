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
    """The calls of one cell not yet stored, in the order they ended."""

    pending: list[NotedCall] = field(default_factory=list)

    def take(self, calls: Sequence[NotedCall]) -> None:
        """Forget ``calls`` (they were stored)."""
        taken = {id(c) for c in calls}
        self.pending = [c for c in self.pending if id(c) not in taken]

    def drain(self) -> list[NotedCall]:
        out, self.pending = self.pending, []
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
    capture.pending.extend(NotedCall(q, r, now) for q, r in zip(requests, results, strict=False))
