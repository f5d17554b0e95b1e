"""Requests reach the server in the order they were admitted, whatever their sizes and the
connections they travel on (:class:`clstream.models.concurrency.SendOrder`): the turns alone,
and the OpenAI-compatible backend against a single-loop engine that logs what it reads."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from delivery_log import DeliveryLog
from loopback_engine import LoopbackEngine

from clstream.core.types import GenerationRequest, Message, SamplingParams
from clstream.models import http
from clstream.models.concurrency import ConcurrencyLimit, SendOrder, Turn
from clstream.models.openai_compat import OpenAICompatModel

# -- the turns alone ---------------------------------------------------------------------------


def test_turns_write_in_the_order_dealt_whatever_order_they_finish() -> None:
    async def go() -> list[int]:
        order = SendOrder()
        turns = [order.deal() for _ in range(4)]
        wrote: list[int] = []

        async def write(i: int) -> None:
            await turns[i].ready()
            wrote.append(i)
            await asyncio.sleep(0.001 * (4 - i))  # the first to write is the last to finish
            turns[i].sent()

        await asyncio.gather(*(write(i) for i in (3, 1, 2, 0)))
        return wrote

    assert asyncio.run(go()) == [0, 1, 2, 3]


def test_a_turn_given_up_lets_the_next_go_and_passing_twice_is_harmless() -> None:
    async def go() -> list[str]:
        order = SendOrder()
        first, second, third = order.deal(), order.deal(), order.deal()
        log: list[str] = []

        async def late() -> None:
            await third.ready()
            log.append("third")

        task = asyncio.ensure_future(late())
        waiting = asyncio.ensure_future(second.ready())
        await asyncio.sleep(0)
        waiting.cancel()  # the second request was cancelled while it waited ...
        second.sent()  # ... and its attempt passed its turn on the way out
        await asyncio.sleep(0)
        assert not task.done()  # the first has not written yet
        first.sent()
        first.sent()
        await task
        return log

    assert asyncio.run(go()) == ["third"]


def test_an_admission_cancelled_as_it_came_passes_its_turn() -> None:
    async def go() -> bool:
        limit = ConcurrencyLimit(1, adaptive=False)
        holder = await limit.acquire(0)
        waiter = asyncio.ensure_future(limit.acquire(1))
        await asyncio.sleep(0)
        limit.released(holder)  # admits the waiter, which is cancelled before it runs
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        after = await limit.acquire(2)
        await asyncio.wait_for(after.turn.ready(), 1.0)  # not stuck behind the lost turn
        return limit.in_flight == 1

    assert asyncio.run(go())


# -- through the backend -----------------------------------------------------------------------

SLOTS = 6


def sized(i: int, size: int) -> GenerationRequest:
    return GenerationRequest(key=f"k{i}", messages=(
        Message(role="user", content=f"{'x' * size} probe {i}"),), params=SamplingParams())


def delivered_twice(requests: list[GenerationRequest]) -> list[str]:
    """The order ``requests`` reached a delivery log, sent twice by a fresh backend each time.
    Each run first opens its connections with one request per connection, unlogged: the order
    in which a server registers brand-new connections is its own."""
    warm = [GenerationRequest(key=f"w{i}", messages=(Message(role="user", content="warm -"),),
                              params=SamplingParams()) for i in range(SLOTS)]
    with DeliveryLog() as server:
        for _ in range(2):
            model = OpenAICompatModel("loop", base_url=server.base_url, max_concurrency=SLOTS)

            async def go(model: OpenAICompatModel = model) -> None:
                async with model:
                    await model.generate(warm)
                    results = await model.generate(requests)
                assert all(r.ok for r in results), [r.error for r in results if not r.ok]

            asyncio.run(go())
        return [word for word in server.log() if word != "-"]


def test_bodies_are_delivered_in_admission_order_whatever_their_sizes() -> None:
    """Every third body is 600 kB, more than the kernel takes at once; the others are 70 kB,
    which it takes in one write, so without waiting for the large body's acknowledgement the
    next body, on another connection, would be delivered before the large one's last bytes."""
    requests = [sized(i, 600_000 if i % 3 == 0 else 70_000) for i in range(36)]
    assert delivered_twice(requests) == [str(i) for i in range(36)] * 2


def test_the_httpx_fallback_writes_in_admission_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx offers no handle on the socket, so its order is checked where it is made: the
    order bodies finish going out (httpcore's trace), against the order requests were
    admitted, while every other one of the first requests is slow to connect."""
    written: list[int] = []
    admitted: list[int] = []
    trace = http._httpcore_trace

    def spying(turn: Turn) -> Any:
        inner = trace(turn)

        async def spy(event: str, info: Any) -> None:
            if event == "connection.connect_tcp.complete" and turn.number % 2 == 0:
                await asyncio.sleep(0.02)  # a slow handshake: later turns connect first
            await inner(event, info)
            if event == "http11.send_request_body.complete":
                written.append(turn.number)  # turns are dealt in admission order

        return spy

    monkeypatch.setattr(http, "_httpcore_trace", spying)
    acquire = ConcurrencyLimit.acquire

    async def admitting(self: ConcurrencyLimit, order: int) -> Any:
        ticket = await acquire(self, order)
        admitted.append(order)
        return ticket

    monkeypatch.setattr(ConcurrencyLimit, "acquire", admitting)
    requests = [sized(i, 100) for i in range(40)]
    with LoopbackEngine(slots=SLOTS, service_s=0.005, tokens=1, context=10**6) as engine:
        model = OpenAICompatModel("loop", base_url=engine.base_url, max_concurrency=SLOTS,
                                  http_client="httpx")

        async def go() -> None:
            async with model:
                assert all(r.ok for r in await model.generate(requests))

        asyncio.run(go())
    assert admitted == list(range(40))  # the n-th admitted request holds turn n
    assert written == admitted


def test_ordered_sends_keep_every_slot_busy() -> None:
    requests = [GenerationRequest(key=f"k{i}", messages=(Message(role="user", content=(
        "x" * 200_000 if i % 2 else "") + f" probe {i}"),), params=SamplingParams())
        for i in range(48)]
    with LoopbackEngine(slots=6, service_s=0.02, tokens=2, context=10**7) as engine:
        model = OpenAICompatModel("loop", base_url=engine.base_url, max_concurrency=6)

        async def go() -> None:
            async with model:
                assert all(r.ok for r in await model.generate(requests))

        asyncio.run(go())
        assert engine.max_busy == 6
