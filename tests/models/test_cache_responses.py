"""ResponseCache on its own and behind OpenAICompatModel: replay, keys, errors, concurrency."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import FakeOpenAIServer, always

from clstream.core.errors import StoreError
from clstream.core.types import (
    GenerationRequest,
    GenerationResult,
    Message,
    Sample,
    SamplingParams,
    Usage,
)
from clstream.models.cache import ResponseCache
from clstream.models.openai_compat import OpenAICompatModel

FAST: dict[str, Any] = {"backoff_base": 0.001, "backoff_max": 0.01}


def req(key: str, text: str | None = None, **params: object) -> GenerationRequest:
    return GenerationRequest(
        key=key,
        messages=(Message(role="user", content=text or f"question {key}"),),
        params=SamplingParams(**params),  # type: ignore[arg-type]
    )


def run(model: OpenAICompatModel, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
    async def go() -> list[GenerationResult]:
        async with model:
            return await model.generate(requests)

    return asyncio.run(go())


def test_second_pass_replays_from_the_cache_without_requests(tmp_path: Path) -> None:
    requests = [req(f"k{i}", n=1 + i % 2, thinking=i % 3 == 0) for i in range(12)]
    path = tmp_path / "responses.sqlite"
    with FakeOpenAIServer(latency=0.005) as srv, ResponseCache(path) as cache:
        first = run(OpenAICompatModel("m", base_url=srv.base_url, cache=cache), requests)
        assert len(srv.requests) == 12 and len(cache) == 12
    # A fresh process-like start: new cache object, new server on another port.
    with FakeOpenAIServer() as srv, ResponseCache(path) as cache:
        second = run(OpenAICompatModel("m", base_url=srv.base_url, cache=cache), requests)
        assert srv.requests == []
    assert all(not r.cache_hit for r in first)
    assert all(r.cache_hit for r in second)
    for a, b in zip(first, second, strict=True):
        assert (a.key, a.stage, a.samples, a.usage) == (b.key, b.stage, b.samples, b.usage)


def test_any_change_to_the_body_misses(tmp_path: Path) -> None:
    with FakeOpenAIServer() as srv, ResponseCache(tmp_path / "c.sqlite") as cache:
        model = OpenAICompatModel("m", base_url=srv.base_url, cache=cache)
        run(model, [req("a")])
        variants = [
            req("a", temperature=0.1),
            req("a", seed=99),
            req("a", n=2),
            req("a", text="different"),
            req("a", top_k=5),
            req("a", thinking=True),
        ]
        results = run(model, variants)
        assert len(srv.requests) == 1 + len(variants)
        other = OpenAICompatModel("other-model", base_url=srv.base_url, cache=cache)
        (diff_model,) = run(other, [req("a")])
    assert not any(r.cache_hit for r in results) and not diff_model.cache_hit


def test_failed_results_are_not_cached(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    doomed = lambda body: "doomed" in body["messages"][0]["content"]  # noqa: E731
    with FakeOpenAIServer(plan=always("500", when=doomed)) as srv, ResponseCache(path) as cache:
        model = OpenAICompatModel("m", base_url=srv.base_url, cache=cache, max_retries=1, **FAST)
        bad, good = run(model, [req("doomed"), req("fine")])
        assert bad.error is not None and good.ok and len(cache) == 1
    with FakeOpenAIServer() as srv, ResponseCache(path) as cache:
        model = OpenAICompatModel("m", base_url=srv.base_url, cache=cache)
        bad2, good2 = run(model, [req("doomed"), req("fine")])
        assert len(srv.requests) == 1  # only the earlier failure is asked again
    assert bad2.ok and not bad2.cache_hit and good2.cache_hit


def test_key_is_canonical_and_backend_scoped() -> None:
    a = ResponseCache.key("openai", {"model": "m", "seed": 1, "messages": [{"content": "x"}]})
    b = ResponseCache.key("openai", {"messages": [{"content": "x"}], "seed": 1, "model": "m"})
    c = ResponseCache.key("vllm", {"model": "m", "seed": 1, "messages": [{"content": "x"}]})
    assert a == b != c and len(a) == 64


def test_put_and_get_round_trip_and_replace(tmp_path: Path) -> None:
    samples = [Sample(text="t", reasoning="r", finish_reason="stop")]
    usage = Usage(
        prompt_tokens=3, cached_tokens=1, completion_tokens=4, reasoning_tokens=2, latency_s=0.5
    )
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert cache.get("nope") is None
        cache.put("k", "openai", "m", samples, usage)
        hit = cache.get("k")
        assert hit is not None and hit.samples == samples and hit.usage == usage
        cache.put("k", "openai", "m", [Sample(text="new")], Usage())
        again = cache.get("k")
        assert again is not None and again.samples[0].text == "new" and len(cache) == 1


def test_cache_file_uses_wal(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with ResponseCache(path):
        pass
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_many_threads_and_coroutines_share_one_cache(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")

    def writer(t: int) -> None:
        for i in range(50):
            cache.put(f"{t}-{i}", "openai", "m", [Sample(text=f"{t}:{i}")], Usage(prompt_tokens=i))

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(cache) == 200
    hit = cache.get("3-49")
    assert hit is not None and hit.samples[0].text == "3:49" and hit.usage.prompt_tokens == 49
    with FakeOpenAIServer() as srv:
        model = OpenAICompatModel("m", base_url=srv.base_url, cache=cache, max_concurrency=8)
        results = run(model, [req(f"c{i}") for i in range(40)])
    assert all(r.ok for r in results) and len(cache) == 240
    cache.close()


def test_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.write_text("this is not sqlite at all, just some text " * 20)
    with pytest.raises(StoreError, match="c.sqlite"):
        ResponseCache(path)


def test_corrupt_entry_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        cache.put("k", "openai", "m", [Sample(text="x")], Usage())
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE responses SET result = '{\"samples\": 5}'")
    with ResponseCache(path) as cache, pytest.raises(StoreError, match="corrupt"):
        cache.get("k")


def test_closed_cache_refuses_use(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.close()
    with pytest.raises(StoreError, match="closed"):
        cache.get("k")


def test_cache_path_opens_a_cache(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "c.sqlite"
    with FakeOpenAIServer() as srv:
        model = OpenAICompatModel("m", base_url=srv.base_url, cache_path=path)
        run(model, [req("a")])
        (again,) = run(model, [req("a")])
        assert len(srv.requests) == 1
    assert again.cache_hit and model.describe()["cache"] == str(path)
    assert model.cache is not None
    model.cache.close()


def test_cache_and_cache_path_together_are_refused(tmp_path: Path) -> None:
    from clstream.core.errors import SpecError

    with ResponseCache(tmp_path / "a.sqlite") as cache, pytest.raises(SpecError):
        OpenAICompatModel("m", cache=cache, cache_path=tmp_path / "b.sqlite")
