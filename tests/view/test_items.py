"""Selecting and ordering the rows of the items page (clstream.view.items)."""

from __future__ import annotations

from typing import Any

from clstream.view.items import natural_key, select


def _row(key: str, score: float | None = None) -> dict[str, Any]:
    return {"key": key, "family": "f", "correct": None, "score": score, "gold": None,
            "answer": None, "verdict": None,
            "cost": {"prompt_tokens": 0, "completion_tokens": 0, "latency_s": None}}


def test_keys_sort_with_their_numbers_as_numbers() -> None:
    keys = ["doc-10/q2", "doc-2/q10", "doc-2/q9", "doc-1/q1", "doc-2/q1", "doc-10/q10"]
    ordered = [r["key"] for r in select([_row(k) for k in keys])]
    assert ordered == ["doc-1/q1", "doc-2/q1", "doc-2/q9", "doc-2/q10", "doc-10/q2",
                       "doc-10/q10"]
    descending = [r["key"] for r in select([_row(k) for k in keys], descending=True)]
    assert descending == ordered[::-1]


def test_natural_key_compares_digits_and_text_apart() -> None:
    assert natural_key("a9") < natural_key("a10") < natural_key("b1")
    assert natural_key("7") < natural_key("x")  # digits first, never a type error
    assert sorted(["x", "10", "9"], key=natural_key) == ["9", "10", "x"]


def test_rows_without_the_value_sort_last_either_way() -> None:
    rows = [_row("a", None), _row("b", 0.5), _row("c", 0.25)]
    assert [r["key"] for r in select(rows, sort="score")] == ["c", "b", "a"]
    assert [r["key"] for r in select(rows, sort="score", descending=True)] == ["b", "c", "a"]
