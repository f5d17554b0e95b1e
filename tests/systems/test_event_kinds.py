"""Every method takes every event kind: context systems keep feedback, documents and
observations as further passages; experience methods keep chunks, documents and observations
as texts shown as tagged passages; probes change nothing; snapshots carry every kind."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest

from clstream.core import layout
from clstream.core.errors import DataError
from clstream.core.events import Chunk, Document, Event, Feedback, Observation
from clstream.core.types import GenerationRequest, GenerationResult, Query, Sample
from clstream.models.builtin import BuiltinReader
from clstream.models.tokenizers import approx_tokenizer
from clstream.protocols.oaks import prompts as oaks_prompts
from clstream.protocols.seqmem import prompts as seqmem_prompts
from clstream.systems.context import FullContext, RagSystem, RagWindow, RollingWindow
from clstream.systems.curated import Awm, DcRs
from clstream.systems.expel import ExpelMt, ExpelSt
from clstream.systems.experience import ExpRag, ExpRecent, MemoryFree
from clstream.systems.gmemory import GMemory

CONTEXT = (FullContext, RollingWindow, RagSystem, RagWindow)
EXPERIENCE = (ExpRecent, ExpRag, DcRs, Awm, ExpelSt, ExpelMt, GMemory)
QUESTION = "What is the vault code of Tirovan?"


class Recorder:
    name = "recorder"

    def __init__(self) -> None:
        self.tokenizer = approx_tokenizer()
        self.requests: list[GenerationRequest] = []

    def describe(self) -> dict[str, Any]:
        return {"backend": "recorder"}

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        self.requests += requests
        return [GenerationResult(key=r.key, samples=[Sample(text="## Answer: x")], stage=r.stage)
                for r in requests]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def feedback(answer: str = "## Answer: 1", success: bool = False) -> Feedback:
    return Feedback("online/1", QUESTION, answer, float(success),
                    "Incorrect. The vault code of Tirovan is 4721. Correct answer: 4721.",
                    meta={"task_id": "t1", "attempt": 1, "final": True})


MIXED: list[Event] = [
    Chunk("doc", 0, "Mara went to the kitchen."),
    Document("notes", "The harbour bells rang at dusk."),
    Observation("env-1", 3, "You see a locked door and a brass key.", reward=0.0),
    feedback(),
    Chunk("doc", 1, "Tobin picked up the lantern."),
]


def user_of(model: Recorder) -> str:
    return model.requests[-1].messages[1].content


@pytest.mark.parametrize("cls", CONTEXT)
def test_a_context_system_keeps_feedback_as_an_experience_passage(cls: Any) -> None:
    model = Recorder()
    system = cls(model)
    assert run(system.observe(feedback())) == []
    run(system.respond(seqmem_prompts.ask(Query("holdout/x", QUESTION, kind="synthetic"))))
    user = user_of(model)
    assert "[chunk index 0]\nPast task: What is the vault code of Tirovan?\n" in user
    assert "Outcome: wrong\nFeedback: Incorrect." in user
    assert user.endswith(seqmem_prompts.question_block(Query("q", QUESTION, kind="synthetic")))
    assert system.snapshot()["chunks"][0]["kind"] == "feedback"


def test_passages_of_every_kind_get_a_running_index_and_are_retrieved() -> None:
    model = Recorder()
    system = RagSystem(model, k=1)
    for event in MIXED:
        run(system.observe(event))
    assert [p["index"] for p in system.snapshot()["chunks"]] == [0, 1, 2, 3, 1]
    run(system.respond(oaks_prompts.ask(Query("q@1", "When did the harbour bells ring?"))))
    assert "[chunk index 1]\nThe harbour bells rang at dusk." in user_of(model)
    run(system.respond(oaks_prompts.ask(Query("q@2", "What does the brass key open?"))))
    assert "[chunk index 2]\nYou see a locked door" in user_of(model)


def test_a_context_system_answers_from_feedback_with_the_builtin_model() -> None:
    system = RollingWindow(BuiltinReader(), w=3)
    run(system.observe(Chunk("doc", 0, "Mara went to the kitchen.")))
    run(system.observe(feedback()))
    probe = seqmem_prompts.ask(Query("holdout/x", QUESTION, kind="synthetic"))
    assert run(system.respond(probe)).text.endswith("## Answer: 4721")
    where = oaks_prompts.ask(Query("q@2", "Where is Mara?"))
    assert run(system.respond(where)).text.endswith("## Answer: kitchen")


@pytest.mark.parametrize("cls", EXPERIENCE)
def test_an_experience_method_keeps_a_chunk_as_text_shown_as_passages(cls: Any) -> None:
    model = Recorder()
    system = cls(model)
    calls = run(system.observe(Chunk("doc", 4, "Mara went to the kitchen.")))
    assert calls == [] and model.requests == []  # no model call for a text event
    assert system.snapshot()["memory"]["texts"] == [
        {"stream_id": "doc", "index": 4, "text": "Mara went to the kitchen."}]
    before = json.dumps(system.snapshot())
    run(system.respond(oaks_prompts.ask(Query("q@5", "Where did Mara go?"))))
    assert json.dumps(system.snapshot()) == before  # a probe never changes memory
    user = user_of(model)
    section = layout.passages_section([(4, "Mara went to the kitchen.")])
    assert section in user
    assert user.endswith(section + oaks_prompts.question_text(Query("q", "Where did Mara go?")))
    assert model.requests[-1].messages[0].content == oaks_prompts.SYSTEM_PROMPT


def test_memory_free_ignores_every_event() -> None:
    model = Recorder()
    system = MemoryFree(model)
    for event in MIXED:
        assert run(system.observe(event)) == []
    assert system.snapshot() == {"method": "memory-free", "memory": {}}
    run(system.respond(oaks_prompts.ask(Query("q@1", "Where is Mara?"))))
    assert "[chunk index" not in user_of(model)


def test_exp_recent_shows_recent_texts_and_exp_rag_similar_ones() -> None:
    model = Recorder()
    recent, rag = ExpRecent(model, k=1), ExpRag(model, k=1)
    for system in (recent, rag):
        run(system.observe(Chunk("doc", 0, "Mara went to the kitchen.")))
        run(system.observe(Chunk("doc", 1, "The harbour bells rang at dusk.")))
    query = oaks_prompts.ask(Query("q@2", "Where did Mara go?"))
    run(recent.respond(query))
    assert "[chunk index 1]" in user_of(model) and "[chunk index 0]" not in user_of(model)
    run(rag.respond(query))
    assert "[chunk index 0]" in user_of(model) and "[chunk index 1]" not in user_of(model)


def test_experience_methods_answer_from_texts_with_the_builtin_model() -> None:
    for cls in EXPERIENCE:
        system = cls(BuiltinReader())
        run(system.observe(Chunk("doc", 0, "Mara went to the kitchen.")))
        run(system.observe(Chunk("doc", 1, "Mara went to the cellar.")))
        answer = run(system.respond(oaks_prompts.ask(Query("q@2", "Where is Mara?")))).text
        assert answer.endswith("## Answer: cellar"), cls.name


@pytest.mark.parametrize("cls", CONTEXT + EXPERIENCE)
def test_snapshot_restore_round_trips_mixed_kinds(cls: Any) -> None:
    model = Recorder()
    system = cls(model)
    for event in MIXED:
        run(system.observe(event))
    state = json.loads(json.dumps(system.snapshot()))
    query = oaks_prompts.ask(Query("q@9", "Who picked up the lantern?"))
    run(system.respond(query))
    first = [m.content for m in model.requests[-1].messages]
    clone = cls(model)
    clone.restore(state)
    assert clone.snapshot() == state
    run(clone.respond(query))
    assert [m.content for m in model.requests[-1].messages] == first
    if cls in EXPERIENCE:
        kinds = [p.get("kind", "chunk") for p in state["memory"]["texts"]]
        assert kinds == ["chunk", "document", "observation", "chunk"]
    else:
        kinds = [p.get("kind", "chunk") for p in state["chunks"]]
        assert kinds == ["chunk", "document", "observation", "feedback", "chunk"]


def test_restore_rejects_malformed_passages() -> None:
    with pytest.raises(DataError, match="texts"):
        ExpRag(Recorder()).restore({"method": "exp-rag", "memory": {
            "records": [], "texts": [{"kind": "note", "source": "x", "index": 0, "text": ""}]}})
    with pytest.raises(DataError, match="chunks"):
        FullContext(Recorder()).restore({"chunks": [{"kind": "document", "index": 0,
                                                     "text": "no source"}]})
