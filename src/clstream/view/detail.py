"""One item of a run in full: its stored record, every model call behind it, the memory state
the system held at that step, and the same question over the stream (docs/viewer.md §2.4).

Calls are the run's transcripts (:mod:`clstream.store.transcripts`): the calls linked to the
record itself, and to records whose key extends it by ``/`` (a CL-Bench instance's steps,
``TASK/ARM/ROLLOUT/INSTANCE/STEP``) or that share it under another kind (an ImprintBench
item's LLM ``judgment``). The memory state is the stored snapshot (:meth:`ResultsStore.
load_state`) of the item's stream at the last stored step not after the item's own, for the
protocols that store snapshots; an item without one says so (``memory: null``).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from clstream.core.records import RunRow
from clstream.store.db import ResultsStore
from clstream.view.items import Row

TIMELINE_PROTOCOLS = ("oaks", "seqmem")
"""Protocols that ask one question again over the stream: OAKS at every interval, SeqMem
online, then retrospectively and (hold-out) at checkpoints."""

_KIND_ORDER = {"online": 0, "retro": 1, "holdout": 2}


def _record(store: ResultsStore, run: RunRow, kind: str, key: str) -> dict[str, Any] | None:
    row = store.conn.execute("SELECT * FROM records WHERE run_id=? AND kind=? AND key=?",
                             (run.run_id, kind, key)).fetchone()
    if row is None:
        return None
    out = {k: row[k] for k in row.keys() if k != "payload"}
    out["step"] = out.pop("t", None)
    try:
        out["payload"] = json.loads(row["payload"])
    except ValueError:
        out["payload"] = row["payload"]
    return out


def _linked(store: ResultsStore, run: RunRow, key: str) -> list[tuple[str, str]]:
    """(record kind, record key) of every stored call's record that is ``key`` or extends it."""
    try:
        rows = store.conn.execute(
            "SELECT record_kind, record_key FROM calls WHERE run_id=? AND"
            " (record_key=? OR substr(record_key, 1, ?)=?)"
            " GROUP BY record_kind, record_key ORDER BY MIN(rowid)",
            (run.run_id, key, len(key) + 1, key + "/")).fetchall()
    except sqlite3.OperationalError:  # a database from before transcripts
        return []
    return [(str(kind), str(rkey)) for kind, rkey in rows if kind]


def calls(store: ResultsStore, run: RunRow, key: str) -> list[dict[str, Any]]:
    """The calls behind item ``key``, in the order they were stored, each marked ``judge``
    when it judged an answer rather than produced one."""
    out = []
    for kind, rkey in _linked(store, run, key):
        for call in store.calls(run.run_id, kind, rkey):
            call["judge"] = "judg" in kind or "judge" in str(call.get("stage"))
            out.append(call)
    return out


def _state_streams(store: ResultsStore, run: RunRow) -> list[str]:
    return [str(r[0]) for r in store.conn.execute(
        "SELECT DISTINCT stream FROM states WHERE run_id=? ORDER BY stream", (run.run_id,))]


def memory(store: ResultsStore, run: RunRow, record: dict[str, Any]) -> dict[str, Any] | None:
    """The snapshot the item's answer was given with: of the item's stream (or its arm and
    rollout's, CL-Bench; its ingest stream, ImprintBench; the run's only one, SeqMem), the
    last stored step not after the item's."""
    streams = _state_streams(store, run)
    if not streams:
        return None
    stream = str(record.get("stream"))
    candidates = [stream, f"{stream}/{record.get('arm')}/{record.get('rollout')}",
                  f"{stream}/ingest"]
    if len(streams) == 1:
        candidates.append(streams[0])
    chosen = next((c for c in candidates if c in streams), None)
    if chosen is None:
        return None
    steps = store.state_steps(run.run_id, chosen)
    # An ingest stream is read whole before any question (ImprintBench): its latest state.
    step = None if chosen.endswith("/ingest") else record.get("step")
    usable = [s for s in steps if step is None or s <= int(step)]
    if not usable:
        return {"stream": chosen, "step": None, "steps": steps, "state": None}
    found = store.load_state(run.run_id, chosen, usable[-1])
    return {"stream": chosen, "step": usable[-1], "steps": steps,
            "state": found[1] if found is not None else None}


def group_index(rows: list[Row]) -> dict[Any, list[Row]]:
    """The rows of each question (``group``): a timeline is then found without reading every
    row again (the static copy builds every item's)."""
    groups: dict[Any, list[Row]] = {}
    for r in rows:
        groups.setdefault(r["group"], []).append(r)
    return groups


def timeline(groups: dict[Any, list[Row]], row: Row, protocol: str) -> list[Row] | None:
    """The item's question at every interval (OAKS) or task position (SeqMem), in stream
    order; None for a protocol that asks each question once."""
    if protocol not in TIMELINE_PROTOCOLS:
        return None
    same = list(groups.get(row["group"], [row]))
    same.sort(key=lambda r: (_KIND_ORDER.get(r["kind"], 9), r["interval"] or 0, r["key"]))
    fields = ("key", "kind", "interval", "stage", "gold", "answer", "correct", "verdict")
    return [{f: r[f] for f in fields} for r in same]


def item_detail(store: ResultsStore, run: RunRow, groups: dict[Any, list[Row]],
                row: Row, with_calls: bool = True) -> dict[str, Any]:
    """The item document of docs/viewer.md §2.4 but its ``run``; ``groups`` is
    :func:`group_index` of the run's rows; without ``with_calls``, no call is read and
    ``calls`` is empty (a static copy that leaves them out, §5)."""
    record = _record(store, run, row["kind"], row["key"]) or {}
    return {"row": row, "record": record,
            "calls": calls(store, run, row["key"]) if with_calls else [],
            "memory": memory(store, run, record) if record else None,
            "timeline": timeline(groups, row, run.protocol)}
