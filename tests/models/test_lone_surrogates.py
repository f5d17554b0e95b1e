"""A reply holding a lone surrogate escape ("\\ud800", valid JSON that servers send) is an
answer like any other: parsed plain or streamed, cached, replayed, and quoted back in a prompt."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import FakeOpenAIServer

from clstream.core.types import GenerationRequest, Message, Sample, SamplingParams, Usage
from clstream.models.cache import ResponseCache
from clstream.models.middleware import wrap
from clstream.models.openai_compat import OpenAICompatModel
from clstream.models.wire import MalformedResponse, StreamAssembler, dumps_body, loads_reply

ODD = "odd \ud800 and \udfff"


class SurrogateServer(FakeOpenAIServer):
    """Appends a lone surrogate to every answer (sent as its JSON escape)."""

    def completion(self, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
        payload = super().completion(body, fault)
        for choice in payload["choices"]:
            choice["message"]["content"] += " " + ODD
        return payload


def req(key: str, text: str = "question") -> GenerationRequest:
    return GenerationRequest(key=key, messages=(Message(role="user", content=text),),
                             params=SamplingParams())


def test_a_reply_with_a_lone_surrogate_is_an_answer_and_is_cached(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with SurrogateServer() as srv:
        model = wrap(OpenAICompatModel("m", base_url=srv.base_url, max_retries=0),
                     cache_path=path)
        (first,) = asyncio.run(model.generate([req("a")]))
        assert first.ok, first.error
        assert first.samples[0].text.endswith(ODD) and len(srv.requests) == 1
    with SurrogateServer() as srv:
        again = wrap(OpenAICompatModel("m", base_url=srv.base_url), cache_path=path)
        (second,) = asyncio.run(again.generate([req("a")]))
        assert srv.requests == []
    assert second.cache_hit and second.samples == first.samples


def test_a_prompt_quoting_such_a_reply_is_sent_and_cached(tmp_path: Path) -> None:
    with FakeOpenAIServer() as srv:
        model = wrap(OpenAICompatModel("m", base_url=srv.base_url, max_retries=0),
                     cache_path=tmp_path / "c.sqlite")
        (first,) = asyncio.run(model.generate([req("a", text=f"earlier you said {ODD}")]))
        (second,) = asyncio.run(model.generate([req("a", text=f"earlier you said {ODD}")]))
        assert srv.requests[0]["messages"][0]["content"] == f"earlier you said {ODD}"
    assert first.ok and second.cache_hit


def test_a_streamed_chunk_with_a_lone_surrogate_is_read() -> None:
    assembler = StreamAssembler()
    chunk = {"choices": [{"index": 0, "delta": {"content": ODD}, "finish_reason": "stop"}]}
    assert assembler.feed(b"data: " + json.dumps(chunk).encode())
    assembler.feed(b"data: [DONE]")
    assert assembler.finished and assembler.payload()["choices"][0]["message"]["content"] == ODD


def test_the_json_helpers_fall_back_only_where_orjson_refuses() -> None:
    assert loads_reply(b'{"a": "\\ud800"}') == {"a": "\ud800"}
    assert loads_reply(b'{"a": "\xc3\xa9"}') == {"a": "\u00e9"}
    assert json.loads(dumps_body({"a": "\ud800"})) == {"a": "\ud800"}
    assert dumps_body({"a": "\u00e9"}) == '{"a":"\u00e9"}'.encode()
    with pytest.raises(MalformedResponse, match="stream chunk is not JSON"):
        loads_reply(b'{"a": ', "stream chunk")


def test_cache_entries_and_keys_hold_lone_surrogates(tmp_path: Path) -> None:
    samples = [Sample(text=ODD, reasoning="\udc80")]
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        cache.put("k", "openai", "m", samples, Usage(prompt_tokens=2))
        hit = cache.get("k")
        assert hit is not None and hit.samples == samples
    assert ResponseCache.key("openai", {"m": ODD}) != ResponseCache.key("openai", {"m": "odd"})
    # Keys of text without surrogates are what they always were.
    assert ResponseCache.key("openai", {"model": "m", "seed": 1}) == (
        "9f1df73ba2c76b031978ae49cb5563c7434c9ae3ee31083cc43c838afe214749")
