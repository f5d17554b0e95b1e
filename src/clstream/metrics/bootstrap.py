"""Percentile bootstrap confidence intervals for means over questions.

OAKS reports one run per model (OAKS (Kim et al.), Appendix B.2.3) and leans on the number of
questions for reliability; a bootstrap over questions makes that reliability visible. Questions
are the resampling unit because the paper's metrics average per question first (docs/oaks.md §5).
The resampling is seeded, so a report shows the same interval every time it is rebuilt, and
``ci_for_metrics`` draws the same resamples for every key (paired intervals).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

# Resample in blocks so memory stays bounded (about this many drawn indices per block).
_BLOCK_ELEMENTS = 4_000_000


def bootstrap_ci(
    values: np.ndarray | Sequence[float],
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> tuple[float, float]:
    """(lo, hi) percentile bootstrap interval of the mean, confidence level 1 - alpha.

    Draws ``n_boot`` resamples of the n values with replacement, takes each resample's mean, and
    returns the alpha/2 and 1 - alpha/2 quantiles (linear interpolation) of those means.
    Degenerate inputs: one value gives (v, v); no values raise ``ValueError`` (a mean of nothing
    has no interval).
    """
    data = np.asarray(values, dtype=float)
    if data.ndim != 1:
        raise ValueError(f"expected a 1-D array of values, got shape {data.shape}")
    if data.size == 0:
        raise ValueError("cannot bootstrap the mean of no values")
    if not np.all(np.isfinite(data)):
        raise ValueError("values must be finite")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if data.size == 1:
        return float(data[0]), float(data[0])
    rng = np.random.default_rng(seed)
    n = data.size
    per_block = max(1, _BLOCK_ELEMENTS // n)
    means = np.empty(n_boot, dtype=float)
    for start in range(0, n_boot, per_block):
        stop = min(n_boot, start + per_block)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = data[idx].mean(axis=1)
    lo, hi = np.quantile(means, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(lo), float(hi)


def ci_for_metrics(
    rows: Sequence[Mapping[str, object]],
    keys: Iterable[str],
    n_boot: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> dict[str, list[float]]:
    """``{key: [lo, hi]}`` bootstrap intervals of the mean of ``row[key]`` over rows.

    ``rows`` are per-question rows such as those of
    :func:`clstream.protocols.oaks.metrics.per_question_table`. The same seed for every key means the
    same resampled questions, so intervals of related metrics are paired.
    """
    intervals: dict[str, list[float]] = {}
    for key in keys:
        column: list[float] = []
        for i, row in enumerate(rows):
            if key not in row:
                raise KeyError(f"row {i} has no value for {key!r}")
            value = row[key]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"row {i} key {key!r} is not a number: {value!r}")
            column.append(float(value))
        lo, hi = bootstrap_ci(np.asarray(column), n_boot=n_boot, alpha=alpha, seed=seed)
        intervals[key] = [lo, hi]
    return intervals
