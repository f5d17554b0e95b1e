"""The local executor: at most ``limit`` cells at once; a stopped cell ends alone and its
message comes back in cell order; any other failure ends the run with that error."""

from __future__ import annotations

import asyncio

import pytest

from clstream.core.errors import StreamStopped
from clstream.driver.cells import LocalExecutor
from clstream.driver.plan import Cell

CELLS = [Cell(f"c{i}", 1) for i in range(6)]


def test_no_more_cells_than_the_limit_run_together_and_stops_come_back_in_order() -> None:
    running: list[str] = []
    most = 0
    finished: list[str] = []

    async def run_cell(cell: Cell) -> None:
        nonlocal most
        running.append(cell.id)
        most = max(most, len(running))
        await asyncio.sleep(0)
        running.remove(cell.id)
        if cell.id in ("c4", "c1"):
            raise StreamStopped(f"{cell.id} stopped")
        finished.append(cell.id)

    stopped = asyncio.run(LocalExecutor().run_cells(CELLS, run_cell, limit=2))
    assert stopped == ["c1 stopped", "c4 stopped"]
    assert most == 2
    assert sorted(finished) == ["c0", "c2", "c3", "c5"]


def test_a_failure_that_is_not_a_stop_ends_the_run_with_it() -> None:
    async def run_cell(cell: Cell) -> None:
        if cell.id == "c3":
            raise ValueError("broken cell")

    with pytest.raises(ValueError, match="broken cell"):
        asyncio.run(LocalExecutor().run_cells(CELLS, run_cell, limit=1))
