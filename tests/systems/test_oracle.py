"""Oracle RAG (ImprintBench §3.1): the item's source documents, and only them, in corpus order;
Q pairs count as context of their source document; nothing named -> nothing shown."""

from __future__ import annotations

import pytest
from imprint_fakes import article, corpus, ingest, item, qa_pair, run

from clstream.core import layout
from clstream.core.contracts import supervision_of
from clstream.core.errors import DataError
from clstream.core.events import Chunk
from clstream.core.registry import resolve
from clstream.core.types import SamplingParams
from clstream.models.builtin import BuiltinReader
from clstream.systems.oracle import Oracle


def _prompt(system: Oracle, query_sources: list[str]) -> str:
    request = system._request(item("q", "Who leads Acme Corp?", query_sources))
    return request.messages[1].content


def test_shows_named_documents_in_corpus_order() -> None:
    system = Oracle(BuiltinReader())
    run(ingest(system, corpus()))
    text = _prompt(system, ["n3", "n1"])
    passages = layout.parse_passages(layout.split_prompt(text)[0])
    assert [i for i, _ in passages] == [0, 2]
    assert "Maria Lopez became" in passages[0][1] and "Jonas Berg" in passages[1][1]
    assert "Harbor" not in text


def test_nothing_named_shows_nothing() -> None:
    system = Oracle(BuiltinReader())
    run(ingest(system, corpus()))
    bare = layout.query_messages(item("q", "Who leads Acme Corp?"), [])
    assert system._request(item("q", "Who leads Acme Corp?")).messages == bare
    assert system._request(item("q", "Who leads Acme Corp?", ["missing"])).messages == bare


def test_training_pairs_are_context_of_their_source() -> None:
    system = Oracle(BuiltinReader())
    docs = [qa_pair("p1", "n1", "Who became chief executive of Acme Corp?", "Maria Lopez"),
            qa_pair("p2", "n2", "What reopened?", "The Vell harbor")]
    run(ingest(system, docs))
    text = _prompt(system, ["n1"])
    assert "Maria Lopez" in text and "Vell" not in text


def test_builtin_answers_from_the_source_and_abstains_without() -> None:
    system = Oracle(BuiltinReader(), SamplingParams(n=3))
    run(ingest(system, corpus()))
    with_source = run(system.respond(item("q1", "Who replaced Maria Lopez?", ["n3"])))
    answer = with_source.text.rsplit("## Answer:", 1)[1]
    assert "Jonas" in answer or "Berg" in answer
    assert len(with_source.results) == 1 and len(with_source.results[0].samples) == 3
    without = run(system.respond(item("q2", "Who replaced Maria Lopez?")))
    assert "Nothing in the passages" in without.text


def test_other_events_are_not_memory_and_snapshot_round_trips() -> None:
    system = Oracle(BuiltinReader())
    run(ingest(system, [*corpus(), article("n9", "2026-03-01", "Late", "Late news.")]))
    run(system.observe(Chunk("s", 0, "a chunk of some stream")))
    state = system.snapshot()
    assert [d["doc_id"] for d in state["documents"]] == ["n1", "n2", "n3", "n4", "n9"]
    again = Oracle(BuiltinReader())
    again.restore(state)
    assert _prompt(again, ["n9", "n2"]) == _prompt(system, ["n9", "n2"])
    with pytest.raises(DataError):
        again.restore({"documents": [{"doc_id": "x"}]})


def test_registered_with_every_supervision() -> None:
    cls = resolve("system", "oracle")
    system = cls(BuiltinReader())
    assert supervision_of(system) == ("C", "Q", "C+Q")
    assert system.describe()["name"] == "oracle"
