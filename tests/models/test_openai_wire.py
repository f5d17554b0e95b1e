"""OpenAICompatModel against the loopback server: wire format, key handling, seeds, usage."""

from __future__ import annotations

import asyncio
import json
import pickle
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from fake_openai_server import (
    FakeOpenAIServer,
    expected_reasoning,
    expected_text,
    expected_usage,
)

from clstream.core.contracts import Model
from clstream.core.errors import SpecError
from clstream.core.specs import derive_seed
from clstream.core.types import GenerationRequest, GenerationResult, Message, SamplingParams
from clstream.models.cache import ResponseCache
from clstream.models.openai_compat import OpenAICompatModel
from clstream.models.wire import build_body, parse_samples, parse_usage

SECRET = "sk-test-9f8e7d6c5b4a-do-not-leak"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


def req(key: str, text: str = "What is where?", **params: object) -> GenerationRequest:
    return GenerationRequest(
        key=key,
        messages=(
            Message(role="system", content="Answer briefly."),
            Message(role="user", content=text),
        ),
        params=SamplingParams(**params),  # type: ignore[arg-type]
    )


def run(model: OpenAICompatModel, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
    async def go() -> list[GenerationResult]:
        async with model:
            return await model.generate(requests)

    return asyncio.run(go())


def test_is_a_model_and_names_itself(server: FakeOpenAIServer) -> None:
    model = OpenAICompatModel("qwen3-8b", base_url=server.base_url)
    assert isinstance(model, Model)
    assert model.name == "openai:qwen3-8b"
    assert model.describe()["backend"] == "openai"


def test_body_carries_every_sampling_parameter_top_level(server: FakeOpenAIServer) -> None:
    model = OpenAICompatModel(
        "m1", base_url=server.base_url, extra_body={"repetition_penalty": 1.1}
    )
    params: dict[str, Any] = dict(
        temperature=0.3,
        top_p=0.9,
        top_k=40,
        min_p=0.05,
        max_tokens=77,
        n=3,
        seed=1234,
        stop=("###", "END"),
        thinking=False,
    )
    run(model, [req("k1", **params)])
    (body,) = server.requests
    assert body["model"] == "m1"
    assert body["messages"] == [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "What is where?"},
    ]
    assert (body["n"], body["temperature"], body["top_p"]) == (3, 0.3, 0.9)
    assert (body["top_k"], body["min_p"], body["max_tokens"]) == (40, 0.05, 77)
    assert body["seed"] == 1234
    assert body["stop"] == ["###", "END"]
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert body["repetition_penalty"] == 1.1
    assert "extra_body" not in body and "sampling" not in body


def test_empty_stop_and_unset_thinking_are_left_out(server: FakeOpenAIServer) -> None:
    run(OpenAICompatModel("m", base_url=server.base_url), [req("k")])
    (body,) = server.requests
    assert "stop" not in body
    assert "chat_template_kwargs" not in body
    assert server.headers[0].get("authorization") is None


def test_thinking_merges_into_user_chat_template_kwargs() -> None:
    extra = {"chat_template_kwargs": {"custom": 1, "enable_thinking": False}}
    body = build_body("m", req("k", thinking=True), extra)
    assert body["chat_template_kwargs"] == {"custom": 1, "enable_thinking": True}
    assert extra["chat_template_kwargs"]["enable_thinking"] is False  # caller's dict untouched


@pytest.mark.parametrize("field", ["seed", "top_k", "model", "messages", "stream"])
def test_extra_body_cannot_override_owned_fields(field: str) -> None:
    with pytest.raises(SpecError, match=field):
        OpenAICompatModel("m", extra_body={field: 1})


@pytest.mark.parametrize(
    "kwargs",
    [
        {"base_url": "ftp://host/v1"},
        {"base_url": "not a url"},
        {"max_concurrency": 0},
        {"max_concurrency": 2.5},
        {"request_timeout": 0},
        {"max_retries": -1},
        {"backoff_base": float("nan")},
    ],
)
def test_bad_configuration_is_a_spec_error(kwargs: dict[str, object]) -> None:
    with pytest.raises(SpecError):
        OpenAICompatModel("m", **kwargs)  # type: ignore[arg-type]


