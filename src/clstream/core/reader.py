"""What summaries, exports and reports read from a results store (docs/design.md
§5).

``core`` imports nothing else of clstream, so the store itself cannot be named in
:class:`~clstream.core.protocol.StreamProtocol`. This structural interface names what a
protocol may read instead: runs, datasets, records, counts, token usage and memory snapshots.
Nothing here writes: a summary, an export or a report never changes a results directory, and
a type checker holds them to that. :class:`clstream.store.db.ResultsStore` satisfies it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from clstream.core.records import RunRow, RunStatus, StoredRecord


class RecordRow(Protocol):
    """One raw stored record: every column of the records table by name (``payload`` still
    JSON text, the step both as ``t`` and as ``step``)."""

    def __getitem__(self, key: str, /) -> Any: ...

    def keys(self) -> list[str]: ...


@runtime_checkable
class ResultsReader(Protocol):
    """The reading side of a results directory (docs/design.md §5), as protocols see it.

    Filters given as None mean "any"; ``errors`` is True for failed records only, False for
    successful ones only, None for both.
    """

    @property
    def dir(self) -> Path:
        """The results directory, for messages that name it."""
        ...

    def runs(self, protocol: str | None = None) -> list[RunRow]:
        """Every run (of one protocol), oldest first."""
        ...

    def get_run(self, run_id: str) -> RunRow:
        """One run; an unknown id is a StoreError naming the stored ones."""
        ...

    def run_status(self, run_id: str) -> RunStatus:
        """Record counts per kind, first and last record time, wall time, snapshot count."""
        ...

    def dataset_paths(self) -> list[str]:
        """The paths the stored datasets were read from (outputs never replace them)."""
        ...

    def get_dataset(self, sha256: str) -> tuple[str, dict[str, Any]]:
        """The stored view of a run's dataset: (path, content); StoreError when absent."""
        ...

    def iter_records(
        self, run_id: str, kind: str | None = None, *, stream: str | None = None,
        step: int | None = None, rollout: int | None = None, arm: str | None = None,
        sample: int | None = None, errors: bool | None = None,
    ) -> Iterator[RecordRow]:
        """Raw records in (stream, step, key) order."""
        ...

    def read_records(
        self, run_id: str, kind: str | None = None, *, stream: str | None = None,
        step: int | None = None, rollout: int | None = None, arm: str | None = None,
        sample: int | None = None, errors: bool | None = None,
    ) -> Iterator[StoredRecord]:
        """:meth:`iter_records` as typed records with the payload decoded."""
        ...

    def count(
        self, run_id: str, kind: str, errors: bool | None = None, *,
        stream: str | None = None, rollout: int | None = None, arm: str | None = None,
    ) -> int:
        """How many records of one kind match."""
        ...

    def done_keys(
        self, run_id: str, kind: str, stream: str | None = None, *,
        rollout: int | None = None, arm: str | None = None,
    ) -> set[str]:
        """Keys of the successful records of one kind."""
        ...

    def usage_by_stage(self, run_id: str) -> dict[str, dict[str, float]]:
        """Token totals, latency, record and cache-hit counts per stage."""
        ...

    def usage_by_stream_stage_kind(
        self, run_id: str
    ) -> dict[tuple[str, str, str], dict[str, int]]:
        """Token totals and record counts per (stream, stage, kind), in that sorted order."""
        ...

    def load_state(
        self, run_id: str, stream: str, t: int | None = None
    ) -> tuple[int, dict[str, Any]] | None:
        """The memory snapshot at step ``t`` of a stream (the latest when ``t`` is None)."""
        ...

    def state_steps(self, run_id: str, stream: str) -> list[int]:
        """The steps of a stream that have a snapshot, ascending."""
        ...
