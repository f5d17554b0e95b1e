"""OpenAICompatModel answering with LoRA adapters a server loads at runtime
(docs/parametric.md §3), against the loopback server."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest
from fake_openai_server import FakeOpenAIServer, expected_text

from clstream.core.contracts import adapter_kinds_of
from clstream.core.registry import canonical_component
from clstream.core.specs import parse_model_spec
from clstream.core.types import Adapter, GenerationRequest, GenerationResult, Message
from clstream.models.builtin import BuiltinReader
from clstream.models.cache import ResponseCache
from clstream.models.middleware import request_key, wrap
from clstream.models.openai_compat import OpenAICompatModel
from clstream.models.wire import build_body

ONE = Adapter(name="clstream-0123456789abcdef", path="/store/one", kind="lora")
TWO = Adapter(name="clstream-fedcba9876543210", path="/store/two", kind="lora")


def req(key: str, adapter: Adapter | None = None) -> GenerationRequest:
    return GenerationRequest(key=key, messages=(Message(role="user", content=f"Where? {key}"),),
                             adapter=adapter)


def run(model: OpenAICompatModel, requests: Sequence[GenerationRequest]
        ) -> list[GenerationResult]:
    async def go() -> list[GenerationResult]:
        async with model:
            return await model.generate(requests)

    return asyncio.run(go())


def test_each_adapter_is_loaded_once_and_named_as_the_model() -> None:
    with FakeOpenAIServer(model="base") as server:
        model = OpenAICompatModel("base", base_url=server.base_url, lora=True)
        assert model.adapter_kinds() == ("lora",) and model.describe()["lora"] is True
        first = run(model, [req("a", ONE), req("b"), req("c", ONE), req("d", TWO)])
        second = run(model, [req("e", ONE), req("f", TWO)])
        assert all(r.ok for r in first + second), [r.error for r in first + second]
        assert sorted((b["lora_name"], b["lora_path"]) for b in server.lora_loads) == \
            [(ONE.name, ONE.path), (TWO.name, TWO.path)]
        models = {b["messages"][0]["content"].split()[-1]: b["model"] for b in server.requests}
        assert models == {"a": ONE.name, "b": "base", "c": ONE.name, "d": TWO.name,
                          "e": ONE.name, "f": TWO.name}
        body = next(b for b in server.requests if b["messages"][0]["content"].endswith(" a"))
        assert first[0].samples[0].text == expected_text(body, 0)


def test_an_already_loaded_adapter_counts_as_loaded() -> None:
    with FakeOpenAIServer() as server:
        run(OpenAICompatModel("base", base_url=server.base_url, lora=True), [req("a", ONE)])
        again = run(OpenAICompatModel("base", base_url=server.base_url, lora=True),
                    [req("b", ONE)])
        assert again[0].ok and len(server.lora_loads) == 2


def test_the_root_route_is_tried_where_the_api_base_has_none() -> None:
    with FakeOpenAIServer(lora_at_root=True) as server:
        result = run(OpenAICompatModel("base", base_url=server.base_url, lora=True),
                     [req("a", ONE)])[0]
        assert result.ok and [b["lora_name"] for b in server.lora_loads] == [ONE.name]


def test_a_failed_load_is_an_error_result_and_sends_nothing() -> None:
    refuse = lambda body: "adapter rank 128 exceeds max_lora_rank 64"  # noqa: E731
    with FakeOpenAIServer(lora_reject=refuse) as server:
        model = OpenAICompatModel("base", base_url=server.base_url, lora=True)
        bad, good = run(model, [req("a", ONE), req("b")])
        assert good.ok and not bad.ok and bad.samples == []
        assert (bad.error or "").startswith(f"openai:base: cannot load LoRA adapter {ONE.name!r}")
        assert "max_lora_rank 64" in (bad.error or "")
        assert [b["model"] for b in server.requests] == ["base"]
        server.lora_reject = None
        assert run(model, [req("a", ONE)])[0].ok  # a failed load is tried again later


def test_without_lora_or_for_a_full_checkpoint_a_request_is_refused() -> None:
    full = Adapter(name="clstream-full", path="/store/full", kind="full")
    with FakeOpenAIServer() as server:
        plain = OpenAICompatModel("base", base_url=server.base_url)
        assert plain.adapter_kinds() == () and "lora" not in plain.describe()
        refused, fine = run(plain, [req("a", ONE), req("b")])
        assert fine.ok and "cannot answer with lora adapter" in (refused.error or "")
        on = OpenAICompatModel("base", base_url=server.base_url, lora=True)
        assert "cannot answer with full adapter" in (run(on, [req("c", full)])[0].error or "")
        assert server.lora_loads == [] and [b["model"] for b in server.requests] == ["base"]


def test_cache_keys_differ_per_adapter_and_stay_as_they_were_without(tmp_path: Path) -> None:
    model = OpenAICompatModel("base", lora=True)
    plain = req("k")
    assert model.cache_key(plain) == ResponseCache.key("openai", build_body("base", plain, {}))
    assert OpenAICompatModel("base").cache_key(plain) == model.cache_key(plain)
    keys = {model.cache_key(plain.model_copy(update={"adapter": a})) for a in (None, ONE, TWO)}
    assert len(keys) == 3
    wrapped = wrap(model, cache_path=tmp_path / "c.sqlite")
    assert adapter_kinds_of(wrapped) == ("lora",)
    assert wrapped.cache_key(plain.model_copy(update={"adapter": ONE})) == \
        model.cache_key(plain.model_copy(update={"adapter": ONE}))


def test_the_lora_option_is_recorded_only_when_on() -> None:
    def args(model_args: str | None) -> dict[str, object]:
        return dict(canonical_component("model", parse_model_spec("openai:m", model_args)).args)

    assert args(None) == {"target": "m"} == args("lora=false")
    assert args("lora=true") == {"target": "m", "lora": True}


def test_the_builtin_model_refuses_adapters_and_keys_them_apart() -> None:
    reader = BuiltinReader()
    assert adapter_kinds_of(reader) == () and adapter_kinds_of(wrap(reader)) == ()
    refused, answered = asyncio.run(reader.generate([req("a", ONE), req("b")]))
    assert answered.ok and not refused.ok and refused.samples == []
    assert (refused.error or "").startswith("builtin: cannot answer with lora adapter")
    identity = {"name": "builtin"}
    plain = req("k")
    assert request_key("builtin", identity, plain) == ResponseCache.key(
        "builtin", {"backend_identity": identity, **build_body("builtin", plain, {})})
    moved = ONE.model_copy(update={"path": "/elsewhere"})
    keyed = {request_key("builtin", identity, plain.model_copy(update={"adapter": a}))
             for a in (ONE, moved, TWO)}
    assert len(keyed) == 2  # the adapter's name counts, not where its files lie


@pytest.mark.parametrize("lora", ["yes", 1])
def test_lora_must_be_a_boolean(lora: object) -> None:
    from clstream.core.errors import SpecError

    with pytest.raises(SpecError, match="lora must be true or false"):
        OpenAICompatModel("base", lora=lora)  # type: ignore[arg-type]
