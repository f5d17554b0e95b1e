"""Reading records from a results database: by run, kind and typed column, decoded or raw, and
the totals a report needs without decoding payloads (docs/design.md §5).

:class:`RecordReads` is the part of :class:`~clstream.store.db.ResultsStore` that only reads
``records``; it holds no state of its own, only the store's connection. Every query here runs
on whatever schema version is on disk, since a reader of an older database sees it through
views of the current shape (:mod:`clstream.store.schema`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any

from clstream.core.records import StoredRecord
from clstream.core.types import Usage

__all__ = ["UNREADABLE_ERROR", "RecordReads"]

# The error a record is given when its stored payload cannot be decoded: it is then not done,
# and a resume redoes it as it redoes any failed record (``ResultsStore.mark_unreadable``).
UNREADABLE_ERROR = "its stored payload could not be read (not JSON)"


class RecordReads:
    """The record queries of a results store, over its connection :attr:`conn`."""

    conn: sqlite3.Connection

    @staticmethod
    def _where(run_id: str, kind: str | None, filters: dict[str, Any],
               errors: bool | None = None) -> tuple[str, tuple[Any, ...]]:
        """A WHERE clause over the run, kind and typed columns; None means "any"."""
        sql = " WHERE run_id=?"
        args: list[Any] = [run_id]
        if kind is not None:
            sql += " AND kind=?"
            args.append(kind)
        for column, value in filters.items():
            if value is not None:
                sql += f" AND {column}=?"
                args.append(value)
        if errors is True:
            sql += " AND error IS NOT NULL"
        elif errors is False:
            sql += " AND error IS NULL"
        return sql, tuple(args)

    def done_keys(
        self, run_id: str, kind: str, stream: str | None = None, *,
        rollout: int | None = None, arm: str | None = None,
    ) -> set[str]:
        """Keys of successful records (errors are not done: resume retries them)."""
        where, args = self._where(run_id, kind, {"stream": stream, "rollout": rollout,
                                                 "arm": arm}, errors=False)
        return {row[0] for row in self.conn.execute("SELECT key FROM records" + where, args)}

    def iter_records(
        self, run_id: str, kind: str | None = None, *, stream: str | None = None,
        step: int | None = None, rollout: int | None = None, arm: str | None = None,
        sample: int | None = None, errors: bool | None = None,
    ) -> Iterator[sqlite3.Row]:
        """Raw rows in (stream, step, key) order, optionally narrowed by any typed column.

        Each row has every column of ``records`` (``payload`` still JSON text, the step as
        ``t``) and ``step``, the same step under the name the typed API uses. ``errors``: True
        for failed records only, False for successful ones only, None for both."""
        where, args = self._where(run_id, kind, {"stream": stream, "t": step,
                                                 "rollout": rollout, "arm": arm,
                                                 "sample": sample}, errors)
        yield from self.conn.execute(
            "SELECT *, t AS step FROM records" + where + " ORDER BY stream, t, key", args
        )

    def read_records(
        self, run_id: str, kind: str | None = None, *, stream: str | None = None,
        step: int | None = None, rollout: int | None = None, arm: str | None = None,
        sample: int | None = None, errors: bool | None = None,
    ) -> Iterator[StoredRecord]:
        """:meth:`iter_records` as typed records with the payload decoded."""
        for row in self.iter_records(run_id, kind, stream=stream, step=step, rollout=rollout,
                                     arm=arm, sample=sample, errors=errors):
            yield StoredRecord(
                run_id=row["run_id"], kind=row["kind"], key=row["key"], stream=row["stream"],
                step=row["step"], rollout=row["rollout"], arm=row["arm"], sample=row["sample"],
                score=row["score"], payload=json.loads(row["payload"]), error=row["error"],
                stage=row["stage"],
                usage=Usage(prompt_tokens=row["prompt_tokens"],
                            cached_tokens=row["cached_tokens"],
                            completion_tokens=row["completion_tokens"],
                            reasoning_tokens=row["reasoning_tokens"],
                            latency_s=row["latency_s"]),
                cache_hit=bool(row["cache_hit"]), created_at=row["created_at"],
            )

    def count(
        self, run_id: str, kind: str, errors: bool | None = None, *,
        stream: str | None = None, rollout: int | None = None, arm: str | None = None,
    ) -> int:
        where, args = self._where(run_id, kind, {"stream": stream, "rollout": rollout,
                                                 "arm": arm}, errors)
        return int(self.conn.execute("SELECT COUNT(*) FROM records" + where, args).fetchone()[0])

    def unreadable_records(self, run_id: str) -> list[tuple[str, str]]:
        """(kind, key) of the run's records whose payload does not decode: a damaged file, or
        a row changed by hand. SQLite's ``json_valid`` picks the candidates (a payload holding
        NaN is valid to Python's decoder but not to SQLite's), Python's decoder decides."""
        try:
            rows = self.conn.execute("SELECT kind, key, payload FROM records"
                                     " WHERE run_id=? AND NOT json_valid(payload)", (run_id,))
        except sqlite3.OperationalError:  # an SQLite without its JSON functions
            rows = self.conn.execute("SELECT kind, key, payload FROM records WHERE run_id=?",
                                     (run_id,))
        return [(kind, key) for kind, key, payload in rows if not _decodes(payload)]

    def count_unreadable(self, run_id: str, kinds: Iterable[str] | None = None) -> int:
        """Records of the run (of ``kinds``, None for all) marked unreadable
        (``ResultsStore.mark_unreadable``) and not redone since."""
        rows = self.conn.execute("SELECT kind, COUNT(*) FROM records WHERE run_id=? AND error=?"
                                 " GROUP BY kind", (run_id, UNREADABLE_ERROR))
        wanted = None if kinds is None else set(kinds)
        return sum(int(n) for kind, n in rows if wanted is None or kind in wanted)

    def usage_by_stage(self, run_id: str) -> dict[str, dict[str, float]]:
        """Token totals and latency per stage (generate, observe, retrieve, update, ...)."""
        out: dict[str, dict[str, float]] = {}
        for row in self.conn.execute(
            "SELECT stage, SUM(prompt_tokens), SUM(cached_tokens), SUM(completion_tokens),"
            " SUM(reasoning_tokens), SUM(latency_s), COUNT(*), SUM(cache_hit)"
            " FROM records WHERE run_id=? GROUP BY stage ORDER BY stage",
            (run_id,),
        ):
            out[row[0]] = {
                "prompt": int(row[1] or 0), "cached": int(row[2] or 0),
                "completion": int(row[3] or 0), "reasoning": int(row[4] or 0),
                "latency_s": float(row[5] or 0.0), "records": int(row[6]),
                "cache_hits": int(row[7] or 0),
            }
        return out

    def usage_by_stream_stage_kind(
        self, run_id: str
    ) -> dict[tuple[str, str, str], dict[str, int]]:
        """Token totals and record counts per (stream, stage, kind), in that sorted order:
        how a protocol splits a run's cost between its own phases (SeqMem: run and probes)."""
        out: dict[tuple[str, str, str], dict[str, int]] = {}
        for row in self.conn.execute(
            "SELECT stream, stage, kind, SUM(prompt_tokens), SUM(cached_tokens),"
            " SUM(completion_tokens), SUM(reasoning_tokens), COUNT(*) FROM records"
            " WHERE run_id=? GROUP BY stream, stage, kind ORDER BY stream, stage, kind",
            (run_id,),
        ):
            out[(row[0], row[1], row[2])] = {
                "prompt": int(row[3] or 0), "cached": int(row[4] or 0),
                "completion": int(row[5] or 0), "reasoning": int(row[6] or 0),
                "records": int(row[7]),
            }
        return out


def _decodes(text: str | bytes) -> bool:
    try:
        json.loads(text)
    except (TypeError, ValueError, RecursionError):
        return False
    return True
