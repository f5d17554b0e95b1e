"""icl: the whole run as one conversation -- turns per event kind, the oldest dropped only at the
budget, probes never in memory, per-request seeds, snapshots."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conversation_fakes import (
    INSTRUCTIONS,
    MIXED,
    Scripted,
    contents,
    frozen,
    obs,
    play_step,
    run,
    step_query,
    task_query,
    verdict,
)

from clstream.core import layout
from clstream.core.errors import DataError, SpecError
from clstream.core.events import Chunk, Document, Observation
from clstream.core.specs import derive_seed
from clstream.core.types import Query
from clstream.models.builtin import BuiltinReader
from clstream.protocols.oaks import prompts as oaks_prompts
from clstream.protocols.seqmem import prompts as seqmem_prompts
from clstream.systems import notepad
from clstream.systems.ace import Ace
from clstream.systems.conversation import ConversationMethod, Turn
from clstream.systems.conversation import prompts as conversation_prompts
from clstream.systems.icl import Icl
from clstream.systems.mem0 import Mem0
from clstream.systems.notepad import Notepad


def texts(system: Icl) -> list[tuple[str, str]]:
    return [(t["role"], t["text"]) for t in system.snapshot()["memory"]["turns"]]


def test_each_method_fingerprints_the_shared_templates_and_its_own(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``prompt_template_hash`` of a conversation method covers the shared wording and the
    prompts in the method's own module, so a change to either tells prompt versions apart."""
    hashes = {cls.name: cls(Scripted()).describe()["prompt_template_hash"]
              for cls in (Icl, Notepad, Mem0, Ace)}
    assert len(set(hashes.values())) == 4
    assert hashes["notepad"] == conversation_prompts.template_fingerprint(
        [("NOTEPAD_RULES", notepad.NOTEPAD_RULES), ("NOTEPAD_HEADER", notepad.NOTEPAD_HEADER),
         ("CARRY_HEADER", notepad.CARRY_HEADER)])
    monkeypatch.setitem(Notepad.templates, "NOTEPAD_HEADER", "Notes:")
    assert Notepad(Scripted()).describe()["prompt_template_hash"] != hashes["notepad"]
    assert Icl(Scripted()).describe()["prompt_template_hash"] == hashes["icl"]


def test_declared_arguments() -> None:
    assert Icl.params["budget"].default == 120_000 and Icl.params["reserve"].default == 500
    system = Icl(Scripted(), budget=900)
    assert system.describe()["args"] == {"budget": 900, "reserve": 500}
    assert system.describe()["prompt_template_hash"] == conversation_prompts.template_fingerprint()
    with pytest.raises(SpecError, match="unknown argument"):
        Icl(Scripted(), k=3)
    with pytest.raises(SpecError, match=">= 1"):
        Icl(Scripted(), budget=0)


def test_environment_steps_become_request_reply_result_turns_across_instances() -> None:
    model = Scripted(generate=['{"action": "push"}', '{"action": "key"}', '{"action": "look"}'])
    system = Icl(model)
    assert run(play_step(system, "i1", 1, "The door does not move.")) == []
    run(play_step(system, "i1", 2, "The door opens.", done=True))
    run(play_step(system, "i2", 1, "A second door."))
    q1, q2, q3 = (layout.prompt_of(step_query(i, s)) for i, s in (("i1", 1), ("i1", 2), ("i2", 1)))
    assert texts(system) == [
        ("user", q1), ("assistant", '{"action": "push"}'),
        ("user", "Result of your last action:\nThe door does not move."),
        ("user", q2), ("assistant", '{"action": "key"}'),
        ("user",
         "Result of your last action:\nThe door opens.\n" + conversation_prompts.INSTANCE_DONE),
        ("user", q3), ("assistant", '{"action": "look"}'),
        ("user", "Result of your last action:\nA second door."),
    ]
    run(system.respond(step_query("i2", 2)))
    request = model.requests[-1]
    roles = [m.role for m in request.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant",
                     "user"]  # consecutive user turns merged: roles alternate
    assert request.messages[0].content == INSTRUCTIONS
    assert request.messages[3].content == (
        "Result of your last action:\nThe door does not move.\n\n" + q2)
    assert request.messages[-1].content.endswith(layout.prompt_of(step_query("i2", 2)))
    assert request.stage == "generate" and request.key == "i2/step2"


def test_feedback_becomes_task_answer_verdict_and_falls_back_on_the_event() -> None:
    model = Scripted(generate=["thinking\n## Answer: 12"])
    system = Icl(model)
    q = seqmem_prompts.ask(task_query(1))
    run(system.respond(q))
    run(system.observe(verdict(q, "thinking\n## Answer: 12", False)))
    (user, task), (assistant, answer), (user2, said) = texts(system)
    assert (user, task) == ("user", q.prompt)
    assert (assistant, answer) == ("assistant", "thinking\n## Answer: 12")
    assert said.startswith(conversation_prompts.FEEDBACK_HEADER
                           + "\nPast task: What is the vault code of Tirovan?")
    assert "Answer given: 12\nOutcome: wrong\nFeedback: Incorrect. Correct answer: 4721." in said
    # no reply waiting (a restored system): the event's own task and answer stand in
    other = Icl(Scripted())
    run(other.observe(verdict(task_query(2), "## Answer: 3", True)))
    assert [role for role, _ in texts(other)] == ["user", "assistant", "user"]
    assert texts(other)[0][1].startswith("Question: What is the vault code of Tirovan?")
    assert texts(other)[1][1] == "## Answer: 3" and "Outcome: correct" in texts(other)[2][1]


