"""A metric over repeated runs that differ only in their seed: mean, spread and a t-interval
(docs/statistics.md §1).

Seeds are the replication unit here, not items: a run's own interval (a bootstrap over its
questions, say) says how sure its number is for that run; the spread over seeds says how much
the number moves when only the randomness of sampling and of seeded choices changes. With n
seeds the interval is Student's t-interval

    mean ± t_{1 - α/2, n - 1} · s / √n,    s² = Σ (x_i - mean)² / (n - 1)

(Student, "The probable error of a mean", Biometrika 6(1), 1908), which assumes the per-seed
values are independent draws from a roughly normal distribution; with few seeds it is wide on
purpose. The quantile is computed from the t distribution's closed-form CDF for an integer
number of degrees of freedom (Abramowitz and Stegun, Handbook of Mathematical Functions,
26.7.3 and 26.7.4) by bisection, so no statistics library is needed. The mean and variance
are exact (:mod:`clstream.metrics.exact`) and rounded once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from clstream.metrics.exact import exact_mean, exact_variance

__all__ = ["SeedStatistics", "seed_statistics", "t_cdf_two_sided", "t_quantile"]


def t_cdf_two_sided(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with ``df`` (integer >= 1) degrees of freedom.

    With θ = atan(t / √df): for odd df, (2/π)(θ + sin θ (cos θ + (2/3) cos³ θ + ...
    + (2·4···(df-3))/(1·3···(df-2)) cos^{df-2} θ)) (just 2θ/π for df = 1); for even df,
    sin θ (1 + (1/2) cos² θ + (1·3)/(2·4) cos⁴ θ + ... + (1·3···(df-3))/(2·4···(df-2))
    cos^{df-2} θ) (Abramowitz and Stegun 26.7.3, 26.7.4)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    t = abs(t)
    theta = math.atan(t / math.sqrt(df))
    sin, cos = math.sin(theta), math.cos(theta)
    if df % 2 == 1:
        total, term = 0.0, cos
        for k in range(1, (df - 1) // 2 + 1):  # terms cos^1 .. cos^{df-2}
            total += term
            term *= cos * cos * (2 * k) / (2 * k + 1)
        return (2.0 / math.pi) * (theta + sin * total) if df > 1 else 2.0 * theta / math.pi
    total, term = 0.0, 1.0
    for k in range(1, df // 2 + 1):  # terms cos^0 .. cos^{df-2}
        total += term
        term *= cos * cos * (2 * k - 1) / (2 * k)
    return sin * total


def t_quantile(probability: float, df: int) -> float:
    """The ``probability`` quantile (0.5 < p < 1) of Student's t with ``df`` degrees of freedom,
    by bisection on :func:`t_cdf_two_sided` to the last bit a double holds."""
    if not 0.5 < probability < 1.0:
        raise ValueError(f"probability must be in (0.5, 1), got {probability}")
    coverage = 2.0 * probability - 1.0  # P(|T| <= q)
    low, high = 0.0, 1.0
    while t_cdf_two_sided(high, df) < coverage:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if middle in (low, high):
            break
        if t_cdf_two_sided(middle, df) < coverage:
            low = middle
        else:
            high = middle
    return high


@dataclass(frozen=True)
class SeedStatistics:
    """One metric over n seeds: the mean, the sample standard deviation (None for n = 1) and
    the t-interval at ``confidence`` (None for n = 1: one value gives no spread)."""

    n: int
    mean: float
    sd: float | None
    interval: tuple[float, float] | None
    confidence: float

    def as_json(self) -> dict[str, object]:
        return {"n": self.n, "mean": self.mean, "sd": self.sd,
                "interval": list(self.interval) if self.interval is not None else None}


def seed_statistics(values: Sequence[float], confidence: float = 0.95) -> SeedStatistics:
    """Mean, standard deviation (n - 1 denominator) and the two-sided t-interval of the mean
    of ``values``, one per seed (see the module docstring). Raises ``ValueError`` for no
    values or a non-finite one."""
    data = [float(v) for v in values]
    if not data:
        raise ValueError("no values: a mean over no seeds is undefined")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    mean = exact_mean(data)
    if len(data) == 1:
        return SeedStatistics(1, mean, None, None, confidence)
    sd = math.sqrt(exact_variance(data, ddof=1))
    half = t_quantile(1.0 - (1.0 - confidence) / 2.0, len(data) - 1) * sd / math.sqrt(len(data))
    return SeedStatistics(len(data), mean, sd, (mean - half, mean + half), confidence)
