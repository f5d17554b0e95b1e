"""What kind of clstream file a path holds, so a file given to the wrong command is named as
what it is ("this is a SeqMem-Eval task stream") instead of failing on its JSON shape.

:func:`sniff` reads at most the first line or the top-level keys: an OAKS data file is a JSON
list of documents with ``meta`` and ``data`` (docs/oaks.md §3.1); a SeqMem-Eval synthetic
stream is an object whose ``format`` is ``clstream-seqmem-synthetic`` (docs/seqmem.md §3); an
ImprintBench dataset is a directory holding ``manifest.json`` and ``items.jsonl``
(docs/imprint.md §3.1); the JSON Lines files ``score`` reads are told apart by their first
record's keys (OAKS predictions, SeqMem-Eval and CL-Bench records, ImprintBench items and
predictions).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from clstream.core.errors import ClstreamError, DataError

T = TypeVar("T")

KINDS = {
    "oaks-data": ("an OAKS data file", "run oaks"),
    "seqmem-stream": ("a SeqMem-Eval task stream", "run seqmem"),
    "imprint-dataset": ("an ImprintBench dataset directory", "run imprint"),
    "oaks-predictions": ("an OAKS predictions file", "score oaks"),
    "seqmem-records": ("a SeqMem-Eval records file", "score seqmem"),
    "clbench-records": ("a CL-Bench records file", "score clbench"),
    "imprint-items": ("an ImprintBench items file", "score imprint"),
    "imprint-predictions": ("an ImprintBench predictions file", "score imprint"),
}


def _first_value(path: Path) -> Any:
    """The file's JSON document, or its first JSON line; None when neither parses."""
    try:
        with path.open("rb") as handle:
            head = handle.read(1 << 20)
    except OSError:
        return None
    text = head.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    first = text.split("\n", 1)[0]
    try:
        return {"$line": json.loads(first)}
    except (ValueError, RecursionError):  # hostile files: sniffing never adds an error
        return None


def _line_kind(record: Any) -> str | None:
    if not isinstance(record, dict):
        return None
    keys = set(record)
    if "item_id" in keys and "samples" in keys:
        return "imprint-predictions"
    if {"item_id", "family", "gold"} <= keys:
        return "imprint-items"
    if "question_id" in keys and "t" in keys:
        return "oaks-predictions"
    if {"task", "arm"} <= keys or record.get("kind") in ("task", "instance"):
        return "clbench-records"
    if record.get("kind") in ("online", "holdout", "retro"):
        return "seqmem-records"
    return None


def sniff(path: str | Path) -> str | None:
    """The kind (a key of :data:`KINDS`) of the clstream file at ``path``, or None."""
    path = Path(path)
    if path.is_dir():
        return "imprint-dataset" if (path / "manifest.json").is_file() and \
            (path / "items.jsonl").is_file() else None
    value = _first_value(path)
    if isinstance(value, list) and value and isinstance(value[0], dict) \
            and {"meta", "data"} <= set(value[0]):
        return "oaks-data"
    if isinstance(value, dict) and value.get("format") == "clstream-seqmem-synthetic":
        return "seqmem-stream"
    if isinstance(value, dict) and "$line" in value:
        return _line_kind(value["$line"])
    return _line_kind(value)


def wrong_kind(path: str | Path, expected: str) -> str | None:
    """A one-line problem when ``path`` is a clstream file of another kind than ``expected``
    (``this is a SeqMem-Eval task stream (for run seqmem), not an OAKS data file``)."""
    kind = sniff(path)
    if kind is None or kind == expected:
        return None
    what, command = KINDS[kind]
    return f"this is {what} (for clstream {command}), not {KINDS[expected][0]}"


def load_checked(path: str | Path, expected: str, load: Callable[[], T]) -> T:
    """``load()``, except that when it fails on a clstream file of another kind, the error
    says which kind it is (one line naming the file)."""
    try:
        return load()
    except (ClstreamError, IsADirectoryError, NotADirectoryError, UnicodeDecodeError):
        problem = wrong_kind(path, expected)
        if problem is None:
            raise
        raise DataError(path, None, None, problem) from None