def test_every_event_kind_is_taken_in_without_model_calls() -> None:
    model = Scripted()
    system = Icl(model)
    for event in MIXED:
        assert run(system.observe(event)) == []
    assert model.requests == []
    turns = texts(system)
    assert turns[0] == ("user", layout.passage_block(0, "Mara went to the kitchen."))
    assert turns[1] == ("user", layout.passage_block(1, "The harbour bells rang at dusk."))
    assert turns[2][1].startswith("Result of your last action:\nYou see a locked door")
    assert [r for r, _ in turns[3:6]] == ["user", "assistant", "user"]  # feedback, no reply
    assert turns[-1] == ("user", layout.passage_block(1, "Tobin picked up the lantern."))
    assert system.snapshot()["memory"]["next_index"] == 2
    run(system.observe(Document("more", "A later note.")))
    assert texts(system)[-1] == ("user", layout.passage_block(2, "A later note."))


def test_probes_never_change_memory_nor_enter_it_later() -> None:
    model = Scripted(generate=["PROBE REPLY"] * 5)
    system = Icl(model)
    run(system.observe(Chunk("doc", 0, "Mara went to the kitchen.")))
    before = frozen(system)
    run(system.respond(oaks_prompts.ask(Query("q@1", "Where is Mara?"))))
    run(system.respond_batch([oaks_prompts.ask(Query(f"p{i}@1", "Where?")) for i in range(3)]))
    assert frozen(system) == before
    run(system.observe(Chunk("doc", 1, "Mara went to the cellar.")))
    assert all("PROBE" not in text for _, text in texts(system))
    # a reply to one instance is not the outcome of another's observation
    run(system.respond(step_query("i1", 1)))
    run(system.observe(obs("i2", 1, "Elsewhere.")))
    assert all("PROBE" not in text for _, text in texts(system))
    assert texts(system)[-1] == ("user", "Result of your last action:\nElsewhere.")


def test_memory_keeps_the_newest_turns_that_fit_and_drops_only_past_the_budget() -> None:
    model = Scripted()
    count = model.tokenizer.count
    chunks = [f"Passage {i}: the item {i} lies in room {i} of the house." for i in range(10)]
    blocks = [count(layout.passage_block(i, t)) for i, t in enumerate(chunks)]
    whole = Icl(model, budget=10 + sum(blocks), reserve=10)
    cut = Icl(model, budget=10 + sum(blocks[-4:]), reserve=10)
    tight = Icl(model, budget=10 + sum(blocks[-4:]) + blocks[5] - 1, reserve=10)
    for system in (whole, cut, tight):
        for i, text in enumerate(chunks):
            run(system.observe(Chunk("doc", i, text)))
    assert len(texts(whole)) == 10  # exactly at the budget: nothing dropped
    expected = [("user", layout.passage_block(i, chunks[i])) for i in range(6, 10)]
    assert texts(cut) == expected and texts(tight) == expected


def test_a_request_leaves_out_the_oldest_turns_its_own_text_needs() -> None:
    model = Scripted()
    count = model.tokenizer.count
    chunks = [f"Passage {i}: the item {i} lies in room {i} of the house." for i in range(6)]
    blocks = [count(layout.passage_block(i, t)) for i, t in enumerate(chunks)]
    query = oaks_prompts.ask(Query("q@6", "Where is item 2?"))
    fixed = count(oaks_prompts.SYSTEM_PROMPT) + count(query.prompt)
    system = Icl(model, budget=fixed + sum(blocks[-3:]), reserve=0)
    for i, text in enumerate(chunks):
        run(system.observe(Chunk("doc", i, text)))
    assert len(texts(system)) == 6  # memory holds them all ...
    run(system.respond(query))
    (_, sys_msg), (_, user) = contents(model.requests[-1])
    assert sys_msg == oaks_prompts.SYSTEM_PROMPT
    assert user == "".join(layout.passage_block(i, chunks[i]) for i in (3, 4, 5)) + query.prompt
    assert len(texts(system)) == 6  # ... and the request did not change it


def test_a_cut_never_opens_with_a_reply() -> None:
    turns = [Turn("user", "a", 5), Turn("assistant", "b", 5), Turn("user", "c", 5)]
    assert ConversationMethod._fitting(turns, 15) == turns
    assert ConversationMethod._fitting(turns, 10) == turns[2:]
    assert ConversationMethod._fitting(turns, 4) == []


