"""How the OAKS runner orders requests for prefix caching, and that the order changes no result."""

from __future__ import annotations

import asyncio
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main as cli
from clstream.core import layout
from clstream.core.specs import ComponentSpec, RunSpec, derive_seed, parse_model_spec
from clstream.core.types import GenerationRequest, GenerationResult, Message, Sample
from clstream.driver.components import system_factory
from clstream.models.builtin import BuiltinReader
from clstream.models.prefix_cache_sim import approx_tokens, render_chat, replay
from clstream.models.tokenizers import approx_tokenizer
from clstream.protocols.oaks import prompts
from clstream.protocols.oaks.data import OaksDocument
from clstream.protocols.oaks.export import oaks_predictions
from clstream.protocols.oaks.loader import load_oaks
from clstream.protocols.oaks.runner import (
    OaksRunner,
    PromptOrderedModel,
    context_tokens,
    docs_for_cache_budget,
    probe_key,
)
from clstream.store.db import ResultsStore

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "models"))
from fake_openai_server import FakeOpenAIServer  # noqa: E402
from loopback_engine import LoopbackEngine  # noqa: E402

SYSTEMS = ["full", "window:w=3", "rag:k=2", "rag+window:k=1,w=2"]

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from planned import drive_runner  # noqa: E402


class Recorder:
    """A model that answers every request with its key and remembers each call it got."""

    name = "recorder"

    def __init__(self, fail: bool = False):
        self.tokenizer = approx_tokenizer()
        self.calls: list[list[GenerationRequest]] = []
        self.fail = fail

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        self.calls.append(list(requests))
        await asyncio.sleep(0)
        if self.fail:
            raise RuntimeError("backend down")
        return [GenerationResult(key=r.key, samples=[Sample(text=f"## Answer: {r.key}")])
                for r in requests]


def req(key: str, prompt: str) -> GenerationRequest:
    return GenerationRequest(key=key, messages=(Message(role="user", content=prompt),))


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "stream.json"
    assert cli(["generate", "oaks-babi", "--seed", "9", "--docs", "2", "--chunks", "6",
                "--chunk-tokens", "300", "--max-questions", "8", "--out", str(path)]) == 0
    return path


def test_pooled_requests_go_out_sorted_by_prompt_and_come_back_in_place() -> None:
    inner = Recorder()
    gate = PromptOrderedModel(inner, tasks=4)

    async def task(requests: list[GenerationRequest]) -> list[str]:
        try:
            return [r.key for r in await gate.generate(requests)]
        finally:
            gate.leave()

    async def idle() -> list[str]:
        await asyncio.sleep(0)
        gate.leave()
        return []

    async def go() -> list[list[str]]:
        return list(await asyncio.gather(
            task([req("x", "ctx B q1"), req("y", "ctx A q2")]),
            task([req("z", "ctx C")]),
            idle(),
            task([req("u", "ctx A q1"), req("v", "ctx B q0")]),
        ))

    answers = asyncio.run(go())
    assert answers == [["x", "y"], ["z"], [], ["u", "v"]]
    # one send of everything, sorted by prompt text, in slices of the largest call (2)
    assert [[r.key for r in call] for call in inner.calls] == [["u", "y"], ["v", "x"], ["z"]]


def test_a_failing_backend_fails_the_waiting_calls() -> None:
    gate = PromptOrderedModel(Recorder(fail=True), tasks=1)
    with pytest.raises(RuntimeError, match="backend down"):
        asyncio.run(gate.generate([req("a", "p")]))


def run_store(data: Path, tmp: Path, system: str, model: Any, pooled: bool,
              docs: int) -> dict[tuple[str, int], str]:
    dataset = load_oaks(data)
    spec = RunSpec(protocol="oaks", dataset_hash=dataset.sha256,
                   system=ComponentSpec.parse(system), model=parse_model_spec("builtin"))
    with ResultsStore(tmp, writer=True) as store:
        make = system_factory(spec, model)
        runner = OaksRunner(dataset, spec, store, make, model=model if pooled else None)
        result = drive_runner(runner, store, spec, {"probe": "probes"}, model, make,
                              cells_at_once=docs)
        assert result.done == result.total and result.errors == 0
        (row,) = store.runs()
        return oaks_predictions(store, row)


