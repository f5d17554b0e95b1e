"""When a failed call to a remote model server is worth another attempt, and how long to wait.

Remote servers fail transiently: rate limits (429), restarts and overload (5xx), dropped
connections, stalls and truncated bodies. docs/design.md §3.2 (caching, retries, concurrency limits)
asks that such faults never become answers: a request is retried with exponential backoff and
full jitter, and one that still fails is reported as an error result.

The jitter RNG is seeded from the request key, so a rerun waits the same amounts and no
global RNG state is shared between concurrent requests.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from dataclasses import dataclass

from clstream.core.errors import SpecError
from clstream.core.specs import derive_seed

# Request timeout, conflict and rate limit: the same request may succeed later. Other 4xx
# statuses mean the request itself is wrong, so repeating it cannot help.
RETRYABLE_4XX = frozenset({408, 409, 429})


def is_retryable_status(status: int) -> bool:
    """True for 408, 409, 429 and every 5xx status."""
    return status in RETRYABLE_4XX or 500 <= status <= 599


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date).

    Returns None when the header is absent or unreadable; a date in the past gives 0.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if math.isnan(seconds):
        return None
    return max(0.0, seconds)


def jitter_rng(key: str) -> random.Random:
    """The backoff RNG of one request, seeded by its key (independent of batching)."""
    return random.Random(derive_seed(0, f"retry\x00{key}"))


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` further attempts after the first; waits grow as base * 2**attempt.

    Full jitter: the wait before retry ``a`` (0-based) is uniform in
    ``[0, min(backoff_max, backoff_base * 2**a)]``. A server's ``Retry-After`` replaces the
    jittered wait, capped at ``backoff_max`` so a hostile or confused header cannot stall a run.
    """

    max_retries: int = 6
    backoff_base: float = 0.5
    backoff_max: float = 30.0

    def __post_init__(self) -> None:
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int):
            raise SpecError(f"max_retries must be an integer, got {self.max_retries!r}")
        if self.max_retries < 0:
            raise SpecError(f"max_retries must be >= 0, got {self.max_retries}")
        for name in ("backoff_base", "backoff_max"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise SpecError(f"{name} must be a finite number >= 0, got {value!r}")

    @property
    def attempts(self) -> int:
        return self.max_retries + 1

    def delay(self, attempt: int, rng: random.Random, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (0-based)."""
        if retry_after is not None:
            return min(max(0.0, retry_after), self.backoff_max)
        ceiling = min(self.backoff_max, self.backoff_base * 2.0 ** min(attempt, 60))
        return rng.uniform(0.0, ceiling)


class AttemptFailure(Exception):
    """One failed attempt: why, whether retrying can help, and any server-requested wait."""

    def __init__(self, reason: str, retryable: bool, retry_after: float | None = None):
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        self.retry_after = retry_after
