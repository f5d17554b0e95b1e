"""The items of a stored run as flat rows: one per OAKS probe, SeqMem task answer, CL-Bench
instance or ImprintBench item, each with its family, interval or stage, gold, answer, verdict
and cost (docs/viewer.md §2.3).

Verdicts are the protocols' own: OAKS answers are judged by
:func:`clstream.protocols.oaks.metrics.judge_dataset` (the judge its metrics use), SeqMem's are
the ``correct`` its records store, CL-Bench's the instance's reward, ImprintBench's the
verdicts :func:`clstream.protocols.imprint.run_summary.verdicts_of` gives the report. A run of
a protocol this release does not know, or whose dataset cannot be read, still gets one row per
record with its stored score, so the viewer never fails on a run the summary shows as broken.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from clstream.core.reader import ResultsReader
from clstream.core.records import RunRow

Row = dict[str, Any]

_SEQMEM_KINDS = ("online", "retro", "holdout")
_CORRECT_ANSWER = re.compile(r"Correct answer: (?P<gold>.*?)\.?\s*$", re.DOTALL)


def _cost(row: Any) -> dict[str, Any]:
    return {"prompt_tokens": int(row["prompt_tokens"] or 0),
            "completion_tokens": int(row["completion_tokens"] or 0),
            "latency_s": float(row["latency_s"] or 0.0)}


def _base(row: Any, payload: dict[str, Any]) -> Row:
    """The fields every item row has, from a stored record."""
    return {"key": row["key"], "kind": row["kind"], "stream": row["stream"],
            "interval": row["t"], "stage": row["stage"], "family": row["kind"],
            "group": row["key"], "gold": None, "answer": None, "correct": None,
            "verdict": None, "score": row["score"], "error": row["error"],
            "cost": _cost(row)}


def _records(store: ResultsReader, run: RunRow,
             kinds: Iterable[str] | None) -> Iterable[tuple[Any, dict[str, Any]]]:
    for kind in (list(kinds) if kinds is not None else [None]):
        for row in store.iter_records(run.run_id, kind):
            try:
                payload = json.loads(row["payload"])
            except ValueError:
                payload = {}
            yield row, payload if isinstance(payload, dict) else {}


def generic_rows(store: ResultsReader, run: RunRow) -> list[Row]:
    """One row per record: what any run has, whatever its protocol."""
    return [_base(row, payload) for row, payload in _records(store, run, None)]


def _oaks_rows(store: ResultsReader, run: RunRow) -> list[Row]:
    from clstream.protocols.oaks.data import from_gold_view
    from clstream.protocols.oaks.export import oaks_predictions
    from clstream.protocols.oaks.metrics import judge_dataset

    _, view = store.get_dataset(run.dataset_sha256)
    dataset = from_gold_view(view)
    judged, _ = judge_dataset(dataset, oaks_predictions(store, run), allow_missing=True)
    verdicts = {}
    for j in judged:
        for t, (gold, answer) in enumerate(zip(j.golds, j.answers, strict=True), 1):
            accepted = j.question.gold(t)
            verdicts[(j.question.question_id, t)] = (
                j.question.question_type, " | ".join(accepted) or gold, answer,
                bool(j.correct[t - 1]))
    rows = []
    for row, payload in _records(store, run, ["probe"]):
        out = _base(row, payload)
        qid, t = str(payload.get("question_id")), int(payload.get("t", row["t"]) or 0)
        out["group"] = qid
        out["answer"] = payload.get("output")
        found = verdicts.get((qid, t))
        if found is not None and row["error"] is None:
            family, gold, answer, correct = found
            out.update(family=family or "probe", gold=gold, correct=correct,
                       verdict=f"{'right' if correct else 'wrong'}: read as {answer!r}")
        rows.append(out)
    return rows


def _seqmem_rows(store: ResultsReader, run: RunRow) -> list[Row]:
    rows = []
    for row, payload in _records(store, run, _SEQMEM_KINDS):
        out = _base(row, payload)
        feedback = payload.get("feedback")
        gold = _CORRECT_ANSWER.search(feedback) if isinstance(feedback, str) else None
        detail = payload.get("detail")
        correct = payload.get("correct")
        out.update(group=payload.get("task_id", row["key"]),
                   gold=gold["gold"] if gold else None,
                   answer=(detail.get("extracted") if isinstance(detail, dict) else None)
                   or payload.get("output"),
                   correct=None if correct is None else bool(correct),
                   verdict=feedback if isinstance(feedback, str) else None,
                   score=payload.get("score", row["score"]))
        rows.append(out)
    return rows


def _clbench_rows(store: ResultsReader, run: RunRow) -> list[Row]:
    rows = []
    for row, payload in _records(store, run, ["instance"]):
        out = _base(row, payload)
        reward, success = payload.get("reward"), payload.get("success")
        out.update(family=payload.get("task", row["stream"]),
                   stage=f"{payload.get('arm', row['arm'])}/{payload.get('rollout', row['rollout'])}",
                   group=f"{payload.get('task', row['stream'])}/{payload.get('instance_id')}",
                   answer=f"{payload.get('steps')} steps" if payload.get("steps") is not None
                   else None,
                   correct=None if success is None else bool(success),
                   score=reward,
                   verdict=None if reward is None else f"reward {float(reward):.4g}")
        rows.append(out)
    return rows


def _imprint_rows(store: ResultsReader, run: RunRow) -> list[Row]:
    from clstream.protocols.imprint.run_summary import (
        answered,
        run_view,
        stored_items,
        verdicts_of,
    )

    items = {i.item_id: i for i in stored_items(run_view(store, run))}
    samples, _ = answered(store, run)
    verdicts = verdicts_of(store, run, list(items.values()), samples)
    judge_failed = {row["key"]: row["error"]
                    for row in store.iter_records(run.run_id, "judgment", errors=True)}
    rows = []
    for row, payload in _records(store, run, ["item"]):
        out = _base(row, payload)
        item = items.get(row["key"])
        texts = payload.get("samples") or []
        out["answer"] = texts[0] if texts else None
        if item is not None:
            gold = item.gold if isinstance(item.gold, str) else " | ".join(item.gold)
            out.update(family=item.family, gold=gold, group=item.item_id)
        judged = verdicts.get(row["key"]) or []
        if judged:
            right = sum(v.correct for v in judged)
            out.update(score=right / len(judged), correct=right * 2 > len(judged),
                       verdict=f"{right}/{len(judged)} samples judged correct "
                               f"({', '.join(sorted({v.verdict for v in judged}))})")
        elif row["key"] in judge_failed and out["error"] is None:
            out["error"] = f"judge: {judge_failed[row['key']]}"
        rows.append(out)
    return rows


_BY_PROTOCOL: dict[str, Callable[[ResultsReader, RunRow], list[Row]]] = {
    "oaks": _oaks_rows, "seqmem": _seqmem_rows, "clbench": _clbench_rows,
    "imprint": _imprint_rows,
}


def item_rows(store: ResultsReader, run: RunRow) -> list[Row]:
    """The run's item rows in stored order (stream, step, key); a protocol whose rows cannot
    be read (a damaged dataset view, an unknown protocol) gives :func:`generic_rows`."""
    reader = _BY_PROTOCOL.get(run.protocol)
    if reader is not None:
        try:
            return reader(store, run)
        except Exception:  # a run the summary calls broken: its records still show
            pass
    return generic_rows(store, run)


# -- selecting a page --------------------------------------------------------------------------
SORT_KEYS = ("key", "family", "interval", "stage", "score", "correct", "tokens", "latency")


def _sort_value(row: Row, sort: str) -> tuple[int, Any]:
    """Rows without the value sort last whichever the order."""
    if sort == "tokens":
        value: Any = row["cost"]["prompt_tokens"] + row["cost"]["completion_tokens"]
    elif sort == "latency":
        value = row["cost"]["latency_s"]
    else:
        value = row.get(sort)
    if value is None:
        return (1, "")
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int | float):
        return (0, (False, value, ()))
    return (0, (True, 0, natural_key(str(value))))


_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """``text`` cut into runs of digits and the rest, the digits compared as numbers, so
    ``q9`` sorts before ``q10`` and ``doc-2`` before ``doc-11``, as a reader counts them."""
    return tuple((0, int(part)) if part.isdigit() else (1, part)
                 for part in _DIGITS.split(text) if part)


def select(rows: list[Row], *, family: str | None = None, correct: bool | None = None,
           q: str | None = None, keys: set[str] | None = None, sort: str = "key",
           descending: bool = False) -> list[Row]:
    """The rows that pass every filter (``q``: case-insensitive text in key, gold, answer or
    verdict; ``keys``: only these keys), sorted stably by ``sort``."""
    needle = q.lower() if q else None
    kept = []
    for row in rows:
        if family is not None and row["family"] != family:
            continue
        if correct is not None and row["correct"] is not correct:
            continue
        if keys is not None and row["key"] not in keys:
            continue
        if needle is not None and not any(
                needle in str(row.get(f) or "").lower()
                for f in ("key", "gold", "answer", "verdict", "family")):
            continue
        kept.append(row)
    present = [r for r in kept if _sort_value(r, sort)[0] == 0]
    absent = [r for r in kept if _sort_value(r, sort)[0] == 1]
    present.sort(key=lambda r: _sort_value(r, sort)[1], reverse=descending)
    return present + absent


def changed_keys(rows: list[Row], other: list[Row]) -> set[str]:
    """Keys both runs hold whose verdict (correct, else score) differs between them."""
    theirs = {r["key"]: r for r in other}
    return {r["key"] for r in rows if r["key"] in theirs
            and (r["correct"], r["score"]) != (theirs[r["key"]]["correct"],
                                               theirs[r["key"]]["score"])}
