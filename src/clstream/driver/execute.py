"""The one driver of every run: register, skip committed work, run cells through an executor,
progress, transport log, wall time, the result lines, the failure line and the exit status.

A protocol's ``run`` command builds a :class:`~clstream.driver.plan.RunJob` from its flags and
calls :func:`drive`; nothing else of a run is the protocol's own (docs/design.md
§11.1). For each planned run, in order: the endpoint is checked before anything is written;
then the dataset is stored, the run registered (a resume when its id is stored), and its
cells handed to the executor; the wall time of the session and the transport's history are
stored however the session ends.

Executors: :class:`LocalExecutor` runs a run's cells as asyncio tasks in this process, at most
``cells_at_once`` together. A cell that raises :class:`~clstream.core.errors.StreamStopped`
ends alone (its siblings go on); any other exception ends the run at once. A
:class:`ShardExecutor` (``--executor ray``, :mod:`clstream.driver.ray_executor`) carries cells
out elsewhere and hands back their rows, which this process commits: it stays the one writer.

A run goes through :func:`run_interruptible`, where SIGTERM (``kill``, a scheduler's preemption,
``timeout``) interrupts it as Ctrl-C does, so the driver's cleanup records the wall time spent
so far before the process ends (SIGKILL leaves no chance to: that session's time is lost, its
stored answers are not).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

from clstream.core.contracts import open_model
from clstream.core.errors import StreamStopped
from clstream.driver.components import register_run, run_info
from clstream.driver.failures import Failure, finish, first_error
from clstream.driver.plan import Cell, CellRunner, PlannedRun, Progress, RunJob, RunResult
from clstream.driver.preflight import check_context, check_endpoint
from clstream.driver.progress import Notes, progress_bar
from clstream.driver.transport import TRANSPORT_STREAM, TransportLog
from clstream.store.db import ResultsStore

T = TypeVar("T")


class Executor(Protocol):
    """Runs the cells of one run. ``run_cell`` commits what it produces; the executor returns
    the messages of the cells that stopped early, in cell order."""

    async def run_cells(self, cells: Sequence[Cell],
                        run_cell: Callable[[Cell], Awaitable[None]], limit: int) -> list[str]: ...


@runtime_checkable
class ShardExecutor(Protocol):
    """An executor that carries a run's cells out away from the store: it plans each cell's
    run again from ``plan.recipe``, and commits the rows each cell hands back into ``store``
    itself (one transaction per cell), reporting the cell's units to ``progress``."""

    async def run_cells(self, cells: Sequence[Cell],
                        run_cell: Callable[[Cell], Awaitable[None]], limit: int) -> list[str]: ...

    async def run_shards(self, plan: PlannedRun, store: ResultsStore, cells: Sequence[Cell],
                         progress: Progress) -> list[str]: ...


class LocalExecutor:
    """Bounded parallelism in this process: at most ``limit`` cells at once, as asyncio tasks."""

    async def run_cells(self, cells: Sequence[Cell],
                        run_cell: Callable[[Cell], Awaitable[None]], limit: int) -> list[str]:
        gate = asyncio.Semaphore(max(1, limit))
        stopped: dict[int, str] = {}

        async def one(index: int, cell: Cell) -> None:
            async with gate:
                try:
                    await run_cell(cell)
                except StreamStopped as exc:
                    stopped[index] = str(exc)

        try:
            async with asyncio.TaskGroup() as group:
                for index, cell in enumerate(cells):
                    group.create_task(one(index, cell))
        except ExceptionGroup as failed:  # the first failure, as a sequential run raises it
            raise failed.exceptions[0] from None
        return [stopped[i] for i in sorted(stopped)]


class _Silent:
    def update(self, n: int = 1) -> None:
        pass


def run_interruptible(coro: Awaitable[T]) -> T:
    """``asyncio.run(coro)``, except that SIGTERM cancels ``coro`` the way Ctrl-C does (its
    cleanup runs: the driver records the wall time spent), then raises KeyboardInterrupt."""
    interrupted = False

    async def main() -> T | None:
        nonlocal interrupted
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        stopped = False

        def stop() -> None:
            nonlocal stopped
            stopped = True
            if task is not None:
                task.cancel()

        try:
            loop.add_signal_handler(signal.SIGTERM, stop)
            installed = True
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            installed = False
        try:
            return await coro
        except asyncio.CancelledError:
            if not stopped:
                raise
            interrupted = True
            return None
        finally:
            if installed:
                loop.remove_signal_handler(signal.SIGTERM)

    result = asyncio.run(main())
    if interrupted:
        raise KeyboardInterrupt
    return cast(T, result)


