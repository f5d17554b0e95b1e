"""The results database's tables and their versions: what a writer creates or migrates and how a
reader sees an older database in the current shape (docs/design.md §5, §6).

Records are generic across protocols: ``(run_id, kind, key)`` is unique, the protocol-specific
content lives in a JSON ``payload``, token usage sits in columns so totals are one query, and the
coordinates all four protocols share (stream, step, rollout, arm, sample, score) are typed,
nullable columns so that metrics select and aggregate them without decoding JSON. The step keeps
its column name ``t`` (as in ``states``), so SQL written against version 1 keeps working; the
Python side also calls it ``step`` (rows from ``ResultsStore.iter_records`` carry both).

Schema versions. Results directories outlive releases, so the schema carries a version in
``meta`` and every release reads every older one:

* version 1 stored the step as ``t INTEGER NOT NULL`` and had none of the other coordinates;
* version 2 makes ``t`` nullable (ImprintBench items have no step), adds ``rollout``,
  ``arm``, ``sample`` and ``score``, and indexes records in the order they are read;
* version 3 adds ``states.base``: NULL for a memory snapshot stored whole, else the
  step whose snapshot this row's delta applies to (:mod:`clstream.store.snapshots`), so a run's
  stored snapshots grow linearly in its stream;
* version 4 (this one) adds the transcript tables ``calls``, ``transcript_nodes`` and
  ``transcript_parts``: every model call of a run, its messages stored by content
  (:mod:`clstream.store.transcripts`).

A writer migrates an older database in place, in the same transaction that takes the database
over, so a kill during the migration leaves the old database untouched. Version 1 -> 2 rebuilds
the records table (SQLite cannot drop ``NOT NULL`` from a column in place): copy, drop, rename.
Version 2 -> 3 adds the ``base`` column to ``states`` (every snapshot stored before is whole).
Version 3 -> 4 creates the (empty) transcript tables: runs stored before hold no transcripts.
A reader cannot write, so on an older database it shadows ``records`` (version 1) and ``states``
(versions 1 and 2) with temporary views of the current shape (missing columns read as NULL);
every query, including ones other modules run on the store's connection, then sees one shape
whichever version is on disk. A database without transcript tables reads as holding no calls.
A database from a newer release is refused, naming both versions, rather than misread.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from clstream.core.errors import StoreError
from clstream.store.transcripts import SCHEMA as TRANSCRIPT_SCHEMA

__all__ = ["RECORD_COLUMNS", "RETRY_COLUMNS", "SCHEMA_VERSION", "create_or_migrate",
           "prepare_reader"]

SCHEMA_VERSION = 4

# Every column of ``records`` in table order; inserts name them, so the order is not load-bearing.
RECORD_COLUMNS = (
    "run_id", "kind", "key", "stream", "t", "rollout", "arm", "sample", "score", "payload",
    "error", "stage", "prompt_tokens", "cached_tokens", "completion_tokens", "reasoning_tokens",
    "latency_s", "cache_hit", "created_at",
)
# What a retry of a stored error replaces (everything but the primary key).
RETRY_COLUMNS = [c for c in RECORD_COLUMNS if c not in ("run_id", "kind", "key")]


def _records_table(name: str) -> str:
    return f"""CREATE TABLE IF NOT EXISTS {name} (
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    stream TEXT NOT NULL DEFAULT '',
    t INTEGER,
    rollout INTEGER,
    arm TEXT,
    sample INTEGER,
    score REAL,
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
)"""


# The current schema, one statement each (``executescript`` would commit the open transaction).
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    protocol TEXT NOT NULL,
    system TEXT NOT NULL,
    model TEXT NOT NULL,
    dataset_sha256 TEXT NOT NULL,
    spec TEXT NOT NULL,
    info TEXT NOT NULL,
    created_at REAL NOT NULL,
    wall_s REAL NOT NULL DEFAULT 0
)""",
    """CREATE TABLE IF NOT EXISTS datasets (
    sha256 TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    content TEXT NOT NULL
)""",
    _records_table("records"),
    """CREATE TABLE IF NOT EXISTS states (
    run_id TEXT NOT NULL,
    stream TEXT NOT NULL,
    t INTEGER NOT NULL,
    state TEXT NOT NULL,
    base INTEGER,
    PRIMARY KEY (run_id, stream, t)
)""",
    # Reads go per run and kind in (stream, step, key) order (resume, export, metrics); the
    # primary key serves counts and key look-ups, these two serve the ordered scans.
    "CREATE INDEX IF NOT EXISTS records_by_kind ON records (run_id, kind, stream, t, key)",
    "CREATE INDEX IF NOT EXISTS records_by_run ON records (run_id, stream, t, key)",
    *TRANSCRIPT_SCHEMA,
)

