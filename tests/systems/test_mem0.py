"""mem0: an extraction call after every event, one batched ADD/UPDATE/DELETE/NONE decision
call for its candidates against the most similar stored facts, strict replies, top-k retrieval
keyed by the query and the previous step before each answer, probes change nothing, snapshots
search as the original, the retriever resolved and recorded."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conversation_fakes import (
    MIXED,
    Scripted,
    frozen,
    play_step,
    run,
    step_query,
    task_query,
    verdict,
)

from clstream.core.errors import DataError, SpecError
from clstream.core.events import Chunk, Document
from clstream.core.types import GenerationRequest, Query
from clstream.protocols.oaks import prompts as oaks_prompts
from clstream.systems import mem0
from clstream.systems.mem0 import Mem0

SEEDED = ["The red door opens with the brass key.", "The vault code of Tirovan is 4721.",
          "Mara keeps the lantern in the cellar."]


def scripted(replies: dict[str, str]) -> Scripted:
    """Replies by the request key's last part (``extract``, ``update1``, ...)."""
    def reply(request: GenerationRequest) -> str:
        if request.stage == "generate":
            return '{"action": "wait"}'
        return replies.get(request.key.rsplit("/", 1)[-1], "NONE")
    return Scripted(reply)


def facts(system: Mem0) -> list[str]:
    return [f["text"] for f in system.snapshot()["memory"]["facts"]]


def seeded(model: Scripted, **args: Any) -> Mem0:
    system = Mem0(model, **{"retriever": "bm25", **args})
    for text in SEEDED:
        system._add(text)
    return system


@pytest.mark.parametrize(("decision", "after"), [
    ("FACT 1: ADD", [*SEEDED, "The red door sticks when wet."]),
    ("Thinking...\nFACT 1: ADD: The red door sticks in wet weather.",
     [*SEEDED, "The red door sticks in wet weather."]),
    ("FACT 1: UPDATE 1: The red door opens with the brass key and sticks when wet.",
     ["The red door opens with the brass key and sticks when wet.", *SEEDED[1:]]),
    ("FACT 1: DELETE 1", SEEDED[1:]),
    ("- FACT #1: DELETE 1 - it is outdated", SEEDED[1:]),
    ("FACT 1: NONE", SEEDED),
    ("I would add it.", SEEDED),  # no operation line
    ("ADD", SEEDED),  # an operation not naming its fact
    ("FACT 1: ADD\nFACT 1: DELETE 1", SEEDED),  # two different operations for one fact
    ("FACT 1: UPDATE 7: out of range", SEEDED),  # a memory number not shown
    ("FACT 2: ADD", SEEDED),  # a fact number not listed
    ("FACT 1: UPDATE 1:", SEEDED),  # no text
    ("FACT 1: add", SEEDED),  # keywords are upper case
])
def test_decisions_apply_exactly_and_anything_else_changes_nothing(
        decision: str, after: list[str]) -> None:
    model = scripted({"extract": "FACT: The red door sticks when wet.", "update": decision})
    system = seeded(model)
    calls = run(system.observe(Chunk("doc", 0, "Rain fell; the red door stuck.")))
    assert [c.key for c in calls] == ["doc/chunk0/extract", "doc/chunk0/update"]
    assert all(c.stage == "update" for c in calls)
    assert facts(system) == after
    listed = model.requests[-1].messages[1].content
    assert "1. The red door opens with the brass key." in listed  # the most similar first
    assert "New facts:\n1. The red door sticks when wet." in listed


def test_one_decision_call_lists_every_candidate_and_applies_each_line() -> None:
    model = scripted({
        "extract": "FACT: The red door sticks when wet.\nFACT: Mara keeps the lantern upstairs.\n"
                   "FACT: Owls hunt at night.",
        "update": "FACT 3: ADD\nFACT 1: NONE\nFACT 2: UPDATE 2: Mara keeps the lantern "
                  "upstairs.\nFACT 9: ADD\nrubbish line"})
    system = seeded(model)
    calls = run(system.observe(Chunk("doc", 0, "Notes.")))
    assert [c.key for c in calls] == ["doc/chunk0/extract", "doc/chunk0/update"]
    prompt = model.requests[-1].messages[1].content
    stored = prompt.split("Stored memories:\n")[1].split("\n\n")[0].splitlines()
    assert len(stored) == len(set(stored)) == 2  # each similar memory listed once
    assert "New facts:\n1. The red door sticks when wet.\n2. Mara keeps the lantern upstairs.\n" \
           "3. Owls hunt at night." in prompt
    mara = stored[1].split(". ", 1)[1]
    assert mara == SEEDED[2]  # the memory number 2 the reply updates
    assert facts(system) == [SEEDED[0], SEEDED[1], "Mara keeps the lantern upstairs.",
                             "Owls hunt at night."]