@pytest.mark.parametrize("system", SYSTEMS)
def test_results_do_not_depend_on_order_or_docs_in_flight(
    data: Path, tmp_path: Path, system: str
) -> None:
    model = BuiltinReader()
    one_by_one = run_store(data, tmp_path / "a", system, model, pooled=False, docs=1)
    pooled = run_store(data, tmp_path / "b", system, model, pooled=True, docs=1)
    pooled_two_docs = run_store(data, tmp_path / "c", system, model, pooled=True, docs=2)
    assert one_by_one == pooled == pooled_two_docs
    assert len(one_by_one) == sum(len(d.questions) * d.num_chunks
                                  for d in load_oaks(data).documents)


def prompts_by_interval(data: Path, tmp: Path, system: str) -> dict[int, list[str]]:
    """User messages of the first document's requests, by interval, from a recording model."""
    dataset = load_oaks(data)
    doc = dataset.documents[0]
    seeds = {derive_seed(0, probe_key(q.question_id, t)): t
             for q in doc.questions for t in range(1, doc.num_chunks + 1)}
    recorder = Recorder()
    run_store(data, tmp, system, recorder, pooled=True, docs=1)
    out: dict[int, list[str]] = {}
    for call in recorder.calls:
        for r in call:
            if r.params.seed in seeds:
                out.setdefault(seeds[r.params.seed], []).append(r.messages[-1].content)
    return out


def test_full_context_prompts_extend_the_previous_interval(data: Path, tmp_path: Path) -> None:
    by_t = prompts_by_interval(data, tmp_path, "full")
    contexts = {t: {layout.split_prompt(p)[0] for p in ps} for t, ps in by_t.items()}
    assert all(len(c) == 1 for c in contexts.values())  # one shared context per interval
    for t in range(1, max(by_t)):
        (now,), (nxt,) = contexts[t], contexts[t + 1]
        assert nxt.startswith(now) and len(nxt) > len(now)


def test_window_prompts_extend_until_the_window_is_full(data: Path, tmp_path: Path) -> None:
    by_t = prompts_by_interval(data, tmp_path, "window:w=3")
    contexts = {t: {layout.split_prompt(p)[0] for p in ps} for t, ps in by_t.items()}
    assert all(len(c) == 1 for c in contexts.values())
    for t in range(1, max(by_t)):
        (now,), (nxt,) = contexts[t], contexts[t + 1]
        # once three chunks are held the oldest is dropped: only the header stays shared
        assert nxt.startswith(now) == (t < 3)
        assert nxt.startswith(layout.PASSAGES_HEADER)


def test_context_estimate_and_cache_budget() -> None:
    tok = approx_tokenizer()
    chunks = ("one two three " * 10, "four " * 50, "five six " * 5, "seven " * 30)
    doc = OaksDocument(bid="d", chunks=chunks, questions=())
    blocks = [tok.count(layout.passage_block(i, c)) for i, c in enumerate(chunks)]
    fixed = tok.count(prompts.SYSTEM_PROMPT) + tok.count(layout.PASSAGES_HEADER)
    model = Recorder()

    def make(text: str) -> Any:
        spec = RunSpec(protocol="oaks", dataset_hash="x", system=ComponentSpec.parse(text),
                       model=parse_model_spec("builtin"))
        return system_factory(spec, model)()

    assert context_tokens(make("full"), doc, tok) == fixed + sum(blocks)
    assert context_tokens(make("full:budget=100"), doc, tok) == 100
    assert context_tokens(make("window:w=2"), doc, tok) == fixed + max(
        blocks[0] + blocks[1], blocks[1] + blocks[2], blocks[2] + blocks[3])
    assert context_tokens(make("window:w=9"), doc, tok) == fixed + sum(blocks)
    assert context_tokens(make("rag:k=1"), doc, tok) == fixed + max(blocks)
    assert context_tokens(make("rag+window:k=1,w=1"), doc, tok) == (
        fixed + sum(sorted(blocks)[-2:]) + tok.count(layout.RETRIEVED_HEADER))

    class Dataset:
        documents = [doc] * 5

    window = make("window:w=2")
    largest = context_tokens(window, doc, tok)
    assert docs_for_cache_budget(3 * largest + 1, Dataset(), window, tok) == 3  # type: ignore[arg-type]
    assert docs_for_cache_budget(largest - 1, Dataset(), window, tok) == 1  # type: ignore[arg-type]
    assert docs_for_cache_budget(99 * largest, Dataset(), window, tok) == 5  # type: ignore[arg-type]


