"""A run as a value: what a protocol hands the driver (docs/design.md §11.1).

A ``run`` command builds one :class:`RunJob`: the model, the sampling, the results directory
and one :class:`PlannedRun` per system. A planned run is its spec (whose hash is the run id)
plus what only the protocol knows: the dataset it stores, the facts it records about itself,
the record kinds that count as its units of work, and how to open a :class:`CellRunner` on a
results store. Everything is built and validated before anything is written, so a bad system
argument or a dead endpoint leaves no results directory behind.

A run's work splits into *cells*: independent pieces with stable ids, each run sequentially
inside (an OAKS document, a SeqMem stream, a CL-Bench arm or rollout, an ImprintBench
instance). Cells share nothing but the store, so an executor may run several at once, in any
order, and the records are the same.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from clstream.core.contracts import Model, System
from clstream.core.specs import ComponentSpec, RunSpec
from clstream.core.types import SamplingParams
from clstream.driver.request import ExecutorChoice, RunRequest
from clstream.models.prompt_parts import PromptParts
from clstream.store.db import ResultsStore


@dataclass(frozen=True)
class Cell:
    """One independent piece of a run: ``id`` is stable across sessions and unique in the run;
    ``total`` is the units of work it holds (probes, records, instances, items)."""

    id: str
    total: int


class Progress(Protocol):
    """What a cell reports its finished units to."""

    def update(self, n: int = 1) -> None: ...


class CellRunner(Protocol):
    """A run opened on a results store: its cells, and how one of them runs.

    ``run_cell`` skips what is committed, commits what it produces as it goes and reports each
    finished unit to ``progress``; it raises :class:`~clstream.core.errors.StreamStopped` when
    a failure ends its cell early (the stored error records say what failed)."""

    def cells(self) -> Sequence[Cell]: ...

    def totals(self) -> Mapping[str, int]:
        """Units of work per counted record kind, over every cell."""
        ...

    async def run_cell(self, cell: Cell, progress: Progress) -> None: ...


@dataclass(frozen=True)
class StoredDataset:
    """The dataset view a run stores with itself (SHA-256, where it came from, its content)."""

    sha256: str
    path: str
    view: dict[str, Any]


@dataclass(frozen=True)
class RunRecipe:
    """How another process plans the same run again: the protocol's name, the request of its
    ``run`` verb (one seed's) and the directory it was given in (relative paths). A worker of
    a remote executor rebuilds the run from it, its model included, and checks that the run
    id comes out the same (:mod:`clstream.driver.shard_worker`)."""

    protocol: str
    request: RunRequest[Any]
    cwd: str


PromptWalk = Callable[[Callable[[list[PromptParts]], None]], Coroutine[Any, Any, bool]]
"""A walk of a run's requests as prompt parts, handed to a sink batch by batch, nothing sent
(:func:`clstream.protocols.oaks.runner.walk_prompts`); it says False where the run's system
cannot be walked so, having handed nothing."""


@dataclass
class PlannedRun:
    """One system's run of one protocol, before anything is written.

    ``units`` maps each record kind that counts as a unit of work to how the result line names
    it (``{"probe": "probes"}``; several kinds are shown one by one); ``error_kinds`` are the
    kinds whose first stored error the failure line quotes. ``open`` gives the run's cell
    runner on the results store; ``cells_at_once`` bounds the cells run together;
    ``before_register`` checks the store before the run is registered (a resume must match);
    ``recipe`` lets a remote executor plan the run again in a worker; ``transcripts``: store
    the model calls of the run (``--transcripts``, :mod:`clstream.store.transcripts`);
    ``walk``: the run's requests without running it, where the protocol can give them
    (:data:`PromptWalk`; ``clstream plan`` counts them, docs/plan.md §2).
    """

    spec: RunSpec
    make_system: Callable[[], System]
    dataset: StoredDataset
    info: dict[str, Any]
    units: Mapping[str, str]
    open: Callable[[ResultsStore], CellRunner]
    error_kinds: tuple[str, ...] = ()
    cells_at_once: int = 1
    before_register: Callable[[ResultsStore], None] | None = None
    recipe: RunRecipe | None = None
    transcripts: bool = True
    walk: PromptWalk | None = None

    @property
    def label(self) -> str:
        return self.spec.system.label


@dataclass
class RunJob:
    """Everything one protocol's ``run`` asks for: its planned runs (one per system) into one
    results directory, with one model. ``unit`` names a unit of work in the failure line
    (singular); ``resume`` is the command that resumes the job. ``endpoints``: the other
    models the runs call (a judge), each with the flag that gives its server and the sampling
    it is asked with, checked with the answering model before anything is registered."""

    protocol: str
    unit: str
    out: str
    model: Model
    sampling: SamplingParams
    systems: list[ComponentSpec]
    runs: list[PlannedRun]
    resume: str
    show_progress: bool = True
    notes: list[str] = field(default_factory=list)
    executor: ExecutorChoice = field(default_factory=ExecutorChoice)
    endpoints: list[tuple[str, Model, SamplingParams]] = field(default_factory=list)


@dataclass
class RunResult:
    """How one run ended: per counted kind (done, total), errors stored, wall seconds of this
    session, whether it resumed a stored run, the message of a failure that stopped a cell
    early (not stored as a record), and the records whose stored payload could not be read
    that are still not redone (:meth:`~clstream.store.db.ResultsStore.mark_unreadable`)."""

    run_id: str
    label: str
    counts: dict[str, tuple[int, int]]
    errors: int
    wall_s: float
    resumed: bool
    stopped: str | None = None
    unreadable: int = 0

    @property
    def done(self) -> int:
        return sum(d for d, _ in self.counts.values())

    @property
    def total(self) -> int:
        return sum(t for _, t in self.counts.values())

    @property
    def complete(self) -> bool:
        """Every unit done and no stored error (a failed verdict leaves a done unit unscored)."""
        return self.stopped is None and self.done >= self.total and self.errors == 0


def first_of_each_run(jobs: Sequence[RunJob]) -> list[RunJob]:
    """``jobs`` with every run kept once, by the first job that names it (docs/design.md
    §11.2): entries spelt differently may still name one run (``rag`` and ``rag:k=8``, a flag
    given at its default, the same system twice), and its run id, the hash of its normal
    form, says so. A job left with no run is dropped; ``systems`` follows ``runs``."""
    seen: set[str] = set()
    kept = []
    for job in jobs:
        job.runs = [run for run in job.runs if run.spec.run_id not in seen]
        seen.update(run.spec.run_id for run in job.runs)
        job.systems = [run.spec.system for run in job.runs]
        if job.runs:
            kept.append(job)
    return kept
