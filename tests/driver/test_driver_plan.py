"""Planned runs: a run named by several jobs is kept once, by the first job that names it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from clstream.driver.plan import RunJob, first_of_each_run


def _job(*run_ids: str) -> Any:
    runs = [SimpleNamespace(spec=SimpleNamespace(run_id=r, system=f"system-{r}"))
            for r in run_ids]
    return SimpleNamespace(runs=runs, systems=[r.spec.system for r in runs])


def test_each_run_is_kept_once_by_its_first_job() -> None:
    first, second, third = _job("a", "b"), _job("b", "c", "a"), _job("c")
    kept = first_of_each_run(cast(list[RunJob], [first, second, third]))
    assert kept == [first, second]  # the third names only a run kept already
    assert [r.spec.run_id for r in second.runs] == ["c"]
    assert second.systems == ["system-c"]
    assert [r.spec.run_id for r in first.runs] == ["a", "b"]