def test_cache_budget_flag(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["run", "oaks", str(data), "--system", "rag:k=2", "--no-progress"]
    assert cli([*base, "--out", str(tmp_path / "a"), "--cache-budget-tokens", "10000000"]) == 0
    assert "rag:k=2: 2 documents in flight for a cache of 10000000 tokens" in capsys.readouterr().err
    assert cli([*base, "--out", str(tmp_path / "b"), "--cache-budget-tokens", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "clstream: error: flag --cache-budget-tokens: must be >= 1, got 0"
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("system", ["window:w=2", "rag:k=2", "rag+window:k=1,w=2"])
def test_arrival_order_suits_a_small_prefix_cache(data: Path, tmp_path: Path, system: str) -> None:
    dataset = load_oaks(data)
    rank = {derive_seed(0, probe_key(q.question_id, t)): (d, i, t)
            for d, doc in enumerate(dataset.documents)
            for i, q in enumerate(doc.questions) for t in range(1, doc.num_chunks + 1)}
    with FakeOpenAIServer() as server:
        assert cli(["run", "oaks", str(data), "--system", system, "--model", "openai:m",
                    "--base-url", server.base_url, "--max-concurrency", "4", "--no-progress",
                    "--out", str(tmp_path / "r")]) == 0
        bodies = server.requests
    tokens = [approx_tokens(render_chat(b["messages"])) for b in bodies]
    capacity = math.ceil(1.5 * max(map(len, tokens)) / 16)
    arrival = replay(tokens, capacity)
    by_question = sorted(range(len(bodies)), key=lambda i: rank[bodies[i]["seed"]])
    question_major = replay([tokens[i] for i in by_question], capacity)
    assert arrival.lower_bound_tokens == question_major.lower_bound_tokens
    assert arrival.ratio <= 1.25
    if system.startswith("window"):
        assert question_major.ratio > 1.5  # the naive order is what the check guards against


@pytest.mark.parametrize("system", ["full", "rag:k=2"])
def test_requests_reach_the_server_in_the_same_order_in_every_run(
        tmp_path: Path, system: str) -> None:
    """Eight requests in flight on eight connections to a server that reads every socket on one
    loop (as vLLM's does): the order it reads them in is the run's own, not the order its
    connections happened to become ready or the kernel took their bodies (the in-flight
    bound's ordered writes). Bodies here are up to ~150 kB, more than one write takes."""
    data = tmp_path / "stream.json"
    assert cli(["generate", "oaks-babi", "--seed", "9", "--docs", "2", "--chunks", "8",
                "--chunk-tokens", "4000", "--max-questions", "6", "--out", str(data)]) == 0
    orders = []
    with LoopbackEngine(slots=8, service_s=0.002, tokens=2, model="m", context=10**7,
                        record=True) as engine:
        for attempt in range(3):
            assert cli(["run", "oaks", str(data), "--system", system, "--model", "openai:m",
                        "--base-url", engine.base_url, "--max-concurrency", "8",
                        "--no-progress", "--out", str(tmp_path / str(attempt))]) == 0
            assert engine.arrivals is not None
            orders.append([body["seed"] for body in engine.arrivals])
            engine.arrivals.clear()
    assert len(orders[0]) == 2 * 8 * 6 and len(set(orders[0])) == len(orders[0])
    assert orders[0] == orders[1] == orders[2]
