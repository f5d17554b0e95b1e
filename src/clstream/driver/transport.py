"""What a remote backend's transport did during a run.

A remote backend's in-flight limit changes during a run; :class:`TransportLog` keeps what
changed during one session of a run (the limit's history, requests, errors, output tokens) as a
state of the run (stream :data:`TRANSPORT_STREAM`, one step per session), and
:func:`transport_history` reads them back for ``summary --json``.

A session's entry is written as the run goes (:meth:`TransportLog.keep_saved`, every few
seconds, each write replacing the session's own step), so a process killed mid-run leaves the
counts of what it sent up to its last write; a session that sent nothing (a resume with nothing
left to do) writes no entry.
"""

from __future__ import annotations

import asyncio
from typing import Any

from clstream.core.contracts import Model
from clstream.core.reader import ResultsReader
from clstream.store.db import ResultsStore

TRANSPORT_STREAM = "~transport"  # never a document, task or memory stream name
_COUNTERS = ("requests", "errors", "resent", "output_tokens")
SAVE_EVERY_S = 5.0


def _transport_of(model: Model | None) -> dict[str, Any] | None:
    describe = getattr(model, "transport", None)
    return describe() if callable(describe) else None


class TransportLog:
    """What a remote model's transport did during one session of a run: open it when the
    session starts, :meth:`save` it as it goes and when it ends (models without a
    ``transport()``, such as local ones, save nothing)."""

    def __init__(self, model: Model | None) -> None:
        self._model = model
        self._start = _transport_of(model)
        self._step: int | None = None

    def session(self) -> dict[str, Any] | None:
        """The limit's history and counters since the log was opened."""
        end = _transport_of(self._model)
        if end is None:
            return None
        start = self._start
        if start is None or start.get("instance") != end.get("instance"):
            start = {"history": [], **{k: 0 for k in _COUNTERS}}
        out = {k: v for k, v in end.items() if k not in ("instance", "history")}
        out["history"] = end["history"][len(start["history"]):]
        out.update({k: (end.get(k) or 0) - (start.get(k) or 0) for k in _COUNTERS})
        return out

    def save(self, store: ResultsStore, run_id: str) -> None:
        """Write this session's entry (its own step, replaced on every write); nothing while
        the session has sent no request."""
        session = self.session()
        if session is None or not any(session.get(k) for k in _COUNTERS):
            return
        if self._step is None:
            steps = store.state_steps(run_id, TRANSPORT_STREAM)
            self._step = steps[-1] + 1 if steps else 0
        store.save_state(run_id, TRANSPORT_STREAM, self._step, session)

    async def keep_saved(self, store: ResultsStore, run_id: str,
                         every_s: float = SAVE_EVERY_S) -> None:
        """Save the session every ``every_s`` seconds until cancelled."""
        while True:
            await asyncio.sleep(every_s)
            self.save(store, run_id)


def transport_history(store: ResultsReader, run_id: str) -> list[dict[str, Any]]:
    """The saved transport sessions of a run, oldest first (none for local models)."""
    sessions = []
    for step in store.state_steps(run_id, TRANSPORT_STREAM):
        loaded = store.load_state(run_id, TRANSPORT_STREAM, step)
        if loaded is not None:
            sessions.append(loaded[1])
    return sessions
