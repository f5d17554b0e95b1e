"""Results directories written by the schema 1 release stay readable and resumable.

The fixture writes a database exactly as the schema 1 code did: its DDL verbatim, WAL mode, the
same positional inserts and JSON encodings, schema version 1 in ``meta``.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from clstream.core.errors import StoreError
from clstream.core.records import Record
from clstream.core.types import Usage
from clstream.store import schema
from clstream.store.db import DB_NAME, SCHEMA_VERSION, ResultsStore

V1_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    protocol TEXT NOT NULL,
    system TEXT NOT NULL,
    model TEXT NOT NULL,
    dataset_sha256 TEXT NOT NULL,
    spec TEXT NOT NULL,
    info TEXT NOT NULL,
    created_at REAL NOT NULL,
    wall_s REAL NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS datasets (
    sha256 TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    content TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS records (
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    stream TEXT NOT NULL DEFAULT '',
    t INTEGER NOT NULL DEFAULT 0,
    payload TEXT NOT NULL,
    error TEXT,
    stage TEXT NOT NULL DEFAULT 'generate',
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    latency_s REAL NOT NULL DEFAULT 0,
    cache_hit INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    PRIMARY KEY (run_id, kind, key)
);
CREATE TABLE IF NOT EXISTS states (
    run_id TEXT NOT NULL,
    stream TEXT NOT NULL,
    t INTEGER NOT NULL,
    state TEXT NOT NULL,
    PRIMARY KEY (run_id, stream, t)
);
"""

# (run_id, kind, key, stream, t, payload, error, stage, prompt, cached, completion, reasoning,
#  latency_s, cache_hit, created_at): the column order of the schema 1 positional insert.
V1_RECORDS = [
    ("oaks1", "probe", "d1/q0@1", "d1", 1, {"question_id": "d1_q0", "t": 1, "output": "A"},
     None, "generate", 120, 100, 5, 0, 0.25, 1, 1000.0),
    ("oaks1", "probe", "d1/q0@2", "d1", 2, {"question_id": "d1_q0", "t": 2, "output": ""},
     "timeout", "generate", 0, 0, 0, 0, 30.0, 0, 1001.0),
    ("oaks1", "call", "d1/observe@1#0", "d1", 1, {"texts": ["note"]},
     None, "observe", 40, 0, 8, 2, 0.5, 0, 1000.5),
    ("seq1", "online", "1", "online", 1, {"tau": 1, "correct": 1, "output": "x"},
     None, "generate", 10, 0, 3, 0, 0.1, 0, 2000.0),
    ("seq1", "update", "1", "update", 1, {"time_s": 0.01}, None, "update", 0, 0, 0, 0, 0.0, 0,
     2000.1),
    ("seq1", "holdout", "0/h1", "holdout", 0, {"checkpoint": 0, "item": "h1", "correct": 0},
     None, "generate", 7, 0, 1, 0, 0.1, 0, 2000.2),
]
V1_STATES = [
    ("oaks1", "d1", 1, {"chunks": ["c1"]}),
    ("oaks1", "d1", 2, {"chunks": ["c1", "c2"]}),
    ("seq1", "memory", 0, {"full": []}),
]


def write_v1(directory: Path) -> Path:
    """A results directory as the schema 1 release left it."""
    directory.mkdir(parents=True)
    conn = sqlite3.connect(directory / DB_NAME, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(V1_SCHEMA)
    conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", ("1",))
    for run_id, protocol, system, sha in (("oaks1", "oaks", "full", "sha-oaks"),
                                          ("seq1", "seqmem", "exp-rag", "sha-seq")):
        conn.execute(
            "INSERT INTO runs (run_id, protocol, system, model, dataset_sha256, spec, info,"
            " created_at) VALUES (?,?,?,?,?,?,?,?)",
            (run_id, protocol, system, "builtin", sha,
             json.dumps({"system": system}, sort_keys=True),
             json.dumps({"clstream": "0.1"}, sort_keys=True), 999.0),
        )
        conn.execute("UPDATE runs SET wall_s = wall_s + ? WHERE run_id=?", (12.5, run_id))
        conn.execute("INSERT OR IGNORE INTO datasets VALUES (?,?,?)",
                     (sha, f"/data/{sha}.json", json.dumps({"name": sha}, sort_keys=True)))
    for row in V1_RECORDS:
        values = (*row[:5], json.dumps(row[5], sort_keys=True), *row[6:])
        conn.execute("INSERT INTO records VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", values)
    for run_id, stream, t, state in V1_STATES:
        conn.execute("INSERT OR REPLACE INTO states VALUES (?,?,?,?)",
                     (run_id, stream, t, json.dumps(state)))
    conn.close()
    return directory


def _version_on_disk(directory: Path) -> str:
    conn = sqlite3.connect(directory / DB_NAME)
    try:
        return str(conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0])
    finally:
        conn.close()


