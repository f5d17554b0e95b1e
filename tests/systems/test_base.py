"""The base every memory method is built on (clstream.systems.base): one construction, one
``describe`` shape, seeds derived from request keys whatever the batch, a checked result
count, reset back to empty memory, and one snapshot error shape."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from clstream.core.contracts import System
from clstream.core.errors import DataError
from clstream.core.events import Chunk
from clstream.core.registry import names, resolve
from clstream.core.specs import derive_seed
from clstream.core.types import GenerationRequest, GenerationResult, Query, SamplingParams
from clstream.models.builtin import BuiltinReader
from clstream.systems.base import MemorySystem, snapshot_list

QUERIES = [Query(id=f"q{i}", text=f"Where is item {i}?") for i in range(3)]


class Recording(BuiltinReader):
    """The builtin model, keeping every request it was sent; ``drop`` results go missing."""

    def __init__(self, drop: int = 0) -> None:
        super().__init__()
        self.requests: list[GenerationRequest] = []
        self.drop = drop

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        self.requests += requests
        results = await super().generate(requests)
        return results[: len(results) - self.drop]


def build(name: str, model: Any = None, **args: Any) -> MemorySystem:
    system = resolve("system", name)(model or BuiltinReader(), SamplingParams(n=2), 7, **args)
    assert isinstance(system, MemorySystem)
    return system


def build_system(name: str) -> System:
    """The registered system ``name`` over the builtin reader, seen through its contract."""
    return resolve("system", name)(BuiltinReader(), SamplingParams(n=2), 7)


@pytest.mark.parametrize("name", [n for n in names("system") if not getattr(
    resolve("system", n), "answers_with_weights", False)])  # parametric: test_parametric.py
def test_every_system_is_built_on_the_base(name: str) -> None:
    system = build(name)
    assert system.seed == 7 and system.sampling.n == 2
    described = system.describe()
    assert list(described)[:2] == ["name", "args"] and described["name"] == name


@pytest.mark.parametrize("name", ["full", "icl", "oracle", "exp-recent"])
def test_answer_seeds_come_from_query_ids_whatever_the_batch(name: str) -> None:
    alone, together = Recording(), Recording()
    for query in QUERIES:
        asyncio.run(build(name, alone).respond(query))
    asyncio.run(build(name, together).respond_batch(QUERIES))
    answers = [r for r in together.requests if r.stage == "generate"]
    assert [r.params.seed for r in answers] == [derive_seed(7, q.id) for q in QUERIES]
    assert [r.model_dump() for r in together.requests] \
        == [r.model_dump() for r in alone.requests]


@pytest.mark.parametrize("name", ["full", "icl", "oracle", "agentic-rag"])
def test_a_missing_result_is_an_error(name: str) -> None:
    with pytest.raises(RuntimeError, match="returned 1 results for 2 requests"):
        asyncio.run(build(name, Recording(drop=1)).respond_batch(QUERIES[:2]))


@pytest.mark.parametrize("name", ["full", "icl", "notepad", "exp-rag", "agentic-rag"])
def test_reset_returns_to_the_memory_of_a_fresh_system(name: str) -> None:
    system = build_system(name)
    fresh = system.snapshot()
    asyncio.run(system.observe(Chunk("s", 0, "The key is in the drawer.")))
    assert system.snapshot() != fresh
    asyncio.run(system.reset())
    assert system.snapshot() == fresh


@pytest.mark.parametrize("name", ["icl", "exp-rag"])
def test_an_enveloped_snapshot_must_be_the_methods_own(name: str) -> None:
    system = build_system(name)
    state = system.snapshot()
    with pytest.raises(DataError, match="method"):
        system.restore({**state, "method": "another"})
    with pytest.raises(DataError, match="memory"):
        system.restore({"method": name})


def test_a_snapshot_list_names_the_field() -> None:
    assert snapshot_list({"chunks": [1]}, "chunks", "passages") == [1]
    not_lists: tuple[Any, ...] = ({}, {"chunks": {}}, [1])
    for state in not_lists:
        with pytest.raises(DataError, match="chunks.*expected a list of passages"):
            snapshot_list(state, "chunks", "passages")