def _counts(store: ResultsStore, run_id: str, totals: dict[str, int]) -> dict[str, int]:
    return {kind: store.count(run_id, kind, errors=False) for kind in totals}


async def execute_run(plan: PlannedRun, runner: CellRunner, store: ResultsStore, model: Any,
                      *, executor: Executor | None = None, show_progress: bool = True,
                      resumed: bool = False, notes: Notes | None = None) -> RunResult:
    """Run every cell of one registered run; the session's wall time and transport history
    are stored however it ends."""
    start = time.perf_counter()
    run_id = plan.spec.run_id
    cells = list(runner.cells())
    totals = {kind: int(runner.totals().get(kind, 0)) for kind in plan.units}
    before = _counts(store, run_id, totals)
    bar = (progress_bar(sum(totals.values()), sum(before.values()), plan.label, notes)
           if show_progress else None)
    progress = bar if bar is not None else _Silent()
    transport = TransportLog(model)
    saver = asyncio.create_task(transport.keep_saved(store, run_id))
    executor = executor or LocalExecutor()
    try:
        if isinstance(executor, ShardExecutor) and plan.recipe is not None:
            stopped = await executor.run_shards(plan, store, cells, progress)
        else:
            async with open_model(model):  # one connection pool for every cell
                stopped = await executor.run_cells(
                    cells, lambda cell: runner.run_cell(cell, progress), plan.cells_at_once)
    finally:
        saver.cancel()
        if bar is not None:
            bar.close()
        store.add_wall_time(run_id, time.perf_counter() - start)
        transport.save(store, run_id)
    after = _counts(store, run_id, totals)
    # Units that failed, and any other record the run needs that failed (an LLM verdict):
    # each leaves the run incomplete, to be retried by a rerun.
    errors = sum(store.count(run_id, kind, errors=True)
                 for kind in dict.fromkeys([*totals, *plan.error_kinds]))
    return RunResult(run_id, plan.label, {k: (after[k], totals[k]) for k in totals},
                     errors + len(stopped), time.perf_counter() - start, resumed,
                     stopped[0] if stopped else None)


def result_line(result: RunResult, units: dict[str, str]) -> str:
    """``ran full (1a2b...): 120/120 probes, 0 errors, 1.2s`` (several kinds: each named)."""
    state = ("stopped" if result.stopped is not None
             else "resumed" if result.resumed else "ran")
    if len(result.counts) == 1:
        ((kind, (done, total)),) = result.counts.items()
        counts = f"{done}/{total} {units[kind]}"
    else:
        counts = ", ".join(f"{units[k]} {d}/{t}" for k, (d, t) in result.counts.items())
    return (f"{state} {result.label} ({result.run_id}): {counts}, {result.errors} errors, "
            f"{result.wall_s:.1f}s")


def _failure(store: ResultsStore, plan: PlannedRun, result: RunResult) -> Failure:
    failed = result.errors
    return Failure(result.label, result.run_id, failed,
                   max(0, result.total - result.done - failed), result.total,
                   result.stopped or first_error(store, result.run_id, plan.error_kinds))


def register_planned(plan: PlannedRun, store: ResultsStore, model: Any) -> bool:
    """Store the dataset and register the run; True when its id was stored (a resume)."""
    store.put_dataset(plan.dataset.sha256, plan.dataset.path, plan.dataset.view)
    if plan.before_register is not None:
        plan.before_register(store)
    return register_run(store, plan.spec, plan.dataset.sha256,
                        run_info(model, plan.make_system(), plan.info))


def run_planned(plan: PlannedRun, store: ResultsStore, model: Any, *,
                executor: Executor | None = None, show_progress: bool = True,
                notes: Notes | None = None) -> RunResult:
    """Register one planned run and run its cells into an open store."""
    resumed = register_planned(plan, store, model)
    try:
        return run_interruptible(execute_run(plan, plan.open(store), store, model,
                                             executor=executor, show_progress=show_progress,
                                             resumed=resumed, notes=notes))
    except BaseException:
        if not resumed:
            forget_if_empty(store, plan.spec.run_id)
        raise


def forget_if_empty(store: ResultsStore, run_id: str) -> None:
    """Remove a run registered by a session that failed before storing anything of it (no
    record, no memory snapshot; what its transport sent is all it has), so that a command that
    fails at once leaves no empty run behind. Best effort: on a full disk the run stays, empty,
    and a rerun resumes it."""
    try:
        status = store.run_status(run_id)
        if not sum(status.ok.values()) + sum(status.errors.values()) and status.states == len(
                store.state_steps(run_id, TRANSPORT_STREAM)):
            store.delete_run(run_id)
    except (OSError, sqlite3.Error):
        pass


