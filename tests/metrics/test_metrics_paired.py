"""Paired differences between two systems on the same items (docs/statistics.md §2): exact
sign-flip p-values by hand, Monte Carlo bounds, and the invariants of a paired comparison."""

from __future__ import annotations

import random

import pytest

from clstream.metrics.paired import (
    EXACT_ITEMS,
    holm_adjusted,
    paired_difference,
    sign_flip_p_value,
)


def test_exact_p_value_by_hand() -> None:
    # d = (1, 1, 1, 0): |sum| = 3. Of the 16 sign vectors, |sum of flipped d| >= 3 only when
    # the three ones share a sign (2 ways) whatever the zero's sign (2 ways): p = 4/16.
    assert sign_flip_p_value([1, 1, 1, 0]) == (0.25, True)
    # d = (1, 2): sums 3, 1, -1, -3; |.| >= 3 twice: p = 2/4.
    assert sign_flip_p_value([1.0, 2.0]) == (0.5, True)
    # d = (1, 1, 1, 1, 1): only all-plus and all-minus reach 5: p = 2/32.
    assert sign_flip_p_value([1] * 5) == (2 / 32, True)


def test_mean_and_interval_by_hand() -> None:
    result = paired_difference([1, 1, 1, 0], [0, 0, 0, 0])
    assert (result.n, result.mean, result.p_value, result.exact) == (4, 0.75, 0.25, True)
    low, high = result.interval
    # Resample means of (1, 1, 1, 0) lie in {0, 1/4, ..., 1}; the interval holds 0.75.
    assert 0.0 <= low <= 0.75 <= high <= 1.0


def test_swapping_the_systems_negates_the_difference_and_keeps_p() -> None:
    rng = random.Random(3)
    for n in (6, EXACT_ITEMS + 30):
        a = [rng.choice((0.0, 0.5, 1.0)) for _ in range(n)]
        b = [rng.choice((0.0, 0.5, 1.0)) for _ in range(n)]
        ab, ba = paired_difference(a, b), paired_difference(b, a)
        assert ba.mean == -ab.mean
        assert ba.interval == (-ab.interval[1], -ab.interval[0])
        assert (ba.p_value, ba.exact) == (ab.p_value, ab.exact)


def test_identical_systems_differ_by_nothing() -> None:
    for n in (3, EXACT_ITEMS + 5):
        scores = [i / n for i in range(n)]
        result = paired_difference(scores, scores)
        assert (result.mean, result.interval, result.p_value) == (0.0, (0.0, 0.0), 1.0)


def test_monte_carlo_is_seeded_and_never_zero() -> None:
    a = [1.0] * 40
    b = [0.0] * 40
    first = paired_difference(a, b, permutations=500)
    assert first == paired_difference(a, b, permutations=500)
    assert not first.exact
    # No drawn vector is all-plus or all-minus (2 of 2^40): p = 1 / 501 exactly.
    assert first.p_value == pytest.approx(1 / 501)


def test_monte_carlo_is_close_to_exact() -> None:
    rng = random.Random(7)
    d = [rng.uniform(-1, 1) + 0.2 for _ in range(EXACT_ITEMS)]
    exact, is_exact = sign_flip_p_value(d)
    estimate, is_estimate = sign_flip_p_value(d, exact_items=0, permutations=20_000)
    assert is_exact and not is_estimate
    assert estimate == pytest.approx(exact, abs=0.02)


def test_mismatched_or_empty_scores_are_refused() -> None:
    with pytest.raises(ValueError, match="one score per item"):
        paired_difference([1.0, 0.0], [1.0])
    with pytest.raises(ValueError, match="no items"):
        paired_difference([], [])


def test_holm_adjustment_by_hand() -> None:
    # m = 4, sorted 0.01 0.02 0.03 0.04: 4 x 0.01 = 0.04, 3 x 0.02 = 0.06, 2 x 0.03 = 0.06
    # (max with 0.06), 1 x 0.04 = 0.04 -> 0.06 (never below an earlier one); input order kept.
    assert holm_adjusted([0.03, 0.01, 0.04, 0.02]) == pytest.approx([0.06, 0.04, 0.06, 0.06])
    # Capped at 1; a single test is left as it is; no tests, no values.
    assert holm_adjusted([0.5, 0.4]) == pytest.approx([0.8, 0.8])
    assert holm_adjusted([0.3, 0.9]) == pytest.approx([0.6, 0.9])
    assert holm_adjusted([0.7, 0.6, 0.5]) == [1.0, 1.0, 1.0]
    assert holm_adjusted([0.02]) == [0.02]
    assert holm_adjusted([]) == []