def test_missing_key_variable_is_a_spec_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLSTREAM_TEST_ABSENT_KEY", raising=False)
    with pytest.raises(SpecError, match="CLSTREAM_TEST_ABSENT_KEY"):
        OpenAICompatModel("m", api_key_env="CLSTREAM_TEST_ABSENT_KEY")


def test_api_key_only_in_the_authorization_header(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setenv("CLSTREAM_TEST_KEY", SECRET)
    cache_path = tmp_path / "cache.sqlite"  # type: ignore[operator]
    cache = ResponseCache(cache_path)
    model = OpenAICompatModel(
        "m", base_url=server.base_url, api_key_env="CLSTREAM_TEST_KEY", cache=cache
    )
    results = run(model, [req("a"), req("b", text="other")])
    assert all(r.ok for r in results)
    assert [h["authorization"] for h in server.headers] == [f"Bearer {SECRET}"] * 2
    assert all(SECRET not in json.dumps(b) for b in server.requests)
    assert SECRET not in json.dumps(model.describe())
    assert model.describe()["api_key_env"] == "CLSTREAM_TEST_KEY"
    assert all(SECRET not in r.model_dump_json() for r in results)
    assert SECRET not in repr(model) and SECRET not in repr(vars(model))
    with pytest.raises(TypeError):
        pickle.dumps(model)
    cache.close()
    for path in cache_path.parent.iterdir():
        assert SECRET.encode() not in path.read_bytes(), path


def test_describe_hides_url_credentials() -> None:
    model = OpenAICompatModel("m", base_url="https://user:hunter2@example.org:8443/v1/")
    described = json.dumps(model.describe())
    assert "hunter2" not in described and "user" not in described
    assert model.describe()["base_url"] == "https://example.org:8443/v1"


def test_texts_samples_and_usage_come_from_the_server(server: FakeOpenAIServer) -> None:
    model = OpenAICompatModel("m", base_url=server.base_url)
    results = run(model, [req("a", n=2, seed=5), req("b", text="second", n=1, seed=6)])
    for result, body in zip(results, sorted(server.requests, key=lambda b: b["seed"]), strict=True):
        assert result.ok and not result.cache_hit
        assert [s.text for s in result.samples] == [
            expected_text(body, i) for i in range(body["n"])
        ]
        assert all(s.finish_reason == "stop" and s.reasoning == "" for s in result.samples)
        want = expected_usage(body)
        got = result.usage
        assert (got.prompt_tokens, got.cached_tokens) == (
            want["prompt_tokens"],
            want["cached_tokens"],
        )
        assert (got.completion_tokens, got.reasoning_tokens) == (
            want["completion_tokens"],
            want["reasoning_tokens"],
        )
        assert got.latency_s > 0


def test_usage_totals_equal_what_the_server_reported(server: FakeOpenAIServer) -> None:
    model = OpenAICompatModel("m", base_url=server.base_url, max_concurrency=4)
    requests = [
        req(f"q{i}", text=f"question number {i} " * (i % 5 + 1), n=1 + i % 3, thinking=i % 2 == 0)
        for i in range(25)
    ]
    results = run(model, requests)
    assert all(r.ok for r in results)
    for name in ("prompt_tokens", "cached_tokens", "completion_tokens", "reasoning_tokens"):
        assert sum(getattr(r.usage, name) for r in results) == sum(u[name] for u in server.reported)
    assert sum(r.usage.reasoning_tokens for r in results) > 0


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_is_kept_apart_from_the_answer(field: str) -> None:
    with FakeOpenAIServer(reasoning_field=field) as srv:
        model = OpenAICompatModel("m", base_url=srv.base_url)
        (result,) = run(model, [req("think", thinking=True, n=2)])
        body = srv.requests[0]
    for i, sample in enumerate(result.samples):
        assert sample.text == expected_text(body, i)
        assert sample.reasoning == expected_reasoning(body, i) != ""
        assert "think" not in sample.text


def test_inline_think_block_is_moved_to_reasoning() -> None:
    payload = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": "<think>\nweigh the options\n</think>\n\nParis",
                },
            }
        ]
    }
    (sample,) = parse_samples(payload, 1)
    assert (sample.text, sample.reasoning) == ("Paris", "weigh the options")


