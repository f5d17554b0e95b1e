"""Run management: delete, rename and status leave every other run untouched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clstream.core.errors import StoreError
from clstream.core.records import Record
from clstream.store.db import ResultsStore


def _fill(store: ResultsStore) -> None:
    for run_id, sha in (("a", "sha-shared"), ("b", "sha-shared"), ("c", "sha-own")):
        store.put_dataset(sha, f"/{sha}.json", {"n": sha})
        store.ensure_run(run_id, "oaks", f"sys-{run_id}", "builtin", sha, {"id": run_id}, {})
        store.add_wall_time(run_id, 2.0)
        store.put_records(run_id, [
            Record("probe", "q@1", {"output": run_id}, stream="d", t=1),
            Record("probe", "q@2", {"output": ""}, stream="d", t=2, error="timeout"),
            Record("call", "d/observe@1#0", {}, stream="d", t=1, stage="observe"),
        ])
        store.save_state(run_id, "d", 1, {"m": run_id})


def _snapshot(store: ResultsStore, run_id: str) -> dict[str, Any]:
    return {
        "records": [{k: row[k] for k in row.keys() if k != "run_id"}
                    for row in store.iter_records(run_id)],
        "states": store.load_state(run_id, "d"),
    }


def test_delete_run_removes_exactly_that_run(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "res", writer=True) as store:
        _fill(store)
        before = {r: _snapshot(store, r) for r in ("a", "c")}
        assert store.delete_run("b") == {"records": 3, "states": 1, "runs": 1, "datasets": 0}
        assert [r.run_id for r in store.runs()] == ["a", "c"]
        assert {r: _snapshot(store, r) for r in ("a", "c")} == before
        assert list(store.iter_records("b")) == [] and store.load_state("b", "d") is None
        assert store.get_dataset("sha-shared")[1] == {"n": "sha-shared"}  # "a" still uses it
        assert store.delete_run("c")["datasets"] == 1
        with pytest.raises(StoreError, match="sha-own is not stored"):
            store.get_dataset("sha-own")
        with pytest.raises(StoreError, match=r"no run 'zz' \(runs here: a\)"):
            store.delete_run("zz")
        assert _snapshot(store, "a") == before["a"]


def test_rename_run_moves_everything(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "res", writer=True) as store:
        _fill(store)
        before = {r: _snapshot(store, r) for r in ("a", "b")}
        store.rename_run("a", "a2", spec={"id": "a2", "canonical": True})
        assert [r.run_id for r in store.runs()] == ["a2", "b", "c"]
        assert _snapshot(store, "a2") == before["a"]
        assert _snapshot(store, "b") == before["b"]
        assert store.get_run("a2").spec == {"canonical": True, "id": "a2"}
        assert list(store.iter_records("a")) == [] and store.state_steps("a", "d") == []
        store.rename_run("b", "b2")
        assert store.get_run("b2").spec == {"id": "b"}  # kept when no spec is given
        with pytest.raises(StoreError, match="already used"):
            store.rename_run("a2", "c")
        with pytest.raises(StoreError, match="no run 'a'"):
            store.rename_run("a", "x")
        assert _snapshot(store, "c")["states"] == (1, {"m": "c"})
        # an orphan record under the target id also blocks the rename
        store.put_records("orphan", [Record("probe", "k", {})])
        with pytest.raises(StoreError, match="already used"):
            store.rename_run("c", "orphan")
        assert store.get_run("c").run_id == "c"


def test_run_status_counts(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "res", writer=True) as store:
        _fill(store)
    with ResultsStore(tmp_path / "res") as store:
        status = store.run_status("a")
        assert status.ok == {"call": 1, "probe": 1}
        assert status.errors == {"call": 0, "probe": 1}
        assert (status.total_ok, status.total_errors, status.states) == (2, 1, 1)
        assert status.wall_s == 2.0
        assert status.first_record_at is not None and status.last_record_at is not None
        assert status.first_record_at <= status.last_record_at
        with pytest.raises(StoreError, match="opened read-only"):
            store.delete_run("a")
        with pytest.raises(StoreError, match="opened read-only"):
            store.rename_run("a", "z")
    with ResultsStore(tmp_path / "res", writer=True) as store:
        store.ensure_run("empty", "oaks", "s", "m", "sha-own", {}, {})
        status = store.run_status("empty")
        assert status.ok == {} and status.first_record_at is None and status.total_ok == 0
