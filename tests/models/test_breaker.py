"""The circuit breaker: a server that stopped answering fails the remaining requests at once."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest
from fake_openai_server import FakeOpenAIServer, always

from clstream.core.types import GenerationRequest, Message, SamplingParams
from clstream.models.breaker import CircuitBreaker
from clstream.models.openai_compat import OpenAICompatModel


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def req(key: str) -> GenerationRequest:
    return GenerationRequest(key=key, messages=(Message(role="user", content=key),),
                             params=SamplingParams())


def test_it_opens_after_enough_failures_over_the_window() -> None:
    clock = Clock()
    breaker = CircuitBreaker("http://h/v1", failures=3, window_s=2.0, clock=clock)
    assert not any(breaker.failed("connection refused") for _ in range(10))  # all at once
    clock.now += 1.9
    assert not breaker.failed("connection refused") and not breaker.open
    clock.now += 0.2
    assert breaker.failed("connection refused") and breaker.open
    assert breaker.error is not None and breaker.error.startswith(
        "server at http://h/v1 stopped answering: connection refused (")
    assert not breaker.failed("connection refused")  # opened once


def test_an_answer_in_between_starts_the_count_again() -> None:
    clock = Clock()
    breaker = CircuitBreaker("u", failures=3, window_s=1.0, clock=clock)
    breaker.failed("x")
    breaker.failed("x")
    clock.now += 5
    breaker.answered()
    assert not breaker.failed("x") and not breaker.failed("x")
    clock.now += 5
    assert breaker.failed("x")


def test_a_backoff_ends_when_the_breaker_opens() -> None:
    clock = Clock()
    breaker = CircuitBreaker("u", failures=1, window_s=0.0, clock=clock)

    async def go() -> tuple[bool, bool]:
        sleeper = asyncio.ensure_future(breaker.sleep(3600.0))
        await asyncio.sleep(0.05)
        waiting = not sleeper.done()
        breaker.failed("connection refused")
        for _ in range(3):  # the event wakes the sleeper within a few turns of the loop
            await asyncio.sleep(0)
        return waiting, sleeper.done()

    assert asyncio.run(go()) == (True, True)  # waited, then woke without the hour's backoff


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_dead_server_fails_every_request_after_a_few_attempts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the breaker 40 requests would make 7 attempts each (280), waiting out minutes
    of backoff; with it the attempts stop soon after the window. The attempts are counted,
    not timed: backoff sleeps set how many fit in the window, however busy the machine."""
    url = f"http://127.0.0.1:{closed_port()}/v1"
    model = OpenAICompatModel("m", base_url=url, max_concurrency=4)
    attempts = 0
    attempt = model._attempt

    async def counted(*args: Any) -> Any:
        nonlocal attempts
        attempts += 1
        return await attempt(*args)

    monkeypatch.setattr(model, "_attempt", counted)

    async def go() -> list[Any]:
        async with model:
            return await model.generate([req(f"k{i}") for i in range(40)])

    results = asyncio.run(go())
    # ~150 here: the attempts whose jittered backoff (seeded by the key) falls in the breaker's
    # window; a busy machine only makes fewer. Without the breaker: 280.
    assert 8 <= attempts <= 200, attempts
    assert all(not r.ok for r in results)
    stopped = [r.error for r in results if "stopped answering" in (r.error or "")]
    assert len(stopped) >= 30
    assert stopped[0] == (f"openai:m: server at {url} stopped answering: connection refused"
                          + stopped[0].split("connection refused", 1)[1])
    assert model.transport()["errors"] == 40


def test_answers_that_fail_do_not_trip_it() -> None:
    """A server answering 500s is alive: each request spends its retries as before."""
    with FakeOpenAIServer(plan=always("500")) as srv:
        model = OpenAICompatModel("m", base_url=srv.base_url, max_retries=2,
                                  backoff_base=0.001, backoff_max=0.002)
        results = asyncio.run(model.generate([req(f"k{i}") for i in range(12)]))
        assert len(srv.requests) == 36
    assert all("failed after 3 attempts" in (r.error or "") for r in results)
