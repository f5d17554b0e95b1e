"""The results directories a viewer shows, read-only, and the run ids it names their runs by.

A run is named ``<dir index>:<run id>`` (``0:3fa9c1d2e4b5a601``): unique over several
directories, and made of URL-safe characters only (a stored run id is hex). Every read opens
the directory's store read-only (:class:`~clstream.store.db.ResultsStore` without
``writer``: SQLite ``mode=ro``, no lock; ``untouched``: as an immutable file while no writer
is at work, so that not even SQLite's -wal and -shm files appear), for the one request that
reads it, since a request
is served on its own thread and an SQLite connection belongs to the thread that opened it.
What is costly to compute (a directory's summary, a run's item rows) is computed once and
kept for the life of the viewer: a results directory being written while viewed shows what
it held when first read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from clstream.core.errors import ClstreamError, StoreError
from clstream.core.records import RunRow
from clstream.store.db import ResultsStore
from clstream.view.items import Row, item_rows

T = TypeVar("T")


class NotFound(ClstreamError):
    """A run, item or page the viewer does not have (HTTP 404)."""


class BadRequest(ClstreamError):
    """A query parameter the viewer cannot read (HTTP 400), named in the message."""


def run_ref(index: int, run_id: str) -> str:
    return f"{index}:{run_id}"


@dataclass(frozen=True)
class Selection:
    """Which runs the viewer shows (``--protocol``, ``--dataset``, ``--system`` as typed:
    :func:`clstream.store.export.select_runs`); None: any."""

    protocol: str | None = None
    dataset: str | None = None
    system: str | None = None


class Catalog:
    """The directories given to ``clstream view``, in order, and the runs of ``selection``
    in them. Opening checks each is a results directory, and that a selection finds some
    run (a one-line :class:`~clstream.core.errors.StoreError` otherwise)."""

    def __init__(self, dirs: list[str | Path], selection: Selection = Selection()) -> None:
        self.dirs = [Path(d) for d in dirs]
        self.selection = selection
        for d in self.dirs:
            ResultsStore(d, untouched=True).close()
        self._lock = threading.Lock()
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._cache: dict[tuple[str, str], Any] = {}
        if selection != Selection() and not self.all_runs():
            self._refuse_empty()

    def _refuse_empty(self) -> None:
        from clstream.store.export import no_run_error, select_runs

        where = ", ".join(map(str, self.dirs))
        chosen = self.selection
        if chosen.system is None:
            scope = " ".join(x for x in (chosen.protocol, chosen.dataset) if x)
            raise StoreError(f"{where}: no run matches {scope}")
        candidates: list[RunRow] = []
        for index in range(len(self.dirs)):
            with self.store(index) as store:
                candidates += select_runs(store, chosen.protocol, chosen.dataset)
        with self.store(0) as store:
            raise no_run_error(store, candidates, chosen.system, chosen.protocol,
                               chosen.dataset, where=where)

    @contextmanager
    def store(self, index: int) -> Iterator[ResultsStore]:
        with ResultsStore(self.dirs[index], untouched=True) as store:
            yield store

    def cached(self, kind: str, key: str, compute: Callable[[], T]) -> T:
        """``compute()`` once per (kind, key); requests for the same one wait for the first,
        requests for others do not."""
        with self._lock:
            lock = self._locks.setdefault((kind, key), threading.Lock())
        with lock:
            if (kind, key) not in self._cache:
                self._cache[(kind, key)] = compute()
            found: T = self._cache[(kind, key)]
            return found

    def all_runs(self) -> list[tuple[int, RunRow]]:
        def read() -> list[tuple[int, RunRow]]:
            found = []
            from clstream.store.export import select_runs

            chosen = self.selection
            for index in range(len(self.dirs)):
                with self.store(index) as store:
                    found += [(index, run) for run in select_runs(
                        store, chosen.protocol, chosen.dataset, chosen.system,
                        where=str(self.dirs[index]))]
            return found

        return self.cached("runs", "", read)

    def find(self, ref: str) -> tuple[int, RunRow]:
        """The directory index and run named ``ref``; :class:`NotFound` for any other text."""
        for index, run in self.all_runs():
            if run_ref(index, run.run_id) == ref:
                return index, run
        raise NotFound(f"no run {ref!r}")

    def rows(self, ref: str) -> list[Row]:
        """The run's item rows (:func:`clstream.view.items.item_rows`), read once."""
        index, run = self.find(ref)

        def read() -> list[Row]:
            with self.store(index) as store:
                return item_rows(store, run)

        return self.cached("rows", ref, read)

    def summaries(self) -> list[dict[str, Any]]:
        """Each directory's summary as ``clstream summary DIR --json`` prints it
        (:func:`clstream.report.store_summary.summarize`), its runs named by view ref."""
        from clstream.report.store_summary import summarize

        def read() -> list[dict[str, Any]]:
            out = []
            for index in range(len(self.dirs)):
                chosen = self.selection
                with self.store(index) as store:
                    summary = summarize(store, protocol=chosen.protocol,
                                        dataset=chosen.dataset, system=chosen.system,
                                        where=str(self.dirs[index]))
                for run in summary["runs"]:
                    run["ref"] = run_ref(index, str(run["run_id"]))
                out.append(summary)
            return out

        return self.cached("summary", "", read)
