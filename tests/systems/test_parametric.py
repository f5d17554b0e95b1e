"""Parametric methods as systems (docs/parametric.md §2-§4), with training replaced by a
recorder: which examples each event gives, when an update happens and what it trains from,
that answers carry the adapter and nothing else in the prompt, snapshots that name the
weights, and the one-line refusals before a run."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from clstream.core import layout
from clstream.core.contracts import adapter_kinds_of, give_artifact_folder
from clstream.core.errors import DataError, SpecError
from clstream.core.events import Chunk, Document, Feedback, Observation
from clstream.core.types import (
    Adapter,
    GenerationRequest,
    GenerationResult,
    Query,
    Sample,
    SamplingParams,
)
from clstream.models.builtin import BuiltinReader
from clstream.models.tokenizers import ApproxTokenizer
from clstream.systems.parametric import (
    LoraCq,
    LoraNtp,
    LoraSdft,
    LoraSft,
    Ntp,
    ParametricMethod,
    Sft,
)

pytest.importorskip("peft", reason="needs the train extra: pip install 'clstream[train]'")
pytest.importorskip("trl", reason="needs the train extra: pip install 'clstream[train]'")


class WeightsModel:
    """A model that serves adapters and records what it is asked."""

    name = "fake-weights"
    tokenizer = ApproxTokenizer()

    def __init__(self, path: Path, kinds: tuple[str, ...] = ("lora", "full")):
        self.path, self.kinds = path, kinds
        self.requests: list[GenerationRequest] = []

    def adapter_kinds(self) -> tuple[str, ...]:
        return self.kinds

    def describe(self) -> dict[str, Any]:
        return {"backend": "fake", "name": self.name, "path": str(self.path)}

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        self.requests += requests
        return [GenerationResult(key=r.key, samples=[Sample(text="ok")]) for r in requests]


class Trained:
    """What :func:`clstream.training.train.train` returns, as far as the system reads it."""

    def __init__(self, adapter: Adapter):
        self.adapter, self.tokens, self.seconds, self.reused = adapter, 100, 0.5, False


@pytest.fixture
def base(tmp_path: Path) -> Path:
    folder = tmp_path / "base"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    return folder


def build(cls: type[ParametricMethod], base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
          **args: Any) -> tuple[Any, list[tuple[Adapter | None, list[Any]]]]:
    """The system over a :class:`WeightsModel`, training recorded: (start, examples) per
    update, each making the adapter ``clstream-<update number>``."""
    system = cls(WeightsModel(base), SamplingParams(), 0, **args)
    give_artifact_folder(system, tmp_path / "artifacts")
    updates: list[tuple[Adapter | None, list[Any]]] = []

    def fake_train(examples: Sequence[Any]) -> Trained:
        updates.append((system.weights, list(examples)))
        name = f"clstream-{len(updates)}"
        (tmp_path / "artifacts" / name).mkdir(parents=True)
        return Trained(Adapter(name=name, path=str(tmp_path / "artifacts" / name),
                               kind="lora" if cls.lora else "full"))

    monkeypatch.setattr(system, "_train", fake_train)
    return system, updates


def test_oaks_chunks_train_every_k_intervals_from_the_previous_weights(
        base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system, updates = build(LoraNtp, base, tmp_path, monkeypatch, every=2)
    results = [asyncio.run(system.observe(Chunk("d", i, f"chunk {i}"))) for i in range(5)]
    assert [len(r) for r in results] == [0, 1, 0, 1, 0]
    assert results[1][0].stage == "train" and results[1][0].usage.prompt_tokens == 100
    assert [u[0].name if u[0] else None for u in updates] == [None, "clstream-1"]
    assert [[e.text for e in u[1]] for u in updates] == [["chunk 0", "chunk 1"],
                                                         ["chunk 2", "chunk 3"]]
    assert system.snapshot()["memory"]["pending"] == [{"text": "chunk 4"}]


def test_answers_carry_the_adapter_and_no_memory(
        base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system, _ = build(LoraNtp, base, tmp_path, monkeypatch, every=1)
    query = Query(id="q1", text="Where is Mary?", instructions="Answer.", prompt="Q: where?")
    asyncio.run(system.respond(query))
    asyncio.run(system.observe(Chunk("d", 0, "Mary went to the kitchen.")))
    asyncio.run(system.respond(query))
    first, second = system.model.requests
    assert first.adapter is None and second.adapter == system.weights
    assert first.messages == second.messages == layout.query_messages(query, [])


def test_seqmem_feedback_gives_text_and_solved_tasks_give_pairs(
        base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    solved = Feedback("t1", "What is 2+2?", "4", 1.0, "right")
    failed = Feedback("t2", "What is 3+3?", "5", 0.0, "expected 6")
    for cls, kinds in ((LoraNtp, ["text", "text"]), (LoraSft, ["pair"]),
                       (LoraCq, ["text", "pair", "text"])):
        system, updates = build(cls, base, tmp_path / cls.name, monkeypatch, every=2)
        asyncio.run(system.observe(solved))
        asyncio.run(system.observe(failed))
        (start, examples), = updates
        assert [("pair" if hasattr(e, "answer") else "text") for e in examples] == kinds
    pair = next(e for e in examples if hasattr(e, "answer"))
    assert pair.answer == "4" and "What is 2+2?" in pair.messages[-1].content


def test_clbench_instances_are_the_units_and_rewarded_steps_are_pairs(
        base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system, updates = build(LoraCq, base, tmp_path, monkeypatch, every=1)
    asyncio.run(system.observe(Observation("i1", 0, "fine", reward=1.0, query="obs 0",
                                           action="buy")))
    assert not updates
    asyncio.run(system.observe(Observation("i1", 1, "bad", reward=0.0, done=True,
                                           query="obs 1", action="sell")))
    (_, examples), = updates
    texts = [e.text for e in examples if hasattr(e, "text")]
    pairs = [(e.messages[-1].content, e.answer) for e in examples if hasattr(e, "answer")]
    assert len(texts) == 2 and "buy" in texts[0] and "sell" in texts[1]
    assert len(pairs) == 1 and "obs 0" in pairs[0][0] and pairs[0][1] == "buy"


def test_imprint_trains_once_after_the_corpus_with_the_source_for_the_teacher(
        base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system, updates = build(LoraSdft, base, tmp_path, monkeypatch)
    doc = Document("d1", "Title: News\n\nThe mayor of Arden is Lena Holt.", meta={"kind": "news"})
    pair = Document("qa1", "Q: Who is the mayor of Arden?\nA: Lena Holt",
                    meta={"kind": "qa", "source_doc_id": "d1"})
    for event in (doc, pair):
        assert asyncio.run(system.observe(event)) == []
    (result,) = asyncio.run(system.finalize())
    (_, (example,)), = updates
    assert example.answer == "Lena Holt" and example.context == doc.text
    assert "Lena Holt" not in example.messages[-1].content
    assert result.stage == "train" and system.artifact is not None


def test_snapshots_name_the_weights_and_restore_them(
        base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system, _ = build(LoraNtp, base, tmp_path, monkeypatch, every=1)
    asyncio.run(system.observe(Chunk("d", 0, "one")))
    state = system.snapshot()
    assert state["memory"]["weights"] == {"name": "clstream-1", "kind": "lora"}
    fresh, _ = build(LoraNtp, base, tmp_path, monkeypatch, every=1)
    fresh.restore(state)
    assert fresh.weights == system.weights
    gone = {**state, "memory": {**state["memory"], "weights": {"name": "clstream-9",
                                                               "kind": "lora"}}}
    with pytest.raises(DataError, match="clstream-9"):
        fresh.restore(gone)


def test_refusals_come_before_the_run_in_one_line(
        base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SpecError, match="cannot serve") as refused:
        LoraNtp(BuiltinReader(), SamplingParams(), 0)
    assert "\n" not in str(refused.value) and adapter_kinds_of(BuiltinReader()) == ()
    with pytest.raises(SpecError, match="full weights"):
        Ntp(WeightsModel(base, kinds=("lora",)), SamplingParams(), 0)
    with pytest.raises(SpecError, match="no config.json"):
        LoraNtp(WeightsModel(tmp_path), SamplingParams(), 0)
    system, _ = build(Sft, base, tmp_path, monkeypatch)
    with pytest.raises(SpecError, match="question-answer pairs"):
        asyncio.run(system.observe(Chunk("d", 0, "text")))


def test_every_hyperparameter_is_part_of_the_spec(base: Path) -> None:
    described = LoraNtp(WeightsModel(base), SamplingParams(), 0, lr=0.001).describe()
    assert {"every", "lr", "epochs", "batch", "block", "r", "alpha", "dropout"} <= \
        set(described["args"])
    assert described["args"]["lr"] == 0.001 and described["objective"] == "ntp"
