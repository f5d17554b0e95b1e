"""``--executor ray``: the cells of a run carried out on a Ray cluster, written by the driver.

Why this shape (docs/design.md §5, one writer per results directory): every cell goes to the
cluster as one Ray task holding what rebuilds it (the run's
:class:`~clstream.driver.plan.RunRecipe`, the cell, the run's stored rows, put in the object
store once per run); the task plans the run again in its worker, runs the cell sequentially
against a private shard store and returns the rows it added
(:mod:`clstream.driver.shard_worker`). This process, the only writer, commits each cell's rows
in one transaction as its task ends, so the results database, the run ids and every export are
those a local run gives, and a rerun resumes from the same stored rows.

A worker that dies (its process killed, its machine lost) loses the cell's rows not yet sent:
Ray runs the task again, up to :data:`TASK_RETRIES` times, from what is committed, so nothing
committed is redone and nothing is stored twice. An exception the cell raises is not retried:
the rows it stored come back with it, are committed, and the exception ends the run as in a
local run.

Cells in flight: every cell of a run is submitted at once and the cluster runs as many as it
has CPUs (one each); the protocol's own bound (``--docs-in-flight``) applies to local runs.
Without ``--ray-address`` a local cluster is started for the run (``--ray-workers`` CPUs, no
dashboard) and stopped after it; a process already connected to Ray uses that connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from types import ModuleType, TracebackType
from typing import Any

from clstream.core.errors import ClstreamError, SpecError
from clstream.driver.cells import LocalExecutor
from clstream.driver.flags import RAY_MISSING
from clstream.driver.plan import Cell, PlannedRun, Progress
from clstream.driver.shard_worker import CellOutcome, run_cell_in_shard
from clstream.driver.signals import SIGNALS
from clstream.store.db import ResultsStore
from clstream.store.shard import read_run_rows

TASK_RETRIES = 3
"""Times a cell's task is run again after its worker died."""
WAIT_S = 0.5  # how long one wait for finished tasks blocks (a cancelled run stops within it)


def import_ray() -> ModuleType:
    """The ray module, or the one-line error naming the extra that installs it."""
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise SpecError(RAY_MISSING) from None


@contextlib.contextmanager
def _signal_handlers_kept() -> Iterator[None]:
    """Connecting to Ray installs its own handler for SIGTERM (a failure handler in its core
    library that ends the process with status 15); the run's handlers are put back after, so
    SIGINT and SIGTERM still stop the run as :mod:`clstream.driver.signals` says (exit 130 or
    143, committed work kept, the resume command printed). Only the main thread sets
    handlers, and only those set from Python can be put back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    kept = {signum: signal.getsignal(signum) for signum in SIGNALS}
    try:
        yield
    finally:
        for signum, handler in kept.items():
            if handler is not None:
                signal.signal(signum, handler)


class RayExecutor:
    """Runs each cell of a run as a Ray task against a shard (module docstring). Use it as a
    context manager: entering connects to the cluster (or starts a local one), leaving
    disconnects (and stops the cluster it started)."""

    def __init__(self, address: str | None = None, workers: int | None = None) -> None:
        self.address, self.workers = address, workers
        self._connected = False
        self._task: Any = None

    def __enter__(self) -> RayExecutor:
        ray = import_ray()
        if not ray.is_initialized():
            quiet: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
            with _signal_handlers_kept():
                if self.address is not None:
                    ray.init(address=self.address, **quiet)
                else:  # "local": never an unrelated cluster found on this machine
                    ray.init(address="local", num_cpus=self.workers,
                             include_dashboard=False, **quiet)
            self._connected = True
        self._task = ray.remote(num_cpus=1, max_retries=TASK_RETRIES,
                                retry_exceptions=False)(run_cell_in_shard)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._connected:
            import_ray().shutdown()
            self._connected = False

    async def run_cells(self, cells: Sequence[Cell],
                        run_cell: Callable[[Cell], Awaitable[None]], limit: int) -> list[str]:
        """Cells that come without a recipe (a runner built in this process, not by a
        ``run`` command) cannot be planned in a worker: they run here."""
        return await LocalExecutor().run_cells(cells, run_cell, limit)

    async def run_shards(self, plan: PlannedRun, store: ResultsStore, cells: Sequence[Cell],
                         progress: Progress) -> list[str]:
        """Every cell of ``plan`` as a task; each one's rows committed as it ends. Returns the
        messages of the cells that stopped early, in cell order."""
        if self._task is None or plan.recipe is None:
            raise ClstreamError("the Ray executor runs cells of a run command inside its block")
        ray = import_ray()
        run_id = plan.spec.run_id
        seed = ray.put(read_run_rows(store, run_id))
        index = {self._task.remote(plan.recipe, run_id, cell, seed): i
                 for i, cell in enumerate(cells)}
        pending = list(index)
        stopped: dict[int, str] = {}
        try:
            while pending:
                done, pending = await asyncio.to_thread(
                    ray.wait, pending, num_returns=1, timeout=WAIT_S)
                for ref in done:
                    outcome = self._outcome(ray, ref, cells[index[ref]])
                    store.put_rows(run_id, outcome.changes.records, outcome.changes.states,
                                   outcome.changes.transcripts)
                    progress.update(outcome.units)
                    if outcome.error is not None:
                        raise outcome.error
                    if outcome.stopped is not None:
                        stopped[index[ref]] = outcome.stopped
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)
        return [stopped[i] for i in sorted(stopped)]

    @staticmethod
    def _outcome(ray: ModuleType, ref: Any, cell: Cell) -> CellOutcome:
        try:
            outcome = ray.get(ref)
        except ray.exceptions.RayError as exc:
            text = " ".join(str(exc).split())[:300]
            raise ClstreamError(f"cell {cell.id}: its Ray task failed after "
                                f"{TASK_RETRIES} retries: {type(exc).__name__}: {text}") from None
        assert isinstance(outcome, CellOutcome)
        return outcome
