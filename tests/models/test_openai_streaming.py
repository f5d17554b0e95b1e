"""Streamed answers: timeouts on silence not length, interrupted streams, servers that cannot
stream, and the stream assembler against the plain body parser."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from fake_openai_server import FakeOpenAIServer, expected_text, fraction
from loopback_engine import LoopbackEngine

from clstream.core.errors import SpecError
from clstream.core.types import GenerationRequest, GenerationResult, Message, SamplingParams
from clstream.models.http import aiohttp_available
from clstream.models.openai_compat import OpenAICompatModel
from clstream.models.wire import MalformedResponse, StreamAssembler, parse_samples

FAST: dict[str, Any] = {"backoff_base": 0.001, "backoff_max": 0.01}


def req(key: str, long: bool = False, n: int = 1) -> GenerationRequest:
    text = f"question {key}" + (" #long" if long else "")
    return GenerationRequest(key=key, messages=(Message(role="user", content=text),),
                             params=SamplingParams(n=n))


def run(model: OpenAICompatModel, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
    async def go() -> list[GenerationResult]:
        async with model:
            return await model.generate(requests)

    return asyncio.run(go())


def body_of(request: GenerationRequest, model: str = "loop") -> dict[str, object]:
    from clstream.models.wire import build_body

    return build_body(model, request, {})


# An answer that keeps coming for twice the timeout, its tokens 0.05 s apart: the timeout is
# long against the gaps, so a busy machine does not make a gap look like silence.
LONG_S, LONG_TOKENS, LONG_TIMEOUT = 2.0, 40, 1.0


def test_a_long_answer_that_keeps_coming_never_times_out() -> None:
    # The answer is two timeouts long, but no gap between its tokens is near one.
    with LoopbackEngine(slots=1, long_s=LONG_S, tokens=LONG_TOKENS) as engine:
        model = OpenAICompatModel("loop", base_url=engine.base_url,
                                  request_timeout=LONG_TIMEOUT, max_retries=0, **FAST)
        (result,) = run(model, [req("a", long=True)])
    assert result.ok, result.error
    assert result.samples[0].text == expected_text(body_of(req("a", long=True)), 0)
    assert result.samples[0].finish_reason == "stop"
    assert result.usage.latency_s >= LONG_S - 0.05
    assert engine.served == 1


def test_silence_alone_in_flight_spends_retries_and_the_stream_is_closed() -> None:
    # Two chunks 0.5 s apart against a 0.2 s timeout: every attempt times out on silence.
    with LoopbackEngine(slots=1, long_s=1.0, tokens=2) as engine:
        model = OpenAICompatModel("loop", base_url=engine.base_url, request_timeout=0.2,
                                  max_retries=1, **FAST)
        (result,) = run(model, [req("a", long=True)])
        deadline = asyncio.run(_wait_for(lambda: engine.cut + engine.dropped >= 2))
    assert result.error is not None and "no response within 0.2s" in result.error
    assert "2 attempts" in result.error
    assert deadline, "the engine kept generating answers nobody waited for"
    assert engine.served == 0


async def _wait_for(condition: object, seconds: float = 60.0) -> bool:
    for _ in range(int(seconds / 0.05)):
        if condition():  # type: ignore[operator]
            return True
        await asyncio.sleep(0.05)
    return False


def test_interrupted_streams_are_sent_again_without_spending_retries() -> None:
    # As llama-cpp-python does by default: a stream ends early, with no finish reason, when
    # another request waits for the one slot.
    requests = [req(f"k{i}") for i in range(12)]
    with LoopbackEngine(slots=1, service_s=0.02, tokens=4, interrupt=True) as engine:
        model = OpenAICompatModel("loop", base_url=engine.base_url, max_retries=0, **FAST)
        results = run(model, requests)
        interrupted = engine.interrupted
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    assert interrupted >= 1
    assert [r.samples[0].text for r in results] == [
        expected_text(body_of(r), 0) for r in requests]
    assert model.transport()["resent"] >= interrupted


def test_a_server_that_ignores_stream_is_read_as_a_plain_body() -> None:
    with FakeOpenAIServer() as srv:
        model = OpenAICompatModel("m", base_url=srv.base_url)
        (result,) = run(model, [req("a", n=2)])
        (body,) = srv.requests
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert [s.text for s in result.samples] == [expected_text(body, i) for i in range(2)]


def test_a_server_that_refuses_stream_is_asked_without_it_from_then_on() -> None:
    def refuse(body: dict[str, object]) -> str | None:
        return "stream is not supported" if body.get("stream") else None

    with FakeOpenAIServer(reject=refuse) as srv:
        model = OpenAICompatModel("m", base_url=srv.base_url, max_retries=0)
        first, second = run(model, [req("a")]) + run(model, [req("b")])
        streamed = [b.get("stream") for b in srv.requests]
    assert first.ok and second.ok
    assert streamed == [True, None, None]
    assert model.stream is False


def test_streamed_and_plain_answers_give_the_same_results_and_usage() -> None:
    requests = [req(f"s{i}", n=1 + i % 2) for i in range(4)]
    with LoopbackEngine(slots=2, service_s=0.01, tokens=3) as engine:
        streamed = run(OpenAICompatModel("loop", base_url=engine.base_url), requests)
        plain = run(OpenAICompatModel("loop", base_url=engine.base_url, stream=False), requests)
    assert [r.samples for r in streamed] == [r.samples for r in plain]
    assert [r.usage.completion_tokens for r in streamed] == [
        r.usage.completion_tokens for r in plain]


def _feed(lines: list[str]) -> StreamAssembler:
    assembler = StreamAssembler()
    for line in lines:
        assembler.feed(line)
    return assembler


def test_the_assembler_joins_text_reasoning_and_tool_call_pieces() -> None:
    lines = [
        'data: {"choices": [{"index": 0, "delta": {"role": "assistant"}}]}',
        ": keep-alive",
        'data: {"choices": [{"index": 0, "delta": {"reasoning_content": "hm "}}]}',
        'data: {"choices": [{"index": 0, "delta": {"reasoning_content": "ok"}}]}',
        'data: {"choices": [{"index": 0, "delta": {"content": "Par"}}]}',
        'data: {"choices": [{"index": 0, "delta": {"content": "is"}, "finish_reason": "length"}]}',
        'data: {"choices": [{"index": 1, "delta": {"tool_calls": [{"index": 0, "id": "c1", '
        '"function": {"name": "look", "arguments": "{\\"q\\": "}}]}}]}',
        'data: {"choices": [{"index": 1, "delta": {"tool_calls": [{"index": 0, '
        '"function": {"arguments": "1}"}}]}, "finish_reason": "tool_calls"}]}',
        'data: {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 4}}',
        "data: [DONE]",
    ]
    assembler = _feed(lines)
    assert assembler.done and assembler.finished and assembler.tokens == 6
    answer, call = parse_samples(assembler.payload(), 2)
    assert (answer.text, answer.reasoning, answer.finish_reason) == ("Paris", "hm ok", "length")
    assert call.tool_calls == [{"id": "c1", "name": "look", "arguments": '{"q": 1}'}]
    assert assembler.payload()["usage"] == {"prompt_tokens": 5, "completion_tokens": 4}


def test_a_stream_without_finish_reason_is_unfinished() -> None:
    assembler = _feed(['data: {"choices": [{"index": 0, "delta": {"content": "x"}}]}',
                       "data: [DONE]"])
    assert assembler.done and not assembler.finished


@pytest.mark.parametrize("line", ["data: {not json", "data: [1, 2]",
                                  'data: {"error": {"message": "out of memory"}}'])
def test_broken_chunks_are_malformed(line: str) -> None:
    with pytest.raises(MalformedResponse):
        StreamAssembler().feed(line)


# -- the same behaviour through either HTTP client ---------------------------------------------

CLIENTS = ["httpx"] + (["aiohttp"] if aiohttp_available() else [])


@pytest.mark.parametrize("client", CLIENTS)
def test_either_client_streams_long_answers_and_times_out_on_silence(client: str) -> None:
    with LoopbackEngine(slots=1, long_s=LONG_S, tokens=LONG_TOKENS) as engine:
        model = OpenAICompatModel("loop", base_url=engine.base_url,
                                  request_timeout=LONG_TIMEOUT, max_retries=0,
                                  http_client=client, **FAST)
        (long,) = run(model, [req("a", long=True)])
    assert long.ok, long.error
    with LoopbackEngine(slots=1, long_s=1.0, tokens=2) as engine:
        model = OpenAICompatModel("loop", base_url=engine.base_url, request_timeout=0.2,
                                  max_retries=0, http_client=client, **FAST)
        (silent,) = run(model, [req("b", long=True)])
    assert silent.error is not None and "no response within 0.2s" in silent.error
    assert model.describe()["http_client"] == client


@pytest.mark.parametrize("client", CLIENTS)
def test_either_client_recovers_from_mixed_faults(client: str) -> None:
    requests = [req(f"m{i}", n=1 + i % 2) for i in range(16)]
    plan = fraction(0.5, ("429", "503", "malformed", "reset", "stall"))
    with FakeOpenAIServer(plan=plan, stall_s=0.5) as srv:
        model = OpenAICompatModel("m", base_url=srv.base_url, request_timeout=0.2,
                                  http_client=client, **FAST)
        results = run(model, requests)
        bodies = {r.key: b for r, b in zip(requests, _first_bodies(srv, requests), strict=True)}
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    for r in results:
        assert [s.text for s in r.samples] == [
            expected_text(bodies[r.key], i) for i in range(len(r.samples))]


def _first_bodies(srv: FakeOpenAIServer, requests: list[GenerationRequest]
                  ) -> list[dict[str, object]]:
    by_question = {b["messages"][0]["content"]: b for b in srv.requests}
    return [by_question[r.messages[0].content] for r in requests]


def test_an_unknown_client_name_is_a_spec_error() -> None:
    with pytest.raises(SpecError):
        OpenAICompatModel("m", http_client="curl")


def test_streams_that_never_finish_alone_switch_the_server_to_plain_requests() -> None:
    with LoopbackEngine(slots=1, service_s=0.01, tokens=3, finish=False) as engine:
        model = OpenAICompatModel("loop", base_url=engine.base_url, max_retries=1, **FAST)
        first, second = run(model, [req("a")]) + run(model, [req("b")])
    assert first.ok and second.ok
    assert model.stream is False
    assert first.samples[0].finish_reason == "stop"  # from the plain answer
