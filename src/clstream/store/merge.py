"""Several results directories combined into one (docs/design.md §11.6).

Runs are keyed by their run id, the hash of their spec (docs/design.md §4.2), and records by
``(run_id, kind, key)`` (§5); so the same run found in two directories (a copy, or a run
resumed on another machine) is one run, and its records must agree. They agree when every
record both hold has the same content (payload, error, coordinates, stage, tokens, cache hit;
not its time stamp or latency, nor the payload's own wall-clock measurements,
:data:`~clstream.core.records.MEASURED_PAYLOAD_FIELDS`, which no rerun reproduces) and every
memory snapshot both hold
is the same state. A record stored as an error in one and as an answer in the other is not a
disagreement: the answer is kept, as a resume would keep it (§6). Records and snapshots only
one directory holds are added. A disagreement is a one-line :class:`StoreError` naming the
run, and nothing is written: the merged directory is built under a temporary name next to its
destination and renamed into place only when complete.

Model calls (transcripts, :mod:`clstream.store.transcripts`) come with their runs: calls
only one directory holds are added, a call both hold is kept as first found, and message
pieces are keyed by content, so each is stored once. Datasets are keyed by their hash, so the
first copy is kept. A parametric method's trained
weights (``artifacts/``, docs/parametric.md §4) are content-addressed folders: a folder
already taken from an earlier directory is not copied again, and unfinished ones
(``*.partial``) are left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clstream.core.errors import StoreError
from clstream.core.records import MEASURED_PAYLOAD_FIELDS
from clstream.store.db import DB_NAME, ResultsStore
from clstream.store.transcripts import TranscriptWriter, transcript_rows

ARTIFACTS = "artifacts"
_RUN_COLUMNS = ("run_id", "protocol", "system", "model", "dataset_sha256", "spec", "info",
                "created_at", "wall_s")
_RUN_IDENTITY = ("protocol", "system", "model", "dataset_sha256", "spec")
_RECORD_COLUMNS = ("run_id", "kind", "key", "stream", "t", "rollout", "arm", "sample", "score",
                   "payload", "error", "stage", "prompt_tokens", "cached_tokens",
                   "completion_tokens", "reasoning_tokens", "latency_s", "cache_hit",
                   "created_at")
_RECORD_CONTENT = ("stream", "t", "rollout", "arm", "sample", "score", "payload", "error",
                   "stage", "prompt_tokens", "cached_tokens", "completion_tokens",
                   "reasoning_tokens", "cache_hit")


@dataclass
class MergeCounts:
    """What a merge combined: runs in the result, runs found in more than one directory,
    records and snapshots in the result."""

    runs: int = 0
    shared_runs: int = 0
    records: int = 0
    states: int = 0


def _insert(conn: sqlite3.Connection, table: str, columns: Sequence[str],
            rows: Sequence[Sequence[Any]], verb: str = "INSERT") -> None:
    conn.executemany(f"{verb} INTO {table} ({', '.join(columns)})"
                     f" VALUES ({', '.join('?' * len(columns))})", rows)


def _same_content(mine: sqlite3.Row, theirs: sqlite3.Row) -> bool:
    """Whether two copies of one record agree: every content column equal, the payloads once
    their wall-clock measurements are left out (module docstring)."""
    if any(mine[c] != theirs[c] for c in _RECORD_CONTENT if c != "payload"):
        return False
    if mine["payload"] == theirs["payload"]:
        return True
    try:
        ours, other = json.loads(mine["payload"]), json.loads(theirs["payload"])
    except ValueError:
        return False
    if not isinstance(ours, dict) or not isinstance(other, dict):
        return bool(ours == other)
    return ({k: v for k, v in ours.items() if k not in MEASURED_PAYLOAD_FIELDS}
            == {k: v for k, v in other.items() if k not in MEASURED_PAYLOAD_FIELDS})


class _Merger:
    def __init__(self, dest: ResultsStore) -> None:
        self.dest = dest
        self.origin: dict[str, Path] = {}  # run id -> the directory it was first found in
        self.counts = MergeCounts()

    def conflict(self, run_id: str, source: Path, what: str) -> StoreError:
        return StoreError(f"cannot merge: run {run_id} differs between {self.origin[run_id]} "
                          f"and {source} ({what}); nothing was written")

    def add(self, source: Path) -> None:
        with ResultsStore(source) as src:
            conn = self.dest.conn
            conn.execute("BEGIN")
            _insert(conn, "datasets", ("sha256", "path", "content"),
                    [tuple(r) for r in src.conn.execute(
                        "SELECT sha256, path, content FROM datasets")], "INSERT OR IGNORE")
            conn.execute("COMMIT")
            for row in src.conn.execute(f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs"
                                        " ORDER BY created_at").fetchall():
                self._run(src, source, row)

    def _run(self, src: ResultsStore, source: Path, row: sqlite3.Row) -> None:
        run_id = row["run_id"]
        conn = self.dest.conn
        mine = conn.execute(f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs WHERE run_id=?",
                            (run_id,)).fetchone()
        records = src.conn.execute(f"SELECT {', '.join(_RECORD_COLUMNS)} FROM records"
                                   " WHERE run_id=?", (run_id,)).fetchall()
        conn.execute("BEGIN")
        try:
            if mine is None:
                self.origin[run_id] = source
                _insert(conn, "runs", _RUN_COLUMNS, [tuple(row)])
                _insert(conn, "records", _RECORD_COLUMNS, [tuple(r) for r in records])
            else:
                self.counts.shared_runs += 1
                for column in _RUN_IDENTITY:
                    if mine[column] != row[column]:
                        raise self.conflict(run_id, source, f"its {column}")
                conn.execute("UPDATE runs SET wall_s=MAX(wall_s, ?), created_at=MIN(created_at, ?)"
                             " WHERE run_id=?", (row["wall_s"], row["created_at"], run_id))
                for record in records:
                    self._record(source, record)
            TranscriptWriter(conn).put_rows(*transcript_rows(src.conn, run_id), replace=False)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        self._states(src, source, run_id, shared=mine is not None)

    def _record(self, source: Path, record: sqlite3.Row) -> None:
        conn = self.dest.conn
        key = (record["run_id"], record["kind"], record["key"])
        mine = conn.execute(f"SELECT {', '.join(_RECORD_CONTENT)} FROM records"
                            " WHERE run_id=? AND kind=? AND key=?", key).fetchone()
        if mine is None:
            _insert(conn, "records", _RECORD_COLUMNS, [tuple(record)])
        elif mine["error"] is not None and record["error"] is None:
            _insert(conn, "records", _RECORD_COLUMNS, [tuple(record)], "INSERT OR REPLACE")
        elif (mine["error"] is None and record["error"] is None
              and not _same_content(mine, record)):
            raise self.conflict(key[0], source, f"record {key[1]} {key[2]!r}")


    def _states(self, src: ResultsStore, source: Path, run_id: str, *, shared: bool) -> None:
        streams = [r[0] for r in src.conn.execute(
            "SELECT DISTINCT stream FROM states WHERE run_id=? ORDER BY stream", (run_id,))]
        for stream in streams:
            have = set(self.dest.state_steps(run_id, stream)) if shared else set()
            for t in src.state_steps(run_id, stream):
                loaded = src.load_state(run_id, stream, t)
                if loaded is None:
                    continue
                if t in have:
                    mine = self.dest.load_state(run_id, stream, t)
                    if mine is None or mine[1] != loaded[1]:
                        raise self.conflict(run_id, source, f"memory snapshot {stream!r} "
                                                            f"step {t}")
                    continue
                self.dest.save_state(run_id, stream, t, loaded[1])

    def finish(self) -> MergeCounts:
        conn = self.dest.conn
        self.counts.runs = int(conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
        self.counts.records = int(conn.execute("SELECT COUNT(*) FROM records").fetchone()[0])
        self.counts.states = int(conn.execute("SELECT COUNT(*) FROM states").fetchone()[0])
        return self.counts


def _copy_artifacts(sources: Sequence[Path], dest: Path) -> None:
    for source in sources:
        folder = source / ARTIFACTS
        if not folder.is_dir():
            continue
        for item in sorted(folder.iterdir()):
            target = dest / ARTIFACTS / item.name
            if item.name.endswith(".partial") or target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if item.is_dir():
                shutil.copytree(item, target)
            else:
                shutil.copy2(item, target)


def _existing_ancestor(path: Path) -> Path:
    path = path.absolute()
    while not path.exists():
        path = path.parent
    return path


def _check(out: Path, sources: Sequence[Path]) -> None:
    if not sources:
        raise StoreError("merge: name at least one results directory to merge")
    for source in sources:
        if not (source / DB_NAME).exists():
            raise StoreError(f"{source}: no results database ({DB_NAME}) in this directory")
        if out.exists() and out.resolve() == source.resolve():
            raise StoreError(f"{out}: the merged directory cannot be one of its sources")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise StoreError(f"{out}: already exists and is not an empty directory; "
                         "merge into a new directory")


def build_merged(build: Path, sources: Sequence[Path], *, artifacts: bool = True
                 ) -> MergeCounts:
    """Merge ``sources`` into the new results directory ``build`` (no checks, no rename)."""
    with ResultsStore(build, writer=True) as dest:
        merger = _Merger(dest)
        for source in sources:
            merger.add(source)
        counts = merger.finish()
    if artifacts:
        _copy_artifacts(sources, build)
    return counts


def merge_results(out: str | Path, sources: Sequence[str | Path]) -> MergeCounts:
    """Combine the results directories ``sources`` into the new directory ``out``; see the
    module docstring. On any error ``out`` is left as it was (absent or empty)."""
    out = Path(out)
    paths = [Path(s) for s in sources]
    _check(out, paths)
    build = Path(tempfile.mkdtemp(prefix=f".{out.name}.merging-",
                                  dir=_existing_ancestor(out.parent)))
    try:
        counts = build_merged(build, paths)
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.exists():
            out.rmdir()
        os.replace(build, out)
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(build)
        raise
    return counts
