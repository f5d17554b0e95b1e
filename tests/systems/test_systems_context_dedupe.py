"""RAG near-duplicate skipping (``rag:dedupe=J``), planned batches, and the lazily filled index:
off by default, so prompts are those of plain top-k; on, a passage too similar to one already
chosen gives its place to the next best."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from clstream.core.contracts import RequestPlanner
from clstream.core.events import Chunk
from clstream.core.types import GenerationRequest, GenerationResult, Query, Sample
from clstream.models.tokenizers import approx_tokenizer
from clstream.retrieval.bm25 import IncrementalBM25
from clstream.systems.context import (
    FullContext,
    RagSystem,
    RollingWindow,
    jaccard,
    word_set,
)

# Two near-copies about the lantern, one distinct passage about it, and filler.
CHUNKS = [
    "Tobin picked up the lantern in the hall.",
    "The harbour bells rang at dusk.",
    "Tobin picked up the lantern in the hall again.",
    "Mara carried the lantern to the garden shed.",
    "A storm passed over the harbour.",
]
QUESTION = Query(id="q1@5", text="Who has the lantern?")


class Echo:
    name = "echo"

    def __init__(self) -> None:
        self.tokenizer = approx_tokenizer()
        self.sent: list[GenerationRequest] = []

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        self.sent += requests
        return [GenerationResult(key=r.key, samples=[Sample(text="## Answer: x")])
                for r in requests]

    def describe(self) -> dict[str, Any]:
        return {"backend": "echo"}


def shown(system: RagSystem) -> list[int]:
    """Chunk indexes in the prompt of QUESTION after observing every chunk."""
    for i, text in enumerate(CHUNKS):
        asyncio.run(system.observe(Chunk("doc", i, text)))
    (request,) = system.plan_batch([QUESTION]).requests
    prompt = request.prompt_text
    return [i for i in range(len(CHUNKS)) if f"[chunk index {i}]" in prompt]


def test_word_jaccard() -> None:
    assert jaccard(word_set("The lantern, the hall."), word_set("the HALL lantern")) == 1.0
    assert jaccard(word_set("a b"), word_set("c d")) == 0.0
    assert jaccard(word_set("a b c"), word_set("a b d")) == pytest.approx(2 / 4)
    assert jaccard(frozenset(), frozenset()) == 1.0


def test_dedupe_off_is_plain_top_k_and_describes_as_before() -> None:
    plain = RagSystem(Echo(), k=2)
    assert plain.describe() == {"name": "rag", "args": {
        "k": 2, "retriever": "bm25", "embedder": "minilm", "k_rrf": 60}}
    assert shown(plain) == shown(RagSystem(Echo(), k=2, dedupe=0.0)) == [0, 2]


def test_dedupe_skips_a_near_copy_and_takes_the_next_best() -> None:
    system = RagSystem(Echo(), k=2, dedupe=0.8)
    assert jaccard(word_set(CHUNKS[0]), word_set(CHUNKS[2])) >= 0.8
    assert shown(system) == [2, 3]  # chunk 0 repeats chunk 2, so chunk 3 takes its place
    assert system.describe()["args"]["dedupe"] == 0.8
    # a threshold above every similarity keeps plain top-k
    assert shown(RagSystem(Echo(), k=2, dedupe=1.5)) == [0, 2]


def test_planned_batches_answer_as_respond_batch() -> None:
    queries = [QUESTION, Query(id="q2@5", text="Where did Mara go?")]
    direct, planned = RagSystem(Echo(), k=2), RagSystem(Echo(), k=2)
    for system in (direct, planned):
        for i, text in enumerate(CHUNKS):
            asyncio.run(system.observe(Chunk("doc", i, text)))
    assert isinstance(planned, RequestPlanner)
    plan = planned.plan_batch(queries)
    assert plan.requests == tuple(direct.plan_batch(queries).requests)
    results = asyncio.run(Echo().generate(list(plan.requests)))
    responses = planned.complete_batch(plan, results, 0.5)
    expected = asyncio.run(direct.respond_batch(queries))
    assert [r.text for r in responses] == [r.text for r in expected]
    assert [r.timings["generate"] for r in responses] == [0.25, 0.25]
    with pytest.raises(RuntimeError, match="returned 1 results for 2"):
        planned.complete_batch(plan, results[:1], 0.0)


def test_only_retrieving_systems_fill_an_index(monkeypatch: pytest.MonkeyPatch) -> None:
    added: list[int] = []
    add = IncrementalBM25.add

    def counting(index: IncrementalBM25, doc_id: int, text: str) -> None:
        added.append(doc_id)
        add(index, doc_id, text)

    monkeypatch.setattr(IncrementalBM25, "add", counting)
    for system in (FullContext(Echo()), RollingWindow(Echo(), w=2)):
        for i, text in enumerate(CHUNKS):
            asyncio.run(system.observe(Chunk("doc", i, text)))
        asyncio.run(system.respond_batch([QUESTION]))
    assert added == []
    rag = RagSystem(Echo(), k=2)
    for i, text in enumerate(CHUNKS):
        asyncio.run(rag.observe(Chunk("doc", i, text)))
        asyncio.run(rag.respond_batch([QUESTION]))
    assert added == list(range(len(CHUNKS)))  # each passage once, in arrival order
