"""notepad: the reply's notepad block replaces the notepad when its outcome is observed, the
conversation is cleared at every instance boundary, the notepad and the closing feedback are
shown at the next; probes change nothing; snapshots resume at a boundary."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conversation_fakes import (
    INSTRUCTIONS,
    MIXED,
    Scripted,
    frozen,
    obs,
    play_step,
    run,
    step_query,
    task_query,
    verdict,
)

from clstream.core import layout
from clstream.core.errors import DataError
from clstream.core.events import Chunk, Document
from clstream.core.types import Query
from clstream.models.builtin import BuiltinReader
from clstream.protocols.oaks import prompts as oaks_prompts
from clstream.protocols.seqmem import prompts as seqmem_prompts
from clstream.systems import notepad
from clstream.systems.notepad import Notepad

ACT = '{"action": "push"}'


def memory(system: Notepad) -> dict[str, Any]:
    state: dict[str, Any] = system.snapshot()["memory"]
    return state


def reply(notes: str | None, action: str = ACT) -> str:
    block = "" if notes is None else f"<notepad>\n{notes}\n</notepad>\n"
    return f"Thinking it over.\n{block}{action}"


@pytest.mark.parametrize(("text", "answer", "notes"), [
    ("a\n<notepad>\nkeep this\n</notepad>\nb", "a\n\nb", "keep this"),
    ("<notepad>one</notepad> x <NOTEPAD>\ntwo\n</NOTEPAD>", "x", "two"),
    ("a\n```\n<notepad>\nfenced\n</notepad>\n```\nb", "a\n\nb", "fenced"),
    ("```python\nx = 1\n```\n<notepad></notepad>", "```python\nx = 1\n```", ""),
    ("a <notepad> never closed", "a <notepad> never closed", None),
    ("no block at all", "no block at all", None),
])
def test_split_notepad(text: str, answer: str, notes: str | None) -> None:
    assert notepad.split_notepad(text) == (answer, notes)


def test_the_block_replaces_the_notepad_when_the_outcome_arrives() -> None:
    model = Scripted(generate=[reply("door 1 needs the key"), reply(None), reply(""),
                               reply("fresh notes")])
    system = Notepad(model)
    response = run(system.respond(step_query("i1", 1)))
    assert response.text == "Thinking it over.\n\n" + ACT  # the protocol never sees the block
    assert memory(system)["notepad"] == ""  # respond changes nothing ...
    run(system.observe(obs("i1", 1, "The door is stuck.")))
    assert memory(system)["notepad"] == "door 1 needs the key"  # ... the outcome does
    run(play_step(system, "i1", 2, "Still stuck."))  # no block: kept
    assert memory(system)["notepad"] == "door 1 needs the key"
    run(play_step(system, "i1", 3, "Opened.", done=True))  # an empty block empties it
    assert memory(system)["notepad"] == ""
    run(play_step(system, "i2", 1, "A hall."))
    assert memory(system)["notepad"] == "fresh notes"


def test_messages_are_cleared_at_each_boundary_and_notes_shown_at_the_next() -> None:
    model = Scripted(generate=[reply("key opens door 1"), reply(None), reply(None),
                               reply(None)])
    system = Notepad(model)
    run(play_step(system, "i1", 1, "The door is stuck."))
    assert memory(system)["instance"] == "i1" and len(memory(system)["turns"]) == 3
    run(play_step(system, "i1", 2, "The door opens. Score 0.7.", done=True))
    assert memory(system)["turns"] == [] and memory(system)["instance"] is None
    assert memory(system)["carry"] == "The door opens. Score 0.7."
    run(system.respond(step_query("i2", 1)))
    request = model.requests[-1]
    assert [m.role for m in request.messages] == ["system", "user"]  # nothing of i1
    assert request.messages[0].content == INSTRUCTIONS + "\n\n" + notepad.NOTEPAD_RULES
    assert request.messages[1].content == (
        f"{notepad.CARRY_HEADER}\nThe door opens. Score 0.7.\n\n"
        f"{notepad.NOTEPAD_HEADER}\nkey opens door 1\n\n"
        + layout.prompt_of(step_query("i2", 1)))
    # an observation of another instance also starts afresh
    run(system.observe(obs("i2", 1, "A hall.")))
    run(play_step(system, "i3", 1, "A cellar."))
    assert memory(system)["instance"] == "i3" and len(memory(system)["turns"]) == 3
    assert "A hall." not in json.dumps(memory(system)["turns"])


def test_feedback_closes_an_instance_and_is_carried_as_an_experience_block() -> None:
    model = Scripted(generate=["<notepad>codes are four digits</notepad>\n## Answer: 12"])
    system = Notepad(model)
    q = seqmem_prompts.ask(task_query(1))
    response = run(system.respond(q))
    assert response.text == "## Answer: 12"
    run(system.observe(verdict(q, response.text, False)))
    mem = memory(system)
    assert mem["notepad"] == "codes are four digits" and mem["turns"] == []
    assert mem["carry"] == layout.experience_block(layout.Experience(
        q.text, "## Answer: 12", "Incorrect. Correct answer: 4721.", False)).strip()
    # with no reply waiting, the feedback's own answer carries the block
    other = Notepad(Scripted())
    run(other.observe(verdict(task_query(2), "<notepad>from feedback</notepad>\n## Answer: 3",
                              True)))
    assert memory(other)["notepad"] == "from feedback"
    assert "Answer given: 3" in memory(other)["carry"]


def test_chunk_streams_and_documents_are_instances_of_their_own() -> None:
    system = Notepad(Scripted())
    for event in MIXED:
        assert run(system.observe(event)) == []
    mem = memory(system)
    assert mem["instance"] == "chunk:doc"  # the feedback ended its instance; doc 1 opens one
    assert mem["turns"] == [{"role": "user", "text": layout.passage_block(1, "Tobin picked up "
                                                                             "the lantern.")}]
    run(system.observe(Chunk("doc", 2, "Tobin went home.")))
    assert len(memory(system)["turns"]) == 2
    run(system.observe(Chunk("other", 0, "A new story.")))
    assert memory(system)["instance"] == "chunk:other" and len(memory(system)["turns"]) == 1
    run(system.observe(Document("a", "First note.")))
    run(system.observe(Document("b", "Second note.")))
    assert memory(system)["instance"] == "documents" and len(memory(system)["turns"]) == 2


def test_probes_change_nothing_and_their_blocks_are_never_applied() -> None:
    model = Scripted(generate=[reply("probe notes")] * 4)
    system = Notepad(model)
    run(system.observe(Chunk("doc", 0, "Mara went to the kitchen.")))
    before = frozen(system)
    run(system.respond_batch([oaks_prompts.ask(Query(f"q{i}@1", "Where is Mara?"))
                              for i in range(3)]))
    assert frozen(system) == before
    run(system.observe(Chunk("doc", 1, "Mara went to the cellar.")))
    assert memory(system)["notepad"] == ""


def test_snapshot_mid_instance_restores_the_conversation() -> None:
    model = Scripted(generate=[reply("note A"), reply(None), reply(None), reply(None)])
    system = Notepad(model, budget=5000)
    run(play_step(system, "i1", 1, "Stuck.", done=True))
    run(play_step(system, "i2", 1, "A hall."))
    state = json.loads(json.dumps(system.snapshot()))
    assert state["memory"]["notepad"] == "note A" and state["memory"]["instance"] == "i2"
    run(system.respond(step_query("i2", 2)))
    first = [(m.role, m.content) for m in model.requests[-1].messages]
    clone = Notepad(model, budget=5000)
    clone.restore(state)
    assert clone.snapshot() == state
    run(clone.respond(step_query("i2", 2)))
    assert [(m.role, m.content) for m in model.requests[-1].messages] == first
    with pytest.raises(DataError, match="notepad"):
        clone.restore({"method": "notepad", "memory": {**state["memory"], "notepad": None}})
    with pytest.raises(DataError, match="instance"):
        clone.restore({"method": "notepad", "memory": {**state["memory"], "instance": 3}})


def test_the_builtin_reader_uses_the_stream_and_the_carried_feedback() -> None:
    system = Notepad(BuiltinReader())
    run(system.observe(Chunk("doc", 0, "Mara went to the kitchen.")))
    run(system.observe(Chunk("doc", 1, "Mara went to the cellar.")))
    answer = run(system.respond(oaks_prompts.ask(Query("q@2", "Where is Mara?")))).text
    assert answer.endswith("## Answer: cellar")
    q = seqmem_prompts.ask(task_query(1))
    first = run(system.respond(q))
    run(system.observe(verdict(q, first.text, False)))
    again = seqmem_prompts.ask(Query("holdout/x@1", q.text, kind="synthetic"))
    assert run(system.respond(again)).text.endswith("## Answer: 4721")


def test_notes_open_the_conversation_so_each_outcome_reads_on_its_own() -> None:
    model = Scripted(generate=[reply("note A"), reply(None), reply(None), reply(None)])
    system = Notepad(model)
    run(play_step(system, "i1", 1, "Closed.", done=True))
    run(play_step(system, "i2", 1, "A hall."))
    run(system.respond(step_query("i2", 2)))
    roles_and_texts = [(m.role, m.content) for m in model.requests[-1].messages]
    assert [r for r, _ in roles_and_texts] == ["system", "user", "assistant", "user"]
    assert roles_and_texts[1][1] == (f"{notepad.CARRY_HEADER}\nClosed.\n\n"
                                     f"{notepad.NOTEPAD_HEADER}\nnote A\n\n"
                                     + layout.prompt_of(step_query("i2", 1)))
    assert roles_and_texts[3][1] == ("Result of your last action:\nA hall.\n\n"
                                     + layout.prompt_of(step_query("i2", 2)))
