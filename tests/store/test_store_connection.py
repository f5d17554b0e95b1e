"""Opening a results database: the URI a reader opens, the writer lock, one-line open errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from clstream.core.errors import StoreError
from clstream.store.connection import (
    StoreConnection,
    open_database,
    reader_uri,
    release_writer_lock,
    take_writer_lock,
)


def test_reader_uri_is_read_only_and_escapes_the_path(tmp_path: Path) -> None:
    path = tmp_path / "a #1?x=%" / "results.sqlite"
    uri = reader_uri(path)
    assert uri.startswith("file:/") and uri.endswith("?mode=ro")
    assert "%23" in uri and "%3F" in uri and "%25" in uri and "#" not in uri
    path.parent.mkdir()
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
    conn = sqlite3.connect(uri, uri=True)  # the escaped path names the file itself
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["t"]
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.execute("INSERT INTO t VALUES (1)")
    conn.close()


def test_writer_lock_is_exclusive_until_released(tmp_path: Path) -> None:
    held = take_writer_lock(tmp_path)
    with pytest.raises(StoreError) as info:
        take_writer_lock(tmp_path)
    assert str(info.value) == f"{tmp_path}: another clstream process is writing to this directory"
    release_writer_lock(held)
    release_writer_lock(take_writer_lock(tmp_path))


def test_open_failure_names_the_database(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "results.sqlite"
    with pytest.raises(StoreError) as info:
        open_database(str(path), path)
    assert str(info.value).startswith(f"{path}: ") and "\n" not in str(info.value)


def test_connection_carries_the_path_its_errors_name(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    conn = open_database(str(path), path)
    assert isinstance(conn, StoreConnection) and conn.path == path
    assert conn.isolation_level is None  # the store opens its own transactions
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        conn.execute("SELECT * FROM nowhere")  # not a disk error: SQLite's own
    conn.close()
