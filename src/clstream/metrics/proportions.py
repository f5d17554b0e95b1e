"""An interval for a share of successes, with no resampling (docs/statistics.md §3).

The Wilson score interval (E. B. Wilson, "Probable inference, the law of succession, and
statistical inference", JASA 22(158), 1927) for k successes in n trials at confidence 1 - α,
z = the standard normal quantile 1 - α/2:

    centre = (k + z²/2) / (n + z²)
    half   = z / (n + z²) · √(k (n - k) / n + z²/4)
    [centre - half, centre + half]

Unlike the normal (Wald) interval it stays inside [0, 1] and has width at k = 0 or k = n,
which a running accuracy over the first few tasks of a stream needs. It treats the trials as
independent draws of one success rate: the band it gives a curve says how much the share could
move by chance at that length, not how a different stream would behave.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

__all__ = ["running_wilson", "wilson_interval"]


def wilson_interval(successes: int, trials: int, confidence: float = 0.95
                    ) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` out of ``trials`` (module docstring)."""
    if trials < 1:
        raise ValueError("a share needs at least one trial")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must lie in [0, {trials}], got {successes}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    z2 = z * z
    centre = (successes + z2 / 2) / (trials + z2)
    half = z / (trials + z2) * math.sqrt(successes * (trials - successes) / trials + z2 / 4)
    return max(0.0, centre - half), min(1.0, centre + half)


def running_wilson(correct: Sequence[int], confidence: float = 0.95
                   ) -> list[tuple[float, float]]:
    """The Wilson interval of the running share after each of ``correct`` (0 or 1 each):
    point τ covers the first τ outcomes, as a running accuracy curve does."""
    out: list[tuple[float, float]] = []
    total = 0
    for n, value in enumerate(correct, start=1):
        if value not in (0, 1):
            raise ValueError(f"outcome {n} is {value!r}, not 0 or 1")
        total += int(value)
        out.append(wilson_interval(total, n, confidence))
    return out
