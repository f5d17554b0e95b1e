"""OpenAICompatModel under injected faults: retries, give-ups, errors and the concurrency bound."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence
from typing import Any

import pytest
from fake_openai_server import (
    FakeOpenAIServer,
    always,
    expected_text,
    first_attempts,
    fraction,
)

from clstream.core.types import GenerationRequest, GenerationResult, Message, SamplingParams
from clstream.models.openai_compat import OpenAICompatModel
from clstream.models.retry import RetryPolicy

FAST: dict[str, Any] = {"backoff_base": 0.001, "backoff_max": 0.01}


def req(key: str, n: int = 1) -> GenerationRequest:
    return GenerationRequest(
        key=key,
        messages=(Message(role="user", content=f"question {key}"),),
        params=SamplingParams(n=n),
    )


def run(model: OpenAICompatModel, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
    async def go() -> list[GenerationResult]:
        async with model:
            return await model.generate(requests)

    return asyncio.run(go())


def clean_texts(requests: Sequence[GenerationRequest]) -> list[list[str]]:
    with FakeOpenAIServer() as srv:
        results = run(OpenAICompatModel("m", base_url=srv.base_url), requests)
    return [[s.text for s in r.samples] for r in results]


RETRYABLE = [
    "429",
    "500",
    "503",
    "malformed",
    "missing_choices",
    "wrong_n",
    "no_content",
    "stall",
    "reset",
]


@pytest.mark.parametrize("fault", RETRYABLE)
def test_retries_recover_from_each_fault(fault: str) -> None:
    requests = [req(f"k{i}", n=1 + i % 2) for i in range(4)]
    # A timeout well above any answer's time, so only a stall is ever sent again; a stall
    # lasts until the server stops.
    with FakeOpenAIServer(plan=first_attempts(2, fault), stall_s=3600.0) as srv:
        model = OpenAICompatModel("m", base_url=srv.base_url, request_timeout=1.0, **FAST)
        results = run(model, requests)
        assert len(srv.requests) == 3 * len(requests)  # two faults then a success, each
        assert srv.faults == [fault] * (2 * len(requests))
        bodies = {b["seed"]: b for b in srv.requests}
    assert all(r.ok and r.error is None for r in results)
    assert [[s.text for s in r.samples] for r in results] == clean_texts(requests)
    for r in results:
        body = next(
            b for b in bodies.values() if b["messages"][0]["content"] == f"question {r.key}"
        )
        assert [s.text for s in r.samples] == [expected_text(body, i) for i in range(body["n"])]


def test_a_request_that_always_fails_becomes_an_error_result() -> None:
    def doomed(body: dict[str, Any]) -> bool:
        return "doomed" in body["messages"][0]["content"]

    with FakeOpenAIServer(plan=always("500", when=doomed)) as srv:
        model = OpenAICompatModel("m", base_url=srv.base_url, max_retries=3, **FAST)
        bad, good = run(model, [req("doomed"), req("fine")])
        doomed_attempts = [b for b in srv.requests if doomed(b)]
    assert len(doomed_attempts) == 4  # the first attempt and three retries
    assert bad.error is not None and not bad.ok
    assert bad.samples == [] and "HTTP 500" in bad.error and "4 attempts" in bad.error
    assert bad.usage.completion_tokens == 0
    assert good.ok and good.samples


@pytest.mark.parametrize("fault,status", [("400", 400), ("404", 404)])
def test_client_errors_are_not_retried(fault: str, status: int) -> None:
    with FakeOpenAIServer(plan=always(fault)) as srv:
        model = OpenAICompatModel("m", base_url=srv.base_url, **FAST)
        (result,) = run(model, [req("a")])
        assert len(srv.requests) == 1
    assert result.samples == []
    assert result.error is not None and f"HTTP {status}" in result.error
    assert "not retried" in result.error


def test_malformed_forever_is_an_error_not_an_answer() -> None:
    with FakeOpenAIServer(plan=always("malformed")) as srv:
        model = OpenAICompatModel("m", base_url=srv.base_url, max_retries=2, **FAST)
        (result,) = run(model, [req("a")])
        assert len(srv.requests) == 3
    assert result.samples == [] and result.error is not None and "not JSON" in result.error


def test_stall_forever_times_out_each_attempt() -> None:
    with FakeOpenAIServer(plan=always("stall"), stall_s=1.0) as srv:
        model = OpenAICompatModel(
            "m", base_url=srv.base_url, request_timeout=0.2, max_retries=1, **FAST
        )
        (result,) = run(model, [req("a")])
        assert len(srv.requests) == 2
    assert result.error is not None and "no response within 0.2s" in result.error


def test_connection_refused_is_retried_then_reported() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = OpenAICompatModel("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=2, **FAST)
    (result,) = run(model, [req("a")])
    assert result.samples == []
    assert result.error is not None and "connection error" in result.error
    assert "3 attempts" in result.error


def test_mixed_fault_fraction_still_yields_exact_answers() -> None:
    requests = [req(f"m{i}", n=1 + i % 3) for i in range(30)]
    plan = fraction(0.5, ("429", "500", "malformed", "wrong_n", "reset"))
    with FakeOpenAIServer(plan=plan) as srv:
        model = OpenAICompatModel("m", base_url=srv.base_url, max_concurrency=5, **FAST)
        results = run(model, requests)
        assert len(srv.faults) > 5
    assert all(r.ok for r in results)
    assert [[s.text for s in r.samples] for r in results] == clean_texts(requests)


@pytest.mark.parametrize(
    "header,backoff_max,expected",
    [("0.05", 10.0, 0.05), ("3600", 0.02, 0.02), ("0", 10.0, 0.0)],
)
def test_retry_after_replaces_the_jittered_wait_up_to_the_cap(
    header: str, backoff_max: float, expected: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []
    original = RetryPolicy.delay

    def recording(
        self: RetryPolicy, attempt: int, rng: object, retry_after: object = None
    ) -> float:
        value = original(self, attempt, rng, retry_after)  # type: ignore[arg-type]
        waits.append(value)
        return value

    monkeypatch.setattr(RetryPolicy, "delay", recording)
    with FakeOpenAIServer(plan=first_attempts(1, "429"), retry_after=header) as srv:
        model = OpenAICompatModel(
            "m", base_url=srv.base_url, backoff_base=5.0, backoff_max=backoff_max
        )
        (result,) = run(model, [req("a")])
        assert len(srv.requests) == 2
    assert result.ok
    assert waits == [pytest.approx(expected)]


@pytest.mark.parametrize("limit", [1, 3])
def test_requests_in_flight_never_exceed_the_bound(limit: int) -> None:
    with FakeOpenAIServer(latency=0.03) as srv:
        model = OpenAICompatModel("m", base_url=srv.base_url, max_concurrency=limit)
        results = run(model, [req(f"c{i}") for i in range(24)])
        peak = srv.max_in_flight
    assert all(r.ok for r in results)
    assert 1 <= peak <= limit
    if limit > 1:
        assert peak >= 2  # requests really overlap


def test_bound_holds_across_concurrent_generate_calls() -> None:
    with FakeOpenAIServer(latency=0.03) as srv:
        model = OpenAICompatModel("m", base_url=srv.base_url, max_concurrency=2)

        async def go() -> list[list[GenerationResult]]:
            # Outside ``async with`` each call has its own connection pool: only the model's
            # shared in-flight bound can keep the total at 2.
            batches = [[req(f"b{j}-{i}") for i in range(5)] for j in range(4)]
            return list(await asyncio.gather(*(model.generate(b) for b in batches)))

        batches = asyncio.run(go())
        peak = srv.max_in_flight
    assert all(r.ok for batch in batches for r in batch)
    assert 2 == peak