# A version 1 records table read through the version 2 shape (read-only opens).
_V1_READ_VIEW = (
    "CREATE TEMP VIEW records AS SELECT run_id, kind, key, stream, t,"
    " NULL AS rollout, NULL AS arm, NULL AS sample, NULL AS score, payload, error, stage,"
    " prompt_tokens, cached_tokens, completion_tokens, reasoning_tokens, latency_s, cache_hit,"
    " created_at FROM main.records"
)

# A version 1 or 2 states table read through the version 3 shape: every snapshot is whole.
_V2_STATES_READ_VIEW = (
    "CREATE TEMP VIEW states AS SELECT run_id, stream, t, state, NULL AS base FROM main.states"
)

_V1_COPY = (
    f"INSERT INTO records_v2 ({', '.join(RECORD_COLUMNS)}) SELECT run_id, kind, key, stream, t,"
    " NULL, NULL, NULL, NULL, payload, error, stage, prompt_tokens, cached_tokens,"
    " completion_tokens, reasoning_tokens, latency_s, cache_hit, created_at FROM records"
)


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM main.sqlite_master WHERE type='table'")}


def _stored_version(conn: sqlite3.Connection, path: Path, tables: set[str]) -> int | None:
    """The schema version on disk; None for a database holding no clstream tables yet.

    A database whose version row is missing (a version 1 writer killed between creating the
    tables and recording the version) is recognised by the columns of its records table."""
    if "meta" in tables:
        row = conn.execute("SELECT value FROM main.meta WHERE key='schema_version'").fetchone()
        if row is not None:
            try:
                return int(row[0])
            except ValueError:
                raise StoreError(
                    f"{path}: not a clstream results database (schema version {row[0]!r})"
                ) from None
    if "records" in tables:
        columns = {r[1] for r in conn.execute("PRAGMA main.table_info(records)")}
        return 2 if "rollout" in columns else 1
    return None


def _check_known(path: Path, version: int) -> None:
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path}: schema version {version} was written by a newer clstream;"
            f" this one reads versions 1 to {SCHEMA_VERSION} (upgrade clstream)"
        )
    if version < 1:
        raise StoreError(f"{path}: not a clstream results database (schema version {version})")


def _has_state_base(conn: sqlite3.Connection) -> bool:
    return "base" in {r[1] for r in conn.execute("PRAGMA main.table_info(states)")}


def _migrate_v1(conn: sqlite3.Connection) -> None:
    """Version 1 -> 2 inside the caller's transaction: rebuild ``records`` with a nullable
    ``t`` and the new coordinate columns; every other table is unchanged."""
    conn.execute(_records_table("records_v2"))
    conn.execute(_V1_COPY)
    conn.execute("DROP TABLE records")
    conn.execute("ALTER TABLE records_v2 RENAME TO records")


def create_or_migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Create, check or migrate the schema; the caller holds the transaction, so a kill leaves
    the database as it was or fully at the current version."""
    tables = _tables(conn)
    if tables and not tables & {"meta", "runs", "records"}:
        raise StoreError(f"{path}: not a clstream results database"
                         f" (tables: {', '.join(sorted(tables))})")
    version = _stored_version(conn, path, tables)
    if version is not None:
        _check_known(path, version)
        if version == 1:
            _migrate_v1(conn)
    for statement in _SCHEMA:
        conn.execute(statement)
    if not _has_state_base(conn):  # version 2 -> 3
        conn.execute("ALTER TABLE states ADD COLUMN base INTEGER")
    if version != SCHEMA_VERSION:  # else unchanged: a writer that stores nothing
        # leaves the file byte for byte as it was
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)",
                     (str(SCHEMA_VERSION),))


def prepare_reader(conn: sqlite3.Connection, path: Path) -> int:
    """Check a database opened read-only and shadow older tables with views of the current
    shape; returns the schema version on disk."""
    tables = _tables(conn)
    version = _stored_version(conn, path, tables)
    if version is None or "runs" not in tables:
        raise StoreError(f"{path}: not a clstream results database (no runs table)")
    _check_known(path, version)
    if version == 1:
        conn.execute(_V1_READ_VIEW)
    if "states" in tables and not _has_state_base(conn):
        conn.execute(_V2_STATES_READ_VIEW)
    return version
