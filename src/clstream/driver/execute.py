"""The one driver of every run: register, skip committed work, run cells through an executor,
progress, transport log, wall time, the result lines, the failure line and the exit status.

A protocol's ``run`` command builds a :class:`~clstream.driver.plan.RunJob` from its flags and
calls :func:`drive`; nothing else of a run is the protocol's own (docs/design.md
§11.1). For each planned run, in order: the endpoint is checked before anything is written;
then the dataset is stored, the run registered (a resume when its id is stored; records whose
stored payload cannot be read are then made failed records, so they are redone like any
failed one), and its cells handed to the executor; the wall time of the session and the
transport's history are stored as it goes and however it ends, so a run's stored wall time
is the sum of its sessions' and a resume with nothing left to do adds next to nothing.

Executors (:mod:`clstream.driver.cells`): a
:class:`~clstream.driver.cells.LocalExecutor` runs a run's cells as asyncio tasks in this
process, at most ``cells_at_once`` together. A cell that raises
:class:`~clstream.core.errors.StreamStopped` ends alone (its siblings go on); any other
exception ends the run at once. A :class:`~clstream.driver.cells.ShardExecutor`
(``--executor ray``, :mod:`clstream.driver.ray_executor`) carries cells out elsewhere and hands
back their rows, which this process commits: it stays the one writer.

Every model call of a cell is captured for the transcripts
(:func:`~clstream.driver.cells.run_captured`, unless the run's ``--transcripts none``): the
store writes each call in the transaction of the records it served
(:mod:`clstream.store.transcripts`).

A run goes through :func:`run_interruptible`, where SIGINT and SIGTERM (``kill``, a
scheduler's preemption, ``timeout``) stop it within seconds (:mod:`clstream.driver.signals`),
so the driver's cleanup records the wall time spent so far before the process ends (SIGKILL
leaves no chance to: that session's last few seconds are lost, its stored answers are not).
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import sqlite3
import sys
import time
from collections.abc import Awaitable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from clstream.core.contracts import open_model
from clstream.core.outputs import is_file_dataset, refuse_datasets
from clstream.driver.cells import Executor, LocalExecutor, ShardExecutor, run_captured
from clstream.driver.components import register_run, run_info
from clstream.driver.failures import Failure, finish, first_error
from clstream.driver.plan import CellRunner, PlannedRun, RunJob, RunResult
from clstream.driver.preflight import check_context, check_endpoint
from clstream.driver.progress import Notes, progress_bar
from clstream.driver.signals import stopping_on_signals
from clstream.driver.transport import SAVE_EVERY_S, TRANSPORT_STREAM, TransportLog
from clstream.store.db import ResultsStore

T = TypeVar("T")


class _Silent:
    def update(self, n: int = 1) -> None:
        pass


def run_interruptible(coro: Awaitable[T]) -> T:
    """``asyncio.run(coro)`` inside :func:`~clstream.driver.signals.stopping_on_signals`:
    SIGINT or SIGTERM cancels ``coro`` (its cleanup runs: the driver stores the wall time
    spent), and the block raises :class:`~clstream.core.errors.Interrupted`."""
    tasks: list[asyncio.Task[object]] = []
    with stopping_on_signals() as stopper:
        async def main() -> T:
            tasks.append(cast("asyncio.Task[object]", asyncio.current_task()))
            if stopper is not None:
                stopper.attach(asyncio.get_running_loop(), tasks[0])
            try:
                return await coro
            finally:
                if stopper is not None:
                    stopper.detach()

        try:
            return asyncio.run(main())
        except asyncio.CancelledError:
            if stopper is None or stopper.signum is None:
                raise
            raise KeyboardInterrupt from None
        except KeyboardInterrupt:
            # Forced out of a cell (signals.GRACE_S): the run's task ended with this very
            # exception, which is taken here so asyncio does not report it as unretrieved.
            for task in tasks:
                if task.done() and not task.cancelled():
                    task.exception()
            raise


class WallClock:
    """The wall time of one session of a run, added to the run's stored total as it goes
    (every :data:`~clstream.driver.transport.SAVE_EVERY_S` seconds and when the session
    ends), so the total sums every process's time, and one killed mid-run (even by SIGKILL)
    loses only its last few seconds."""

    def __init__(self, store: ResultsStore, run_id: str) -> None:
        self._store, self._run_id = store, run_id
        self.started = self._saved = time.perf_counter()

    def save(self) -> None:
        now = time.perf_counter()
        self._store.add_wall_time(self._run_id, now - self._saved)
        self._saved = now

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started


async def _keep_saved(transport: TransportLog, clock: WallClock, store: ResultsStore,
                      run_id: str) -> None:
    """The transport log and the wall time saved every few seconds until cancelled."""
    while True:
        await asyncio.sleep(SAVE_EVERY_S)
        clock.save()
        transport.save(store, run_id)


def _counts(store: ResultsStore, run_id: str, totals: dict[str, int]) -> dict[str, int]:
    return {kind: store.count(run_id, kind, errors=False) for kind in totals}


async def execute_run(plan: PlannedRun, runner: CellRunner, store: ResultsStore, model: Any,
                      *, executor: Executor | None = None, show_progress: bool = True,
                      resumed: bool = False, notes: Notes | None = None) -> RunResult:
    """Run every cell of one registered run; the session's wall time and transport history
    are stored however it ends."""
    run_id = plan.spec.run_id
    clock = WallClock(store, run_id)
    cells = list(runner.cells())
    totals = {kind: int(runner.totals().get(kind, 0)) for kind in plan.units}
    before = _counts(store, run_id, totals)
    bar = (progress_bar(sum(totals.values()), sum(before.values()), plan.label, notes)
           if show_progress else None)
    progress = bar if bar is not None else _Silent()
    transport = TransportLog(model)
    saver = asyncio.create_task(_keep_saved(transport, clock, store, run_id))
    executor = executor or LocalExecutor()
    try:
        if isinstance(executor, ShardExecutor) and plan.recipe is not None:
            stopped = await executor.run_shards(plan, store, cells, progress)
        else:
            async with open_model(model):  # one connection pool for every cell
                stopped = await executor.run_cells(
                    cells, lambda cell: run_captured(plan, runner, cell, store, progress),
                    plan.cells_at_once)
    finally:
        saver.cancel()
        if bar is not None:
            bar.close()
        clock.save()
        transport.save(store, run_id)
    after = _counts(store, run_id, totals)
    # Units that failed, and any other record the run needs that failed (an LLM verdict):
    # each leaves the run incomplete, to be retried by a rerun.
    counted = dict.fromkeys([*totals, *plan.error_kinds])
    errors = sum(store.count(run_id, kind, errors=True) for kind in counted)
    # A record whose stored payload could not be read is not done whatever its kind.
    unreadable = store.count_unreadable(run_id)
    errors += unreadable - store.count_unreadable(run_id, counted)
    return RunResult(run_id, plan.label, {k: (after[k], totals[k]) for k in totals},
                     errors + len(stopped), clock.elapsed, resumed,
                     stopped[0] if stopped else None, unreadable)


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


def unreadable_line(result: RunResult, out: str) -> str:
    """What to do about records whose stored payload could not be read and that this session
    did not redo. A session that ended with nothing else failed went through all its work, so
    its runner does not redo them (a sequential stream's step, which later steps were built on):
    only running the run again from the start does."""
    n = result.unreadable
    head = (f"clstream: {result.label} ({result.run_id}): {n} record{'s' if n != 1 else ''}"
            f" whose stored payload could not be read {'were' if n != 1 else 'was'} not redone")
    if result.stopped is not None or result.errors > n:
        return f"{head}; the resume redoes {'them' if n != 1 else 'it'}"
    return (f"{head}, and a resume does not redo {'them' if n != 1 else 'it'}; delete the run"
            f" ({shlex.join(['clstream', 'runs', 'rm', out, result.run_id])}) and run it again")


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
    """Register one planned run and run its cells into an open store. On a resume, records
    whose stored payload cannot be read become failed records first, so the runner redoes
    them as it redoes any failed one (a note says how many)."""
    resumed = register_planned(plan, store, model)
    unreadable = store.mark_unreadable(plan.spec.run_id) if resumed else 0
    if unreadable:
        line = (f"clstream: {plan.label} ({plan.spec.run_id}): {unreadable} stored record"
                f"{'s' if unreadable != 1 else ''} could not be read; redoing them")
        if notes is not None:
            notes.lines.append(line)
        else:
            print(line, file=sys.stderr)
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
        if result.unreadable:
            print(unreadable_line(result, job.out), file=sys.stderr)
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
    command. ``keep_going``: a run that raises does not stop the others (:func:`run_job`).
    SIGINT or SIGTERM stops it within seconds (:mod:`clstream.driver.signals`): committed
    work kept, :class:`~clstream.core.errors.Interrupted` raised with the resume command."""
    jobs = [jobs] if isinstance(jobs, RunJob) else list(jobs)
    with stopping_on_signals(resume or (jobs[0].resume if jobs else None)):
        return _drive(jobs, executor, resume, keep_going)


def _drive(jobs: list[RunJob], executor: Executor | None, resume: str | None,
           keep_going: bool) -> int:
    # A results directory inside the data it is made from, a dead endpoint, or a system too
    # big for its context, fails here, before any writing.
    for job in jobs:
        refuse_datasets(job.out, Path(job.out).resolve(), dict.fromkeys(
            run.dataset.path for run in job.runs if is_file_dataset(run.dataset.path)),
            "this run reads")
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
