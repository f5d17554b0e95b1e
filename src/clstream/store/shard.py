"""A cell run away from the results database: a private *shard* store and the rows it adds.

Why (docs/design.md §5, one writer per results directory): a cell run in another process or
on another machine must not write the run's database. It runs against a shard instead, a
results database of its own seeded with every stored row of the run (its records and memory
snapshots, as stored), so the cell's runner finds exactly what a local session would find and
resumes the same way. When the cell ends, :func:`shard_changes` gives the rows the cell added
or changed, in the order it wrote them; the one writer commits them with
:meth:`~clstream.store.db.ResultsStore.put_rows`, in one transaction per cell.

The rows come back as stored: a snapshot kept as a delta stays a delta against the same base
step, which the run's database holds too (the shard started as a copy of it, and no other cell
writes the cell's streams), so the database ends exactly as a local session would leave it.
Committing the same changes twice (a cell retried after its result was taken) adds nothing:
records are keyed, a stored success is never replaced, and a snapshot row is replaced by
itself.

A shard is seeded without the run's model calls (a cell's runner never reads them), so every
call it holds is one the cell made, and comes back with the nodes and pieces its messages
need; committing them twice adds nothing (pieces and nodes are keyed by content, calls by
their run, record and request).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clstream.core.records import RunRow
from clstream.store.db import RECORD_COLUMNS, ResultsStore
from clstream.store.transcripts import TranscriptRows, transcript_rows

_RECORD_SELECT = ", ".join(RECORD_COLUMNS[1:])  # every column but run_id, in table order
_STATE_SELECT = "stream, t, state, base"


@dataclass(frozen=True)
class RowChanges:
    """Rows of one run: records as :data:`~clstream.store.db.RECORD_COLUMNS` less ``run_id``,
    snapshots as ``(stream, t, state, base)``, model calls as ``(calls, nodes, pieces)``
    (:func:`~clstream.store.transcripts.transcript_rows`)."""

    records: list[tuple[Any, ...]]
    states: list[tuple[Any, ...]]
    transcripts: TranscriptRows = ((), (), ())

    def __bool__(self) -> bool:
        return bool(self.records or self.states or self.transcripts[0])


@dataclass(frozen=True)
class RunRows:
    """Everything a shard needs of one run: its row, its dataset row and its stored rows."""

    run: RunRow
    dataset: tuple[str, dict[str, Any]] | None
    rows: RowChanges


def _records(store: ResultsStore, run_id: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in store.conn.execute(
        f"SELECT {_RECORD_SELECT} FROM records WHERE run_id=? ORDER BY rowid", (run_id,))]


def _states(store: ResultsStore, run_id: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in store.conn.execute(
        f"SELECT {_STATE_SELECT} FROM states WHERE run_id=? ORDER BY rowid", (run_id,))]


def read_run_rows(store: ResultsStore, run_id: str) -> RunRows:
    """The stored rows of ``run_id`` (registered in ``store``), to seed shards with."""
    run = store.get_run(run_id)
    found = store.conn.execute("SELECT 1 FROM datasets WHERE sha256=?",
                               (run.dataset_sha256,)).fetchone()
    dataset = store.get_dataset(run.dataset_sha256) if found else None
    return RunRows(run, dataset, RowChanges(_records(store, run_id), _states(store, run_id)))


def seed_shard(shard: ResultsStore, seed: RunRows) -> None:
    """Register the run in an empty shard and copy its stored rows in, as they are."""
    run = seed.run
    if seed.dataset is not None:
        shard.put_dataset(run.dataset_sha256, *seed.dataset)
    shard.ensure_run(run.run_id, run.protocol, run.system, run.model, run.dataset_sha256,
                     run.spec, run.info)
    shard.put_rows(run.run_id, seed.rows.records, seed.rows.states)


def shard_changes(shard: ResultsStore, seed: RunRows) -> RowChanges:
    """The rows of ``shard`` that its seed did not hold as they are now, in write order."""
    run_id = seed.run.run_id
    seeded_records = {(r[0], r[1]): r for r in seed.rows.records}
    seeded_states = {(s[0], s[1]): s for s in seed.rows.states}
    records = [r for r in _records(shard, run_id) if seeded_records.get((r[0], r[1])) != r]
    states = [s for s in _states(shard, run_id) if seeded_states.get((s[0], s[1])) != s]
    return RowChanges(records, states, transcript_rows(shard.conn, run_id))
