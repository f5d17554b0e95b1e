"""Sums, means, spreads and slopes that give the same bits on every machine.

A metric must not depend on the CPU it is computed on (docs/design.md §8: ``score`` prints the
same JSON for the same file). Floating-point addition is not associative, so a sum's last digit
depends on the order its terms are added in, and numpy's reductions pick that order by array
size, memory layout and, for ``dot``, ``polyfit`` and ``lstsq``, by whichever BLAS kernel the
CPU selects. Python's own ``sum`` of floats changed its rounding in 3.12.

Every function here returns the correctly rounded value of the exact real result over its
(finite) inputs, or, for :func:`standard_error`, a fixed sequence of correctly rounded steps
from exact intermediate values: the answer depends only on the multiset of inputs, never on
their order, the platform or the Python or numpy version. Each double is an exact binary
fraction, so sums are carried as Python integers over one common power-of-two denominator and
divided once at the end (Python's int / int is correctly rounded).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import cast

__all__ = ["exact_mean", "exact_sum", "exact_variance", "least_squares_slope",
           "standard_error", "scaled_integers"]


def scaled_integers(values: Iterable[float]) -> tuple[list[int], int]:
    """``(numerators, denominator)`` with ``values[i] == numerators[i] / denominator``
    exactly; the denominator is the largest power of two any value needs.

    Raises ``ValueError`` for NaN or an infinity (a metric over them has no exact value).
    """
    ratios = []
    for value in values:
        v = float(value)
        if not math.isfinite(v):
            raise ValueError(f"cannot sum a non-finite value exactly: {v!r}")
        ratios.append(v.as_integer_ratio())
    denominator = max((d for _, d in ratios), default=1)
    # Every denominator is a power of two, so each divides the largest one.
    return [n * (denominator // d) for n, d in ratios], denominator


_WHOLE = frozenset({int, bool})
_EXACT_INT = 2**53
"""Integers up to this size are doubles exactly: :func:`exact_mean` of them needs no scaling."""


def exact_sum(values: Iterable[float]) -> float:
    """The correctly rounded sum (``math.fsum``): the same for every order of the terms."""
    data = [float(v) for v in values]
    if not all(math.isfinite(v) for v in data):
        raise ValueError("cannot sum a non-finite value exactly")
    return math.fsum(data)


def exact_mean(values: Iterable[float | Fraction]) -> float:
    """The correctly rounded mean: the exact sum divided by the count, rounded once.

    Values may be ``Fraction``s: a metric whose per-unit values are ratios of counts (1/3 of
    the intervals right) passes them exactly, so the mean is the correctly rounded value of
    the true ratio, not of the average of already rounded ones. Raises ``ValueError`` for no
    values (a mean of nothing is undefined) or non-finite ones.
    """
    data = list(values)
    if not data:
        raise ValueError("cannot average no values")
    if set(map(type, data)) <= _WHOLE and -_EXACT_INT <= min(data) and max(data) <= _EXACT_INT:
        # Whole numbers a double holds exactly (0/1 scores, their differences): the sum is
        # exact as it is, and int / int rounds once, as the general path below would.
        whole = cast(list[int], data)  # ints and bools, checked above
        return sum(whole) / len(whole)
    if any(isinstance(v, Fraction) for v in data):
        return float(sum((Fraction(v) for v in data), Fraction(0)) / len(data))
    numerators, denominator = scaled_integers([float(v) for v in data])
    return sum(numerators) / (denominator * len(numerators))


def _exact_variance(values: Sequence[float], ddof: int) -> Fraction:
    numerators, denominator = scaled_integers(values)
    n = len(numerators)
    if n - ddof < 1:
        raise ValueError(f"need more than {ddof} values for a variance with ddof={ddof}")
    total = sum(numerators)
    squares = sum(v * v for v in numerators)
    # sum (x - mean)^2 = (n sum x^2 - (sum x)^2) / n, all over denominator^2.
    return Fraction(n * squares - total * total, n * (n - ddof) * denominator * denominator)


def exact_variance(values: Sequence[float], ddof: int = 1) -> float:
    """The correctly rounded variance sum (x - mean)^2 / (n - ddof), the mean taken exactly."""
    return float(_exact_variance(values, ddof))


def standard_error(values: Sequence[float]) -> float:
    """sd / sqrt(n), sd with the n - 1 denominator: the spread of a mean over n values.

    The variance is exact and rounded once; the two square roots and the division are
    IEEE operations, each correctly rounded, so the result is the same everywhere.
    """
    return math.sqrt(exact_variance(values, ddof=1)) / math.sqrt(len(values))


def least_squares_slope(xs: Sequence[float | Fraction], ys: Sequence[float | Fraction]
                        ) -> float | None:
    """The correctly rounded ordinary least-squares slope of ys against xs.

    slope = sum (x - xbar)(y - ybar) / sum (x - xbar)^2, computed in exact rational arithmetic
    (pass ``Fraction`` x values such as k/T to fit the exact abscissae, not their roundings).
    None with fewer than two points or when every x is the same (no slope is defined).
    """
    if len(xs) != len(ys):
        raise ValueError("need one y per x")
    if len(xs) < 2:
        return None
    fx = [Fraction(x) for x in xs]
    fy = [Fraction(y) for y in ys]
    n = len(fx)
    x_bar, y_bar = sum(fx, Fraction(0)) / n, sum(fy, Fraction(0)) / n
    spread = sum(((x - x_bar) ** 2 for x in fx), Fraction(0))
    if spread == 0:
        return None
    covariance = sum(((x - x_bar) * (y - y_bar) for x, y in zip(fx, fy, strict=True)),
                     Fraction(0))
    return float(covariance / spread)
