"""Memory snapshots stored as deltas, so a run's stored states grow linearly in its stream.

Why (docs/design.md §6: resume must be real): a system that cannot be rebuilt by replaying
its stream has its memory stored after every step, and most memories grow by appending (the
turns of a conversation, the passages read, the records kept). Stored whole, step t costs the
size of t steps of memory and a stream of T steps costs T^2. Here each snapshot is stored as a
delta against the previous stored step of the same run and stream:

* two objects: the keys whose values changed (each as a delta of its own) and the keys removed;
* two lists where the new one is the old one with some items dropped from its head and some
  appended at its end (a conversation trimmed to its budget): the count dropped and the tail;
* anything else: the new value.

A delta is kept only when it is smaller than the whole snapshot, when it rebuilds exactly the
snapshot's JSON text (so a loaded state is what a whole copy would have been, key order and
number types included), and while the deltas since the last whole copy, this one included, are
no larger than the whole snapshot. So rebuilding any step reads one whole copy and deltas no
larger than the state itself: loading stays linear in the state, while the whole copies of a
memory that keeps growing are few and the stored bytes per step stay flat.

Each store keeps the last state it read or wrote per stream (a few streams, least recently
used dropped first), so a runner that saves step after step, or that resumes by reading its
steps in order, reads and decodes each stored row once. A write by another connection (seen
through SQLite's ``data_version``) empties it.
"""

from __future__ import annotations

import json
import sqlite3
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from clstream.core.errors import StoreError
from clstream.core.reader import ResultsReader

HELD_STREAMS = 16  # streams whose last state a store keeps in memory
DROP_CANDIDATES = 8  # head positions tried when a list lost items at its start


def json_delta(old: Any, new: Any) -> dict[str, Any]:
    """A delta turning JSON value ``old`` into ``new`` (see the module docstring)."""
    if isinstance(old, dict) and isinstance(new, dict):
        changed = {key: json_delta(old[key], value) if key in old else {"set": value}
                   for key, value in new.items() if key not in old or old[key] != value}
        removed = [key for key in old if key not in new]
        return {"keys": changed, "removed": removed} if removed else {"keys": changed}
    if isinstance(old, list) and isinstance(new, list):
        drop = _dropped_head(old, new)
        if drop is not None:
            tail = new[len(old) - drop:]
            return {"drop": drop, "append": tail} if drop else {"append": tail}
    return {"set": new}


def _dropped_head(old: list[Any], new: list[Any]) -> int | None:
    """The fewest items to drop from the head of ``old`` so that the rest starts ``new``
    (None when no few candidates do)."""
    if len(new) >= len(old) and new[:len(old)] == old:
        return 0
    if not new:
        return len(old)
    start = 1
    for _ in range(DROP_CANDIDATES):
        try:
            drop = old.index(new[0], start)
        except ValueError:
            return None
        kept = len(old) - drop
        if kept <= len(new) and new[:kept] == old[drop:]:
            return drop
        start = drop + 1
    return None


def apply_delta(old: Any, delta: dict[str, Any]) -> Any:
    """``old`` changed by ``delta`` (from :func:`json_delta`); ``old`` itself is unchanged."""
    if "set" in delta:
        return delta["set"]
    if "append" in delta:
        if not isinstance(old, list):
            raise ValueError("a list delta applied to a non-list")
        return [*old[delta.get("drop", 0):], *delta["append"]]
    if not isinstance(old, dict):
        raise ValueError("an object delta applied to a non-object")
    removed = set(delta.get("removed", ()))
    out = {key: value for key, value in old.items() if key not in removed}
    for key, change in delta["keys"].items():
        out[key] = apply_delta(old.get(key), change)
    return out


@dataclass(frozen=True)
class Held:
    """A stream's state at step ``t`` as stored, and the bytes of the deltas since the whole
    copy it was rebuilt from (0 for a whole copy)."""

    t: int
    state: Any
    chain: int


@dataclass(frozen=True)
class StoredState:
    """What a step's row holds: ``base`` None for a whole copy, else the step the delta in
    ``text`` applies to."""

    text: str
    base: int | None
    held: Held


