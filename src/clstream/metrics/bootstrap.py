"""Percentile bootstrap confidence intervals for means over questions.

OAKS reports one run per model (OAKS (Kim et al.), Appendix B.2.3) and leans on the number of
questions for reliability; a bootstrap over questions makes that reliability visible. Questions
are the resampling unit because the paper's metrics average per question first (docs/oaks.md §5).
The resampling is seeded, so a report shows the same interval every time it is rebuilt, and
``ci_for_metrics`` draws the same resamples for every key (paired intervals). Each resample's
mean and the interpolated quantiles are computed exactly and rounded once
(:mod:`clstream.metrics.exact`), so the interval is the same on every machine.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction

import numpy as np

from clstream.metrics.exact import scaled_integers

# Resample in blocks so memory stays bounded (about this many drawn indices per block).
_BLOCK_ELEMENTS = 4_000_000
# Exact numerators are split into limbs this wide: a resample draws n values, so its sum of
# count * limb over the distinct values is below n * 2**24, within int64 for any n < 2**39.
_LIMB_BITS = 24
_EXACT = 2**53  # integers up to here are exact in float64


def _limbs(numerators: Sequence[int]) -> np.ndarray:
    """Each integer as int64 limbs of :data:`_LIMB_BITS` bits, least significant first,
    every limb carrying the integer's sign: ``v == sum(limb[j] << (_LIMB_BITS * j))``."""
    width = max((abs(v).bit_length() for v in numerators), default=0)
    count = max(1, -(-width // _LIMB_BITS))
    mask = (1 << _LIMB_BITS) - 1
    table = np.zeros((len(numerators), count), dtype=np.int64)
    for i, v in enumerate(numerators):
        sign, magnitude = (-1 if v < 0 else 1), abs(v)
        for j in range(count):
            table[i, j] = sign * ((magnitude >> (_LIMB_BITS * j)) & mask)
    return table


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

    A resample's mean is its exact sum over n, rounded once: the resample is counted per
    distinct value and each count multiplies that value's exact integer numerator
    (:func:`~clstream.metrics.exact.scaled_integers`), so no floating-point sum is formed.
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
    distinct, which = np.unique(data, return_inverse=True)
    numerators, denominator = scaled_integers(distinct.tolist())
    limbs = _limbs(numerators)
    per_block = max(1, _BLOCK_ELEMENTS // n)
    # Where every resample's sum and the divisor are integers below 2**53, float64 holds them
    # exactly and its division rounds once, as Python's int / int does: the same means, with
    # no Python loop over the resamples (a 0/1 correctness column always qualifies).
    vectorised = (limbs.shape[1] == 1 and max(map(abs, numerators), default=0) * n < _EXACT
                  and denominator * n < _EXACT)
    means: list[float] = []
    for start in range(0, n_boot, per_block):
        rows = min(n_boot, start + per_block) - start
        idx = rng.integers(0, n, size=(rows, n))
        # Per resample, how often each distinct value was drawn (one bincount for the block).
        offsets = which.reshape(-1)[idx] + distinct.size * np.arange(rows)[:, None]
        counts = np.bincount(offsets.ravel(), minlength=rows * distinct.size)
        if vectorised:
            totals = counts.reshape(rows, distinct.size) @ limbs[:, 0]
            means += (totals.astype(np.float64) / float(denominator * n)).tolist()
            continue
        # Integer products and sums are exact in any order; the limbs are joined in Python.
        for row in (counts.reshape(rows, distinct.size) @ limbs).tolist():
            total = sum(part << (_LIMB_BITS * j) for j, part in enumerate(row))
            means.append(total / (denominator * n))
    means.sort()
    return _quantile(means, alpha / 2.0), _quantile(means, 1.0 - alpha / 2.0)


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The q quantile of sorted values by linear interpolation between order statistics
    (Hyndman and Fan's type 7, numpy's default), computed exactly and rounded once."""
    position = (len(ordered) - 1) * Fraction(q)
    below = math.floor(position)
    low = Fraction(ordered[below])
    if below + 1 >= len(ordered):
        return float(low)
    return float(low + (Fraction(ordered[below + 1]) - low) * (position - below))


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