def test_parse_memory_ops_ignores_malformed_lines() -> None:
    ops = mem0.parse_memory_ops(
        "FACT 1: ADD\nFACT 2: UPDATE 5: x\nFACT 3: DELETE 1\nFACT 3: NONE\nFACT 4: NONE\n"
        "FACT x: ADD\nFACT 2 ADD\nUPDATE 1: y", facts=4, shown=2)
    assert {n: (op.op, op.number) for n, op in ops.items()} == {1: ("ADD", None),
                                                               4: ("NONE", None)}


def test_ids_are_stable_through_updates_and_deletes() -> None:
    model = scripted({"extract": "FACT: Mara keeps the lantern in the attic now.",
                      "update": "FACT 1: UPDATE 1: Mara keeps the lantern in the attic."})
    system = seeded(model)
    run(system.observe(Document("n", "Mara moved the lantern.")))
    mem = system.snapshot()["memory"]
    assert mem["facts"][2] == {"id": 3, "text": "Mara keeps the lantern in the attic."}
    system2 = seeded(scripted({"extract": "FACT: The vault of Tirovan was emptied.",
                               "update": "FACT 1: DELETE 1"}))
    run(system2.observe(Document("n", "News.")))
    mem2 = system2.snapshot()["memory"]
    assert [f["id"] for f in mem2["facts"]] == [1, 3] and mem2["next_id"] == 4


def test_duplicates_need_no_call_and_every_other_fact_a_decision() -> None:
    model = scripted({"extract": "FACT: The vault code of Tirovan is 4721.\n"
                                 "FACT: Owls hunt at night.\nFACT: Owls hunt at night.\n"
                                 "not a fact line"})
    system = seeded(model)
    calls = run(system.observe(Chunk("doc", 3, "Owls.")))
    assert [c.key for c in calls] == ["doc/chunk3/extract", "doc/chunk3/update"]
    assert "New facts:\n1. Owls hunt at night.\n\n" in model.requests[-1].messages[1].content
    assert facts(system) == SEEDED  # no fact is stored without its decision (NONE here)
    only_duplicates = seeded(scripted({"extract": "FACT: the vault code of  Tirovan is 4721."}))
    assert [c.key for c in run(only_duplicates.observe(Chunk("doc", 4, "Vault.")))] == [
        "doc/chunk4/extract"]
    limited = seeded(scripted({"extract": "FACT: Owls hunt.\nFACT: Bats fly.\nFACT: Cats nap.",
                               "update": "FACT 1: ADD\nFACT 2: ADD\nFACT 3: ADD"}),
                     max_facts=2)
    run(limited.observe(Chunk("doc", 3, "Animals.")))
    assert facts(limited) == [*SEEDED, "Owls hunt.", "Bats fly."]


def test_an_empty_store_still_asks_for_a_decision() -> None:
    model = scripted({"extract": "FACT: Owls hunt at night.", "update": "FACT 1: ADD"})
    system = Mem0(model)
    calls = run(system.observe(Chunk("doc", 0, "Owls.")))
    assert [c.key for c in calls] == ["doc/chunk0/extract", "doc/chunk0/update"]
    assert "Stored memories:\n" + mem0.NO_MEMORIES in \
        model.requests[-1].messages[1].content
    assert facts(system) == ["Owls hunt at night."]


def test_every_event_kind_is_extracted_once_with_its_own_key() -> None:
    model = scripted({"extract": "NONE"})
    system = Mem0(model)
    for event in MIXED:
        calls = run(system.observe(event))
        assert len(calls) == 1 and calls[0].stage == "update"
    assert [r.key for r in model.requests] == [
        "doc/chunk0/extract", "document/notes/extract", "env-1/step3/extract",
        "online/1/extract", "doc/chunk1/extract"]
    prompts = [r.messages[1].content for r in model.requests]
    assert "Mara went to the kitchen." in prompts[0]
    assert "Result of your last action:\nYou see a locked door" in prompts[2]
    assert "Past task: What is the vault code of Tirovan?" in prompts[3]
    assert facts(system) == []


def test_a_step_shows_request_reply_and_outcome_to_extraction() -> None:
    model = scripted({"extract": "FACT: Pushing the door does nothing.", "update": "FACT 1: ADD"})
    system = Mem0(model)
    run(play_step(system, "i1", 1, "The door does not move."))
    extract = model.of_stage("update")[0].messages[1].content
    assert "Request:\nQuestion: Instance i1, step 1" in extract
    assert 'Reply:\n{"action": "wait"}' in extract
    assert "Result of your last action:\nThe door does not move." in extract
    assert facts(system) == ["Pushing the door does nothing."]
    assert system.snapshot()["memory"]["instance"] == "i1"
    run(play_step(system, "i1", 2, "Done.", done=True))
    assert system.snapshot()["memory"]["turns"] == []  # the instance's conversation is gone


def test_answers_show_the_top_k_most_similar_facts() -> None:
    model = scripted({})
    system = seeded(model, top_k=2)
    for text in ("The red door is painted.", "Tirovan lies north."):
        system._add(text)
    run(system.respond(oaks_prompts.ask(Query("q@1", "Which key opens the red door?"))))
    user = model.requests[-1].messages[-1].content
    section = user.split("\n\n")[0].splitlines()
    assert section[0] == mem0.MEMORIES_HEADER
    assert section[1:] == ["- The red door opens with the brass key.",
                           "- The red door is painted."]
    assert user.endswith(oaks_prompts.question_text(Query("q", "Which key opens the red door?")))