class SnapshotChains:
    """Encodes and rebuilds the snapshots of one results database (module docstring)."""

    def __init__(self, conn: sqlite3.Connection, where: str):
        self.conn = conn
        self.where = where  # names the database in errors
        self._held: OrderedDict[tuple[str, str], Held] = OrderedDict()
        self._version: int | None = None

    def forget(self) -> None:
        """Drop every kept state (after rows were deleted or moved)."""
        self._held.clear()

    def _fresh(self) -> None:
        version = self.conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self._version:
            self._held.clear()
            self._version = version

    def keep(self, run_id: str, stream: str, held: Held) -> None:
        key = (run_id, stream)
        self._held[key] = held
        self._held.move_to_end(key)
        while len(self._held) > HELD_STREAMS:
            self._held.popitem(last=False)

    def load(self, run_id: str, stream: str, t: int) -> Held | None:
        """The state stored for step ``t`` (None when there is none): rows are read from ``t``
        back to a whole copy, or to the step kept in memory, then the deltas applied."""
        self._fresh()
        held = self._held.get((run_id, stream))
        deltas: list[str] = []
        step = t
        while held is None or held.t != step:
            row = self.conn.execute(
                "SELECT state, base FROM states WHERE run_id=? AND stream=? AND t=?",
                (run_id, stream, step),
            ).fetchone()
            if row is None:
                if step == t:
                    return None
                raise StoreError(f"{self.where}: snapshot {step} of {stream!r} (run {run_id}),"
                                 f" the base of snapshot {t}, is missing")
            if row[1] is None:
                held = Held(step, json.loads(row[0]), 0)
                break
            deltas.append(row[0])
            step = int(row[1])
        state, chain = held.state, held.chain
        for text in reversed(deltas):
            state = apply_delta(state, json.loads(text))
            chain += len(text)
        held = Held(t, state, chain)
        self.keep(run_id, stream, held)
        return held

    def latest_step(self, run_id: str, stream: str, before: int | None = None) -> int | None:
        sql = "SELECT MAX(t) FROM states WHERE run_id=? AND stream=?"
        args: tuple[Any, ...] = (run_id, stream)
        if before is not None:
            sql += " AND t<?"
            args += (before,)
        value = self.conn.execute(sql, args).fetchone()[0]
        return None if value is None else int(value)

    def encode(self, run_id: str, stream: str, t: int, state: Any) -> StoredState:
        """The row to store for ``state`` (already scrubbed) at step ``t``: a delta against
        the previous stored step when that pays (module docstring), else the whole state."""
        text = json.dumps(state, sort_keys=False)
        whole = StoredState(text, None, Held(t, state, 0))
        base = self.latest_step(run_id, stream, before=t)
        previous = None if base is None else self.load(run_id, stream, base)
        if previous is None:
            return whole
        delta = json_delta(previous.state, state)
        delta_text = json.dumps(delta, sort_keys=False)
        chain = previous.chain + len(delta_text)
        if len(delta_text) >= len(text) or chain > len(text):
            return whole
        rebuilt = apply_delta(previous.state, json.loads(delta_text))
        if json.dumps(rebuilt, sort_keys=False) != text:
            return whole  # a change equality missed (1 and 1.0, key order): keep it whole
        return StoredState(delta_text, base, Held(t, state, chain))

    def detach_dependents(self, run_id: str, stream: str, t: int) -> None:
        """Store whole every step whose delta applies to step ``t``, before ``t`` is
        replaced (a step written again), so no chain goes through a changed row."""
        dependents = [int(r[0]) for r in self.conn.execute(
            "SELECT t FROM states WHERE run_id=? AND stream=? AND base=?", (run_id, stream, t))]
        for step in dependents:
            held = self.load(run_id, stream, step)
            assert held is not None
            self.conn.execute(
                "UPDATE states SET state=?, base=NULL WHERE run_id=? AND stream=? AND t=?",
                (json.dumps(held.state, sort_keys=False), run_id, stream, step))
        if dependents:
            self._held.pop((run_id, stream), None)


def whole_state(state: Any) -> dict[str, Any]:
    """How a protocol that keeps its own chain format hands a state to the store: whole, as
    ``{"full": state}`` (the store keeps it as a delta against the step before; runs stored
    before the store did that hold ``{"delta": ...}`` too, read by :func:`rebuild_chain`)."""
    return {"full": state}


def rebuild_chain(store: ResultsReader, run_id: str, stream: str, t: int,
                  apply: Callable[[Any, Any], Any]) -> Any | None:
    """A state stored by a protocol as its own chain (runs stored before the store kept
    deltas): step ``t`` holds ``{"full": state}`` or ``{"delta": ...}`` against step t - 1;
    walks back to the last whole state and applies the deltas forward with ``apply``. None
    when a step of the chain is missing."""
    chain: list[Any] = []
    step = t
    while True:
        row = store.load_state(run_id, stream, step)
        if row is None:
            return None
        stored = row[1]
        if "full" in stored:
            state = stored["full"]
            break
        chain.append(stored["delta"])
        step -= 1
    for delta in reversed(chain):
        state = apply(state, delta)
    return state
