"""The response cache and accounting around any backend (clstream.models.middleware)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import FakeOpenAIServer, always

from clstream.core.contracts import AsyncResource, Preflight, check_model, open_model
from clstream.core.errors import ClstreamError, SpecError
from clstream.core.specs import ComponentSpec
from clstream.core.types import (
    GenerationRequest,
    GenerationResult,
    Message,
    Sample,
    SamplingParams,
    Usage,
)
from clstream.driver.components import build_model
from clstream.models.builtin import BuiltinReader
from clstream.models.cache import ResponseCache
from clstream.models.middleware import ModelMiddleware, request_key, wrap
from clstream.models.openai_compat import EndpointError, OpenAICompatModel
from clstream.models.tokenizers import approx_tokenizer
from clstream.models.wire import build_body


def req(key: str, text: str | None = None, **params: Any) -> GenerationRequest:
    return GenerationRequest(key=key, messages=(Message(role="user", content=text or key),),
                             params=SamplingParams(**params))


class CountingModel:
    """A local backend that counts what it is asked and reports no usage."""

    name = "counting"
    tokenizer = approx_tokenizer()

    def __init__(self, version: int = 1, fail: str | None = None) -> None:
        self.version = version
        self.fail = fail
        self.asked: list[str] = []

    def describe(self) -> dict[str, Any]:
        return {"backend": "counting", "name": self.name, "version": self.version}

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        self.asked += [r.key for r in requests]
        return [GenerationResult(key=r.key, error="broken", stage=r.stage)
                if r.key == self.fail else
                GenerationResult(key=r.key, stage=r.stage, usage=Usage(latency_s=0.25),
                                 samples=[Sample(text=f"answer to {r.messages[0].content}")])
                for r in requests]


def test_a_local_backend_replays_from_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    requests = [req(f"k{i}", n=1) for i in range(5)]
    first_backend = CountingModel()
    first = asyncio.run(wrap(first_backend, cache_path=path).generate(requests))
    again_backend = CountingModel()
    model = wrap(again_backend, cache_path=path)
    second = asyncio.run(model.generate([*requests, req("new")]))
    assert first_backend.asked == [r.key for r in requests] and again_backend.asked == ["new"]
    assert [r.cache_hit for r in second] == [True] * 5 + [False]
    for a, b in zip(first, second, strict=False):
        assert (a.key, a.samples, a.usage) == (b.key, b.samples, b.usage)
    assert model.describe() == {"backend": "counting", "name": "counting", "version": 1,
                                "cache": str(path)}
    assert (model.accounting.requests, model.accounting.cache_hits) == (6, 5)


def test_a_generic_key_changes_with_the_backend_and_every_parameter(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    asyncio.run(wrap(CountingModel(), cache_path=path).generate([req("a")]))
    for backend, request in [(CountingModel(version=2), req("a")),
                             (CountingModel(), req("a", temperature=0.1)),
                             (CountingModel(), req("a", seed=3)),
                             (CountingModel(), req("a", text="other"))]:
        asyncio.run(wrap(backend, cache_path=path).generate([request]))
        assert backend.asked == ["a"]
    identity = {"backend": "counting", "name": "counting", "version": 1}
    assert request_key("counting", identity, req("a")) != request_key("other", identity,
                                                                      req("a"))


def test_failures_are_not_cached_and_missing_usage_is_counted(tmp_path: Path) -> None:
    backend = CountingModel(fail="bad")
    model = wrap(backend, cache_path=tmp_path / "c.sqlite")
    bad, good = asyncio.run(model.generate([req("bad"), req("good", text="two words")]))
    assert bad.error == "broken" and good.ok and len(model.cache or []) == 1
    assert good.usage.prompt_tokens > 0 and good.usage.completion_tokens > 0
    assert good.usage.latency_s == 0.25
    accounting = model.accounting
    assert (accounting.errors, accounting.counted) == (1, 1)
    assert accounting.paid.completion_tokens == good.usage.completion_tokens
    price = {"prompt": 1_000_000.0, "completion": 0.0}
    assert accounting.cost_usd(price) == good.usage.prompt_tokens


def test_builtin_through_build_model_gets_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    requests = [req(f"q{i}", text=f"Question: what is {i}?") for i in range(3)]
    plain = build_model(ComponentSpec(name="builtin"))
    assert isinstance(plain, ModelMiddleware) and plain.cache is None
    assert plain.describe() == BuiltinReader().describe()
    expected = asyncio.run(plain.generate(requests))
    cached = build_model(ComponentSpec(name="builtin"), cache_path=str(path))
    first = asyncio.run(cached.generate(requests))
    second = asyncio.run(cached.generate(requests))
    assert [r.samples for r in first] == [r.samples for r in expected]
    assert all(r.cache_hit for r in second) and not any(r.cache_hit for r in first)
    assert cached.describe()["cache"] == str(path)


def test_the_openai_key_is_the_body_it_always_was(tmp_path: Path) -> None:
    """A cache filled by the backend alone (as before the middleware) hits through wrap()."""
    path = tmp_path / "c.sqlite"
    requests = [req(f"k{i}", n=1 + i % 2) for i in range(4)]
    with FakeOpenAIServer() as srv, ResponseCache(path) as cache:
        model = OpenAICompatModel("m", base_url=srv.base_url, cache=cache)
        asyncio.run(model.generate(requests))
        assert model.cache_key(requests[0]) == ResponseCache.key(
            "openai", build_body("m", requests[0], {}))
    with FakeOpenAIServer() as srv:
        wrapped = wrap(OpenAICompatModel("m", base_url=srv.base_url), cache_path=path)
        replay = asyncio.run(wrapped.generate(requests))
        assert srv.requests == [] and all(r.cache_hit for r in replay)
        assert wrapped.describe()["cache"] == str(path)
        assert list(wrapped.describe()) == list(OpenAICompatModel("m").describe())
    assert wrapped.cache is not None
    wrapped.cache.close()


def test_each_openai_answer_is_stored_once_paid_for(tmp_path: Path) -> None:
    """A call cut short keeps the answers that came before the cut."""
    slow = lambda body, attempt: "stall" if "slow" in body["messages"][0]["content"] else None  # noqa: E731
    path = tmp_path / "c.sqlite"

    async def cut() -> None:
        async with open_model(model):
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(1.0):
                    await model.generate([req("fast"), req("slow")])

    with FakeOpenAIServer(plan=slow, stall_s=3.0) as srv:
        model = wrap(OpenAICompatModel("m", base_url=srv.base_url, request_timeout=10),
                     cache_path=path)
        asyncio.run(cut())
    assert model.cache is not None and len(model.cache) == 1
    model.cache.close()


def test_with_a_cache_a_failed_endpoint_check_is_a_note(tmp_path: Path) -> None:
    with FakeOpenAIServer(preflight_plan=always("400")) as srv:
        backend = OpenAICompatModel("m", base_url=srv.base_url)
        with pytest.raises(EndpointError):
            asyncio.run(check_model(wrap(backend), SamplingParams()))
        cached = wrap(backend, cache_path=tmp_path / "c.sqlite")
        (note,) = asyncio.run(check_model(cached, SamplingParams()))
    assert "HTTP 400" in note and "going on with the response cache" in note
    assert "\n" not in note


def test_the_wrapper_passes_through_what_the_backend_offers() -> None:
    backend = OpenAICompatModel("m", max_concurrency=3)
    model = wrap(backend)
    assert isinstance(model, AsyncResource) and isinstance(model, Preflight)
    assert model.transport()["limit"] == 3 and model.server is None
    assert model.name == "openai:m" and model.tokenizer is backend.tokenizer
    with pytest.raises(AttributeError):
        _ = model.no_such_thing
    assert asyncio.run(check_model(wrap(CountingModel()), SamplingParams())) == []

    async def inside() -> None:
        async with model:
            assert backend._loop_state().users == 1
        assert backend._loop_state().users == 0

    asyncio.run(inside())


def test_cache_and_cache_path_together_are_refused(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "a.sqlite") as cache, pytest.raises(SpecError):
        wrap(CountingModel(), cache=cache, cache_path=tmp_path / "b.sqlite")


def test_an_unusable_cache_path_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "c.sqlite"
    bad.write_text("not a database " * 40)
    with pytest.raises(ClstreamError, match="c.sqlite"):
        wrap(CountingModel(), cache_path=bad)


class LoraServing(CountingModel):
    """A local backend that declares it serves LoRA adapters."""

    def adapter_kinds(self) -> tuple[str, ...]:
        return ("lora",)


def test_adapter_kinds_reach_through_the_wrapper() -> None:
    from clstream.core.contracts import AdapterServer, adapter_kinds_of

    serving = wrap(LoraServing())
    assert isinstance(serving, AdapterServer) and adapter_kinds_of(serving) == ("lora",)
    assert adapter_kinds_of(wrap(CountingModel())) == ()


def test_a_generic_key_names_the_adapter_and_only_when_there_is_one(tmp_path: Path) -> None:
    from clstream.core.types import Adapter

    inner = LoraServing()
    model = wrap(inner, cache_path=tmp_path / "c.sqlite")
    plain = req("q")
    identity = {"backend": "counting", "name": "counting", "version": 1}
    assert model.cache_key(plain) == ResponseCache.key(
        "counting", {"backend_identity": identity, **build_body("counting", plain, {})})
    one = Adapter(name="clstream-one", path="/a/one")
    keys = [model.cache_key(plain.model_copy(update={"adapter": a}))
            for a in (None, one, one.model_copy(update={"path": "/b/one"}),
                      Adapter(name="clstream-two", path="/a/one"))]
    assert keys[1] == keys[2] and len(set(keys)) == 3
    asyncio.run(model.generate([plain, plain.model_copy(update={"adapter": one})]))
    assert inner.asked == ["q", "q"]  # two entries: the adapter's answer is its own
