"""The hipporag memory (docs/agentic.md "hipporag"): triples parsed from extraction replies,
the entity graph and its synonym links found through the name index, personalized PageRank
ranking passages, probes that change nothing, snapshots, and runs with the builtin model
(against memory-free, over a loopback server, killed and resumed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conversation_fakes import MIXED, Scripted, frozen, run
from fake_openai_server import PolicyServer
from killed_runs import whole_and_resumed

from clstream.cli import main as cli
from clstream.core import layout
from clstream.core.errors import SpecError
from clstream.core.events import Chunk
from clstream.core.registry import resolve
from clstream.core.types import GenerationRequest, Query
from clstream.models.builtin import BuiltinReader
from clstream.systems.hipporag import HippoRag, formats
from clstream.systems.hipporag import graph as hipporag_graph
from clstream.systems.hipporag.graph import EntityGraph, normalized

STORY = [
    "Mary went to the kitchen. The lamps were lit early that evening.",
    "John picked up the apple. Paris is the capital of France.",
    "Daniel travelled to the garden. The wind rose over the hills.",
]


def triples_reply(request: GenerationRequest) -> str:
    """Extraction replies from the builtin model, a fixed entity list for questions."""
    if request.stage == "retrieve":
        return "ENTITY: Mary"
    reply = BuiltinReader().reply(request)[0]
    return reply


def chunks(texts: list[str]) -> list[Chunk]:
    return [Chunk("doc", i, text) for i, text in enumerate(texts)]


def shown_indices(request: GenerationRequest) -> list[int]:
    return [int(line.split()[-1].rstrip("]")) for line in request.messages[-1].content.splitlines()
            if line.startswith("[chunk index")]


# --- replies ---------------------------------------------------------------------------------


def test_triple_and_entity_lines_are_parsed_and_malformed_lines_ignored() -> None:
    reply = ("TRIPLE: Mary | went to | kitchen\n"
             "  - triple: (John | picked up | apple)\n"
             "TRIPLE: only | two\n"
             "TRIPLE: a | b | c | d\n"
             "TRIPLE:  | empty | subject\n"
             "Mary went to the kitchen\n"
             "NONE")
    assert formats.parse_triples(reply) == [("Mary", "went to", "kitchen"),
                                            ("John", "picked up", "apple")]
    assert formats.parse_triples("NONE") == []
    assert formats.parse_entities("ENTITY: Mary\nENTITY: Mary\nentity: the kitchen\nMary\n"
                                  "ENTITY:") == ["Mary", "the kitchen"]


def test_names_are_normalised_by_case_spacing_and_articles() -> None:
    assert normalized("  The   Kitchen ") == normalized("kitchen") == "kitchen"
    assert normalized("An Apple!") == "apple" and normalized("The") == "the"
    assert normalized("...") == ""


# --- the graph -------------------------------------------------------------------------------


def test_synonyms_are_linked_through_the_name_index_only(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    graph = EntityGraph(synonym=0.8)
    for n in range(40):
        graph.add_passage([(f"Person{n}", "lives in", f"Town{n}")])
    compared: list[tuple[str, str]] = []
    real = hipporag_graph.jaccard

    def spy(a: str, b: str) -> float:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hipporag_graph, "jaccard", spy)
    graph.add_passage([("John Smith", "works at", "the Old Mill")])
    links = graph.add_passage([("Smith John", "owns", "old mill"), ("John", "met", "Mill")])
    # Only names sharing a word were compared, never the 80 unrelated ones.
    assert compared and all(set(a.split()) & set(b.split()) for a, b in compared)
    assert links == [("smith john", "john smith", 1.0)]  # "old mill" is the same node
    assert graph.graph.edges["smith john", "john smith"]["synonym"] == 1.0
    assert not graph.graph.has_edge("john", "john smith")  # Jaccard 0.5 < 0.8
    assert graph.graph.nodes["old mill"]["passages"] == [40, 41]
    assert graph.graph.nodes["old mill"]["name"] == "the Old Mill"
    assert graph.graph.edges["john smith", "old mill"]["relations"] == ["works at"]


def test_pagerank_matches_a_hand_computed_graph_and_ranks_passages() -> None:
    graph = EntityGraph(synonym=0.8)
    graph.add_passage([("Alice", "met", "Bob")])
    graph.add_passage([("Carol", "visited", "Paris")])
    graph.add_passage([("Bob", "owns", "Dog")])
    # A path alice - bob - dog, restarting at alice with probability 1/2:
    # a = b/4 + 1/2, b = (a + d)/2, d = b/4  ->  a = 7/12, b = 4/12, d = 1/12.
    scores = graph.pagerank(["alice"], damping=0.5)
    assert scores["alice"] == pytest.approx(7 / 12, abs=1e-6)
    assert scores["bob"] == pytest.approx(4 / 12, abs=1e-6)
    assert scores["dog"] == pytest.approx(1 / 12, abs=1e-6)
    assert scores["carol"] == scores["paris"] == 0.0
    # Passages: alice+bob = 11/12, bob+dog = 5/12; carol's passage scores nothing.
    assert graph.ranked(["alice"], 0.5, k=5) == [0, 2]
    assert graph.ranked(["paris"], 0.5, k=1) == [1]
    assert graph.link("the DOG") == "dog" and graph.link("Bob Marley") == "bob"
    assert graph.link("Zed") is None
    assert sorted(graph.matched("Did Alice meet a dog?")) == ["alice", "dog"]


# --- the system ------------------------------------------------------------------------------


def test_each_event_costs_one_extraction_call_whatever_memory_holds() -> None:
    model = Scripted(triples_reply)
    system = HippoRag(model)
    for event in MIXED:
        calls = run(system.observe(event))
        assert [c.stage for c in calls] == ["update"]
    keys = [r.key for r in model.requests]
    assert keys == ["doc/chunk0/openie", "document/notes/openie", "env-1/step3/openie",
                    "online/1/openie", "doc/chunk1/openie"]
    assert all(formats.PASSAGE_OPEN in r.messages[-1].content for r in model.requests)
    assert len(system.store) == 5 and "mara" in system.graph.graph
    assert system.graph.graph.nodes["tobin"]["passages"] == [4]


def test_observing_does_index_lookups_only_and_no_pagerank(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    system = HippoRag(Scripted(triples_reply))
    searches: list[str] = []
    real_search = system.graph._names.search

    def counted(query: str, k: int) -> list[tuple[int, float]]:
        searches.append(query)
        return real_search(query, k)

    def no_pagerank(*args: object, **kwargs: object) -> None:
        raise AssertionError("PageRank ran while observing")

    monkeypatch.setattr(system.graph._names, "search", counted)
    monkeypatch.setattr(hipporag_graph, "personalized_pagerank", no_pagerank)
    per_event = []
    for n in range(120):
        before = len(searches)
        run(system.observe(Chunk("doc", n, f"Person{n} went to Harbour{n}. "
                                            f"Person{n} picked up the lantern.")))
        per_event.append(len(searches) - before)
    # One lookup per entity new to the graph, as many at event 120 as at event 2.
    assert per_event[0] == 3 and set(per_event[1:]) == {2}
    assert len(system.graph) == 241


def test_answers_show_the_passages_pagerank_reaches_from_the_query_entities() -> None:
    model = Scripted(triples_reply)
    system = HippoRag(model, k=1)
    for chunk in chunks(STORY):
        run(system.observe(chunk))
    response = run(system.respond(Query("q1", "Where is Mary?")))
    assert [r.stage for r in response.results] == ["retrieve", "generate"]
    entity_call, answer = model.of_stage("retrieve")[0], model.of_stage("generate")[0]
    assert entity_call.key == "q1/entities" and "Where is Mary?" in \
        entity_call.messages[-1].content
    assert shown_indices(answer) == [0]
    # With no entity known, BM25 over the passages decides.
    model.by_stage["retrieve"] = ["ENTITY: Zanzibar"]
    run(system.respond(Query("q2", "Who picked up the apple?")))
    assert shown_indices(model.of_stage("generate")[-1]) == [1]


def test_match_mode_makes_no_call_and_finds_names_in_the_question() -> None:
    model = Scripted(triples_reply)
    system = HippoRag(model, k=2, query_entities="match")
    for chunk in chunks(STORY):
        run(system.observe(chunk))
    response = run(system.respond(Query("q1", "Where is Daniel now?")))
    assert [r.stage for r in response.results] == ["generate"]
    assert shown_indices(model.of_stage("generate")[0])[-1] == 2


def test_probes_leave_memory_unchanged_and_snapshots_round_trip() -> None:
    model = Scripted(triples_reply)
    system = HippoRag(model)
    for event in [*MIXED, *chunks(STORY)[1:]]:
        run(system.observe(event))
    before = frozen(system)
    queries = [Query(f"q{n}", text) for n, text in
               enumerate(["Where is Mary?", "What is the capital of France?", "Nothing"])]
    first = run(system.respond_batch(queries))
    assert frozen(system) == before
    copy = HippoRag(Scripted(triples_reply))
    copy.restore(json.loads(json.dumps(system.snapshot())))
    assert frozen(copy) == before
    assert sorted(copy.graph.graph.edges(data=True)) == sorted(system.graph.graph.edges(data=True))
    again = run(copy.respond_batch(queries))
    assert [r.results[-1].samples[0].text for r in again] == \
        [r.results[-1].samples[0].text for r in first]
    asked = [r.messages for r in model.requests[-3:]]
    assert [r.messages for r in copy.model.requests[-3:]] == asked  # type: ignore[attr-defined]
    with pytest.raises(Exception, match="synonym"):
        copy.restore({"method": "hipporag", "memory": {**system.snapshot()["memory"],
                                                       "synonyms": "x"}})


def test_registered_and_arguments_checked() -> None:
    cls = resolve("system", "hipporag")
    assert cls is HippoRag
    described = cls(BuiltinReader()).describe()
    assert described["args"] == {"k": 5, "damping": 0.5, "synonym": 0.8,
                                 "query_entities": "model"}
    assert described["prompt_template_hash"] == formats.template_fingerprint()
    with pytest.raises(SpecError, match="damping"):
        cls(BuiltinReader(), damping=1.5)


# --- runs ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hipporag") / "oaks.json"
    assert cli(["generate", "oaks-babi", "--seed", "5", "--docs", "1", "--chunks", "4",
                "--chunk-tokens", "120", "--max-questions", "3", "--out", str(path)]) == 0
    return path


def _correct(out: Path, system: str, stream: Path, dest: Path) -> int:
    """How many of the system's answers at the last interval are the gold answer."""
    (doc,) = json.loads(stream.read_text())
    last = str(doc["meta"]["num_chunks"] - 1)
    gold = {qa["question_id"]: qa["chunk_to_answer"][last] for qa in doc["data"]["qas"].values()}
    return sum(layout.final_answer_text(row["output"]) in gold[row["question_id"]]
               for row in _outputs(out, system, dest) if str(row["t"] - 1) == last)


