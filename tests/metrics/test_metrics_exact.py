"""Exact reductions: the same bits for every order of the terms, and the correctly rounded
value of the exact result (checked against rational arithmetic)."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest

from clstream.metrics.bootstrap import bootstrap_ci
from clstream.metrics.exact import (
    exact_mean,
    exact_sum,
    exact_variance,
    least_squares_slope,
    scaled_integers,
    standard_error,
)

# Terms whose floating-point sum depends on the order they are added in.
ORDER_SENSITIVE = [1e16, 1.0, -1e16, 0.1, 0.2, 0.3, 1e-3, 3.3333333333333335, 7e-17, 2.5]


def _shuffles(values: list[float], count: int = 50) -> list[list[float]]:
    rng = random.Random(11)
    return [rng.sample(values, len(values)) for _ in range(count)]


def _rounded(value: Fraction) -> float:
    return float(value)


def test_plain_sums_of_these_terms_depend_on_order() -> None:
    # The premise of the other tests: a left-to-right sum is not the same for every order.
    assert len({sum(order) for order in _shuffles(ORDER_SENSITIVE)}) > 1


def test_sum_and_mean_are_the_same_bits_for_every_order() -> None:
    exact = sum((Fraction(v) for v in ORDER_SENSITIVE), Fraction(0))
    for order in _shuffles(ORDER_SENSITIVE):
        assert exact_sum(order) == _rounded(exact)
        assert exact_mean(order) == _rounded(exact / len(order))
        assert exact_mean(np.array(order)) == _rounded(exact / len(order))


def test_mean_is_rounded_once() -> None:
    assert exact_mean([0.1] * 10) == 0.1
    assert exact_mean([1.0, 2.0]) == 1.5
    # (0.1 + 0.2 + 0.3) / 3 rounded at each step gives 0.20000000000000004.
    assert exact_mean([0.1, 0.2, 0.3]) == _rounded(
        (Fraction(0.1) + Fraction(0.2) + Fraction(0.3)) / 3)
    assert exact_mean([0.1, 0.2, 0.3]) == 0.2


def test_mean_of_fractions_is_the_rounded_true_ratio() -> None:
    assert exact_mean([Fraction(1, 3), Fraction(1, 2)]) == _rounded(Fraction(5, 12))
    # Five sixths from exact thirds and whole numbers, not from 0.333... rounded first.
    thirds = [Fraction(2, 3), Fraction(1), Fraction(1), Fraction(2, 3)]
    assert exact_mean(thirds) == _rounded(Fraction(5, 6)) == 0.8333333333333334


def test_scaled_integers_are_exact() -> None:
    numerators, denominator = scaled_integers([0.5, 0.1, -3.0, 1e-300])
    assert [Fraction(n, denominator) for n in numerators] == [
        Fraction(0.5), Fraction(0.1), Fraction(-3), Fraction(1e-300)]


def test_non_finite_and_empty_inputs_are_refused() -> None:
    for bad in ([1.0, math.nan], [math.inf]):
        with pytest.raises(ValueError):
            exact_mean(bad)
        with pytest.raises(ValueError):
            exact_sum(bad)
    with pytest.raises(ValueError):
        exact_mean([])
    with pytest.raises(ValueError):
        exact_variance([1.0])


def test_variance_and_standard_error_by_hand() -> None:
    assert exact_variance([1.0, 2.0, 3.0, 4.0]) == _rounded(Fraction(5, 3))
    assert exact_variance([1.0, 2.0, 3.0, 4.0], ddof=0) == 1.25
    assert standard_error([1.0, 2.0, 3.0, 4.0]) == math.sqrt(_rounded(Fraction(5, 3))) / 2.0
    values = [0.1, 0.7, 0.25, 0.9, 0.33]
    results = {standard_error(order) for order in _shuffles(values)}
    assert len(results) == 1


def test_least_squares_slope_by_hand() -> None:
    assert least_squares_slope([1.0, 2.0, 3.0], [2.0, 4.0, 6.0]) == 2.0
    assert least_squares_slope([0.0, 1.0], [1.0, 0.0]) == -1.0
    assert least_squares_slope([1.0], [1.0]) is None
    assert least_squares_slope([2.0, 2.0], [1.0, 3.0]) is None
    # x = k/24 for the checkpoints below, H(k) in sixths: the exact slope is 254/633.
    ks = [3, 5, 8, 11, 13, 16, 19, 21, 24]
    hits = [0, 0, 0, 1, 1, 1, 1, 2, 2]
    xs = [Fraction(k, 24) for k in ks]
    ys = [Fraction(h, 6) for h in hits]
    assert least_squares_slope(xs, ys) == _rounded(Fraction(254, 633)) == 0.40126382306477093
    pairs = list(zip(xs, ys, strict=True))
    random.Random(3).shuffle(pairs)
    assert least_squares_slope([p[0] for p in pairs], [p[1] for p in pairs]) == 0.40126382306477093


def _reference_ci(values: np.ndarray, n_boot: int, alpha: float, seed: int
                  ) -> tuple[float, float]:
    """The percentile bootstrap in rational arithmetic, drawing as bootstrap_ci draws."""
    n = values.size
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    means = sorted(
        _rounded(sum((Fraction(float(v)) for v in values[row]), Fraction(0)) / n) for row in idx)

    def quantile(q: float) -> float:
        position = (n_boot - 1) * Fraction(q)
        low = math.floor(position)
        a, b = Fraction(means[low]), Fraction(means[low + 1])
        return _rounded(a + (b - a) * (position - low))

    return quantile(alpha / 2), quantile(1 - alpha / 2)


def test_bootstrap_means_are_the_exact_means_of_the_resamples() -> None:
    values = np.array([0.1, 0.2, 0.3, 1 / 3, 0.7, 2 / 3, 0.9])
    assert bootstrap_ci(values, n_boot=200, alpha=0.1, seed=5) == _reference_ci(
        values, 200, 0.1, 5)


def test_bootstrap_handles_wide_and_negative_values_exactly() -> None:
    # Over one common denominator these numerators span several 24-bit limbs.
    values = np.array([-0.5, 1e-12, 3.0, -2.75, 1e-12, 1 / 3])
    assert bootstrap_ci(values, n_boot=100, seed=1) == _reference_ci(values, 100, 0.05, 1)


def test_exact_mean_of_whole_numbers_is_their_sum_over_their_count() -> None:
    # Whole numbers a double holds take the short path: the same value as the exact ratio.
    rng = random.Random(3)
    for _ in range(200):
        values = [rng.choice([-1, 0, 1, True, False, rng.randint(-10**15, 10**15)])
                  for _ in range(rng.randint(1, 50))]
        assert exact_mean(values) == float(Fraction(sum(values), len(values)))
    # Beyond 2**53 an integer is read as the double it rounds to, as every value always was.
    assert exact_mean([2**53 + 1, 0]) == exact_mean([float(2**53 + 1), 0.0]) == 2.0**52
