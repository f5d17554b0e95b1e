"""One runner driven through the real driver, for tests that build a runner by hand."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from clstream.core.contracts import Model, System
from clstream.core.specs import RunSpec
from clstream.driver.execute import run_planned
from clstream.driver.plan import CellRunner, PlannedRun, RunResult, StoredDataset
from clstream.store.db import ResultsStore


def drive_runner(runner: CellRunner, store: ResultsStore, spec: RunSpec,
                 units: Mapping[str, str], model: Model, make_system: Callable[[], System], *,
                 cells_at_once: int = 1, view: dict[str, Any] | None = None) -> RunResult:
    """Register ``spec`` and run every cell of ``runner`` (opened on ``store``), no progress."""
    plan = PlannedRun(spec, make_system, StoredDataset(spec.dataset_hash, "test", view or {}),
                      {}, dict(units), lambda _store: runner, cells_at_once=cells_at_once)
    return run_planned(plan, store, model, show_progress=False)