def test_null_content_is_allowed_only_after_reasoning_or_truncation() -> None:
    cut = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "length",
                "message": {"content": None, "reasoning_content": "still going"},
            }
        ]
    }
    (sample,) = parse_samples(cut, 1)
    assert (sample.text, sample.reasoning, sample.finish_reason) == ("", "still going", "length")


def test_choices_are_put_in_index_order() -> None:
    payload = {
        "choices": [
            {"index": 1, "message": {"content": "second"}},
            {"index": 0, "message": {"content": "first"}},
        ]
    }
    assert [s.text for s in parse_samples(payload, 2)] == ["first", "second"]


def test_usage_is_counted_with_the_tokenizer_when_the_server_reports_none() -> None:
    with FakeOpenAIServer(report_usage=False) as srv:
        model = OpenAICompatModel("m", base_url=srv.base_url)
        (result,) = run(model, [req("a", thinking=True, n=2)])
    tok = model.tokenizer
    reasoning = sum(tok.count(s.reasoning) for s in result.samples)
    answers = sum(tok.count(s.text) for s in result.samples)
    assert result.usage.prompt_tokens == tok.count("Answer briefly.") + tok.count("What is where?")
    assert result.usage.completion_tokens == answers + reasoning
    assert result.usage.reasoning_tokens == reasoning > 0
    assert result.usage.cached_tokens == 0


def test_reasoning_tokens_counted_when_server_gives_only_totals() -> None:
    from clstream.core.types import Sample
    from clstream.models.tokenizers import approx_tokenizer

    samples = [Sample(text="x", reasoning="one two three")]
    usage = parse_usage(
        {"usage": {"prompt_tokens": 10, "completion_tokens": 50}}, samples, approx_tokenizer()
    )
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.reasoning_tokens) == (10, 50, 3)


def test_seed_is_derived_from_the_key_when_unset(server: FakeOpenAIServer) -> None:
    model = OpenAICompatModel("m", base_url=server.base_url)
    run(model, [req("doc1/q3/t7")])
    assert server.requests[0]["seed"] == derive_seed(0, "doc1/q3/t7")


def test_results_do_not_depend_on_batch_composition_or_order(server: FakeOpenAIServer) -> None:
    model = OpenAICompatModel("m", base_url=server.base_url, max_concurrency=3)
    requests = [req(f"k{i}", text="same question") for i in range(6)]
    together = run(model, requests)
    reversed_ = run(model, list(reversed(requests)))[::-1]
    alone = [run(model, [r])[0] for r in requests]
    texts = [[s.text for s in r.samples] for r in together]
    assert texts == [[s.text for s in r.samples] for r in reversed_]
    assert texts == [[s.text for s in r.samples] for r in alone]
    assert len({t[0] for t in texts}) == 6  # same prompt, different keys -> different seeds
    seeds_by_key: dict[int, set[str]] = {}
    for body in server.requests:
        seeds_by_key.setdefault(body["seed"], set()).add(json.dumps(body, sort_keys=True))
    assert all(len(bodies) == 1 for bodies in seeds_by_key.values())


def test_results_keep_request_order_key_and_stage(server: FakeOpenAIServer) -> None:
    model = OpenAICompatModel("m", base_url=server.base_url, max_concurrency=2)
    requests = [
        GenerationRequest(
            key=f"r{i}",
            messages=(Message(role="user", content=f"q{i}"),),
            stage="update" if i % 2 else "generate",
        )
        for i in range(7)
    ]
    results = run(model, requests)
    assert [r.key for r in results] == [r.key for r in requests]
    assert [r.stage for r in results] == [r.stage for r in requests]


def test_model_can_be_reused_across_event_loops(server: FakeOpenAIServer) -> None:
    model = OpenAICompatModel("m", base_url=server.base_url)
    first = asyncio.run(model.generate([req("a")]))
    second = asyncio.run(model.generate([req("a")]))
    assert first[0].samples == second[0].samples
    assert len(server.requests) == 2
