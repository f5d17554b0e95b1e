"""Where a command may write: nothing a user types can destroy results or a dataset.

Every command that writes a file or a directory the user names (``export``, ``report``,
``summary --cross-csv``, ``check --save``, ``merge``, every ``generate``) asks
:func:`claim_file` or :func:`claim_directory` first, writes through :func:`write_output` /
:func:`output_writer` (which call :mod:`clstream.core.files`' atomic writers), and so obeys
three rules (docs/design.md §7.1):

1. **A results store is never a target.** A path that is, or lies inside, a store's own files
   (``results.sqlite`` and its journal files, the writer lock, ``artifacts/``) is refused, with
   or without ``--force``; so is any existing SQLite database. Files beside the store in its
   directory (``DIR/report.html``, ``DIR/preds.jsonl``) are ordinary outputs.
2. **A dataset is never a target.** A path that is, or lies inside, a dataset that runs were
   made from (a path the stores being read registered) is refused. Generators refuse an
   existing file without ``--force`` and a non-empty directory always: merging a new dataset
   into an old one would silently change what earlier runs read.
3. **A file clstream did not write is not replaced without ``--force``.** clstream notes the
   outputs it wrote in a small ledger beside them (:data:`LEDGER`: name, SHA-256 of the
   content; datasets are not noted, so a generated file needs ``--force`` like any other);
   rewriting its own output (a report regenerated, an export refreshed) needs no flag,
   but a file that is not in the ledger, or was changed since, does (an HTML report that names
   clstream as its generator counts as clstream's, so reports made before the ledger existed
   are refreshed as before).

``run`` writes only its results directory, which is never the data it reads nor inside it
(:func:`refuse_datasets`), and its response cache (``--cache``), which is never inside that
data either, nor a store's file (:func:`refuse_store_files`), nor any database but a response cache
(:class:`clstream.models.cache.ResponseCache` looks before it writes).

Refusals are :class:`OutputRefused`: one line naming the path, what it belongs to and what to
do, exit 2, raised before anything is written. A target that exists and is not a regular file
(``/dev/stdout``, a pipe) is written in place, as :func:`clstream.core.files.atomic_writer`
does, and needs no ledger.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Any, Literal

from clstream.core.errors import DataError
from clstream.core.files import atomic_writer, write_atomic

__all__ = [
    "LEDGER", "RESULTS_DB", "STORE_ENTRIES", "OutputRefused", "Role", "add_force_flag",
    "claim_directory", "claim_file", "is_file_dataset", "note_written", "output_writer",
    "refuse_datasets", "refuse_store_files", "replacing", "store_root", "write_output",
]

RESULTS_DB = "results.sqlite"
# What a results directory holds that belongs to the store itself.
STORE_ENTRIES = frozenset({RESULTS_DB, f"{RESULTS_DB}-wal", f"{RESULTS_DB}-shm",
                           f"{RESULTS_DB}-journal", ".writer.lock", "artifacts"})
LEDGER = ".clstream-outputs.json"
_SQLITE_MAGIC = b"SQLite format 3\x00"

Role = Literal["output", "dataset"]

# ``--force`` of the command being run: set once where the command starts
# (:func:`replacing`), read by every claim below it, so writers deep in a protocol need no flag.
_FORCE: ContextVar[bool] = ContextVar("clstream_force_outputs", default=False)


@contextmanager
def replacing(force: bool) -> Iterator[None]:
    """Within the block, claims act as if ``--force`` was given when ``force`` is true."""
    token = _FORCE.set(bool(force))
    try:
        yield
    finally:
        _FORCE.reset(token)


class OutputRefused(DataError):
    """A write that would destroy results, a dataset or a file clstream did not make."""

    def __init__(self, path: object, why: str):
        super().__init__(path, None, None, why)


def add_force_flag(parser: argparse.ArgumentParser) -> None:
    """``--force``: replace an existing file clstream did not write (never a store or dataset)."""
    parser.add_argument("--force", action="store_true",
                        help="replace an existing output file that clstream did not write "
                             "(results stores and datasets are never replaced)")


def store_root(path: Path) -> Path | None:
    """The nearest of ``path`` and its parents that holds a results database, if any."""
    for candidate in (path, *path.parents):
        with suppress(OSError):
            if (candidate / RESULTS_DB).is_file():
                return candidate
    return None


def _ledger(directory: Path) -> dict[str, dict[str, str]]:
    try:
        raw = json.loads((directory / LEDGER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, dict)}


def _digest(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def _clstream_page(path: Path) -> bool:
    """An HTML report clstream wrote before the ledger existed: its generator tag says so."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return b'<meta name="generator" content="clstream' in head


