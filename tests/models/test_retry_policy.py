"""Retry classification, Retry-After parsing and backoff waits."""

from __future__ import annotations

import email.utils

import pytest

from clstream.core.errors import SpecError
from clstream.models.retry import RetryPolicy, is_retryable_status, jitter_rng, parse_retry_after


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 599])
def test_transient_statuses_are_retried(status: int) -> None:
    assert is_retryable_status(status)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 413, 422, 301, 600])
def test_other_statuses_are_not(status: int) -> None:
    assert not is_retryable_status(status)


def test_retry_after_seconds_and_dates() -> None:
    assert parse_retry_after(None) is None
    assert parse_retry_after("") is None
    assert parse_retry_after("garbage") is None
    assert parse_retry_after("nan") is None
    assert parse_retry_after("0") == 0.0
    assert parse_retry_after(" 2.5 ") == 2.5
    assert parse_retry_after("-3") == 0.0
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 12, usegmt=True)
    assert parse_retry_after(date, now=now) == pytest.approx(12.0)
    past = email.utils.formatdate(now - 100, usegmt=True)
    assert parse_retry_after(past, now=now) == 0.0


def test_full_jitter_stays_under_the_exponential_ceiling() -> None:
    policy = RetryPolicy(max_retries=10, backoff_base=0.5, backoff_max=30.0)
    rng = jitter_rng("some/key")
    for attempt in range(10):
        ceiling = min(30.0, 0.5 * 2**attempt)
        waits = [policy.delay(attempt, rng) for _ in range(200)]
        assert all(0.0 <= w <= ceiling for w in waits)
        assert max(waits) > 0.5 * ceiling  # really spread over the range, not a constant
    assert policy.delay(500, rng) <= 30.0


def test_retry_after_replaces_jitter_and_is_capped() -> None:
    policy = RetryPolicy(backoff_base=100.0, backoff_max=5.0)
    rng = jitter_rng("k")
    assert policy.delay(0, rng, retry_after=1.25) == 1.25
    assert policy.delay(3, rng, retry_after=3600.0) == 5.0
    assert policy.delay(3, rng, retry_after=0.0) == 0.0


def test_jitter_is_reproducible_per_key() -> None:
    policy = RetryPolicy()
    a = [policy.delay(i, jitter_rng("doc/q1")) for i in range(5)]
    b = [policy.delay(i, jitter_rng("doc/q1")) for i in range(5)]
    c = [policy.delay(i, jitter_rng("doc/q2")) for i in range(5)]
    assert a == b != c


def test_attempts_count_the_first_try() -> None:
    assert RetryPolicy(max_retries=0).attempts == 1
    assert RetryPolicy(max_retries=6).attempts == 7


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_retries": -1},
        {"max_retries": 1.5},
        {"max_retries": True},
        {"backoff_base": -1.0},
        {"backoff_max": float("inf")},
        {"backoff_base": "1"},
    ],
)
def test_bad_policy_is_a_spec_error(kwargs: dict[str, object]) -> None:
    with pytest.raises(SpecError):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]
