"""Memory snapshots stored as deltas (clstream.store.snapshots): every step loads back exactly
as saved, a memory that grows by appending stores only what it appended, loading reads each
row once when steps are read in order, and databases whose snapshots are all whole (schema
version 2) still load."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from clstream.core.records import Record
from clstream.store import snapshots
from clstream.store.db import DB_NAME, SCHEMA_VERSION, ResultsStore
from clstream.store.snapshots import apply_delta, json_delta


def states(steps: int) -> list[dict[str, Any]]:
    """A conversation memory that grows by one turn per step, with a counter that changes."""
    return [{"method": "icl", "memory": {
        "turns": [{"role": "user", "text": f"passage {i} " + "word " * 40} for i in range(t)],
        "next_index": t}} for t in range(1, steps + 1)]


def rows(store: ResultsStore, run: str = "r", stream: str = "s") -> list[sqlite3.Row]:
    return store.conn.execute("SELECT t, base, state FROM states WHERE run_id=? AND stream=?"
                              " ORDER BY t", (run, stream)).fetchall()


def save_all(store: ResultsStore, saved: list[dict[str, Any]]) -> None:
    for t, state in enumerate(saved, 1):
        store.save_state("r", "s", t, state)


@pytest.mark.parametrize("old, new", [
    ({"a": [1, 2], "b": "x", "c": {"d": 1}}, {"a": [1, 2, 3], "b": "y", "c": {"d": 1, "e": [2]}}),
    ({"a": [1, 2], "gone": 1}, {"a": [2]}),
    ([1, 2, 3, 4], [3, 4, 5]),
    ([1, 2, 1, 2], [1, 2, 9]),
    ([1, 2], []),
    ([], [1]),
    ({"a": None}, {"a": {"b": []}}),
    ("s", 3),
])
def test_a_delta_rebuilds_the_new_value(old: Any, new: Any) -> None:
    delta = json.loads(json.dumps(json_delta(old, new)))
    assert apply_delta(old, delta) == new


def test_a_list_trimmed_at_its_head_stores_the_count_and_the_tail() -> None:
    assert json_delta([1, 2, 3, 4], [3, 4, 5]) == {"drop": 2, "append": [5]}
    assert json_delta([1, 2], [1, 2, 3]) == {"append": [3]}


def test_every_step_loads_back_exactly(tmp_path: Path) -> None:
    saved = states(40)
    saved[20]["memory"]["next_index"] = 20.0  # equal to 20 but not the same JSON
    saved[30]["memory"] = {"next_index": 3, "turns": saved[30]["memory"]["turns"]}  # key order
    with ResultsStore(tmp_path, writer=True) as store:
        save_all(store, saved)
        assert store.load_state("r", "s") == (40, saved[-1])
    with ResultsStore(tmp_path) as reader:  # nothing held in memory: every chain is read
        for t in [40, 3, 17, 31, 21, 1]:
            loaded = reader.load_state("r", "s", t)
            assert loaded is not None and loaded[0] == t
            assert json.dumps(loaded[1]) == json.dumps(saved[t - 1])
        assert reader.load_state("r", "s", 41) is None and reader.load_state("r", "x") is None


def test_appended_turns_are_stored_once(tmp_path: Path) -> None:
    saved = states(64)
    with ResultsStore(tmp_path, writer=True) as store:
        save_all(store, saved)
        stored = rows(store)
    # Whole copies only where the deltas since the last one outgrow the state: ever further
    # apart, so their bytes are a bounded share of the total.
    whole = [r["t"] for r in stored if r["base"] is None]
    assert whole[0] == 1 and all(b > 2 * a for a, b in zip(whole, whole[1:], strict=False))
    assert all(r["base"] == r["t"] - 1 for r in stored if r["t"] not in whole)
    deltas = [len(r["state"]) for r in stored if r["t"] not in whole]
    assert max(deltas) <= min(deltas) + 8  # one turn and a counter each, whatever the step
    assert sum(len(r["state"]) for r in stored) < 3 * len(json.dumps(saved[-1]))


def test_deltas_since_a_whole_copy_stay_within_its_size(tmp_path: Path) -> None:
    # Half the memory is rewritten each step: deltas are half a state, so the chain from the
    # last whole copy is cut every other step or so, and reading a step reads little.
    saved = [{"notes": f"{t} " * 300, "log": list(range(t))} for t in range(1, 30)]
    with ResultsStore(tmp_path, writer=True) as store:
        save_all(store, saved)
        stored = rows(store)
    by_step = {r["t"]: r for r in stored}
    for r in stored:
        chain, step = 0, r["t"]
        while by_step[step]["base"] is not None:
            chain += len(by_step[step]["state"])
            step = by_step[step]["base"]
        assert chain <= len(json.dumps(saved[r["t"] - 1]))
    assert sum(1 for r in stored if r["base"] is None) > 3


def test_reading_steps_in_order_reads_each_row_once(tmp_path: Path) -> None:
    with ResultsStore(tmp_path, writer=True) as store:
        save_all(store, states(30))
    with ResultsStore(tmp_path) as reader:
        reads: list[str] = []
        reader.conn.set_trace_callback(reads.append)
        for t in range(1, 31):
            assert reader.load_state("r", "s", t) is not None
        assert sum("SELECT state, base" in sql for sql in reads) == 30


def test_a_loaded_state_is_the_callers_to_change(tmp_path: Path) -> None:
    saved = states(3)
    with ResultsStore(tmp_path, writer=True) as store:
        save_all(store, saved)
        first = store.load_state("r", "s", 3)
        assert first is not None
        first[1]["memory"]["turns"].clear()
        assert store.load_state("r", "s", 3) == (3, saved[2])
        store.save_state("r", "s", 4, {"memory": {"turns": []}})
        assert store.load_state("r", "s", 4) == (4, {"memory": {"turns": []}})


def test_a_step_written_again_keeps_later_steps(tmp_path: Path) -> None:
    saved = states(6)
    with ResultsStore(tmp_path, writer=True) as store:
        save_all(store, saved)
        store.save_state("r", "s", 3, {"replaced": True}, [Record("call", "k", {"x": 1})])
        assert store.load_state("r", "s", 3) == (3, {"replaced": True})
        for t in (4, 5, 6):
            assert store.load_state("r", "s", t) == (t, saved[t - 1])
        assert store.count("r", "call") == 1
    with ResultsStore(tmp_path) as reader:
        assert reader.load_state("r", "s", 6) == (6, saved[5])


def test_streams_runs_and_deleted_runs_are_apart(tmp_path: Path) -> None:
    with ResultsStore(tmp_path, writer=True) as store:
        store.ensure_run("r", "oaks", "icl", "builtin", "sha", {}, {})
        for t in range(1, 4):
            store.save_state("r", "a", t, {"x": [t] * t})
            store.save_state("r", "b", t, {"x": [-t]})
        assert store.load_state("r", "a", 3) == (3, {"x": [3, 3, 3]})
        assert store.load_state("r", "b", 2) == (2, {"x": [-2]})
        store.delete_run("r")
        assert store.load_state("r", "a") is None
        store.save_state("r", "a", 1, {"y": 1})
        assert store.load_state("r", "a", 1) == (1, {"y": 1})


def test_the_held_states_are_few(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshots, "HELD_STREAMS", 2)
    with ResultsStore(tmp_path, writer=True) as store:
        for t in range(1, 4):
            for stream in "abcd":
                store.save_state("r", stream, t, {"s": stream, "t": list(range(t))})
        assert len(store._chains._held) == 2
        for stream in "abcd":
            assert store.load_state("r", stream) == (3, {"s": stream, "t": [0, 1, 2]})


def _as_version_2(directory: Path) -> None:
    """Make the database what a version 2 release wrote: no ``base`` column."""
    conn = sqlite3.connect(directory / DB_NAME)
    conn.execute("ALTER TABLE states DROP COLUMN base")
    conn.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    conn.commit()
    conn.close()


def test_a_version_2_database_loads_and_is_brought_up(tmp_path: Path) -> None:
    with ResultsStore(tmp_path, writer=True) as store:
        for t, state in enumerate(states(3), 1):
            store.conn.execute("INSERT INTO states (run_id, stream, t, state) VALUES (?,?,?,?)",
                               ("r", "s", t, json.dumps(state)))
    _as_version_2(tmp_path)
    with ResultsStore(tmp_path) as reader:
        assert reader.schema_version == 2
        assert reader.load_state("r", "s", 2) == (2, states(3)[1])
    with ResultsStore(tmp_path, writer=True) as store:
        assert store.load_state("r", "s") == (3, states(3)[2])
        store.save_state("r", "s", 4, states(4)[3])
        assert rows(store)[-1]["base"] == 3
    with ResultsStore(tmp_path) as reader:
        assert reader.schema_version == SCHEMA_VERSION
        assert [reader.load_state("r", "s", t) for t in (1, 4)] \
            == [(1, states(4)[0]), (4, states(4)[3])]
