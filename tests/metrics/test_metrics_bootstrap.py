"""Percentile bootstrap of a mean over questions."""

from __future__ import annotations

import numpy as np
import pytest

from clstream.metrics.bootstrap import bootstrap_ci, ci_for_metrics


def test_deterministic_with_seed_and_brackets_the_mean() -> None:
    values = np.random.default_rng(1).random(200)
    lo, hi = bootstrap_ci(values, n_boot=500, seed=7)
    assert (lo, hi) == bootstrap_ci(values, n_boot=500, seed=7)
    assert (lo, hi) != bootstrap_ci(values, n_boot=500, seed=8)
    assert lo < values.mean() < hi
    # standard error of the mean of U(0,1) over 200 values is about 0.0204: width near 0.08
    assert 0.05 < hi - lo < 0.11


def test_matches_a_direct_percentile_bootstrap() -> None:
    values = np.array([0.0, 1.0, 1.0, 0.5, 0.25])
    rng = np.random.default_rng(3)
    means = [values[rng.integers(0, 5, size=5)].mean() for _ in range(300)]
    expected = np.quantile(means, [0.05, 0.95])
    assert bootstrap_ci(values, n_boot=300, alpha=0.1, seed=3) == pytest.approx(tuple(expected))


def test_narrower_at_lower_confidence() -> None:
    values = np.linspace(0, 1, 50)
    lo95, hi95 = bootstrap_ci(values, alpha=0.05)
    lo50, hi50 = bootstrap_ci(values, alpha=0.5)
    assert lo95 <= lo50 <= hi50 <= hi95


def test_degenerate_cases() -> None:
    assert bootstrap_ci(np.array([0.3])) == (0.3, 0.3)
    assert bootstrap_ci(np.full(10, 0.5)) == (0.5, 0.5)
    with pytest.raises(ValueError):
        bootstrap_ci(np.array([]))
    with pytest.raises(ValueError):
        bootstrap_ci(np.array([0.1, np.nan]))
    with pytest.raises(ValueError):
        bootstrap_ci(np.ones((2, 2)))
    with pytest.raises(ValueError):
        bootstrap_ci(np.ones(3), alpha=1.0)
    with pytest.raises(ValueError):
        bootstrap_ci(np.ones(3), n_boot=0)


def test_ci_for_metrics_uses_each_column() -> None:
    rows = [{"accuracy": a, "phase_miss": 1 - a, "question_id": str(i)}
            for i, a in enumerate(np.random.default_rng(0).random(30))]
    cis = ci_for_metrics(rows, ["accuracy", "phase_miss"], n_boot=200, seed=4)
    acc = np.array([r["accuracy"] for r in rows])
    assert cis["accuracy"] == list(bootstrap_ci(acc, n_boot=200, seed=4))
    # same resamples for both keys: the phase-miss interval mirrors the accuracy one
    assert cis["phase_miss"] == pytest.approx([1 - cis["accuracy"][1], 1 - cis["accuracy"][0]])
    with pytest.raises(KeyError):
        ci_for_metrics(rows, ["nope"])
    with pytest.raises(ValueError):
        ci_for_metrics(rows, ["question_id"])


@pytest.mark.parametrize("values", [
    [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0],
    [0.25, 0.5, 0.125, 1.0, 0.0, 0.75] * 9,
    [0.1, 0.7, 0.3333, 0.9, 0.05],
])
def test_the_vectorised_means_equal_the_limb_by_limb_ones(
        values: list[float], monkeypatch: pytest.MonkeyPatch) -> None:
    from clstream.metrics import bootstrap

    fast = bootstrap.bootstrap_ci(values, n_boot=500, seed=4)
    monkeypatch.setattr(bootstrap, "_EXACT", 0)  # every resample joined in Python
    assert bootstrap.bootstrap_ci(values, n_boot=500, seed=4) == fast
