"""Where the cells of a run are carried out: the executors and one captured cell.

:class:`LocalExecutor` runs a run's cells as asyncio tasks in this process, at most
``cells_at_once`` together; a :class:`ShardExecutor` (:mod:`clstream.driver.ray_executor`)
carries them out elsewhere and hands back their rows. :func:`run_captured` runs one cell with
its model calls captured, in this process (:mod:`clstream.driver.execute`) as in a worker
(:mod:`clstream.driver.shard_worker`). They live apart from the driver so that the driver, the
Ray executor and the shard worker each import them, and none of those imports another back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, runtime_checkable

from clstream.core.errors import StreamStopped
from clstream.core.transcripts import capturing
from clstream.driver.plan import Cell, CellRunner, PlannedRun, Progress
from clstream.store.db import ResultsStore


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


async def run_captured(plan: PlannedRun, runner: CellRunner, cell: Cell, store: ResultsStore,
                       progress: Progress) -> None:
    """Run one cell with its model calls captured (where the run keeps transcripts): the
    store writes each call with the records it served (:mod:`clstream.store.transcripts`);
    calls that served none are stored when the cell ends, and dropped if it fails, as their
    resume makes them again."""
    with capturing(plan.transcripts) as capture:
        await runner.run_cell(cell, progress)
        if capture is not None:
            store.put_calls(plan.spec.run_id, capture.drain())