def _answers(store: ResultsStore) -> dict[str, Any]:
    """Everything a protocol, summary or export asks of a store, as plain values."""
    out: dict[str, Any] = {
        "runs": [r.__dict__ for r in store.runs()],
        "datasets": [store.get_dataset(s) for s in ("sha-oaks", "sha-seq")],
    }
    for run_id in ("oaks1", "seq1"):
        rows = [dict(row) for row in store.iter_records(run_id)]
        out[run_id] = {
            "rows": [{k: v for k, v in row.items()} for row in rows],
            "by_kind": {k: [r["key"] for r in store.iter_records(run_id, k)]
                        for k in ("probe", "call", "online", "update", "holdout")},
            "done": {k: sorted(store.done_keys(run_id, k))
                     for k in ("probe", "call", "online", "holdout")},
            "done_d1": sorted(store.done_keys(run_id, "probe", stream="d1")),
            "count": {(k, e): store.count(run_id, k, errors=e)
                      for k in ("probe", "online") for e in (None, True, False)},
            "usage": store.usage_by_stage(run_id),
            "status": store.run_status(run_id),
            # SQL written against schema 1 (selecting by stream and t) keeps working
            "raw": store.conn.execute(
                "SELECT COUNT(*), SUM(prompt_tokens) FROM records WHERE run_id=? AND t >= 1"
                " AND stream != ''", (run_id,)).fetchone()[:],
        }
    out["states"] = {
        "latest": store.load_state("oaks1", "d1"), "at1": store.load_state("oaks1", "d1", 1),
        "seq": store.load_state("seq1", "memory"), "none": store.load_state("seq1", "nope"),
        "steps": store.state_steps("oaks1", "d1"),
    }
    return out


def test_v1_reads_back_identically_before_and_after_migration(tmp_path: Path) -> None:
    res = write_v1(tmp_path / "res")
    with ResultsStore(res) as reader:  # read-only: reads schema 1 in place, changes nothing
        assert reader.schema_version == 1
        before = _answers(reader)
    assert _version_on_disk(res) == "1"

    # what the schema 1 code answered, checked against the fixture itself
    rows = before["oaks1"]["rows"]
    assert [r["key"] for r in rows] == ["d1/observe@1#0", "d1/q0@1", "d1/q0@2"]
    assert all(r["t"] == r["step"] for r in rows)
    assert all(r[c] is None for r in rows for c in ("rollout", "arm", "sample", "score"))
    assert before["oaks1"]["done"]["probe"] == ["d1/q0@1"]
    assert before["oaks1"]["count"][("probe", True)] == 1
    assert before["oaks1"]["usage"]["generate"]["prompt"] == 120
    assert before["states"]["latest"] == (2, {"chunks": ["c1", "c2"]})
    assert before["runs"][0]["wall_s"] == 12.5

    with ResultsStore(res, writer=True) as writer:  # migrates in place
        assert _answers(writer) == before
    assert _version_on_disk(res) == str(SCHEMA_VERSION)
    with ResultsStore(res) as reader:
        assert reader.schema_version == SCHEMA_VERSION
        assert _answers(reader) == before


