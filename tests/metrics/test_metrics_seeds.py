"""Mean, spread and t-interval over seeds (docs/statistics.md §1), against hand-computed cases."""

from __future__ import annotations

import math

import pytest

from clstream.metrics.seeds import seed_statistics, t_cdf_two_sided, t_quantile

# Student t 97.5% quantiles from printed tables (e.g. Abramowitz and Stegun, table 26.10).
TABLE_975 = {1: 12.7062, 2: 4.3027, 3: 3.1824, 4: 2.7764, 9: 2.2622, 30: 2.0423}


@pytest.mark.parametrize(("df", "expected"), sorted(TABLE_975.items()))
def test_t_quantile_matches_the_printed_table(df: int, expected: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=5e-5)


def test_t_cdf_closed_forms() -> None:
    # df = 1 is the Cauchy distribution: P(|T| <= 1) = 1/2; df = 2: P(|T| <= t) = t/sqrt(2+t^2).
    assert t_cdf_two_sided(1.0, 1) == pytest.approx(0.5, abs=1e-15)
    assert t_cdf_two_sided(2.0, 2) == pytest.approx(2.0 / math.sqrt(6.0), abs=1e-15)
    assert t_cdf_two_sided(0.0, 7) == 0.0


def test_three_seeds_by_hand() -> None:
    # 0.5, 0.6, 0.7: mean 0.6, s^2 = (0.01 + 0 + 0.01) / 2 = 0.01, s = 0.1,
    # half-width t(0.975, 2) * 0.1 / sqrt(3) = 4.302653 * 0.057735 = 0.248414.
    stats = seed_statistics([0.5, 0.6, 0.7])
    assert stats.n == 3 and stats.mean == pytest.approx(0.6, abs=1e-15)
    assert stats.sd == pytest.approx(0.1, abs=1e-12)
    assert stats.interval is not None
    assert stats.interval[0] == pytest.approx(0.6 - 0.248414, abs=1e-6)
    assert stats.interval[1] == pytest.approx(0.6 + 0.248414, abs=1e-6)


def test_two_seeds_by_hand() -> None:
    # 0, 1: mean 0.5, s = sqrt(0.5), half-width 12.7062 * sqrt(0.5) / sqrt(2) = 6.3531.
    stats = seed_statistics([0.0, 1.0])
    assert stats.interval == pytest.approx((0.5 - 6.353102, 0.5 + 6.353102), abs=1e-6)


def test_one_seed_has_no_spread_and_no_interval() -> None:
    stats = seed_statistics([0.42])
    assert (stats.n, stats.mean, stats.sd, stats.interval) == (1, 0.42, None, None)
    assert stats.as_json() == {"n": 1, "mean": 0.42, "sd": None, "interval": None}


def test_equal_values_give_a_zero_width_interval() -> None:
    stats = seed_statistics([0.25, 0.25, 0.25, 0.25])
    assert stats.sd == 0.0 and stats.interval == (0.25, 0.25)


def test_no_values_or_a_bad_confidence_is_refused() -> None:
    with pytest.raises(ValueError, match="no seeds"):
        seed_statistics([])
    with pytest.raises(ValueError, match="confidence"):
        seed_statistics([1.0, 2.0], confidence=1.0)
