"""ImprintBench estimators are exact ratios of binomial coefficients and family means exact
means of them, rounded once: the same bits for any order of the items (SPECS §4)."""

from __future__ import annotations

import math
import random
from fractions import Fraction

from clstream.protocols.imprint.metrics import (
    ItemCounts,
    all_correct_at_k,
    family_scores,
    pass_at_k,
)


def test_estimators_by_hand() -> None:
    assert pass_at_k(4, 1, 2) == 0.5  # 1 - C(3, 2) / C(4, 2) = 1 - 3/6
    assert pass_at_k(10, 3, 4) == float(1 - Fraction(math.comb(7, 4), math.comb(10, 4)))
    assert pass_at_k(5, 4, 2) == 1.0  # n - c < k
    assert all_correct_at_k(8, 6, 3) == float(Fraction(math.comb(6, 3), math.comb(8, 3)))
    assert all_correct_at_k(8, 2, 3) == 0.0


def _items(units: bool) -> list[ItemCounts]:
    return [ItemCounts(f"i{j}", "news", 8, (j * 5) % 9, unit=f"p{j % 4}" if units else None)
            for j in range(30)]


def test_family_means_are_rounded_exact_means() -> None:
    rows = _items(units=False)
    cell = family_scores(rows, [2])
    assert cell["pass_at_1"] == float(sum((Fraction(r.c, r.n) for r in rows), Fraction(0))
                                      / len(rows))
    exact_k = sum((1 - Fraction(math.comb(r.n - r.c, 2), math.comb(r.n, 2)) for r in rows),
                  Fraction(0)) / len(rows)
    assert cell["pass_at_k"]["2"] == float(exact_k)


def test_family_scores_do_not_depend_on_item_order() -> None:
    for units in (False, True):
        rows = _items(units)
        expected = family_scores(rows, [1, 2, 4])
        for seed in range(5):
            shuffled = list(rows)
            random.Random(seed).shuffle(shuffled)
            assert family_scores(shuffled, [1, 2, 4]) == expected
