"""The adaptive in-flight limit against a loopback engine with N slots and a queue in front.

With defaults, one slot finishes with no error and nothing generated twice, also when some
answers take several times the timeout to generate, the limit staying near one; and results
never depend on the limit (32 slots: ``test_concurrency_slots32.py``). The wall time against
``--max-concurrency 1`` is measured by ``benchmarks/bench_concurrency.py``, not asserted here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from loopback_engine import LoopbackEngine

from clstream.core.types import GenerationRequest, GenerationResult, Message, SamplingParams
from clstream.models.concurrency import DEFAULT_START, ConcurrencyLimit
from clstream.models.openai_compat import OpenAICompatModel


def req(key: str, long: bool = False) -> GenerationRequest:
    text = f"probe {key}" + (" #long" if long else "")
    return GenerationRequest(key=key, messages=(Message(role="user", content=text),),
                             params=SamplingParams())


def generated(model: OpenAICompatModel, requests: Sequence[GenerationRequest]
              ) -> list[GenerationResult]:
    async def go() -> list[GenerationResult]:
        async with model:
            return await model.generate(requests)

    return asyncio.run(go())


# Every tenth answer takes three times the timeout, its tokens a tenth of it apart: queued
# requests wait longer than the timeout behind a long answer, while a gap between tokens stays
# far below it however busy the machine.
TIMEOUT = 0.5
LONG_S = 3 * TIMEOUT
TOKENS = 30


def one_slot_stream() -> list[GenerationRequest]:
    return [req(f"k{i}", long=i % 10 == 3) for i in range(30)]


def test_one_slot_with_long_answers_finishes_without_errors_near_one_at_a_time() -> None:
    requests = one_slot_stream()
    with LoopbackEngine(slots=1, service_s=0.03, long_s=LONG_S, tokens=TOKENS) as engine:
        url = engine.base_url
        fixed = generated(OpenAICompatModel("loop", base_url=url, request_timeout=TIMEOUT,
                                            max_concurrency=1), requests)
        model = OpenAICompatModel("loop", base_url=url, request_timeout=TIMEOUT)
        adaptive = generated(model, requests)
        # The engine counts an answer after sending it: let the last count land.
        deadline = time.monotonic() + 60.0  # returns as soon as it lands
        while engine.served < 2 * len(requests) and time.monotonic() < deadline:
            time.sleep(0.01)
        served = engine.served
    assert all(r.ok for r in fixed), [r.error for r in fixed if not r.ok]
    assert all(r.ok for r in adaptive), [r.error for r in adaptive if not r.ok]
    assert served == 2 * len(requests)  # nothing was generated twice
    transport = model.transport()
    assert transport["adaptive"] and transport["history"][0] == [0.0, DEFAULT_START, "start"]
    after_start = [limit for _, limit, _ in transport["history"][1:]]
    assert after_start and max(after_start) <= 3  # one slot: it never strays far from 1


def test_results_do_not_depend_on_the_limit() -> None:
    requests = one_slot_stream()[:20]
    with LoopbackEngine(slots=3, service_s=0.01, long_s=LONG_S, tokens=TOKENS) as engine:
        url = engine.base_url
        one = generated(OpenAICompatModel("loop", base_url=url, request_timeout=TIMEOUT,
                                          max_concurrency=1), requests)
        adaptive = generated(OpenAICompatModel("loop", base_url=url, request_timeout=TIMEOUT),
                             requests)
    assert all(r.ok for r in one + adaptive)
    assert [r.samples for r in one] == [r.samples for r in adaptive]
    assert [(r.usage.prompt_tokens, r.usage.completion_tokens) for r in one] == [
        (r.usage.prompt_tokens, r.usage.completion_tokens) for r in adaptive]


def test_the_start_is_the_slot_count_a_server_reports() -> None:
    with LoopbackEngine(slots=3, props=True, context=4096) as engine:
        model = OpenAICompatModel("loop", base_url=engine.base_url)
        assert asyncio.run(model.preflight(SamplingParams())) == []
    assert model.server is not None
    assert (model.server.slots, model.server.context_length) == (3, 4096)
    assert model.start_concurrency() == 3
    fixed = OpenAICompatModel("loop", base_url=engine.base_url, max_concurrency=7)
    assert fixed.start_concurrency() == 7 and not fixed.transport()["adaptive"]


# -- the limit alone ---------------------------------------------------------------------------


def test_a_fixed_limit_never_moves() -> None:
    async def go() -> ConcurrencyLimit:
        limit = ConcurrencyLimit(3, adaptive=False)
        for _ in range(20):
            ticket = await limit.acquire(0)
            limit.congested(ticket, "timeout")
        return limit

    limit = asyncio.run(go())
    assert limit.current == 3 and len(limit.history) == 1


def test_congestion_halves_once_per_change_and_waiters_go_in_order() -> None:
    async def go() -> tuple[ConcurrencyLimit, list[int]]:
        limit = ConcurrencyLimit(4, adaptive=True)
        tickets = [await limit.acquire(i) for i in range(4)]
        admitted: list[int] = []

        async def wait(order: int) -> None:
            ticket = await limit.acquire(order)
            admitted.append(order)
            limit.released(ticket)

        waiters = [asyncio.ensure_future(wait(o)) for o in (9, 5, 7)]
        await asyncio.sleep(0)
        for ticket in tickets:  # all four time out together: one decrease, not four
            limit.congested(ticket, "timeout")
        await asyncio.gather(*waiters)
        return limit, admitted

    limit, admitted = asyncio.run(go())
    assert limit.current == 2
    assert [list(h[1:]) for h in limit.history] == [[4, "start"], [2, "timeout"]]
    assert admitted == [5, 7, 9]


def test_a_queue_brings_the_limit_to_the_served_count() -> None:
    async def go() -> ConcurrencyLimit:
        limit = ConcurrencyLimit(8, adaptive=True)
        limit._slow_start = False
        limit._best_rate = 0.0
        tickets = [await limit.acquire(0) for _ in range(8)]
        for i, ticket in enumerate(tickets):  # half waited 1.5 generation times for a slot
            limit.succeeded(ticket, first_token_s=1.5 if i % 2 else 0.0,
                            total_s=2.5 if i % 2 else 1.0, output_tokens=10)
        return limit

    limit = asyncio.run(go())
    # waits of 0.75 s on average against 1 s of generation: 8 * 1 / 1.75, 5 served at once
    assert limit.current == 5 and limit.history[-1][2] == "queue"
