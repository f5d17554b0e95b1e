"""Each cell of a run names the affinity its requests are routed by.

With several replicas of one model server (``--base-url`` given several times), the OpenAI-
compatible backend sends the requests of one affinity to one replica, so that replica's prefix
cache holds the context they share (:mod:`clstream.models.replicas`). The unit whose requests
share a context is the cell (docs/design.md §11: an OAKS document, a SeqMem task stream, a
CL-Bench instance of one rollout, an ImprintBench item), so every protocol's cell runner is
wrapped here to run each cell under the affinity ``<run id>/<cell id>``: stable across
sessions and reruns of the same spec, distinct between systems (whose prompts share nothing).
Models other than that backend never read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from clstream.driver.plan import Cell, CellRunner, Progress
from clstream.models.replicas import routed_by
from clstream.store.db import ResultsStore


class RoutedCells:
    """A cell runner whose cells each run under their own routing affinity; everything else
    is the wrapped runner's."""

    def __init__(self, run_id: str, runner: CellRunner):
        self._run_id = run_id
        self.runner = runner

    def cells(self) -> Sequence[Cell]:
        return self.runner.cells()

    def totals(self) -> Mapping[str, int]:
        return self.runner.totals()

    async def run_cell(self, cell: Cell, progress: Progress) -> None:
        with routed_by(f"{self._run_id}/{cell.id}"):
            await self.runner.run_cell(cell, progress)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.runner, name)


def routed_cells(run_id: str, open_runner: Callable[[ResultsStore], CellRunner]
                 ) -> Callable[[ResultsStore], CellRunner]:
    """``open_runner`` with its runner's cells routed by ``<run_id>/<cell id>``."""
    return lambda store: RoutedCells(run_id, open_runner(store))
