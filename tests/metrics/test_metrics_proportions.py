"""Wilson score intervals (src/clstream/metrics/proportions.py) against hand-computed values."""

from __future__ import annotations

import math

import pytest

from clstream.metrics.proportions import running_wilson, wilson_interval


def hand(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    centre = (k + z * z / 2) / (n + z * z)
    half = z / (n + z * z) * math.sqrt(k * (n - k) / n + z * z / 4)
    return centre - half, centre + half


@pytest.mark.parametrize(("k", "n", "low", "high"), [
    (5, 10, 0.2366, 0.7634),   # symmetric around one half
    (0, 10, 0.0, 0.2775),      # width at no success
    (10, 10, 0.7225, 1.0),     # and at all successes
    (1, 1, 0.2065, 1.0),
])
def test_known_values(k: int, n: int, low: float, high: float) -> None:
    lo, hi = wilson_interval(k, n)
    assert lo == pytest.approx(low, abs=5e-5) and hi == pytest.approx(high, abs=5e-5)
    assert (lo, hi) == pytest.approx(tuple(max(0.0, min(1.0, x)) for x in hand(k, n)))


def test_the_interval_holds_the_share_and_narrows_with_more_trials() -> None:
    for k, n in ((3, 7), (30, 70), (300, 700)):
        lo, hi = wilson_interval(k, n)
        assert lo < k / n < hi
    widths = [hi - lo for lo, hi in (wilson_interval(k, n) for k, n in
                                     ((3, 7), (30, 70), (300, 700)))]
    assert widths == sorted(widths, reverse=True)
    lo99, hi99 = wilson_interval(30, 70, confidence=0.99)
    lo95, hi95 = wilson_interval(30, 70)
    assert lo99 < lo95 and hi95 < hi99


def test_running_intervals_follow_the_running_share() -> None:
    outcomes = [1, 0, 1, 1]
    assert running_wilson(outcomes) == [wilson_interval(1, 1), wilson_interval(1, 2),
                                        wilson_interval(2, 3), wilson_interval(3, 4)]


@pytest.mark.parametrize(("k", "n", "confidence"), [(1, 0, 0.95), (-1, 3, 0.95), (4, 3, 0.95),
                                                    (1, 3, 1.0)])
def test_bad_arguments_are_refused(k: int, n: int, confidence: float) -> None:
    with pytest.raises(ValueError):
        wilson_interval(k, n, confidence)
    with pytest.raises(ValueError):
        running_wilson([1, 2])
