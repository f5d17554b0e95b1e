"""In-memory form of an OAKS dataset (docs/oaks.md §3.1), shared by loader, generator, runner, scorer.

Golds are stored per chunk (index 0 = interval 1). Open-ended golds are tuples of accepted
strings; a multiple-choice gold is a 1-tuple holding the option text, and its expected letter
is that option's position in ``options`` (A = first).
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import ne
from typing import Any


def equal_runs(values: Sequence[Any]) -> list[tuple[int, int]]:
    """Maximal runs of equal consecutive values, as 0-based half-open ``(start, end)`` slices.

    A gold holds for many intervals in a row (docs/oaks.md §5.1), so what is read once per
    distinct gold is read once per run; the run boundaries are found by one comparison per
    neighbouring pair, made in C."""
    n = len(values)
    if not n:
        return []
    starts = [0, *compress(range(1, n), map(ne, values[1:], values[:-1]))]
    return list(zip(starts, [*starts[1:], n], strict=True))


@dataclass(frozen=True)
class OaksQuestion:
    question_id: str
    text: str
    golds: tuple[tuple[str, ...], ...]
    question_type: str | None = None
    options: tuple[str, ...] = ()
    option_sources: dict[str, dict[str, list[str]]] | None = field(
        default=None, compare=False, hash=False
    )

    @property
    def is_mc(self) -> bool:
        return bool(self.options)

    def gold(self, t: int) -> tuple[str, ...]:
        """Accepted answers at 1-based interval ``t``."""
        return self.golds[t - 1]

    def gold_letter(self, t: int) -> str:
        """The expected option letter at interval ``t`` (multiple choice only)."""
        return string.ascii_uppercase[self.options.index(self.golds[t - 1][0])]


@dataclass(frozen=True)
class OaksDocument:
    bid: str
    chunks: tuple[str, ...]
    questions: tuple[OaksQuestion, ...]
    facts: tuple[tuple[str, ...], ...] | None = None
    title: str | None = None
    author: str | None = None

    @property
    def num_chunks(self) -> int:
        return len(self.chunks)


@dataclass(frozen=True)
class OaksDataset:
    path: str
    sha256: str
    documents: tuple[OaksDocument, ...]

    def question_index(self) -> dict[str, tuple[OaksDocument, OaksQuestion]]:
        return {q.question_id: (d, q) for d in self.documents for q in d.questions}


def gold_view(dataset: OaksDataset) -> dict[str, Any]:
    """A compact JSON form of a dataset without chunk texts: enough to score predictions.

    The results store keeps it, so ``summary`` and ``report`` work even after the data file
    has moved or changed.
    """
    return {
        "path": dataset.path,
        "sha256": dataset.sha256,
        "documents": [
            {
                "bid": d.bid,
                "num_chunks": d.num_chunks,
                "questions": [
                    {
                        "question_id": q.question_id,
                        "text": q.text,
                        "golds": [list(g) for g in q.golds],
                        "question_type": q.question_type,
                        "options": list(q.options),
                    }
                    for q in d.questions
                ],
            }
            for d in dataset.documents
        ],
    }


def from_gold_view(view: dict[str, Any]) -> OaksDataset:
    """Inverse of :func:`gold_view`; chunk texts come back empty (only their count matters)."""
    docs = tuple(
        OaksDocument(
            bid=d["bid"],
            chunks=("",) * int(d["num_chunks"]),
            questions=tuple(
                OaksQuestion(
                    question_id=q["question_id"],
                    text=q["text"],
                    golds=tuple(tuple(g) for g in q["golds"]),
                    question_type=q.get("question_type"),
                    options=tuple(q.get("options") or ()),
                )
                for q in d["questions"]
            ),
        )
        for d in view["documents"]
    )
    return OaksDataset(path=view["path"], sha256=view["sha256"], documents=docs)
