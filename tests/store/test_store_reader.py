"""A results store is what protocols read through: the reader interface of
:mod:`clstream.core.reader`, with no way to write."""

from __future__ import annotations

import inspect
from pathlib import Path

from clstream.core.reader import ResultsReader
from clstream.core.types import Usage
from clstream.store.db import Record, ResultsStore

WRITERS = ("ensure_run", "add_wall_time", "put_dataset", "put_records", "save_state",
           "delete_run", "rename_run", "close")


def _members(cls: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(cls) if not name.startswith("_")}


def test_a_store_is_a_results_reader(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "res", writer=True) as store:
        store.ensure_run("r1", "seqmem", "awm", "builtin", "sha", {}, {})
        assert isinstance(store, ResultsReader)
    with ResultsStore(tmp_path / "res") as reader:
        assert isinstance(reader, ResultsReader)
        assert reader.dir == tmp_path / "res"


def test_the_reader_interface_has_no_writer() -> None:
    reader = _members(ResultsReader)
    assert reader - {"dir"} <= _members(ResultsStore)  # ``dir`` is set on each store
    assert not reader & set(WRITERS)
    assert "conn" not in reader  # no way around the interface to raw SQL


def test_usage_by_stream_stage_kind(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "res", writer=True) as store:
        store.ensure_run("r1", "seqmem", "awm", "builtin", "sha", {}, {})
        store.put_records("r1", [
            Record("online", "a", {}, stream="online", stage="generate",
                   usage=Usage(prompt_tokens=5, completion_tokens=2)),
            Record("call", "b", {}, stream="update", stage="update",
                   usage=Usage(prompt_tokens=7, cached_tokens=3, reasoning_tokens=1)),
            Record("call", "c", {}, stream="update", stage="update",
                   usage=Usage(prompt_tokens=1)),
            Record("holdout", "d", {}, stream="holdout", stage="generate"),
        ])
        usage = store.usage_by_stream_stage_kind("r1")
    assert list(usage) == [("holdout", "generate", "holdout"), ("online", "generate", "online"),
                           ("update", "update", "call")]
    assert usage[("update", "update", "call")] == {
        "prompt": 8, "cached": 3, "completion": 0, "reasoning": 1, "records": 2}
    assert usage[("online", "generate", "online")]["completion"] == 2


def test_an_untouched_reader_leaves_no_file_behind(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "res", writer=True) as store:
        store.ensure_run("r1", "seqmem", "awm", "builtin", "sha", {}, {})
    before = sorted(p.name for p in (tmp_path / "res").iterdir())
    with ResultsStore(tmp_path / "res", untouched=True) as reader:
        assert [r.run_id for r in reader.runs()] == ["r1"]
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) == before
    with ResultsStore(tmp_path / "res") as reader:  # a plain reader makes SQLite's WAL index
        assert [r.run_id for r in reader.runs()] == ["r1"]
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) != before