def test_seeds_come_from_the_query_id_whatever_the_batch() -> None:
    model = Scripted()
    system = Icl(model, seed=7)
    run(system.observe(Chunk("doc", 0, "Mara went to the kitchen.")))
    a, b = (oaks_prompts.ask(Query(f"{x}@1", "Where is Mara?")) for x in "ab")
    run(system.respond_batch([a, b]))
    first = {r.key: r for r in model.requests}
    model.requests.clear()
    run(system.respond(b))
    run(system.respond(a))
    assert {r.key: r for r in model.requests} == first
    assert first["a@1"].params.seed == derive_seed(7, "a@1")
    response = run(system.respond(a))
    assert response.usage.prompt_tokens == 5 and set(response.timings) == {
        "retrieve", "generate", "update"}
    assert [r.stage for r in response.results] == ["generate"]


def test_snapshot_restore_round_trip() -> None:
    model = Scripted(generate=['{"action": "push"}'] * 3)
    system = Icl(model, budget=4000)
    for event in MIXED:
        run(system.observe(event))
    run(play_step(system, "i9", 1, "Nothing happens."))
    state = json.loads(json.dumps(system.snapshot()))
    run(system.respond(step_query("i9", 2)))
    first = contents(model.requests[-1])
    clone = Icl(model, budget=4000)
    clone.restore(state)
    assert clone.snapshot() == state
    run(clone.respond(step_query("i9", 2)))
    assert contents(model.requests[-1]) == first
    run(clone.reset())
    assert clone.snapshot()["memory"] == {"turns": [], "next_index": 0}


@pytest.mark.parametrize("memory", [
    {"turns": [{"role": "system", "text": "x"}], "next_index": 0},
    {"turns": [], "next_index": -1},
    {"turns": "nope", "next_index": 0},
])
def test_restore_rejects_malformed_snapshots(memory: dict[str, Any]) -> None:
    with pytest.raises(DataError):
        Icl(Scripted()).restore({"method": "icl", "memory": memory})
    with pytest.raises(DataError, match="method"):
        Icl(Scripted()).restore({"method": "notepad", "memory": {"turns": [], "next_index": 0}})


def test_the_builtin_reader_answers_from_the_conversation() -> None:
    system = Icl(BuiltinReader())
    run(system.observe(Chunk("doc", 0, "Mara went to the kitchen.")))
    run(system.observe(Chunk("doc", 1, "Mara went to the cellar.")))
    answer = run(system.respond(oaks_prompts.ask(Query("q@2", "Where is Mara?")))).text
    assert answer.endswith("## Answer: cellar")
    q = seqmem_prompts.ask(task_query(1))
    first = run(system.respond(q))
    assert not first.text.endswith("4721")
    run(system.observe(verdict(q, first.text, False)))
    again = seqmem_prompts.ask(Query("holdout/x@1", q.text, kind="synthetic"))
    assert run(system.respond(again)).text.endswith("## Answer: 4721")


def action_query(instance: str, step: int, text: str) -> Query:
    body = f"Instance {instance}, step {step}\n{text}"
    return Query(id=f"{instance}/step{step}", text=body, kind="action",
                 meta={"instance_id": instance}, instructions=INSTRUCTIONS,
                 prompt=layout.action_block(body, "door_world", "Reply with one JSON object."))


def test_the_transcript_reads_back_as_environment_steps() -> None:
    model = Scripted(generate=['Thinking.\n{"action": "push"}', '{"action": "key"}'])
    system = Icl(model)
    first, second = action_query("i1", 1, "A door."), action_query("i2", 1, "Another door.")
    run(system.respond(first))
    run(system.observe(obs("i1", 1, "It opens.", done=True)))
    run(system.respond(second))  # the event's action is what the environment received
    run(system.observe(Observation("i2", 1, "Locked.", done=True, query=second.text,
                                   action='{"action": "key"}')))
    run(system.respond(action_query("i3", 1, "A third door.")))
    steps = layout.transcript_steps(model.requests[-1].messages)
    assert [(s.observation, s.action, s.feedback) for s in steps] == [
        (first.text, 'Thinking.\n{"action": "push"}',
         "It opens.\n" + conversation_prompts.INSTANCE_DONE),
        (second.text, '{"action": "key"}', "Locked.\n" + conversation_prompts.INSTANCE_DONE)]


def test_an_observation_without_a_waiting_reply_keeps_what_it_carries() -> None:
    system = Icl(Scripted(generate=['{"action": "first"}', '{"action": "again"}']))
    run(system.observe(Observation("i1", 1, "Seen.", query="A door.",
                                   action='{"action": "push"}')))
    assert texts(system) == [("user", "A door."), ("assistant", '{"action": "push"}'),
                             ("user", "Result of your last action:\nSeen.")]
    # a repaired step: the latest reply of the instance is the one the outcome answers
    q = step_query("i2", 1)
    run(system.respond(q))
    repair = Query(id=q.id + "#repair", text=q.text, kind=q.kind, meta=dict(q.meta),
                   instructions=q.instructions, prompt=q.prompt + "\n\nNote: reply in JSON.")
    run(system.respond(repair))
    run(system.observe(obs("i2", 1, "Done.", done=True)))
    assert texts(system)[3:5] == [("user", repair.prompt), ("assistant", '{"action": "again"}')]
