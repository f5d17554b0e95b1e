"""The atomic writer: a failure at any point leaves no partial file, no temporary file and the
old target unchanged, and says in one line which path failed and why."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from clstream.core.errors import ClstreamError, DataError
from clstream.core.files import (
    WriteError,
    atomic_writer,
    disk_cause,
    os_error_cause,
    sqlite_disk_cause,
    write_atomic,
)


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _fail(code: int) -> Callable[..., None]:
    def raiser(*args: object, **kwargs: object) -> None:
        raise OSError(code, os.strerror(code))

    return raiser


def test_writes_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    write_atomic(target, "first\n")
    write_atomic(target, b"second\n")
    assert target.read_bytes() == b"second\n"
    assert _listing(tmp_path) == ["out.json"]


def test_text_handle_streams_utf8(tmp_path: Path) -> None:
    target = tmp_path / "lines.jsonl"
    with atomic_writer(target) as fh:
        for word in ("é", "ü"):
            fh.write(word + "\n")
    assert target.read_bytes() == "é\nü\n".encode()


@pytest.mark.parametrize("patched", ["replace", "fsync"])
def test_full_disk_leaves_old_target_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, patched: str
) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    monkeypatch.setattr(os, patched, _fail(errno.ENOSPC))
    with pytest.raises(WriteError) as info:
        write_atomic(target, "new content")
    assert target.read_text() == "old"
    assert _listing(tmp_path) == ["out.json"]
    message = str(info.value)
    assert message == f"{target}: cannot write file: no space left on device"
    assert "\n" not in message
    assert isinstance(info.value, DataError) and isinstance(info.value, ClstreamError)


def test_failure_midway_through_a_stream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "preds.jsonl"
    with pytest.raises(WriteError, match="read-only file system"):
        with atomic_writer(target) as fh:
            fh.write("line 1\n")
            raise OSError(errno.EROFS, "Read-only file system")
    assert _listing(tmp_path) == []


def test_error_of_the_block_propagates_unchanged(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(KeyError):
        with atomic_writer(target) as fh:
            fh.write("partial")
            raise KeyError("boom")
    assert target.read_text() == "old"
    assert _listing(tmp_path) == ["out.txt"]


def test_missing_parent_is_an_error_and_nothing_is_created(tmp_path: Path) -> None:
    target = tmp_path / "absent" / "deeper" / "r.html"
    with pytest.raises(WriteError, match="missing parent directory"):
        write_atomic(target, "x")
    assert _listing(tmp_path) == []


def test_make_parent_creates_exactly_one_level(tmp_path: Path) -> None:
    write_atomic(tmp_path / "one" / "r.html", "x", make_parent=True)
    assert (tmp_path / "one" / "r.html").read_text() == "x"
    with pytest.raises(WriteError, match="missing parent directory"):
        write_atomic(tmp_path / "two" / "three" / "r.html", "x", make_parent=True)
    assert not (tmp_path / "two").exists()


def test_directory_target(tmp_path: Path) -> None:
    with pytest.raises(WriteError, match="is a directory"):
        write_atomic(tmp_path, "x")


def test_parent_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(WriteError, match="not a directory"):
        write_atomic(tmp_path / "file" / "out.json", "x")


def test_device_is_written_in_place() -> None:
    write_atomic("/dev/null", "discarded")  # nothing to rename over: written directly


def test_symlink_is_kept_and_mode_preserved(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    real.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    assert stat.S_IMODE(real.stat().st_mode) == 0o640


def test_new_file_mode_follows_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "f", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == 0o644


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.EROFS, "read-only file system"),
        (errno.ENOSPC, "no space left on device"),
        (errno.EACCES, "permission denied"),
        (errno.ENOENT, "missing parent directory"),
        (errno.EISDIR, "is a directory"),
    ],
)
def test_os_error_cause(code: int, words: str) -> None:
    assert os_error_cause(OSError(code, os.strerror(code))) == words


def test_os_error_cause_for_reading() -> None:
    assert os_error_cause(FileNotFoundError(errno.ENOENT, "x"), writing=False) == "file not found"


def test_disk_cause_sees_a_full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert disk_cause(tmp_path) is None or disk_cause(tmp_path) == "no space left on device"
    real = os.statvfs(tmp_path)

    class Full:
        f_flag, f_bavail, f_frsize, f_files, f_favail = real.f_flag, 0, 4096, 10, 5

    class ReadOnly(Full):
        f_flag = os.ST_RDONLY
        f_bavail = 10**9

    monkeypatch.setattr(os, "statvfs", lambda path: Full())
    assert disk_cause(tmp_path / "not" / "yet") == "no space left on device"
    monkeypatch.setattr(os, "statvfs", lambda path: ReadOnly())
    assert disk_cause(tmp_path) == "read-only file system"


def test_sqlite_disk_cause(tmp_path: Path) -> None:
    db = tmp_path / "x.sqlite"
    full = sqlite3.OperationalError("database or disk is full")
    assert sqlite_disk_cause(full, db) in (
        "database or disk is full", "no space left on device (database or disk is full)")
    missing = sqlite3.OperationalError("unable to open database file")
    assert sqlite_disk_cause(missing, tmp_path / "nope" / "x.sqlite") == (
        "missing parent directory (unable to open database file)")
    assert sqlite_disk_cause(sqlite3.OperationalError("no such table: runs"), db) is None
    assert sqlite_disk_cause(sqlite3.DatabaseError("file is not a database"), db) is None


def test_a_lone_surrogate_is_written_as_its_json_escape(tmp_path: Path) -> None:
    out = tmp_path / "preds.jsonl"
    with atomic_writer(out) as fh:
        fh.write(json.dumps({"output": "a\ud800b"}, ensure_ascii=False) + "\n")
    assert json.loads(out.read_text(encoding="utf-8")) == {"output": "a\ud800b"}
