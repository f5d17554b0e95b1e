"""The results database of a run directory: SQLite in WAL mode with exactly one writer.

Why this shape (docs/design.md §5, §6): every answer is committed as it is produced, so a run
killed at any point (even SIGKILL) loses at most the answers of the batch in flight; rerunning
the same spec finds what is done by primary key and never redoes or duplicates it. One writer
per directory is enforced with an advisory file lock (:mod:`clstream.store.connection`), so two
processes can never interleave writes; readers (summary, export, report) open the database
read-only and need no lock.

:class:`ResultsStore` is the one way in: this module holds its lifecycle and everything it
writes (runs, datasets, records, memory snapshots, model calls); the tables and their versions
are :mod:`clstream.store.schema`, the record queries :mod:`clstream.store.reads`, memory
snapshot chains :mod:`clstream.store.snapshots` and transcripts :mod:`clstream.store.transcripts`.

Secrets and text safety (docs/design.md §5, §7): every string the store writes (record payloads at
any depth, error text, keys, run specs and info, dataset views, memory snapshots) passes through
a :class:`~clstream.core.secrets.Scrubber` first: each known secret value (the ``secrets`` given
to the store, values registered with :func:`clstream.core.secrets.register_secret`, and the
environment's API-key and token variables) becomes ``[redacted]``, and a lone surrogate is kept
as its backslash escape, so no stored string can hold a credential or fail to encode as UTF-8.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from clstream.core.errors import StoreError
from clstream.core.files import os_error_cause
from clstream.core.outputs import RESULTS_DB, is_file_dataset
from clstream.core.records import Record, RunRow, RunStatus, StoredRecord
from clstream.core.secrets import Scrubber, environment_secrets, registered_secrets
from clstream.core.transcripts import NotedCall
from clstream.store import schema
from clstream.store.connection import (
    LOCK_NAME,
    StoreConnection,
    open_database,
    reader_uri,
    release_writer_lock,
    take_writer_lock,
)
from clstream.store.reads import UNREADABLE_ERROR, RecordReads
from clstream.store.schema import RECORD_COLUMNS, RETRY_COLUMNS, SCHEMA_VERSION
from clstream.store.snapshots import SnapshotChains
from clstream.store.transcripts import TranscriptRows, TranscriptWriter, count_calls, read_calls

__all__ = [
    "DB_NAME", "LOCK_NAME", "RECORD_COLUMNS", "SCHEMA_VERSION", "UNREADABLE_ERROR", "Record",
    "ResultsStore", "RunRow", "RunStatus", "StoredRecord", "results_db_exists",
]

DB_NAME = RESULTS_DB


class ResultsStore(RecordReads):
    """A results directory. ``writer=True`` takes the directory's writer lock (and brings an
    older database up to the current schema); readers take no lock and change nothing. Its
    reading methods are :class:`~clstream.core.reader.ResultsReader`, what protocols see, and
    :meth:`calls` and :meth:`calls_count`, its transcripts (:mod:`clstream.store.transcripts`)."""

    def __init__(self, directory: str | Path, writer: bool = False,
                 secrets: Iterable[str] = (), *, untouched: bool = False):
        self.dir = Path(directory)
        # Secrets known when the store opens; ones registered later are added on each write.
        self._secrets = frozenset(secrets) | environment_secrets()
        self._scrubber = Scrubber(self._secrets | registered_secrets())
        self.path = self.dir / DB_NAME
        self.writer = writer
        self._lock_fh: IO[str] | None = None
        self.schema_version = SCHEMA_VERSION  # the version on disk, for a reader of an old one
        if writer:
            try:
                self.dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"{self.dir}: cannot create the results directory:"
                                 f" {os_error_cause(exc)}") from None
            self._lock_fh = take_writer_lock(self.dir)
            self.conn = self._connect(str(self.path))
            try:
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute("PRAGMA synchronous=NORMAL")
                self._prepare_writer()
            except sqlite3.DatabaseError as exc:
                self.close()
                raise StoreError(f"{self.path}: not a clstream results database ({exc})") from None
            except BaseException:
                self.close()
                raise
        else:
            if not self.path.exists():
                raise StoreError(f"{self.dir}: no results database ({DB_NAME}) in this directory")
            self.conn = self._connect(reader_uri(self.path, untouched), uri=True)
            try:
                self._prepare_reader()
            except sqlite3.DatabaseError as exc:
                self.close()
                raise StoreError(f"{self.path}: not a clstream results database ({exc})") from None
            except BaseException:
                self.close()
                raise
        self.conn.row_factory = sqlite3.Row
        self._chains = SnapshotChains(self.conn, str(self.path))
        self._transcripts = TranscriptWriter(self.conn)

    # -- lifecycle -------------------------------------------------------------------------
    def _connect(self, database: str, uri: bool = False) -> StoreConnection:
        """A connection whose disk and file-system errors are one-line StoreErrors."""
        try:
            return open_database(database, self.path, uri)
        except StoreError:
            if self._lock_fh is not None:
                self.close()
            raise

    def _prepare_writer(self) -> None:
        """Create, check or migrate the schema in one transaction, so a kill leaves the
        database as it was or fully at the current version."""
        with self._transaction():
            schema.create_or_migrate(self.conn, self.path)

    def _prepare_reader(self) -> None:
        self.schema_version = schema.prepare_reader(self.conn, self.path)

    def close(self) -> None:
        conn = getattr(self, "conn", None)
        if conn is not None:
            conn.close()
        if self._lock_fh is not None:
            release_writer_lock(self._lock_fh)
            self._lock_fh = None

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """Everything in the block commits together or not at all. On a failure the original
        error propagates: SQLite rolls back by itself after some errors (a full disk, an I/O
        error), so the explicit rollback is issued only while a transaction is still open."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
            self.conn.execute("COMMIT")
        except BaseException:
            if getattr(self, "_transcripts", None) is not None:
                self._transcripts.forget()
            if self.conn.in_transaction:
                try:
                    self.conn.execute("ROLLBACK")
                except (sqlite3.Error, StoreError):
                    pass  # the error being raised is the one that says what went wrong
            raise

    def _require_writer(self, what: str) -> None:
        if not self.writer:
            raise StoreError(f"{self.dir}: opened read-only; {what} needs the writer lock")

    # -- what is written -------------------------------------------------------------------
    def _scrub(self) -> Scrubber:
        """The scrubber for the secrets known now (see the module docstring)."""
        wanted = self._secrets | registered_secrets()
        if wanted != self._scrubber.secrets:
            self._scrubber = Scrubber(wanted)
        return self._scrubber

    def _text(self, value: str | None, scrubber: Scrubber | None = None) -> str | None:
        if value is None:
            return None
        return (scrubber or self._scrub()).text(value)

    def _json(self, value: Any, sort_keys: bool = True, scrubber: Scrubber | None = None) -> str:
        """``value`` as JSON text with every string in it scrubbed."""
        return (scrubber or self._scrub()).json(value, sort_keys=sort_keys)

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
            (run_id, protocol, self._text(system), self._text(model), dataset_sha256,
             self._json(spec), self._json(info), time.time()),
        )
        return False

    def add_wall_time(self, run_id: str, seconds: float) -> None:
        self.conn.execute("UPDATE runs SET wall_s = wall_s + ? WHERE run_id=?", (seconds, run_id))

    def put_dataset(self, sha256: str, path: str, content: dict[str, Any]) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO datasets VALUES (?,?,?)",
            (sha256, self._text(path), self._json(content)),
        )

    def dataset_paths(self) -> list[str]:
        """The paths datasets were read from when their runs were registered (commands that
        write files refuse these: :mod:`clstream.core.outputs`)."""
        return [str(r[0]) for r in self.conn.execute("SELECT path FROM datasets")
                if r[0] and is_file_dataset(str(r[0]))]

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
        return [_run_row(r, self.path) for r in rows]

    def has_run(self, run_id: str) -> bool:
        return self.conn.execute("SELECT 1 FROM runs WHERE run_id=?",
                                 (run_id,)).fetchone() is not None

    def run_specs_after(self, protocol: str, after: int) -> list[tuple[int, str, str]]:
        """``(row number, run id, stored spec text)`` of the runs of ``protocol`` stored after
        row ``after``, oldest first: what a reader that keeps an index of the runs reads to
        bring it up to date without reading every run again."""
        rows = self.conn.execute("SELECT rowid, run_id, spec FROM runs WHERE protocol=? AND "
                                 "rowid>? ORDER BY rowid", (protocol, after)).fetchall()
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    def get_run(self, run_id: str) -> RunRow:
        """The run ``run_id``; an unknown id is an error naming the runs that are stored."""
        row = self.conn.execute("SELECT * FROM runs WHERE run_id=?", (run_id,)).fetchone()
        if row is None:
            known = ", ".join(r.run_id for r in self.runs()) or "none"
            raise StoreError(f"{self.dir}: no run {run_id!r} (runs here: {known})")
        return _run_row(row, self.path)

    def run_status(self, run_id: str) -> RunStatus:
        """Successful and failed records per kind, first and last record time, wall time and
        number of memory snapshots of one run: what a listing shows without decoding payloads."""
        run = self.get_run(run_id)
        ok: dict[str, int] = {}
        errors: dict[str, int] = {}
        first: float | None = None
        last: float | None = None
        for row in self.conn.execute(
            "SELECT kind, SUM(error IS NULL), SUM(error IS NOT NULL), MIN(created_at),"
            " MAX(created_at) FROM records WHERE run_id=? GROUP BY kind ORDER BY kind",
            (run_id,),
        ):
            ok[row[0]], errors[row[0]] = int(row[1]), int(row[2])
            first = row[3] if first is None else min(first, row[3])
            last = row[4] if last is None else max(last, row[4])
        states = self.conn.execute("SELECT COUNT(*) FROM states WHERE run_id=?",
                                   (run_id,)).fetchone()[0]
        return RunStatus(run_id=run_id, ok=ok, errors=errors, first_record_at=first,
                         last_record_at=last, wall_s=run.wall_s, states=int(states))

    def delete_run(self, run_id: str) -> dict[str, int]:
        """Delete one run's records, memory snapshots, calls and run row in one transaction, and
        its dataset when no other run uses it. Returns the number of rows deleted per table
        (records, states, runs, datasets; its calls go with it uncounted, and the transcript
        pieces, shared by content between runs, stay)."""
        self._require_writer("deleting a run")
        with self._transaction():
            row = self.conn.execute("SELECT dataset_sha256 FROM runs WHERE run_id=?",
                                    (run_id,)).fetchone()
            dataset = row[0] if row is not None else self.get_run(run_id).dataset_sha256
            deleted = {
                "records": self.conn.execute("DELETE FROM records WHERE run_id=?",
                                             (run_id,)).rowcount,
                "states": self.conn.execute("DELETE FROM states WHERE run_id=?",
                                            (run_id,)).rowcount,
                "runs": self.conn.execute("DELETE FROM runs WHERE run_id=?", (run_id,)).rowcount,
            }
            self.conn.execute("DELETE FROM calls WHERE run_id=?", (run_id,))
            deleted["datasets"] = self.conn.execute(
                "DELETE FROM datasets WHERE sha256=? AND NOT EXISTS"
                " (SELECT 1 FROM runs WHERE dataset_sha256=?)",
                (dataset, dataset),
            ).rowcount
        self._chains.forget()
        return deleted

    def rename_run(self, old_id: str, new_id: str, spec: dict[str, Any] | None = None) -> None:
        """Move a run with all its records and snapshots to ``new_id`` in one transaction.

        This adopts a run whose id changed because the way ids are derived from specs changed;
        ``spec``, when given, replaces the stored spec (the one the new id is the hash of). An
        id that already holds any row is refused: merging two runs is never what was meant."""
        self._require_writer("renaming a run")
        with self._transaction():
            self.get_run(old_id)
            taken = any(
                self.conn.execute(f"SELECT 1 FROM {table} WHERE run_id=? LIMIT 1",
                                  (new_id,)).fetchone()
                for table in ("runs", "records", "states")
            )
            if taken:
                raise StoreError(f"{self.dir}: cannot rename run {old_id!r} to {new_id!r}:"
                                 " that run id is already used")
            spec_json = None if spec is None else self._json(spec)
            self.conn.execute("UPDATE runs SET run_id=?, spec=COALESCE(?, spec) WHERE run_id=?",
                              (new_id, spec_json, old_id))
            for table in ("records", "states", "calls"):
                self.conn.execute(f"UPDATE {table} SET run_id=? WHERE run_id=?", (new_id, old_id))
        self._chains.forget()

    # -- records ---------------------------------------------------------------------------
    def put_records(self, run_id: str, records: Iterable[Record]) -> int:
        """Commit records in one transaction. A successful record is never overwritten; a
        stored error is replaced by a new attempt (that is how resume retries failures)."""
        rows = list(records)
        if not rows:
            return 0
        with self._transaction():
            return self._insert(run_id, rows)

    def _insert(self, run_id: str, records: list[Record]) -> int:
        now = time.time()
        sc = self._scrub()
        rows: list[tuple[Any, ...]] = [
            (run_id, r.kind, sc.text(r.key), sc.text(r.stream), _opt_int(r.t),
             _opt_int(r.rollout), self._text(r.arm, sc), _opt_int(r.sample),
             None if r.score is None else float(r.score), self._json(r.payload, scrubber=sc),
             self._text(r.error, sc), r.stage, r.usage.prompt_tokens,
             r.usage.cached_tokens, r.usage.completion_tokens, r.usage.reasoning_tokens,
             r.usage.latency_s, int(r.cache_hit), now)
            for r in records
        ]
        written = self._upsert(rows)
        self._transcripts.write(run_id, records, sc)
        return written

    def _upsert(self, rows: list[tuple[Any, ...]]) -> int:
        """Insert record rows (every column, in table order); a stored error is replaced, a
        stored success never is."""
        updates = ", ".join(f"{c}=excluded.{c}" for c in RETRY_COLUMNS)
        cur = self.conn.executemany(
            f"INSERT INTO records ({', '.join(RECORD_COLUMNS)})"
            f" VALUES ({', '.join('?' * len(RECORD_COLUMNS))})"
            f" ON CONFLICT (run_id, kind, key) DO UPDATE SET {updates}"
            " WHERE records.error IS NOT NULL",
            rows,
        )
        return cur.rowcount

    def put_rows(self, run_id: str, records: Iterable[Sequence[Any]],
                 states: Iterable[Sequence[Any]],
                 transcripts: TranscriptRows = ((), (), ())) -> int:
        """Commit rows read from another results database in one transaction: ``records`` as
        :data:`RECORD_COLUMNS` less ``run_id`` (payload as JSON text), ``states`` as
        ``(stream, t, state, base)`` exactly as stored (a delta stays a delta against the same
        base step), ``transcripts`` as :func:`~clstream.store.transcripts.transcript_rows` reads
        them (scrubbed where written). How a cell run elsewhere comes back
        (:mod:`clstream.store.shard`): the same retry rule as :meth:`put_records`, every record
        string scrubbed again here. Returns the records written."""
        sc = self._scrub()
        rows = [(run_id, r[0], sc.text(r[1]), sc.text(r[2]), _opt_int(r[3]), _opt_int(r[4]),
                 self._text(r[5], sc), _opt_int(r[6]), r[7],
                 self._json(json.loads(r[8]), scrubber=sc), self._text(r[9], sc), *r[10:])
                for r in records]
        if any(len(row) != len(RECORD_COLUMNS) for row in rows):
            raise StoreError(f"{self.path}: a record row needs {len(RECORD_COLUMNS) - 1} columns")
        with self._transaction():
            for stream, t, state, base in states:
                self.conn.execute(
                    "INSERT OR REPLACE INTO states (run_id, stream, t, state, base)"
                    " VALUES (?,?,?,?,?)",
                    (run_id, sc.text(stream), int(t),
                     json.dumps(sc.value(json.loads(state)), sort_keys=False), _opt_int(base)))
            written = self._upsert(rows) if rows else 0
            self._transcripts.put_rows(*transcripts)
        self._chains.forget()
        return written

    def put_calls(self, run_id: str, calls: Sequence[NotedCall]) -> None:
        """Commit model calls that served no record (those left when a cell ended)."""
        if calls:
            with self._transaction():
                self._transcripts.write_unlinked(run_id, calls, self._scrub())

    def calls(self, run_id: str, record_kind: str | None = None,
              record_key: str | None = None) -> list[dict[str, Any]]:
        """The run's stored model calls (of one record kind, of one record), in the order
        they were stored, messages reassembled: :func:`clstream.store.transcripts.read_calls`
        says what each dict holds."""
        return read_calls(self.conn, run_id, record_kind, record_key)

    def calls_count(self, run_id: str) -> int:
        """How many model calls of the run are stored."""
        return count_calls(self.conn, run_id)

    def mark_unreadable(self, run_id: str) -> int:
        """Make every record of the run whose payload does not decode a failed record (error
        :data:`UNREADABLE_ERROR`, unless it already held an error), so that it is not done and
        a resume redoes it; its payload becomes ``{"unreadable_payload": <the stored text>}``,
        so every reader can decode it and nothing stored is dropped. One transaction; returns
        the number of records marked."""
        self._require_writer("marking unreadable records")
        broken = self.unreadable_records(run_id)
        if not broken:
            return 0
        with self._transaction():
            for kind, key in broken:
                (text,) = self.conn.execute(
                    "SELECT payload FROM records WHERE run_id=? AND kind=? AND key=?",
                    (run_id, kind, key)).fetchone()
                self.conn.execute(
                    "UPDATE records SET payload=?, error=COALESCE(error, ?)"
                    " WHERE run_id=? AND kind=? AND key=?",
                    (json.dumps({"unreadable_payload": text}), UNREADABLE_ERROR,
                     run_id, kind, key))
        return len(broken)

    # -- memory snapshots ------------------------------------------------------------------
    def save_state(
        self, run_id: str, stream: str, t: int, state: dict[str, Any],
        records: Iterable[Record] = (),
    ) -> None:
        """Store the memory snapshot taken after step ``t`` of a stream, together with the model
        calls that produced it, in one transaction (a kill leaves both or neither). The snapshot
        is stored as a delta against the previous stored step when that is smaller
        (:mod:`clstream.store.snapshots`); :meth:`load_state` gives back the state either way."""
        rows = list(records)
        scrubbed = self._scrub().value(state)
        with self._transaction():
            stored = self._chains.encode(run_id, stream, t, scrubbed)
            self._chains.detach_dependents(run_id, stream, t)
            self.conn.execute(
                "INSERT OR REPLACE INTO states (run_id, stream, t, state, base) VALUES (?,?,?,?,?)",
                (run_id, stream, t, stored.text, stored.base),
            )
            if rows:
                self._insert(run_id, rows)
        self._chains.keep(run_id, stream, stored.held)

    def load_state(
        self, run_id: str, stream: str, t: int | None = None
    ) -> tuple[int, dict[str, Any]] | None:
        """The snapshot at step ``t`` (or the latest one when ``t`` is None), a copy the
        caller may change."""
        if t is None:
            t = self._chains.latest_step(run_id, stream)
            if t is None:
                return None
        held = self._chains.load(run_id, stream, t)
        if held is None:
            return None
        return held.t, json.loads(json.dumps(held.state, sort_keys=False))

    def state_steps(self, run_id: str, stream: str) -> list[int]:
        return [int(r[0]) for r in self.conn.execute(
            "SELECT t FROM states WHERE run_id=? AND stream=? ORDER BY t", (run_id, stream)
        )]