def test_v1_resumes_after_migration(tmp_path: Path) -> None:
    res = write_v1(tmp_path / "res")
    with ResultsStore(res, writer=True) as store:
        assert store.ensure_run("oaks1", "oaks", "full", "builtin", "sha-oaks", {}, {}) is True
        store.put_records("oaks1", [
            Record("probe", "d1/q0@1", {"output": "overwritten?"}, stream="d1", t=1),
            Record("probe", "d1/q0@2", {"question_id": "d1_q0", "t": 2, "output": "B"},
                   stream="d1", t=2, usage=Usage(prompt_tokens=9), score=1.0),
            Record("probe", "d1/q0@3", {"output": "C"}, stream="d1", t=3, score=0.0),
        ])
        store.save_state("oaks1", "d1", 3, {"chunks": ["c1", "c2", "c3"]})
        assert store.done_keys("oaks1", "probe") == {"d1/q0@1", "d1/q0@2", "d1/q0@3"}
        assert store.count("oaks1", "probe", errors=True) == 0
        assert store.load_state("oaks1", "d1") == (3, {"chunks": ["c1", "c2", "c3"]})
        rows = {r.key: r for r in store.read_records("oaks1", "probe")}
        assert rows["d1/q0@1"].payload["output"] == "A"  # a success is never overwritten
        assert rows["d1/q0@2"].payload["output"] == "B" and rows["d1/q0@2"].score == 1.0
        assert rows["d1/q0@2"].usage.prompt_tokens == 9
        assert store.count("seq1", "online") == 1  # the other run is untouched
    with ResultsStore(res) as reader:
        assert [r.step for r in reader.read_records("oaks1", "probe")] == [1, 2, 3]


def test_migration_is_one_transaction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    res = write_v1(tmp_path / "res")
    original = schema._migrate_v1

    def migrate_then_die(conn: sqlite3.Connection) -> None:
        original(conn)
        raise KeyboardInterrupt  # a kill after the records table was rebuilt

    monkeypatch.setattr(schema, "_migrate_v1", migrate_then_die)
    with pytest.raises(KeyboardInterrupt):
        ResultsStore(res, writer=True)
    monkeypatch.undo()
    assert _version_on_disk(res) == "1"
    conn = sqlite3.connect(res / DB_NAME)
    columns = [r[1] for r in conn.execute("PRAGMA table_info(records)")]
    conn.close()
    assert "rollout" not in columns
    with ResultsStore(res, writer=True) as store:  # the lock was released; migrating now works
        assert store.count("oaks1", "probe") == 2


def test_v1_without_version_row_is_recognised(tmp_path: Path) -> None:
    res = write_v1(tmp_path / "res")
    conn = sqlite3.connect(res / DB_NAME)
    conn.execute("DELETE FROM meta")
    conn.commit()
    conn.close()
    with ResultsStore(res) as reader:
        assert reader.schema_version == 1
        assert reader.count("oaks1", "probe") == 2
    with ResultsStore(res, writer=True) as writer:
        assert writer.count("oaks1", "probe") == 2
    assert _version_on_disk(res) == str(SCHEMA_VERSION)


@pytest.mark.parametrize("writer", [False, True])
def test_newer_schema_is_refused_in_one_line(tmp_path: Path, writer: bool) -> None:
    ResultsStore(tmp_path / "res", writer=True).close()
    conn = sqlite3.connect(tmp_path / "res" / DB_NAME)
    conn.execute("UPDATE meta SET value='7' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError) as info:
        ResultsStore(tmp_path / "res", writer=writer)
    message = str(info.value)
    assert "\n" not in message
    assert str(tmp_path / "res" / DB_NAME) in message
    assert "schema version 7" in message and str(SCHEMA_VERSION) in message
    assert _version_on_disk(tmp_path / "res") == "7"
    conn = sqlite3.connect(tmp_path / "res" / DB_NAME)
    conn.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    ResultsStore(tmp_path / "res", writer=True).close()  # the refused writer left no lock


def test_writer_refuses_a_foreign_database(tmp_path: Path) -> None:
    (tmp_path / "res").mkdir()
    conn = sqlite3.connect(tmp_path / "res" / DB_NAME)
    conn.execute("CREATE TABLE something (x)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="not a clstream results database"):
        ResultsStore(tmp_path / "res", writer=True)
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / DB_NAME).write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreError, match="not a clstream results database"):
        ResultsStore(tmp_path / "junk", writer=True)
