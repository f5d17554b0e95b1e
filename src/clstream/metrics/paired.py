"""Two systems scored on the same items: the mean difference, a paired bootstrap interval and
a paired permutation (sign-flip) test (docs/statistics.md §2).

Given per-item scores a_i and b_i of systems A and B on the same n items, the differences
d_i = a_i - b_i carry the comparison: the item's own difficulty cancels, which is why a paired
comparison is sharper than comparing two separately computed intervals.

* The mean difference d̄ = Σ d_i / n, exact and rounded once.
* The interval: a percentile bootstrap of d̄ over items (Efron and Tibshirani, An
  Introduction to the Bootstrap, 1993, ch. 13). Resampling items with replacement and taking
  each resample's mean of a - b is resampling the pairs, so the pairing is kept; it reuses
  :func:`clstream.metrics.bootstrap.bootstrap_ci` (seeded, exact resample means).
* The p-value: under the null hypothesis that A and B are exchangeable on every item, each
  d_i is as likely to be -d_i, so the 2^n sign flips of the differences are equally likely
  (Fisher, The Design of Experiments, 1935, §21; Good, Permutation, Parametric and Bootstrap
  Tests of Hypotheses, 2005, §3.3). The two-sided p-value is the share of sign vectors s with
  |Σ s_i d_i| >= |Σ d_i|. For n <= :data:`EXACT_ITEMS` every vector is enumerated (exact);
  above, ``permutations`` vectors are drawn with a fixed seed and p = (1 + hits) /
  (1 + permutations), which never reports 0 for a p-value that is not (Phipson and Smyth,
  "Permutation p-values should never be zero", Stat. Appl. Genet. Mol. Biol. 9(1), 2010).

The sums are carried as exact integers (each double is a binary fraction), so ties between a
flipped sum and the observed one are decided exactly, never by rounding: identical systems
give d̄ = 0 and p = 1; swapping A and B negates d̄ and its interval and keeps p.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from clstream.metrics.bootstrap import bootstrap_ci

__all__ = ["EXACT_ITEMS", "PairedDifference", "holm_adjusted", "paired_difference",
           "sign_flip_p_value"]

EXACT_ITEMS = 16
"""Up to this many items the sign-flip test enumerates all 2^n sign vectors (65,536)."""
PERMUTATIONS = 10_000
"""Monte Carlo sign vectors drawn above :data:`EXACT_ITEMS` items."""
BOOTSTRAP_RESAMPLES = 2_000
"""Bootstrap resamples of the items for the interval of the mean difference."""
# Monte Carlo sign vectors are drawn in blocks of this many, bounding memory.
_BLOCK = 2_000


def _differences(a: Sequence[float], b: Sequence[float]) -> list[Fraction]:
    if len(a) != len(b):
        raise ValueError(f"paired scores need one score per item for both systems: "
                         f"{len(a)} against {len(b)}")
    if not a:
        raise ValueError("no items to compare")
    return [Fraction(float(x)) - Fraction(float(y)) for x, y in zip(a, b, strict=True)]


def _integers(differences: Sequence[Fraction]) -> list[int]:
    """The differences over one common denominator: integers with the same ratios."""
    common = 1
    for d in differences:
        common = max(common, d.denominator)  # powers of two: the largest is a multiple of all
    return [int(d * common) for d in differences]


def sign_flip_p_value(differences: Sequence[float | Fraction], *,
                      permutations: int = PERMUTATIONS, seed: int = 0,
                      exact_items: int = EXACT_ITEMS) -> tuple[float, bool]:
    """(two-sided p-value, whether it is exact) of the paired sign-flip test on the per-item
    ``differences`` (see the module docstring). Raises ``ValueError`` for no differences."""
    if not differences:
        raise ValueError("no items to compare")
    if permutations < 1:
        raise ValueError(f"permutations must be >= 1, got {permutations}")
    numbers = _integers([Fraction(d) for d in differences])
    observed = abs(sum(numbers))
    n = len(numbers)
    limit = (1 << 62) // max(1, n)
    wide = any(abs(v) >= limit for v in numbers)  # int64 could overflow: exact Python ints
    column = np.array(numbers, dtype=object if wide else np.int64)
    if n <= exact_items:
        signs = 1 - 2 * ((np.arange(1 << n)[:, None] >> np.arange(n)) & 1)
        sums = signs.astype(column.dtype) @ column
        hits = int(np.count_nonzero(np.abs(sums) >= observed))
        return hits / (1 << n), True
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, permutations, _BLOCK):
        rows = min(permutations, start + _BLOCK) - start
        signs = 1 - 2 * rng.integers(0, 2, size=(rows, n))
        sums = signs.astype(column.dtype) @ column
        hits += int(np.count_nonzero(np.abs(sums) >= observed))
    return (1 + hits) / (1 + permutations), False


@dataclass(frozen=True)
class PairedDifference:
    """A against B over ``n`` items: the mean of a - b, its bootstrap interval at
    ``confidence``, the sign-flip p-value and whether that p-value is exact."""

    n: int
    mean: float
    interval: tuple[float, float]
    p_value: float
    exact: bool
    confidence: float


def paired_difference(a: Sequence[float], b: Sequence[float], *,
                      resamples: int = BOOTSTRAP_RESAMPLES, confidence: float = 0.95,
                      permutations: int = PERMUTATIONS, seed: int = 0) -> PairedDifference:
    """Systems A (scores ``a``) and B (scores ``b``) on the same items, in the same order:
    the mean difference a - b, its paired bootstrap interval and the sign-flip p-value."""
    differences = _differences(a, b)
    n = len(differences)
    mean = float(sum(differences, Fraction(0)) / n)
    # The bootstrap's exact arithmetic wants the differences as doubles; a - b of two
    # doubles is rounded once here, far below any difference a score can show.
    floats = [float(d) for d in differences]
    interval = bootstrap_ci(floats, n_boot=resamples, alpha=1.0 - confidence, seed=seed)
    p_value, exact = sign_flip_p_value(differences, permutations=permutations, seed=seed)
    return PairedDifference(n, mean, interval, p_value, exact, confidence)


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of ``p_values``, one family of tests, in the given order.

    Comparing every pair of k systems makes k(k-1)/2 tests, and at a 5% level some of them
    come out "significant" by chance alone. Holm's method (S. Holm, "A simple sequentially
    rejective multiple test procedure", Scand. J. Statist. 6(2), 1979) keeps the chance of
    any false rejection in the family at most the level, under any dependence between the
    tests, and is uniformly more powerful than Bonferroni. With the m p-values sorted,
    p_(1) <= ... <= p_(m), the adjusted value of the i-th is
    ``max over j <= i of min(1, (m - j + 1) p_(j))``: rejecting where the adjusted value is
    at most the level is Holm's procedure. Ties keep their order of input; the result is in
    the order of the input.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
