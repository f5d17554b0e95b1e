"""One cell of a run, carried out in a worker process against a shard store.

What a remote executor (:mod:`clstream.driver.ray_executor`) sends a worker is a
:class:`~clstream.driver.plan.RunRecipe` (the protocol and its run request), the run id, the
cell and the run's stored rows; never a store, a model or a system. The worker plans the run
again from the recipe, exactly as the ``run`` command plans it (the dataset read from its
path, the model built from its spec and backend settings, the systems from theirs), and
refuses to go on when the run id differs: a worker with another clstream or other data would
otherwise store answers under a spec they do not belong to. The cell then runs sequentially
against a private shard seeded with the run's rows (:mod:`clstream.store.shard`), so it skips
and resumes what is stored as a local session does (its model calls captured as a local
cell's are), and the rows it added (the calls with them) go back to the driver, the one
writer, which commits them in one transaction (docs/design.md §5).

A cell that stops early (:class:`~clstream.core.errors.StreamStopped`) or raises still sends
back what it stored before; the driver commits it and then reports the stop or raises the
error, as for a local cell.

For testing retries, :data:`EXIT_FLAG_ENV` names a file: a worker whose cell id is that file's
content removes the file and exits abruptly when the cell finishes its first unit, as a killed
worker would (the retry then finds no file and runs the cell to its end).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import tempfile
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from clstream.core.contracts import Model, open_model
from clstream.core.errors import ClstreamError, StreamStopped
from clstream.core.registry import resolve
from clstream.driver.cells import run_captured
from clstream.driver.plan import Cell, PlannedRun, RunJob, RunRecipe
from clstream.store.db import ResultsStore
from clstream.store.shard import RowChanges, RunRows, seed_shard, shard_changes

EXIT_FLAG_ENV = "CLSTREAM_SHARD_EXIT_FLAG"
KEPT_PLANS = 4  # runs a worker keeps planned (their models loaded) for the next cells


@dataclass
class CellOutcome:
    """What a worker sends back for one cell: the rows it stored, the units it finished, and
    how it ended (``stopped``: the message of a stopped cell; ``error``: what it raised)."""

    cell_id: str
    changes: RowChanges
    units: int
    stopped: str | None = None
    error: BaseException | None = None


class _Units:
    """The cell's progress, counted to be reported by the driver when the rows are in."""

    def __init__(self, cell_id: str) -> None:
        self.cell_id = cell_id
        self.units = 0

    def update(self, n: int = 1) -> None:
        self.units += n
        _exit_if_flagged(self.cell_id)


def _exit_if_flagged(cell_id: str) -> None:
    flag = os.environ.get(EXIT_FLAG_ENV)
    if not flag:
        return
    path = Path(flag)
    try:
        if path.read_text().strip() != cell_id:
            return
        path.unlink()
    except OSError:  # no flag, or another worker took it first
        return
    os._exit(1)


_PLANNED: OrderedDict[bytes, RunJob] = OrderedDict()


@contextlib.contextmanager
def _in_directory(cwd: str) -> Iterator[None]:
    """Relative paths of the request read as in the driver's directory, where it exists here."""
    before = os.getcwd()
    if os.path.isdir(cwd):
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(before)


def planned_run(recipe: RunRecipe, run_id: str) -> tuple[PlannedRun, Model]:
    """The planned run ``run_id`` of ``recipe``, and its model: planned once per worker
    process for the last few recipes (a model is loaded once for all the cells it serves)."""
    key = pickle.dumps((recipe.protocol, recipe.request, recipe.cwd))
    job = _PLANNED.get(key)
    if job is None:
        with _in_directory(recipe.cwd):
            job = resolve("protocol", recipe.protocol).run_command.planned(recipe.request)
        assert isinstance(job, RunJob)
        _PLANNED[key] = job
        while len(_PLANNED) > KEPT_PLANS:
            _PLANNED.popitem(last=False)
    _PLANNED.move_to_end(key)
    for plan in job.runs:
        if plan.spec.run_id == run_id:
            return plan, job.model
    found = ", ".join(p.spec.run_id for p in job.runs) or "none"
    raise ClstreamError(f"a worker planned run ids {found}, not {run_id}: the worker's clstream "
                        "or data differ from the driver's")


def _sendable(error: BaseException) -> BaseException:
    """``error`` when it survives pickling (it goes back to the driver), else its text."""
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:
        return RuntimeError(f"{type(error).__name__}: {error}")


def run_cell_in_shard(recipe: RunRecipe, run_id: str, cell: Cell, seed: RunRows) -> CellOutcome:
    """Run one cell of ``run_id`` against a fresh shard seeded with ``seed``; the rows it
    added come back in the outcome (module docstring)."""
    plan, model = planned_run(recipe, run_id)
    units = _Units(cell.id)
    stopped: str | None = None
    error: BaseException | None = None
    with tempfile.TemporaryDirectory(prefix="clstream-shard-") as folder, \
            ResultsStore(folder, writer=True) as shard:
        seed_shard(shard, seed)
        runner = plan.open(shard)

        async def run() -> None:
            async with open_model(model):
                await run_captured(plan, runner, cell, shard, units)

        try:
            with _in_directory(recipe.cwd):
                asyncio.run(run())
        except StreamStopped as exc:
            stopped = str(exc)
        except Exception as exc:
            error = _sendable(exc)
        changes = shard_changes(shard, seed)
    return CellOutcome(cell.id, changes, units.units, stopped, error)
