"""The results database of a run directory: SQLite in WAL mode with exactly one writer.

Why this shape (DESIGN.md, "Lessons"): every answer is committed as it is produced, so a run
killed at any point (even SIGKILL) loses at most the answers of the batch in flight; rerunning
the same spec finds what is done by primary key and never redoes or duplicates it. One writer
per directory is enforced with an advisory file lock, so two processes can never interleave
writes ("database is locked" was a known failure of other harnesses); readers (summary, export,
report) open the database read-only and need no lock.

Records are generic across protocols: ``(run_id, kind, key)`` is unique, the protocol-specific
content lives in a JSON ``payload``, and token usage sits in columns so totals are one query.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from clstream.core.errors import StoreError
from clstream.core.records import Record, RunRow

DB_NAME = "results.sqlite"
LOCK_NAME = ".writer.lock"
SCHEMA_VERSION = 1

_SCHEMA = """
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


class ResultsStore:
    """A results directory. ``writer=True`` takes the directory's writer lock."""

    def __init__(self, directory: str | Path, writer: bool = False):
        self.dir = Path(directory)
        self.path = self.dir / DB_NAME
        self.writer = writer
        self._lock_fh: Any = None
        if writer:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._take_lock()
            self.conn = sqlite3.connect(self.path, isolation_level=None)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.executescript(_SCHEMA)
            self._check_version()
        else:
            if not self.path.exists():
                raise StoreError(f"{self.dir}: no results database ({DB_NAME}) in this directory")
            self.conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, isolation_level=None)
            try:
                self.conn.execute("SELECT 1 FROM runs LIMIT 1")
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"{self.path}: not a clstream results database ({exc})") from None
        self.conn.row_factory = sqlite3.Row

    # -- lifecycle -------------------------------------------------------------------------
    def _take_lock(self) -> None:
        fh = open(self.dir / LOCK_NAME, "a+")  # noqa: SIM115 - held for the store's lifetime
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            raise StoreError(
                f"{self.dir}: another clstream process is writing to this directory"
            ) from None
        self._lock_fh = fh

    def _check_version(self) -> None:
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None:
            self.conn.execute(
                "INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
        elif int(row[0]) != SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: schema version {row[0]}, this clstream reads {SCHEMA_VERSION}"
            )

    def close(self) -> None:
        self.conn.close()
        if self._lock_fh is not None:
            fcntl.flock(self._lock_fh, fcntl.LOCK_UN)
            self._lock_fh.close()
            self._lock_fh = None

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- runs and datasets -----------------------------------------------------------------
    def ensure_run(
        self,
        run_id: str,
        protocol: str,
        system: str,
        model: str,
        dataset_sha256: str,
        spec: dict[str, Any],
        info: dict[str, Any],
    ) -> bool:
        """Create the run if new; returns True when it already existed (a resume)."""
        existing = self.conn.execute("SELECT 1 FROM runs WHERE run_id=?", (run_id,)).fetchone()
        if existing:
            return True
        self.conn.execute(
            "INSERT INTO runs (run_id, protocol, system, model, dataset_sha256, spec, info,"
            " created_at) VALUES (?,?,?,?,?,?,?,?)",
            (run_id, protocol, system, model, dataset_sha256, json.dumps(spec, sort_keys=True),
             json.dumps(info, sort_keys=True), time.time()),
        )
        return False

    def add_wall_time(self, run_id: str, seconds: float) -> None:
        self.conn.execute("UPDATE runs SET wall_s = wall_s + ? WHERE run_id=?", (seconds, run_id))

    def put_dataset(self, sha256: str, path: str, content: dict[str, Any]) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO datasets VALUES (?,?,?)",
            (sha256, path, json.dumps(content, sort_keys=True)),
        )

    def get_dataset(self, sha256: str) -> tuple[str, dict[str, Any]]:
        row = self.conn.execute(
            "SELECT path, content FROM datasets WHERE sha256=?", (sha256,)
        ).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: dataset {sha256[:12]} is not stored")
        return row["path"], json.loads(row["content"])

    def runs(self, protocol: str | None = None) -> list[RunRow]:
        sql = "SELECT * FROM runs" + (" WHERE protocol=?" if protocol else "") + " ORDER BY created_at"
        rows = self.conn.execute(sql, (protocol,) if protocol else ()).fetchall()
        return [
            RunRow(r["run_id"], r["protocol"], r["system"], r["model"], r["dataset_sha256"],
                   json.loads(r["spec"]), json.loads(r["info"]), r["created_at"], r["wall_s"])
            for r in rows
        ]

    # -- records ---------------------------------------------------------------------------
    def put_records(self, run_id: str, records: Iterable[Record]) -> int:
        """Commit records in one transaction. A successful record is never overwritten; a
        stored error is replaced by a new attempt (that is how resume retries failures)."""
        rows = list(records)
        if not rows:
            return 0
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            n = self._insert(run_id, rows)
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return n

    def _insert(self, run_id: str, records: list[Record]) -> int:
        now = time.time()
        rows = [
            (run_id, r.kind, r.key, r.stream, r.t, json.dumps(r.payload, sort_keys=True),
             r.error, r.stage, r.usage.prompt_tokens, r.usage.cached_tokens,
             r.usage.completion_tokens, r.usage.reasoning_tokens, r.usage.latency_s,
             int(r.cache_hit), now)
            for r in records
        ]
        cur = self.conn.executemany(
            "INSERT INTO records VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT (run_id, kind, key) DO UPDATE SET "
            "payload=excluded.payload, error=excluded.error, stage=excluded.stage, "
            "prompt_tokens=excluded.prompt_tokens, cached_tokens=excluded.cached_tokens, "
            "completion_tokens=excluded.completion_tokens, "
            "reasoning_tokens=excluded.reasoning_tokens, latency_s=excluded.latency_s, "
            "cache_hit=excluded.cache_hit, created_at=excluded.created_at "
            "WHERE records.error IS NOT NULL",
            rows,
        )
        return cur.rowcount

    def done_keys(self, run_id: str, kind: str, stream: str | None = None) -> set[str]:
        """Keys of successful records (errors are not done: resume retries them)."""
        sql = "SELECT key FROM records WHERE run_id=? AND kind=? AND error IS NULL"
        args: tuple[Any, ...] = (run_id, kind)
        if stream is not None:
            sql += " AND stream=?"
            args += (stream,)
        return {row[0] for row in self.conn.execute(sql, args)}

    def iter_records(self, run_id: str, kind: str | None = None) -> Iterator[sqlite3.Row]:
        sql = "SELECT * FROM records WHERE run_id=?" + (" AND kind=?" if kind else "")
        sql += " ORDER BY stream, t, key"
        yield from self.conn.execute(sql, (run_id, kind) if kind else (run_id,))

    def count(self, run_id: str, kind: str, errors: bool | None = None) -> int:
        sql = "SELECT COUNT(*) FROM records WHERE run_id=? AND kind=?"
        if errors is True:
            sql += " AND error IS NOT NULL"
        elif errors is False:
            sql += " AND error IS NULL"
        return int(self.conn.execute(sql, (run_id, kind)).fetchone()[0])

    def usage_by_stage(self, run_id: str) -> dict[str, dict[str, float]]:
        """Token totals and latency per stage (generate, observe, retrieve, update, ...)."""
        out: dict[str, dict[str, float]] = {}
        for row in self.conn.execute(
            "SELECT stage, SUM(prompt_tokens), SUM(cached_tokens), SUM(completion_tokens),"
            " SUM(reasoning_tokens), SUM(latency_s), COUNT(*), SUM(cache_hit)"
            " FROM records WHERE run_id=? GROUP BY stage ORDER BY stage",
            (run_id,),
        ):
            out[row[0]] = {
                "prompt": int(row[1] or 0), "cached": int(row[2] or 0),
                "completion": int(row[3] or 0), "reasoning": int(row[4] or 0),
                "latency_s": float(row[5] or 0.0), "records": int(row[6]),
                "cache_hits": int(row[7] or 0),
            }
        return out

    # -- memory snapshots ------------------------------------------------------------------
    def save_state(
        self, run_id: str, stream: str, t: int, state: dict[str, Any],
        records: Iterable[Record] = (),
    ) -> None:
        """Store the memory snapshot taken after step ``t`` of a stream, together with the model
        calls that produced it, in one transaction (a kill leaves both or neither)."""
        rows = list(records)
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.execute(
                "INSERT OR REPLACE INTO states VALUES (?,?,?,?)",
                (run_id, stream, t, json.dumps(state)),
            )
            if rows:
                self._insert(run_id, rows)
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def load_state(
        self, run_id: str, stream: str, t: int | None = None
    ) -> tuple[int, dict[str, Any]] | None:
        """The snapshot at step ``t`` (or the latest one when ``t`` is None)."""
        if t is None:
            row = self.conn.execute(
                "SELECT t, state FROM states WHERE run_id=? AND stream=? ORDER BY t DESC LIMIT 1",
                (run_id, stream),
            ).fetchone()
        else:
            row = self.conn.execute(
                "SELECT t, state FROM states WHERE run_id=? AND stream=? AND t=?",
                (run_id, stream, t),
            ).fetchone()
        return (int(row[0]), json.loads(row[1])) if row else None

    def state_steps(self, run_id: str, stream: str) -> list[int]:
        return [int(r[0]) for r in self.conn.execute(
            "SELECT t FROM states WHERE run_id=? AND stream=? ORDER BY t", (run_id, stream)
        )]


def results_db_exists(directory: str | Path) -> bool:
    return os.path.exists(Path(directory) / DB_NAME)
