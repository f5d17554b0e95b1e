"""Records and run rows: what a protocol writes and what a results store gives back.

They live in ``core`` so that every layer (store, protocols, report) speaks of the same
records without importing the store itself.

The coordinates every protocol shares are typed fields rather than payload keys, so that a
metric can select and aggregate them in SQL without decoding JSON: ``stream`` (a document, a
phase, a task), ``t`` (the step within it), ``rollout`` and ``arm`` (CL-Bench: which repetition,
stateful or stateless), ``sample`` (ImprintBench: which of the n samples of an item) and
``score`` (a numeric verdict or reward, where the protocol has one). Everything else stays in
the protocol's own JSON ``payload``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clstream.core.types import GenerationResult, Usage

MEASURED_PAYLOAD_FIELDS = frozenset({"timings", "time_s", "first_token_s", "output_tokens_per_s"})
"""Payload fields that hold wall-clock measurements of how a record was made (SeqMem's
seconds per stage and per memory update, a streamed answer's time to first token and output
rate): like a record's
latency and time stamp, no rerun reproduces them, so the same run's record made twice agrees
without them (``clstream merge``, docs/design.md §11.6)."""


@dataclass(frozen=True)
class Record:
    """One stored record to write: a probe answer, a memory-update call, a task result.

    ``t`` is the step (``None`` where a record has no step; the default 0 is kept for the
    callers written before steps could be absent).
    The fields after ``cache_hit`` are optional coordinates that only some protocols have.
    ``calls`` are the model results the record was made from, where the protocol gives them:
    not stored as such, they tell the store which calls of the transcript served the record
    (:mod:`clstream.store.transcripts`).
    """

    kind: str
    key: str
    payload: dict[str, Any]
    stream: str = ""
    t: int | None = 0
    error: str | None = None
    stage: str = "generate"
    usage: Usage = field(default_factory=Usage)
    cache_hit: bool = False
    rollout: int | None = None
    arm: str | None = None
    sample: int | None = None
    score: float | None = None
    calls: tuple[GenerationResult, ...] = field(default=(), compare=False, repr=False)

    @property
    def step(self) -> int | None:
        """The step, under the name the typed read API uses (``t`` is the keyword)."""
        return self.t


@dataclass(frozen=True)
class StoredRecord:
    """One record as a results store gives it back: typed columns, payload decoded."""

    run_id: str
    kind: str
    key: str
    stream: str
    step: int | None
    rollout: int | None
    arm: str | None
    sample: int | None
    score: float | None
    payload: dict[str, Any]
    error: str | None
    stage: str
    usage: Usage
    cache_hit: bool
    created_at: float

    @property
    def t(self) -> int | None:
        """The step under the name :class:`Record` uses."""
        return self.step

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class RunRow:
    run_id: str
    protocol: str
    system: str
    model: str
    dataset_sha256: str
    spec: dict[str, Any]
    info: dict[str, Any]
    created_at: float
    wall_s: float


@dataclass(frozen=True)
class RunStatus:
    """How far a run got, for listings: record counts per kind, first and last record time.

    ``ok`` and ``errors`` count successful and failed records of each kind (a kind with only
    errors appears in both, with 0 in ``ok``); times are Unix seconds, ``None`` without records.
    """

    run_id: str
    ok: dict[str, int]
    errors: dict[str, int]
    first_record_at: float | None
    last_record_at: float | None
    wall_s: float
    states: int

    @property
    def total_ok(self) -> int:
        return sum(self.ok.values())

    @property
    def total_errors(self) -> int:
        return sum(self.errors.values())