def test_the_search_key_is_the_query_and_the_previous_step() -> None:
    model = scripted({"extract": "NONE"})
    system = seeded(model, top_k=1, retriever="bm25")
    query = oaks_prompts.ask(Query("q@1", "What now?"))
    run(system.respond(query))
    assert mem0.MEMORIES_HEADER not in model.requests[-1].messages[-1].content
    run(play_step(system, "i1", 1, "Mara lights the lantern in the cellar."))
    assert system.last_step.endswith("Mara lights the lantern in the cellar.")
    run(system.respond(query))  # nothing in the query matches; the previous step does
    assert "- Mara keeps the lantern in the cellar." in model.requests[-1].messages[-1].content
    run(play_step(system, "i1", 2, "Done.", done=True))
    assert system.snapshot()["memory"]["last_step"].endswith("Done.\nThis instance is now "
                                                            "complete.")  # kept across the end


def test_probes_change_nothing() -> None:
    model = scripted({"extract": "FACT: probe fact"})
    system = seeded(model)
    before = frozen(system)
    run(system.respond_batch([step_query("i1", 1), task_query(1)]))
    assert frozen(system) == before and model.of_stage("update") == []


def test_snapshot_restore_searches_as_the_original() -> None:
    replies = {"extract": "FACT: The red door sticks when wet.",
               "update": "FACT 1: UPDATE 2: The vault code of Tirovan is 9999."}
    model = scripted(replies)
    system = seeded(model)
    run(system.observe(Chunk("doc", 0, "Rain.")))  # the index is rebuilt after the update
    run(system.observe(verdict(task_query(1), "## Answer: 1", False)))
    state = json.loads(json.dumps(system.snapshot()))
    clone = Mem0(model, retriever="bm25")
    clone.restore(state)
    assert clone.snapshot() == state
    query = oaks_prompts.ask(Query("q@1", "What is the vault code of the red door?"))
    run(system.respond(query))
    run(clone.respond(query))
    assert model.requests[-1].messages == model.requests[-2].messages
    with pytest.raises(DataError, match="next_id"):
        clone.restore({"method": "mem0", "memory": {**state["memory"], "next_id": 2}})
    with pytest.raises(DataError, match="facts"):
        clone.restore({"method": "mem0", "memory": {**state["memory"], "facts": [{"id": 1}]}})


def test_declared_arguments() -> None:
    defaults = {k: p.default for k, p in Mem0.params.items()}
    assert defaults["top_k"] == 10 and defaults["retriever"] == "auto"
    with pytest.raises(SpecError, match="retriever"):
        Mem0(Scripted(), retriever="nope")
    assert Mem0(Scripted()).describe()["name"] == "mem0"


def test_the_retriever_is_resolved_when_built_and_recorded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from clstream.core.specs import ComponentSpec
    from clstream.driver.components import recorded_system
    from clstream.systems import mem0 as mem0_module

    for installed in ("dense", "bm25"):
        monkeypatch.setattr(mem0_module, "installed_retriever", lambda name=installed: name)
        assert Mem0(Scripted()).describe()["args"]["retriever"] == installed
        assert Mem0(Scripted(), retriever="bm25").args["retriever"] == "bm25"
        spec = recorded_system(ComponentSpec(name="mem0", args={}))
        assert spec.args == {"retriever": installed}
    assert recorded_system(ComponentSpec(name="icl", args={})).args == {}


@pytest.mark.parametrize(("text", "op"), [
    ("ADD", ("ADD", None, "")),
    ("- UPDATE #2: merged text.", ("UPDATE", 2, "merged text.")),
    ("NONE.", ("NONE", None, "")),
    ("DELETE 3", None),  # only two shown
    ("ADDITIONAL thoughts", None),
])
def test_parse_memory_op(text: str, op: tuple[str, int | None, str] | None) -> None:
    parsed = mem0.parse_memory_op(text, 2)
    if op is None:
        assert parsed is None
    else:
        assert parsed is not None and (parsed.op, parsed.number, parsed.text) == op




def test_a_failed_call_changes_nothing() -> None:
    class Failing(Scripted):
        async def generate(self, requests):  # type: ignore[no-untyped-def]
            out = await super().generate(requests)
            return [r.model_copy(update={"error": "server down", "samples": []})
                    if r.key.endswith("/update") else r for r in out]

    model = Failing(lambda r: "FACT: The red door is wet.\nFACT: The vault code is 1."
                    if r.key.endswith("/extract") else "FACT 1: ADD\nFACT 2: ADD")
    system = seeded(model)
    calls = run(system.observe(Chunk("doc", 0, "Rain.")))
    assert [c.key for c in calls] == ["doc/chunk0/extract", "doc/chunk0/update"]
    assert calls[-1].error == "server down" and facts(system) == SEEDED
