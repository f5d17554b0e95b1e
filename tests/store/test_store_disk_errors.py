"""The results store on a bad disk: the real cause in one line, nothing stored damaged."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

import pytest

from clstream.core.errors import StoreError
from clstream.store import connection
from clstream.store.db import Record, ResultsStore


def _store_with_one_record(tmp_path: Path) -> ResultsStore:
    store = ResultsStore(tmp_path / "res", writer=True)
    store.ensure_run("r1", "oaks", "full", "builtin", "sha", {}, {})
    store.put_records("r1", [Record("probe", "q@1", {"output": "kept"}, stream="d", t=1)])
    return store


def _cap_size(store: ResultsStore) -> None:
    """Make the database full from SQLite's side: no page may be added."""
    pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
    store.conn.execute(f"PRAGMA max_page_count={pages}")


def test_a_full_database_in_a_transaction_surfaces_the_real_cause(tmp_path: Path) -> None:
    store = _store_with_one_record(tmp_path)
    _cap_size(store)
    big = [Record("probe", f"q@{i}", {"output": "x" * 5000}, stream="d", t=i)
           for i in range(2, 40)]
    with pytest.raises(StoreError) as info:
        store.put_records("r1", big)
    message = str(info.value)
    assert "database or disk is full" in message and str(store.path) in message
    assert "rollback" not in message and "\n" not in message
    assert not store.conn.in_transaction
    assert store.done_keys("r1", "probe") == {"q@1"}  # the writer keeps working
    with pytest.raises(StoreError, match="database or disk is full"):
        store.save_state("r1", "d", 2, {"memory": "y" * 50_000})
    store.close()
    with ResultsStore(tmp_path / "res") as reader:
        rows = list(reader.read_records("r1", "probe"))
        assert [(r.key, r.payload) for r in rows] == [("q@1", {"output": "kept"})]
        assert reader.load_state("r1", "d") is None


def test_a_full_database_outside_a_transaction(tmp_path: Path) -> None:
    store = _store_with_one_record(tmp_path)
    _cap_size(store)
    with pytest.raises(StoreError, match="database or disk is full"):
        store.ensure_run("r2", "oaks", "rag", "builtin", "sha" * 3000, {"x": "y" * 20_000}, {})
    store.close()


def test_an_error_inside_a_transaction_is_the_one_raised(tmp_path: Path) -> None:
    store = _store_with_one_record(tmp_path)

    def boom() -> None:
        with store._transaction():
            store.conn.execute("DELETE FROM records")
            raise ValueError("the real cause")

    with pytest.raises(ValueError, match="the real cause"):
        boom()
    assert not store.conn.in_transaction
    assert store.count("r1", "probe") == 1  # rolled back
    store.close()


def test_read_only_directory_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "res").mkdir()

    def read_only(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(tmp_path / "res" / ".writer.lock"))

    monkeypatch.setattr(connection, "open", read_only, raising=False)
    with pytest.raises(StoreError) as info:
        ResultsStore(tmp_path / "res", writer=True)
    assert str(info.value) == (f"{tmp_path / 'res'}: cannot write to the results directory:"
                               " read-only file system")


def test_directory_that_cannot_be_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", denied)
    with pytest.raises(StoreError, match="cannot create the results directory: permission denied"):
        ResultsStore(tmp_path / "new", writer=True)


def test_database_that_cannot_be_opened_releases_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_connect = sqlite3.connect

    def cannot_open(*args: object, **kwargs: object) -> sqlite3.Connection:
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(sqlite3, "connect", cannot_open)
    with pytest.raises(StoreError) as info:
        ResultsStore(tmp_path / "res", writer=True)
    assert str(info.value).startswith(f"{tmp_path / 'res' / 'results.sqlite'}: ")
    assert "readonly" in str(info.value)
    monkeypatch.setattr(sqlite3, "connect", real_connect)
    ResultsStore(tmp_path / "res", writer=True).close()  # the lock was released
