"""The driver's session of one run (:mod:`clstream.driver.execute`): a run that fails before
storing anything leaves no run behind; one that stored something stays, to be resumed."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from clstream.core.records import Record
from clstream.core.specs import ComponentSpec, RunSpec
from clstream.driver.plan import Cell, Progress
from clstream.models.builtin import BuiltinReader
from clstream.store.db import ResultsStore
from clstream.systems.experience import MemoryFree

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "protocols"))
from planned import drive_runner  # noqa: E402


class FailingRunner:
    """One cell that stores ``stored`` records, then raises."""

    def __init__(self, store: ResultsStore, run_id: str, stored: int) -> None:
        self.store, self.run_id, self.stored = store, run_id, stored

    def cells(self) -> Sequence[Cell]:
        return [Cell("only", 2)]

    def totals(self) -> Mapping[str, int]:
        return {"probe": 2}

    async def run_cell(self, cell: Cell, progress: Progress) -> None:
        self.store.put_records(self.run_id, [Record(kind="probe", key=f"p{i}", payload={})
                                             for i in range(self.stored)])
        raise RuntimeError("the runner broke")


def spec(seed: int = 0) -> RunSpec:
    return RunSpec(protocol="toy", dataset_hash="0" * 64, system=ComponentSpec(name="memory-free"),
                   model=ComponentSpec(name="builtin"), seed=seed)


@pytest.mark.parametrize(("stored", "kept"), [(0, False), (1, True)])
def test_a_run_that_fails_before_its_first_record_leaves_no_run(
        tmp_path: Path, stored: int, kept: bool) -> None:
    with ResultsStore(tmp_path / "res", writer=True) as store:
        store.ensure_run("other", "toy", "memory-free", "builtin", "1" * 64, {}, {})
        run, model = spec(), BuiltinReader()
        with pytest.raises(RuntimeError, match="the runner broke"):
            drive_runner(FailingRunner(store, run.run_id, stored), store, run, {"probe": "probes"},
                         model, lambda: MemoryFree(model))
        assert sorted(r.run_id for r in store.runs()) == sorted(
            ["other", *([run.run_id] if kept else [])])
