"""What a remote backend's transport did during a run.

A remote backend's in-flight limit changes during a run; :class:`TransportLog` keeps what
changed during one session of a run (the limit's history, requests, errors, output tokens) as a
state of the run (stream :data:`TRANSPORT_STREAM`, one step per session), and
:func:`transport_history` reads them back for ``summary --json``.
"""

from __future__ import annotations

from typing import Any

from clstream.core.contracts import Model
from clstream.core.reader import ResultsReader
from clstream.store.db import ResultsStore

TRANSPORT_STREAM = "~transport"  # never a document, task or memory stream name
_COUNTERS = ("requests", "errors", "resent", "output_tokens")


def _transport_of(model: Model | None) -> dict[str, Any] | None:
    describe = getattr(model, "transport", None)
    return describe() if callable(describe) else None


class TransportLog:
    """What a remote model's transport did during one session of a run: open it when the
    session starts, :meth:`save` it when the session ends (models without a ``transport()``,
    such as local ones, save nothing)."""

    def __init__(self, model: Model | None) -> None:
        self._model = model
        self._start = _transport_of(model)

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
        session = self.session()
        if session is None:
            return
        steps = store.state_steps(run_id, TRANSPORT_STREAM)
        store.save_state(run_id, TRANSPORT_STREAM, steps[-1] + 1 if steps else 0, session)


def transport_history(store: ResultsReader, run_id: str) -> list[dict[str, Any]]:
    """The saved transport sessions of a run, oldest first (none for local models)."""
    sessions = []
    for step in store.state_steps(run_id, TRANSPORT_STREAM):
        loaded = store.load_state(run_id, TRANSPORT_STREAM, step)
        if loaded is not None:
            sessions.append(loaded[1])
    return sessions