def _outputs(out: Path, system: str, dest: Path) -> list[dict[str, Any]]:
    assert cli(["export", str(out), "--system", system, "--out", str(dest)]) == 0
    return [json.loads(line) for line in dest.read_text().splitlines()]


def test_builtin_answers_what_memory_free_cannot_and_a_served_model_agrees(
        stream: Path, tmp_path: Path) -> None:
    local = tmp_path / "local"
    assert cli(["run", "oaks", str(stream), "--model", "builtin", "--system", "hipporag",
                "--system", "memory-free", "--out", str(local), "--no-progress"]) == 0
    right = _correct(local, "hipporag", stream, tmp_path / "h.jsonl")
    assert right >= 2 > _correct(local, "memory-free", stream, tmp_path / "m.jsonl")
    served = tmp_path / "served"
    with PolicyServer(model="tiny-served") as server:
        assert cli(["run", "oaks", str(stream), "--model", "openai:tiny-served", "--base-url",
                    server.base_url, "--system", "hipporag", "--out", str(served),
                    "--no-progress"]) == 0
        bodies = server.requests
    assert any(formats.PASSAGE_OPEN in b["messages"][-1]["content"] for b in bodies)
    assert any(formats.QUESTION_OPEN in b["messages"][-1]["content"] for b in bodies)
    assert _outputs(served, "hipporag", tmp_path / "a.jsonl") == \
        _outputs(local, "hipporag", tmp_path / "b.jsonl")


def test_sigkill_resume_matches_uninterrupted(tmp_path: Path) -> None:
    data = tmp_path / "long.json"
    assert cli(["generate", "oaks-babi", "--seed", "11", "--docs", "1", "--chunks", "30",
                "--chunk-tokens", "200", "--max-questions", "8", "--out", str(data)]) == 0
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    argv = ["run", "oaks", str(data), "--system", "hipporag", "--no-progress"]
    whole_and_resumed(argv, whole, killed, records=40)
    a = _outputs(whole, "hipporag", tmp_path / "whole.jsonl")
    b = _outputs(killed, "hipporag", tmp_path / "killed.jsonl")
    assert a and a == b