def _crashed(store: ResultsStore, plan: PlannedRun, error: Exception) -> Failure:
    """A run that raised, as a failure: its stored units so far, and the exception as its
    first error."""
    text = " ".join(str(error).split()) or "no message"
    try:
        status = store.run_status(plan.spec.run_id)
        done, failed = status.total_ok, status.total_errors
    except Exception:  # best effort: the run may be gone (nothing of it was stored)
        done, failed = 0, 0
    return Failure(plan.label, plan.spec.run_id, failed, 0, done + failed,
                   f"{type(error).__name__}: {text}")


def run_job(job: RunJob, store: ResultsStore, executor: Executor | None = None,
            said: set[str] | None = None, keep_going: bool = False) -> list[Failure]:
    """Every planned run of ``job`` into an open store, with a result line each; returns the
    failures. The job's notes not in ``said`` (those printed already) come with the first
    progress or result line (:class:`~clstream.driver.progress.Notes`). With ``keep_going``
    (a matrix, docs/design.md §11.5) a run that raises is one failure and the next run goes
    on; otherwise the exception ends everything."""
    failures: list[Failure] = []
    said = set() if said is None else said
    notes = Notes([note for note in job.notes if note not in said])
    said.update(job.notes)
    for plan in job.runs:
        try:
            result = run_planned(plan, store, job.model, executor=executor,
                                 show_progress=job.show_progress, notes=notes)
        except Exception as error:
            if not keep_going:
                raise
            notes.flush()
            failure = _crashed(store, plan, error)
            print(f"failed {plan.label} ({plan.spec.run_id}): {failure.first_error}",
                  file=sys.stderr)
            failures.append(failure)
            continue
        notes.flush()
        print(result_line(result, dict(plan.units)), file=sys.stderr)
        if not result.complete:
            failures.append(_failure(store, plan, result))
    return failures


@contextlib.contextmanager
def chosen_executor(jobs: Sequence[RunJob], given: Executor | None) -> Iterator[Executor | None]:
    """``given``, else the executor the jobs' flags choose (``--executor``; the first job's,
    as they share one command line), open for the block: a Ray cluster is connected to, or
    started, before anything is written, and let go of after the last run."""
    choice = jobs[0].executor if jobs else None
    if given is not None or choice is None or choice.kind == "local":
        yield given
        return
    from clstream.driver.ray_executor import RayExecutor

    with RayExecutor(choice.address, choice.workers) as ray_executor:
        yield ray_executor


def drive(jobs: RunJob | Sequence[RunJob], executor: Executor | None = None,
          resume: str | None = None, keep_going: bool = False) -> int:
    """Run ``jobs`` (one protocol's, or several from a spec file or a matrix) and end as every
    run ends: the results directory printed on stdout, exit status 0; or, when any run left
    work undone, :class:`~clstream.driver.failures.RunFailed` (exit 3) with the resume
    command. ``keep_going``: a run that raises does not stop the others (:func:`run_job`)."""
    jobs = [jobs] if isinstance(jobs, RunJob) else list(jobs)
    # A dead endpoint, or a system too big for its context, fails here, before any writing.
    checked: set[tuple[int, str, str]] = set()  # a model shared by several jobs is asked once
    for job in jobs:
        for flag, model, sampling in [("--base-url", job.model, job.sampling), *job.endpoints]:
            key = (id(model), flag, sampling.model_dump_json())
            if key not in checked:
                checked.add(key)
                check_endpoint(model, sampling, (), flag)
        check_context(job.model, job.sampling, job.systems)
    failures: list[tuple[RunJob, list[Failure]]] = []
    said: set[str] = set()  # notes shared by several jobs are printed once
    with chosen_executor(jobs, executor) as chosen:
        for job in jobs:
            with ResultsStore(job.out, writer=True) as store:
                failed = run_job(job, store, chosen, said, keep_going)
            if failed:
                failures.append((job, failed))
    if failures:
        protocols = {job.protocol for job, _ in failures}
        units = {job.unit for job, _ in failures}
        finish(protocols.pop() if len(protocols) == 1 and resume is None else None,
               units.pop() if len(units) == 1 else "unit",
               [f for _, fs in failures for f in fs],
               resume or failures[0][0].resume)
    for out in dict.fromkeys(job.out for job in jobs):
        print(out)
    return 0
