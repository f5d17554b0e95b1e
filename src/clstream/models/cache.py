"""A response cache for remote model calls: the same request body is never paid for twice.

docs/design.md §8, §5: "one cache keyed by a hash of the request" (after lm-evaluation-harness) and "one
writer per results database, WAL mode". The key is the sha256 of the backend name and the full
request body as canonical JSON (sorted keys). The body already holds everything that shapes the
output (model, messages, every sampling parameter, the per-request seed, extra fields), so no
field has to be picked out; the server address is left out, so a cache filled against one
endpoint replays against another serving the same model.

Only successful results are stored (samples and usage, with the latency of the original call).
Entries are written and read with orjson, and with the standard ``json`` module where orjson
refuses: a reply holding a lone surrogate (``"\\ud800"``, valid JSON that servers send) is stored
as its escape and read back as the same text, and the key of a body holding one is taken over
its surrogate-preserving bytes (every other key is unchanged).
One SQLite connection per cache, used from one process; a lock serializes access, so many
coroutines (or threads) may share it. Each ``put`` commits, so a killed run keeps what it paid for.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson
from pydantic import ValidationError

from clstream.core.errors import StoreError
from clstream.core.files import os_error_cause, sqlite_disk_cause
from clstream.core.outputs import OutputRefused, refuse_store_files
from clstream.core.types import Sample, Usage

FORMAT = "clstream-response-cache-1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    result TEXT NOT NULL,
    created REAL NOT NULL
);
"""


@dataclass(frozen=True)
class CachedResponse:
    """What a cache hit gives back."""

    samples: list[Sample]
    usage: Usage


def _dumps(entry: dict[str, Any]) -> str:
    """An entry's JSON text: orjson's, else (a lone surrogate) ``json``'s ASCII escapes."""
    try:
        return orjson.dumps(entry, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return json.dumps(entry, sort_keys=True, ensure_ascii=True)


def _loads(text: str) -> Any:
    """An entry read back: orjson first, ``json`` where orjson refuses a lone surrogate."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


class ResponseCache:
    """SQLite (WAL) store of successful responses, keyed by :meth:`key`."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        refuse_store_files(path, self.path.resolve())
        self._refuse_other_databases()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                str(self.path), timeout=30.0, isolation_level=None, check_same_thread=False
            )
        except OSError as exc:
            raise StoreError(
                f"{self.path}: cannot open response cache: {os_error_cause(exc)}"
            ) from None
        except sqlite3.Error as exc:
            cause = sqlite_disk_cause(exc, self.path) or str(exc)
            raise StoreError(f"{self.path}: cannot open response cache: {cause}") from None
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
            row = conn.execute("SELECT value FROM meta WHERE name = 'format'").fetchone()
            if row is None:
                conn.execute("INSERT INTO meta (name, value) VALUES ('format', ?)", (FORMAT,))
            elif row[0] != FORMAT:
                raise StoreError(
                    f"{self.path}: response cache format {row[0]!r}, expected {FORMAT!r}"
                )
        except sqlite3.Error as exc:
            conn.close()
            disk = sqlite_disk_cause(exc, self.path)
            if disk is not None:
                raise StoreError(f"{self.path}: cannot open response cache: {disk}") from None
            raise StoreError(f"{self.path}: not a usable response cache: {exc}") from exc
        except StoreError:
            conn.close()
            raise
        self._conn: sqlite3.Connection | None = conn

    def _refuse_other_databases(self) -> None:
        """An existing SQLite database that holds tables but no response cache (a results
        store copied elsewhere, another program's data) is refused before anything is written
        to it: opening it as a cache would add tables to it (docs/design.md §7.1)."""
        try:
            with open(self.path, "rb") as fh:
                if fh.read(16) != b"SQLite format 3\x00":
                    return  # absent, empty or not a database: the open below says which
        except OSError:
            return
        try:
            conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
        except sqlite3.Error:
            return  # unreadable: the open below names the cause
        try:
            tables = {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            # a cache's meta table has (name, value) and names its format; a store's does not
            cache = conn.execute("SELECT 1 FROM meta WHERE name = 'format'").fetchone() \
                is not None
        except sqlite3.Error:
            cache = False
        finally:
            conn.close()
        if tables and not cache:
            raise OutputRefused(self.path, "is an SQLite database but not a response cache (a "
                                           "results store?); clstream never writes into one: "
                                           "give the cache a path of its own")

    @staticmethod
    def key(backend: str, body: dict[str, Any]) -> str:
        """sha256 of the backend name and the canonical JSON of the request body."""
        canonical = json.dumps(
            {"backend": backend, "body": body},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
        return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"{self.path}: response cache is closed")
        return self._conn

    def get(self, key: str) -> CachedResponse | None:
        with self._lock:
            row = (
                self._connection()
                .execute("SELECT result FROM responses WHERE key = ?", (key,))
                .fetchone()
            )
        if row is None:
            return None
        try:
            data = _loads(row[0])
            return CachedResponse(
                samples=[Sample.model_validate(s) for s in data["samples"]],
                usage=Usage.model_validate(data["usage"]),
            )
        except (ValueError, KeyError, TypeError, ValidationError) as exc:
            raise StoreError(f"{self.path}: cache entry {key[:16]} is corrupt: {exc}") from exc

    def put(self, key: str, backend: str, model: str, samples: list[Sample], usage: Usage) -> None:
        """Store one successful result (replacing any earlier entry with the same key)."""
        result = _dumps({
            "samples": [s.model_dump(mode="json") for s in samples],
            "usage": usage.model_dump(mode="json"),
        })
        with self._lock:
            try:
                self._connection().execute(
                    "INSERT OR REPLACE INTO responses (key, backend, model, result, created) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (key, backend, model, result, time.time()),
                )
            except sqlite3.OperationalError as exc:
                cause = sqlite_disk_cause(exc, self.path)
                if cause is None:
                    raise
                raise StoreError(f"{self.path}: cannot write response cache: {cause}") from None

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._connection().execute("SELECT COUNT(*) FROM responses").fetchone()
        return int(count)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def describe(self) -> dict[str, Any]:
        return {"path": str(self.path), "format": FORMAT}
