"""Typed record columns (step, rollout, arm, sample, score) round-trip and select."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from clstream.core.records import Record, StoredRecord
from clstream.core.types import Usage
from clstream.store.db import DB_NAME, ResultsStore


def _episodes() -> list[Record]:
    """CL-Bench-shaped records: two rollouts of the stateful arm, one stateless."""
    out = []
    for arm, rollouts in (("stateful", (1, 2)), ("stateless", (0,))):
        for rollout in rollouts:
            for step in (1, 2):
                out.append(Record(
                    kind="instance", key=f"{arm}/{rollout}/{step}", stream="task-a", t=step,
                    payload={"instance_id": f"i{step}"}, rollout=rollout, arm=arm,
                    score=0.5 * step, usage=Usage(prompt_tokens=step, latency_s=0.1),
                ))
    return out


def test_typed_columns_round_trip(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "res", writer=True) as store:
        store.ensure_run("r", "clbench", "notepad", "builtin", "sha", {}, {})
        store.put_records("r", _episodes())
        store.put_records("r", [
            Record("item", f"q1#{i}", {"output": str(i)}, stream="news", t=None, sample=i,
                   score=float(i % 2))
            for i in range(3)
        ])
    with ResultsStore(tmp_path / "res") as store:
        got = list(store.read_records("r", "instance", arm="stateful", rollout=2))
        assert [(r.step, r.t, r.rollout, r.arm, r.score) for r in got] == [
            (1, 1, 2, "stateful", 0.5), (2, 2, 2, "stateful", 1.0)]
        assert isinstance(got[0], StoredRecord) and got[0].ok
        assert got[0].payload == {"instance_id": "i1"} and got[0].usage.prompt_tokens == 1
        items = list(store.read_records("r", "item"))
        assert [(r.step, r.sample, r.score) for r in items] == [(None, 0, 0.0), (None, 1, 1.0),
                                                              (None, 2, 0.0)]
        assert [r["sample"] for r in store.iter_records("r", "item", sample=1)] == [1]
        row = next(store.iter_records("r", "instance", step=2, arm="stateless"))
        assert (row["t"], row["step"], row["rollout"], row["score"]) == (2, 2, 0, 1.0)
        assert store.count("r", "instance", arm="stateless") == 2
        assert store.count("r", "instance", rollout=1, errors=False) == 2
        assert store.done_keys("r", "instance", "task-a", rollout=0) == {
            "stateless/0/1", "stateless/0/2"}
        # aggregation straight in SQL, no JSON decoding
        mean = store.conn.execute(
            "SELECT AVG(score) FROM records WHERE run_id='r' AND kind='instance' AND arm=?",
            ("stateful",)).fetchone()[0]
        assert mean == 0.75


def test_existing_record_calls_are_unchanged(tmp_path: Path) -> None:
    rec = Record("probe", "q@1", {"output": "x"}, stream="d", t=3, error=None,
                 stage="generate", usage=Usage(), cache_hit=True)
    assert rec.step == 3 and all(v is None for v in (rec.rollout, rec.arm, rec.sample, rec.score))
    assert Record("call", "k", {}).t == 0  # the default step stays 0, as before
    with ResultsStore(tmp_path / "res", writer=True) as store:
        store.put_records("r", [rec])
        row = next(store.iter_records("r", "probe"))
        assert (row["stream"], row["t"], row["cache_hit"]) == ("d", 3, 1)


def test_a_retry_replaces_every_column_of_an_error(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "res", writer=True) as store:
        store.put_records("r", [Record("instance", "k", {}, t=1, rollout=1, arm="stateful",
                                       error="env crashed")])
        store.put_records("r", [Record("instance", "k", {"reward": 1}, t=1, rollout=1,
                                       arm="stateful", score=1.0)])
        store.put_records("r", [Record("instance", "k", {}, t=1, rollout=1, arm="stateful",
                                       score=0.0)])  # a success is kept
        (rec,) = store.read_records("r")
        assert (rec.error, rec.score, rec.payload) == (None, 1.0, {"reward": 1})


def test_indexes_serve_per_run_per_kind_reads(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "res", writer=True) as store:
        store.put_records("r", _episodes())
    conn = sqlite3.connect(tmp_path / "res" / DB_NAME)
    plan = " ".join(str(r[-1]) for r in conn.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM records WHERE run_id=? AND kind=?"
        " ORDER BY stream, t, key", ("r", "instance")))
    conn.close()
    assert "records_by_kind" in plan and "TEMP B-TREE" not in plan
