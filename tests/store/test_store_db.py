import sqlite3
from pathlib import Path

import pytest

from clstream.core.errors import StoreError
from clstream.core.types import Usage
from clstream.store.db import Record, ResultsStore


def _new(tmp_path: Path) -> ResultsStore:
    store = ResultsStore(tmp_path / "res", writer=True)
    store.ensure_run("r1", "oaks", "full", "builtin", "sha", {"a": 1}, {"v": 1})
    return store


def test_records_are_committed_once_and_errors_retried(tmp_path: Path) -> None:
    store = _new(tmp_path)
    ok = Record("probe", "q@1", {"output": "first"}, stream="d", t=1, usage=Usage(prompt_tokens=5))
    err = Record("probe", "q@2", {"output": ""}, stream="d", t=2, error="timeout")
    store.put_records("r1", [ok, err])
    assert store.done_keys("r1", "probe") == {"q@1"}
    # a success is never overwritten; a stored error is replaced by the retry
    store.put_records("r1", [Record("probe", "q@1", {"output": "second"}, stream="d", t=1),
                             Record("probe", "q@2", {"output": "fixed"}, stream="d", t=2)])
    rows = {r["key"]: r for r in store.iter_records("r1", "probe")}
    assert '"first"' in rows["q@1"]["payload"] and '"fixed"' in rows["q@2"]["payload"]
    assert rows["q@2"]["error"] is None
    assert store.count("r1", "probe") == 2
    assert store.usage_by_stage("r1")["generate"]["prompt"] == 5
    store.close()


def test_single_writer_lock(tmp_path: Path) -> None:
    store = _new(tmp_path)
    with pytest.raises(StoreError, match="another clstream process"):
        ResultsStore(tmp_path / "res", writer=True)
    reader = ResultsStore(tmp_path / "res")  # readers need no lock
    assert [r.run_id for r in reader.runs()] == ["r1"]
    reader.close()
    store.close()
    ResultsStore(tmp_path / "res", writer=True).close()  # lock released


def test_states_and_resume_flag(tmp_path: Path) -> None:
    store = _new(tmp_path)
    assert store.ensure_run("r1", "oaks", "full", "builtin", "sha", {}, {}) is True
    call = Record("call", "d/observe@1#0", {"texts": ["x"]}, stream="d", t=1, stage="observe")
    store.save_state("r1", "d", 1, {"m": [1]}, [call])
    store.save_state("r1", "d", 2, {"m": [1, 2]})
    assert store.load_state("r1", "d") == (2, {"m": [1, 2]})
    assert store.load_state("r1", "d", 1) == (1, {"m": [1]})
    assert store.state_steps("r1", "d") == [1, 2]
    assert store.count("r1", "call") == 1
    store.close()


def test_reader_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no results database"):
        ResultsStore(tmp_path)
    (tmp_path / "results.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreError, match="not a clstream results database"):
        ResultsStore(tmp_path)


def test_wal_mode(tmp_path: Path) -> None:
    store = _new(tmp_path)
    conn = sqlite3.connect(tmp_path / "res" / "results.sqlite")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    store.close()


def test_records_whose_payload_does_not_decode_become_failed_records(tmp_path: Path) -> None:
    store = _new(tmp_path)
    store.put_records("r1", [Record("probe", f"q{i}", {"output": i, "score": float("nan")})
                             for i in range(4)]
                      + [Record("probe", "q9", {"output": ""}, error="timeout")])
    store.conn.execute("UPDATE records SET payload='{broken' WHERE key IN ('q1', 'q3', 'q9')")
    assert sorted(store.unreadable_records("r1")) == [("probe", "q1"), ("probe", "q3"),
                                                      ("probe", "q9")]
    assert store.mark_unreadable("r1") == 3
    assert store.unreadable_records("r1") == [] and store.mark_unreadable("r1") == 0
    assert store.done_keys("r1", "probe") == {"q0", "q2"}  # NaN decodes: it is no damage
    assert store.count_unreadable("r1") == 2 and store.count_unreadable("r1", ["other"]) == 0
    rows = {r.key: r for r in store.read_records("r1", "probe")}  # every payload decodes
    assert rows["q1"].payload == {"unreadable_payload": "{broken"}
    assert rows["q9"].error == "timeout"  # an error already stored is kept
    store.put_records("r1", [Record("probe", "q1", {"output": 1})])  # a redo replaces it
    assert store.count_unreadable("r1") == 1 and "q1" in store.done_keys("r1", "probe")


@pytest.mark.parametrize(("field", "text"), [("spec", "{x"), ("info", "[1]"), ("spec", "null")])
def test_a_run_whose_stored_json_was_damaged_is_one_error_and_can_be_deleted(
        tmp_path: Path, field: str, text: str) -> None:
    store = _new(tmp_path)
    store.conn.execute(f"UPDATE runs SET {field}=? WHERE run_id='r1'", (text,))
    store.conn.commit()
    for read in (store.runs, lambda: store.get_run("r1")):
        with pytest.raises(StoreError, match=f"run 'r1': the stored {field} is not a JSON"):
            read()
    assert store.has_run("r1") and store.delete_run("r1")["runs"] == 1
    assert store.runs() == []
    store.close()


def test_run_specs_after_reads_only_the_runs_stored_since(tmp_path: Path) -> None:
    store = _new(tmp_path)
    store.ensure_run("r2", "oaks", "rag", "builtin", "sha", {"b": 2}, {})
    store.ensure_run("r3", "seqmem", "rag", "builtin", "sha", {"c": 3}, {})
    rows = store.run_specs_after("oaks", 0)
    assert [(run_id, spec) for _, run_id, spec in rows] == [("r1", '{"a": 1}'), ("r2", '{"b": 2}')]
    assert [run_id for _, run_id, _ in store.run_specs_after("oaks", rows[0][0])] == ["r2"]
    store.close()