def _is_database(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    except OSError:
        return False


def _refuse_store_and_datasets(shown: str | Path, target: Path,
                               protected: Iterable[str | Path]) -> None:
    """Rules 1 and 2 for ``target`` (already resolved)."""
    refuse_store_files(shown, target)
    if target.is_file() and _is_database(target):
        raise OutputRefused(shown, "is an SQLite database (a results store?); clstream never "
                                   "writes over one: write it elsewhere")
    if target.name == LEDGER:
        raise OutputRefused(shown, "is clstream's list of the files it wrote; pick another name")
    refuse_datasets(shown, target, protected)


def refuse_store_files(shown: str | Path, target: Path) -> None:
    """Rule 1 for ``target`` (already resolved): it is not a results directory, nor one of
    its store's own files. The response cache, a database clstream reopens and adds to, asks
    this alone (an existing database it checks itself)."""
    root = store_root(target if target.is_dir() else target.parent)
    if root is not None:
        inside = target.relative_to(root).parts
        if not inside:
            raise OutputRefused(shown, "is the results directory itself; write to a file "
                                       "or directory beside its runs, or elsewhere")
        if inside[0] in STORE_ENTRIES or inside[0].startswith(f".{RESULTS_DB}"):
            raise OutputRefused(shown, f"belongs to the results store in {root}; write it "
                                       "elsewhere")


def is_file_dataset(path: str) -> bool:
    """Whether a dataset's stored path names a file or directory (``oaks.json``, ``/d/news``)
    rather than a procedural source (``clbench:sales_prediction``, ``babi:seed=3``)."""
    return bool(path) and ":" not in path.split("/", 1)[0]


def refuse_datasets(shown: str | Path, target: Path, protected: Iterable[str | Path],
                    whose: str = "the runs being read were made from") -> None:
    """Rule 2 alone for ``target`` (already resolved): it is not, and does not lie inside, a
    dataset of ``protected`` (``whose`` says where those datasets come from). ``run`` asks it
    of its results directory and the data it reads, which no claim covers."""
    for dataset in protected:
        found = Path(dataset).resolve()
        if target == found or found in target.parents:
            raise OutputRefused(shown, f"is (or lies inside) the dataset {dataset} that {whose}; "
                                       "write it elsewhere")


def claim_file(path: str | Path, *, force: bool | None = None, role: Role = "output",
               protected: Iterable[str | Path] = ()) -> Path:
    """Check that ``path`` may be written as a file of ``role``; returns it resolved.

    Raises :class:`OutputRefused` when it may not (see the module docstring); ``force`` left
    as None is the command's ``--force`` (:func:`replacing`)."""
    force = _FORCE.get() if force is None else force
    target = Path(path).resolve()
    _refuse_store_and_datasets(path, target, protected)
    try:
        info = os.stat(target)
    except OSError:
        return target  # absent (a missing parent is the writer's one-line error)
    if stat.S_ISDIR(info.st_mode):
        raise OutputRefused(path, "is a directory; name a file")
    if not stat.S_ISREG(info.st_mode) or force:
        return target
    if role == "dataset":
        raise OutputRefused(path, "exists, and runs may have been made from it; write the new "
                                  "dataset to a new path (or give --force to replace it)")
    entry = _ledger(target.parent).get(target.name)
    if entry is None and _clstream_page(target):
        return target
    if entry is None or "sha256" not in entry:
        raise OutputRefused(path, "exists and was not written by clstream; give --force to "
                                  "replace it")
    if entry.get("sha256") != _digest(target):
        raise OutputRefused(path, "was changed since clstream wrote it; give --force to "
                                  "replace it")
    return target


def claim_directory(path: str | Path, *, force: bool | None = None, role: Role = "output",
                    protected: Iterable[str | Path] = (),
                    reusable: Iterable[str] = ()) -> Path:
    """Check that directory ``path`` may be created or filled as ``role``; returns it resolved.

    An output directory clstream made before (a report export) may be written again; any
    other non-empty directory needs ``--force`` for an output and is always refused for a
    dataset. ``reusable`` names files a generator may find there from an interrupted attempt
    of its own (its model-reply caches), which do not make the directory non-empty."""
    force = _FORCE.get() if force is None else force
    target = Path(path).resolve()
    _refuse_store_and_datasets(path, target, protected)
    if not target.exists():
        return target
    if not target.is_dir():
        raise OutputRefused(path, "exists and is not a directory")
    keep = set(reusable) | {LEDGER}
    present = sorted(p.name for p in target.iterdir() if p.name not in keep)
    if not present:
        return target
    if role == "dataset":
        raise OutputRefused(path, f"is not empty ({len(present)} entries, e.g. {present[0]}); "
                                  "write the new dataset into a new or empty directory")
    entry = _ledger(target.parent).get(target.name)
    if not force and (entry is None or entry.get("kind") != "directory"):
        raise OutputRefused(path, "is not empty and was not made by clstream; give --force "
                                  "to write into it")
    return target


def note_written(path: str | Path) -> None:
    """Add ``path`` (an output file or directory clstream just wrote) to the ledger beside it.

    Best effort: a directory where the ledger cannot be written only means that the next
    rewrite of this output asks for ``--force``."""
    target = Path(path).resolve()
    try:
        if not (target.is_file() or target.is_dir()):
            return
        entry = {"sha256": _digest(target)} if target.is_file() else {"kind": "directory"}
        ledger = _ledger(target.parent)
        if ledger.get(target.name) == entry:
            return
        ledger[target.name] = entry
        write_atomic(target.parent / LEDGER, json.dumps(ledger, indent=1, sort_keys=True) + "\n")
    except (OSError, DataError):
        return


def write_output(path: str | Path, data: bytes | str, *, force: bool | None = None,
                 protected: Iterable[str | Path] = ()) -> Path:
    """:func:`claim_file`, write ``data`` atomically, :func:`note_written`."""
    target = claim_file(path, force=force, protected=protected)
    write_atomic(path, data)
    note_written(target)
    return target


@contextmanager
def output_writer(path: str | Path, *, force: bool | None = None,
                  protected: Iterable[str | Path] = (), binary: bool = False
                  ) -> Iterator[IO[Any]]:
    """:func:`claim_file`, then an :func:`~clstream.core.files.atomic_writer` handle; the
    file is noted in the ledger once the block succeeds."""
    target = claim_file(path, force=force, protected=protected)
    with atomic_writer(path, binary=binary) as handle:
        yield handle
    note_written(target)
