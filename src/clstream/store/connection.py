"""Opening a results database: the writer lock and connections whose disk errors say what
happened (docs/design.md §5, §7).

One writer per directory is enforced with an advisory file lock, so two processes can never
interleave writes ("database is locked" was a known failure of other harnesses); readers open
the database read-only and need no lock. SQLite's "disk I/O error" on a full or read-only disk
names neither the file nor the cause, so every disk error becomes a one-line
:class:`~clstream.core.errors.StoreError` that does.
"""

from __future__ import annotations

import fcntl
import sqlite3
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from clstream.core.errors import StoreError
from clstream.core.files import disk_cause, os_error_cause, sqlite_disk_cause
from clstream.core.outputs import RESULTS_DB

__all__ = ["LOCK_NAME", "StoreConnection", "open_database", "reader_uri", "release_writer_lock",
           "take_writer_lock"]

LOCK_NAME = ".writer.lock"


def disk_error(path: Path, exc: sqlite3.Error) -> StoreError | None:
    """A one-line error naming the database and the real cause when ``exc`` comes from the
    disk (full, read-only, I/O error, permissions); None for any other SQLite error."""
    cause = sqlite_disk_cause(exc, path)
    return None if cause is None else StoreError(f"{path}: {cause}")


class StoreConnection(sqlite3.Connection):
    """A connection whose disk errors are :class:`StoreError` naming the database and the cause
    (SQLite's "disk I/O error" on a full or read-only disk says neither); other errors are
    SQLite's own, so the callers that tell a foreign file from a results database still can."""

    path = Path(RESULTS_DB)

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        try:
            return super().execute(sql, parameters)
        except sqlite3.OperationalError as exc:
            error = disk_error(self.path, exc)
            if error is None:
                raise
            raise error from None

    def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor:
        try:
            return super().executemany(sql, parameters)
        except sqlite3.OperationalError as exc:
            error = disk_error(self.path, exc)
            if error is None:
                raise
            raise error from None


def open_database(database: str, path: Path, uri: bool = False) -> StoreConnection:
    """A connection to ``database`` (a file name or URI) in autocommit mode, the store opening
    its own transactions; failing to open is a one-line error naming ``path``."""
    try:
        conn = sqlite3.connect(database, uri=uri, isolation_level=None, factory=StoreConnection)
    except sqlite3.Error as exc:
        raise disk_error(path, exc) or StoreError(f"{path}: {exc}") from None
    conn.path = path
    return conn


def reader_uri(path: Path, untouched: bool = False) -> str:
    """The URI a reader opens the database at ``path`` with: read-only, and immutable where
    no write can be in progress on a read-only file system (SQLite cannot create the WAL index
    a reader needs there; with no WAL file no write is in progress). ``untouched`` (a viewer):
    immutable too when no write is in progress, so that reading creates no -wal or -shm file
    in the directory."""
    frozen = ((untouched or disk_cause(path.parent) == "read-only file system")
              and not path.with_name(path.name + "-wal").exists())
    options = "mode=ro&immutable=1" if frozen else "mode=ro"
    # The path percent-encoded: a directory named with "#", "?" or "%" is a path, not a URI's
    # fragment or query.
    location = quote(str(path.absolute()), safe="/")
    return f"file:{location}?{options}"


def take_writer_lock(directory: Path) -> IO[str]:
    """The directory's writer lock, held until :func:`release_writer_lock`; another process
    holding it is a one-line error."""
    try:
        fh = open(directory / LOCK_NAME, "a+")  # noqa: SIM115 - held for the store's lifetime
    except OSError as exc:
        raise StoreError(f"{directory}: cannot write to the results directory:"
                         f" {os_error_cause(exc)}") from None
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        raise StoreError(
            f"{directory}: another clstream process is writing to this directory"
        ) from None
    return fh


def release_writer_lock(fh: IO[str]) -> None:
    fcntl.flock(fh, fcntl.LOCK_UN)
    fh.close()