def _opt_int(value: int | None) -> int | None:
    return None if value is None else int(value)


def _run_row(r: sqlite3.Row, where: object) -> RunRow:
    """A stored run; a spec or info that is not a JSON object (the database edited or
    damaged outside clstream) is a one-line error naming the run and the field, never a
    traceback (docs/design.md §7)."""
    fields = {}
    for name in ("spec", "info"):
        try:
            fields[name] = json.loads(r[name])
        except (ValueError, TypeError, RecursionError):
            fields[name] = None
        if not isinstance(fields[name], dict):
            raise StoreError(f"{where}: run {r['run_id']!r}: the stored {name} is not a JSON "
                             "object (the database was changed outside clstream); delete the "
                             "run (clstream runs rm) or restore the file")
    return RunRow(r["run_id"], r["protocol"], r["system"], r["model"], r["dataset_sha256"],
                  fields["spec"], fields["info"], r["created_at"], r["wall_s"])


def results_db_exists(directory: str | Path) -> bool:
    return os.path.exists(Path(directory) / DB_NAME)


if TYPE_CHECKING:
    from clstream.core.reader import ResultsReader

    def _reads_as_a_results_reader(store: ResultsStore) -> ResultsReader:
        """For the type checker only: the store has every method of the reader interface
        that protocols are given, with compatible signatures."""
        return store
