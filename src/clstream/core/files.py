"""Writing files so that a failure never leaves half a file, and naming why a disk failed.

Every file clstream writes (generated streams, exported predictions and records, reports) goes
through :func:`atomic_writer` or :func:`write_atomic`: the content goes to a temporary file in
the target's directory, is flushed and fsynced, renamed over the target, and the directory is
fsynced. A failure at any point (full disk, read-only file system, missing directory, an error
while producing the content) removes the temporary file and leaves an existing target as it
was; the caller gets a :class:`WriteError` whose one-line message names the path and the cause.

Parent directories are never created, except exactly one level when the caller asks for it
(``make_parent=True``, for a directory the command owns): a mistyped ``--out`` is an error,
not a new directory tree. A target that exists and is not a regular file (``/dev/stdout``, a
pipe) cannot be replaced by a rename; it is written in place.

:func:`os_error_cause` turns an errno into the words the messages use; :func:`disk_cause`
looks at a directory's file system (read-only, full) to name the real cause behind a vaguer
report, and :func:`sqlite_disk_cause` does the same for SQLite's errors ("disk I/O error",
"database or disk is full", "attempt to write a readonly database", "unable to open database
file"), so the results store and the caches can say why they cannot write.
"""

from __future__ import annotations

import errno
import os
import secrets
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from clstream.core.errors import DataError

_WRITE_CAUSES = {
    errno.EROFS: "read-only file system",
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.ENOENT: "missing parent directory",
    errno.EISDIR: "is a directory",
    errno.ENOTDIR: "a parent of the path is not a directory",
    errno.ENAMETOOLONG: "file name too long",
    errno.EIO: "input/output error",
    errno.EMFILE: "too many open files",
    errno.EFBIG: "file too large",
    errno.EXDEV: "temporary file on another file system",
    errno.EEXIST: "a file of that name exists",
}
_READ_CAUSES = {**_WRITE_CAUSES, errno.ENOENT: "file not found"}

# Below this many free bytes a failed write is put down to a full disk.
_NEARLY_FULL = 1 << 20


class WriteError(DataError):
    """A file could not be written; the message names the path and the cause.

    A :class:`DataError` (record and field empty) so callers that catch bad files catch it too.
    """

    def __init__(self, path: object, cause: str):
        self.cause = cause
        super().__init__(path, None, None, f"cannot write file: {cause}")


def os_error_cause(exc: OSError, writing: bool = True) -> str:
    """Short words for an OSError's errno ("no space left on device"), else its strerror."""
    words = (_WRITE_CAUSES if writing else _READ_CAUSES).get(exc.errno or -1)
    return words or exc.strerror or str(exc) or type(exc).__name__


def disk_cause(directory: str | Path) -> str | None:
    """The reason the file system holding ``directory`` refuses writes, when one can be seen:
    "read-only file system", "no space left on device" or "permission denied"; else None."""
    folder = Path(directory)
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        fs = os.statvfs(folder)
    except OSError:
        return None
    if fs.f_flag & os.ST_RDONLY:
        return "read-only file system"
    if fs.f_bavail * fs.f_frsize < _NEARLY_FULL or (fs.f_files and fs.f_favail == 0):
        return "no space left on device"
    if not os.access(folder, os.W_OK):
        return "permission denied"
    return None


_SQLITE_PERM, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_FULL, _SQLITE_CANTOPEN = 3, 8, 10, 13, 14
_SQLITE_MESSAGES = {
    "attempt to write a readonly database": _SQLITE_READONLY,
    "disk I/O error": _SQLITE_IOERR,
    "database or disk is full": _SQLITE_FULL,
    "unable to open database file": _SQLITE_CANTOPEN,
}


def sqlite_disk_cause(exc: sqlite3.Error, database: str | Path) -> str | None:
    """Words for an SQLite error that comes from the disk or the file system ("no space left on
    device", "read-only file system", ...), with SQLite's own message when it adds to them;
    None for any other error (a malformed database, a busy lock, a bad query)."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    message = str(exc)
    if primary not in (_SQLITE_PERM, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_FULL,
                       _SQLITE_CANTOPEN):
        primary = next((c for m, c in _SQLITE_MESSAGES.items() if m in message), None)
    if primary is None:
        return None
    seen = disk_cause(Path(database).parent)
    if primary == _SQLITE_PERM:
        cause = "permission denied"
    elif primary == _SQLITE_FULL:
        cause = seen or "database or disk is full"
    elif primary == _SQLITE_READONLY:
        cause = seen or "the database file is read-only"
    elif primary == _SQLITE_CANTOPEN and not Path(database).parent.is_dir():
        cause = "missing parent directory"
    else:
        cause = seen or message
    return cause if cause == message else f"{cause} ({message})"


def _fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable; a file system that cannot fsync a directory
    (some network and FUSE mounts) is left to its own guarantees."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _open_temp(target: Path) -> tuple[int, Path]:
    """A new file next to ``target`` (mode 0o666 less the umask, as ``open`` would give)."""
    for _ in range(16):
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), tmp
        except FileExistsError:
            continue
    raise OSError(errno.EEXIST, "cannot pick a temporary file name", str(target))


def _remove_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


@contextmanager
def atomic_writer(
    path: str | Path, *, binary: bool = False, make_parent: bool = False
) -> Iterator[IO[Any]]:
    """A file handle whose content replaces ``path`` only when the ``with`` block succeeds.

    Text handles write UTF-8; a lone surrogate (text no UTF-8 can hold, as a model may emit)
    is written as its ``\\ud800``-style escape, which is also how JSON spells it, so a JSON line
    written with ``ensure_ascii=False`` reads back as the same string. Streaming writers write
    through the handle as they go; the target changes once, at the end. ``make_parent`` creates the one missing directory that
    holds ``path`` (never more). Any failure raises :class:`WriteError` (an exception raised
    by the block itself propagates unchanged) and leaves no temporary file behind.
    """
    target = Path(path)
    mode = "wb" if binary else "w"
    encoding = None if binary else "utf-8"
    errors = None if binary else "backslashreplace"
    try:
        if make_parent and not target.parent.is_dir():
            target.parent.mkdir()
        try:
            info: os.stat_result | None = os.stat(target)
        except (FileNotFoundError, NotADirectoryError):
            info = None
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(target))
        if info is not None and not stat.S_ISREG(info.st_mode):
            # A device or pipe (/dev/stdout, /dev/null): nothing to rename over. Errors while
            # writing propagate as they are (a closed pipe is the reader's choice).
            device = open(target, mode, encoding=encoding, errors=errors)  # noqa: SIM115
        else:
            device = None
            real = target.resolve() if target.is_symlink() else target  # keep the link
            fd, tmp = _open_temp(real)
    except OSError as exc:
        raise WriteError(path, os_error_cause(exc)) from None
    if device is not None:
        with device:
            yield device
        return
    try:
        with os.fdopen(fd, mode, encoding=encoding, errors=errors) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        if info is not None:
            os.chmod(tmp, stat.S_IMODE(info.st_mode))
        os.replace(tmp, real)
    except OSError as exc:
        _remove_quietly(tmp)
        raise WriteError(path, os_error_cause(exc)) from None
    except BaseException:
        _remove_quietly(tmp)
        raise
    _fsync_directory(real.parent)


def write_atomic(path: str | Path, data: bytes | str, *, make_parent: bool = False) -> None:
    """Replace ``path`` with ``data`` (text is written as UTF-8) through :func:`atomic_writer`."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_writer(path, binary=True, make_parent=make_parent) as fh:
        fh.write(raw)
