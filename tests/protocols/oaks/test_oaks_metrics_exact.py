"""OAKS averages are exact: the correctly rounded mean of each question's exact fraction, the
same bits for any order of documents and questions (SPECS §1.4)."""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from clstream.protocols.oaks.loader import load_oaks
from clstream.protocols.oaks.metrics import (
    INTRA_PHASE_KEYS,
    load_predictions,
    per_question_table,
    question_fractions,
    question_metrics,
    score_oaks,
)

GOLDEN = Path(__file__).parents[2] / "golden"


def test_question_fractions_by_hand() -> None:
    # golds a a | b b b | a; correct 0 1 | 1 0 1 | 0 (C = 6)
    exact = question_fractions(np.array([0, 1, 1, 0, 1, 0]), ["a", "a", "b", "b", "b", "a"])
    assert exact == {"accuracy": Fraction(1, 2), "acquisition_latency": Fraction(1, 6),
                     "distraction_susceptibility": Fraction(1, 6), "phase_miss": Fraction(1, 6)}
    assert question_metrics(np.array([0, 1, 1, 0, 1, 0]), ["a", "a", "b", "b", "b", "a"]) == {
        k: float(v) for k, v in exact.items()}


def test_means_are_the_rounded_exact_means() -> None:
    dataset = load_oaks(GOLDEN / "oaks_babi.json")
    predictions = load_predictions(GOLDEN / "oaks_window_w3.jsonl")
    result, _ = score_oaks(dataset, predictions)
    rows = per_question_table(dataset, predictions)

    def exact(selected: list[dict[str, Any]], key: str) -> float:
        total = sum((Fraction(round(r[key] * len(r["correct"])), len(r["correct"]))
                     for r in selected), Fraction(0))
        return float(total / len(selected))

    for key in INTRA_PHASE_KEYS:
        assert result[key] == exact(rows, key)
    for name, cell in result["by_subset"].items():
        assert cell["accuracy"] == exact([r for r in rows if r["subset"] == name], "accuracy")
    # Five sixths exactly: averaging the rounded per-question values gave 0.8333333333333333.
    assert result["by_subset"]["moderate"]["accuracy"] == 0.8333333333333334


def test_score_is_the_same_bits_for_any_order_of_documents_and_questions() -> None:
    dataset = load_oaks(GOLDEN / "oaks_babi.json")
    predictions = load_predictions(GOLDEN / "oaks_rag_k2.jsonl")
    result, _ = score_oaks(dataset, predictions)
    reordered = dataclasses.replace(dataset, documents=tuple(
        dataclasses.replace(doc, questions=tuple(reversed(doc.questions)))
        for doc in reversed(dataset.documents)))
    again, _ = score_oaks(reordered, predictions)
    assert json.dumps(again, sort_keys=True) == json.dumps(result, sort_keys=True)
