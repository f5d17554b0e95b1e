"""The driver's session of one run (:mod:`clstream.driver.execute`): a run that fails before
storing anything leaves no run behind; one that stored something stays, to be resumed."""

from __future__ import annotations

import asyncio
import sys
import types
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from clstream.core.records import Record
from clstream.core.specs import ComponentSpec, RunSpec
from clstream.driver import execute
from clstream.driver.execute import unreadable_line
from clstream.driver.plan import Cell, Progress, RunResult
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


class ProbeRunner:
    """Three probes in one cell; ``redo``: the stored probes not done are answered again (as
    a runner keyed by done records does), else the cell skips once any record is stored (as a
    stream keyed by memory snapshots does). ``wait_s``: seconds each probe awaits."""

    def __init__(self, store: ResultsStore, run_id: str, redo: bool = True,
                 wait_s: float = 0.0) -> None:
        self.store, self.run_id, self.redo, self.wait_s = store, run_id, redo, wait_s
        self.wall_seen: list[float] = []

    def cells(self) -> Sequence[Cell]:
        return [Cell("only", 3)]

    def totals(self) -> Mapping[str, int]:
        return {"probe": 3}

    async def run_cell(self, cell: Cell, progress: Progress) -> None:
        if not self.redo and self.store.count(self.run_id, "probe"):
            return
        done = self.store.done_keys(self.run_id, "probe")
        for key in ("p0", "p1", "p2"):
            if key not in done:
                await asyncio.sleep(self.wait_s)
                self.store.put_records(self.run_id, [Record(kind="probe", key=key,
                                                            payload={"answer": key})])
                self.wall_seen.append(self.store.get_run(self.run_id).wall_s)
                progress.update(1)


def _drive_probes(store: ResultsStore, runner: ProbeRunner) -> RunResult:
    model = BuiltinReader()
    return drive_runner(runner, store, spec(), {"probe": "probes"}, model,
                        lambda: MemoryFree(model))


@pytest.mark.parametrize("redo", [True, False])
def test_a_resume_redoes_records_whose_payload_cannot_be_read(tmp_path: Path,
                                                              redo: bool) -> None:
    with ResultsStore(tmp_path / "res", writer=True) as store:
        run_id = spec().run_id
        assert _drive_probes(store, ProbeRunner(store, run_id, redo)).complete
        store.conn.execute("UPDATE records SET payload='{broken' WHERE key='p1'")
        result = _drive_probes(store, ProbeRunner(store, run_id, redo))
        assert result.complete is redo and result.unreadable == (0 if redo else 1)
        assert result.errors == (0 if redo else 1)
        payload = next(store.read_records(run_id, "probe", errors=None)).payload
        assert payload == {"answer": "p0"}
        if not redo:  # what to do instead is said
            assert f"(clstream runs rm res {run_id})" in unreadable_line(result, "res")


def test_wall_time_is_stored_as_the_run_goes_and_summed_over_sessions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(execute, "SAVE_EVERY_S", 0.01)
    with ResultsStore(tmp_path / "res", writer=True) as store:
        run_id = spec().run_id
        runner = ProbeRunner(store, run_id, wait_s=0.05)
        _drive_probes(store, runner)
        assert runner.wall_seen[-1] > 0  # saved while the session still ran (a kill keeps it)
        first = store.get_run(run_id).wall_s
        store.add_wall_time(run_id, 100.0)  # earlier sessions' time is kept, not replaced
        # A session whose clock stands still adds nothing, so the total is exact.
        monkeypatch.setattr(execute, "time", types.SimpleNamespace(perf_counter=lambda: 7.0))
        _drive_probes(store, ProbeRunner(store, run_id))  # nothing left to do
        assert store.get_run(run_id).wall_s == 100.0 + first
