"""ace: replies name the bullets they used on a line of their own (cut out, kept as a field);
the reflector tags those bullets (counters) and draws lessons at each instance end, the curator
adds deduplicated bullets to sections within its token budget; the whole playbook is shown by
section, most helpful first; texts are passages; probes change nothing; snapshots round-trip."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conversation_fakes import (
    INSTRUCTIONS,
    MIXED,
    Scripted,
    frozen,
    play_step,
    run,
    step_query,
    task_query,
    verdict,
)

from clstream.core import layout
from clstream.core.errors import DataError
from clstream.core.events import Chunk
from clstream.core.types import GenerationRequest, Query
from clstream.models.builtin import BuiltinReader
from clstream.protocols.oaks import prompts as oaks_prompts
from clstream.protocols.seqmem import prompts as seqmem_prompts
from clstream.systems import ace
from clstream.systems.ace import Ace, Bullet, near_duplicate


def scripted(reflect: str = "", curate: str = "", answer: str = '{"action": "wait"}'
             ) -> Scripted:
    def reply(request: GenerationRequest) -> str:
        if request.stage == "generate":
            return answer
        return reflect if request.key.endswith("/reflect") else curate
    return Scripted(reply)


def with_bullets(model: Scripted, *bullets: tuple[str, int, int], **args: Any) -> Ace:
    system = Ace(model, **args)
    for n, (text, helpful, harmful) in enumerate(bullets, 1):
        system.bullets.append(Bullet(f"b{n}", text, helpful, harmful))
    system.next_id = len(bullets) + 1
    return system


def sections(system: Ace) -> list[str]:
    return [b["section"] for b in system.snapshot()["memory"]["bullets"]]


def bullets(system: Ace) -> list[tuple[str, str, int, int]]:
    return [(b["id"], b["text"], b["helpful"], b["harmful"])
            for b in system.snapshot()["memory"]["bullets"]]


def test_the_reflector_counts_only_used_bullets_at_the_instance_end() -> None:
    model = scripted(reflect="TAG b1: helpful\nTAG [b2] harmful\nTAG b3: helpful\n"
                             "TAG b1: harmful\nno tag here",
                     answer="Using [b3], I push.\n{\"action\": \"push\"}\n"
                            "Bullets used: b1, b2, b9")
    system = with_bullets(model, ("Push doors first.", 0, 0), ("Keys are useless.", 1, 0),
                          ("Look around.", 0, 0))
    assert run(play_step(system, "i1", 1, "It moves a little.")) == []  # not an instance end
    calls = run(play_step(system, "i1", 2, "The door opens.", done=True))
    assert [c.key for c in calls] == ["i1/step2/reflect"]  # no lesson: no curator call
    assert bullets(system) == [("b1", "Push doors first.", 1, 0),
                               ("b2", "Keys are useless.", 1, 1),
                               ("b3", "Look around.", 0, 0)]  # b3 was not named as used
    prompt = model.of_stage("update")[0].messages[1].content
    assert "[b1] (helpful 0, harmful 0) Push doors first." in prompt
    assert "Look around." not in prompt
    assert "[The agent replied]\nUsing [b3], I push.\n{\"action\": \"push\"}\n\n" in prompt
    assert "Bullets used" not in prompt  # the field is cut out of the reply kept
    assert "Result of your last action:\nThe door opens." in prompt
    assert "judged" not in prompt  # an environment's reward is never shown
    assert system.snapshot()["memory"]["turns"] == []


def test_the_curator_adds_deduplicated_bullets_from_the_lessons() -> None:
    model = scripted(reflect="LESSON: Try the brass key before pushing.\nLESSON: Doors stick.",
                     curate="ADD strategies: Try the brass key before pushing a door.\n"
                            "ADD: push doors first\nnot an addition\n"
                            "ADD (mistakes): Stuck doors open with the brass key.\n"
                            "ADD: Stuck doors open with the brass key!")
    system = with_bullets(model, ("Push doors first.", 2, 0))
    calls = run(play_step(system, "i1", 1, "Opened.", done=True))
    assert [c.key for c in calls] == ["i1/step1/reflect", "i1/step1/curate"]
    assert bullets(system) == [("b1", "Push doors first.", 2, 0),
                               ("b2", "Try the brass key before pushing a door.", 0, 0),
                               ("b3", "Stuck doors open with the brass key.", 0, 0)]
    assert sections(system) == ["other", "strategies", "mistakes"]
    curate = model.of_stage("update")[1].messages[1].content
    assert "- Try the brass key before pushing.\n- Doors stick." in curate
    assert "[b1] (helpful 2, harmful 0) Push doors first." in curate
    assert "Request that opened the instance:\nQuestion: Instance i1, step 1" in curate
    assert system.snapshot()["memory"]["next_id"] == 4
    capped = with_bullets(scripted(reflect="LESSON: x", curate="ADD: one\nADD: two\nADD: three"),
                          max_new=2)
    run(play_step(capped, "i1", 1, "Done.", done=True))
    assert [b[1] for b in bullets(capped)] == ["one", "two"]


def test_feedback_ends_an_instance_and_shows_the_verdict() -> None:
    model = scripted(reflect="LESSON: Vault codes are four digits.", curate="ADD: Codes: 4 digits.",
                     answer="## Answer: 12")
    system = Ace(model)
    q = seqmem_prompts.ask(task_query(1))
    run(system.respond(q))
    calls = run(system.observe(verdict(q, "## Answer: 12", False)))
    assert [c.key for c in calls] == ["online/1/reflect", "online/1/curate"]
    reflect = model.of_stage("update")[0].messages[1].content
    assert ace.OUTCOME_TEMPLATE.format(outcome="wrong") in reflect
    assert bullets(system) == [("b1", "Codes: 4 digits.", 0, 0)]


def test_the_whole_playbook_is_shown_by_section_most_helpful_first() -> None:
    model = scripted()
    rows = [("Rarely right.", 1, 3), ("Often right.", 5, 1), ("New idea.", 0, 0),
            ("Also often right.", 5, 1), ("Right sometimes.", 2, 0)]
    system = with_bullets(model, *rows, playbook_tokens=1)  # the budget never hides a bullet
    system.bullets[2].section = system.bullets[4].section = "mistakes"
    assert [b.id for b in system.ranked()] == ["b2", "b4", "b5", "b3", "b1"]
    run(system.respond(step_query("i1", 1)))
    system_msg, user = (m.content for m in model.requests[-1].messages)
    assert system_msg == INSTRUCTIONS + "\n\n" + ace.PLAYBOOK_RULES
    by_id = {b.id: b.line() for b in system.bullets}
    playbook = "\n".join([ace.PLAYBOOK_HEADER,
                          "## Mistakes to avoid (mistakes)", by_id["b5"], by_id["b3"],
                          "## Other (other)", by_id["b2"], by_id["b4"], by_id["b1"]])
    assert user == playbook + "\n\n" + layout.prompt_of(step_query("i1", 1))


def test_the_curator_is_told_the_budget_and_keeps_the_playbook_within_it() -> None:
    model = scripted(reflect="LESSON: x", curate="ADD clues: A short one.\n"
                     "ADD clues: " + " ".join(f"word{n}" for n in range(200)) + "\n"
                     "ADD: Another short one.")
    budget = model.tokenizer.count(
        "## Clues and indicators to look for (clues)\n[b1] (helpful 0, harmful 0) A short one."
        "\n## Other (other)\n[b2] (helpful 0, harmful 0) Another short one.")
    system = Ace(model, playbook_tokens=budget)
    run(play_step(system, "i1", 1, "Done.", done=True))
    assert bullets(system) == [("b1", "A short one.", 0, 0), ("b2", "Another short one.", 0, 0)]
    assert system.playbook_tokens() <= budget
    curate = model.of_stage("update")[1].messages[1].content
    assert f"at most {budget} tokens and holds 0 now" in curate


def test_split_bullets_used() -> None:
    split = ace.split_bullets_used
    assert split('{"a": 1}\nBullets used: b1, [b4], b1') == ('{"a": 1}', ["b1", "b4"])
    assert split("x\n- bullets used: none") == ("x", [])
    assert split("no field") == ("no field", [])


def test_texts_are_passages_and_never_reach_the_reflector() -> None:
    model = scripted()
    system = Ace(model, k=1)
    for event in MIXED:
        run(system.observe(event))
    assert [r.key for r in model.requests] == ["env-1/step3/reflect", "online/1/reflect"]
    texts = system.snapshot()["memory"]["texts"]
    assert [t.get("kind", "chunk") for t in texts] == ["chunk", "document", "chunk"]
    run(system.respond(oaks_prompts.ask(Query("q@9", "When did the harbour bells ring?"))))
    user = model.requests[-1].messages[-1].content
    assert user.startswith(layout.passages_section([(1, "The harbour bells rang at dusk.")]))


def test_probes_change_nothing_and_a_restored_playbook_answers_alike() -> None:
    model = scripted(reflect="TAG b1: helpful\nLESSON: keep going", curate="ADD: Keep going.",
                     answer="{\"action\": \"go\"}\nBullets used: b1")
    system = with_bullets(model, ("Go north.", 0, 0))
    run(system.observe(Chunk("doc", 0, "A map of the north.")))
    run(play_step(system, "i1", 1, "Done.", done=True))
    run(play_step(system, "i2", 1, "A hall."))
    before = frozen(system)
    run(system.respond_batch([step_query("i2", 2), step_query("i2", 2, "Another view.")]))
    assert frozen(system) == before
    state = json.loads(json.dumps(system.snapshot()))
    assert state["memory"]["instance"] == "i2" and len(state["memory"]["turns"]) == 3
    assert state["memory"]["used"] == ["b1"]
    clone = Ace(model)
    clone.restore(state)
    assert clone.snapshot() == state
    run(system.respond(step_query("i2", 2)))
    run(clone.respond(step_query("i2", 2)))
    assert model.requests[-1].messages == model.requests[-2].messages
    with pytest.raises(DataError, match="bullets"):
        clone.restore({"method": "ace", "memory": {**state["memory"], "bullets": [{"id": "x"}]}})
    with pytest.raises(DataError, match="next_id"):
        clone.restore({"method": "ace", "memory": {**state["memory"], "next_id": 1}})


def test_near_duplicates() -> None:
    assert near_duplicate("Push doors first.", "push doors FIRST", 0.8)
    assert not near_duplicate("Push doors first.", "Pull doors last.", 0.8)
    assert near_duplicate("!!", "!!", 0.8)


def test_the_builtin_reader_answers_from_passages() -> None:
    system = Ace(BuiltinReader())
    run(system.observe(Chunk("doc", 0, "Mara went to the kitchen.")))
    run(system.observe(Chunk("doc", 1, "Mara went to the cellar.")))
    answer = run(system.respond(oaks_prompts.ask(Query("q@2", "Where is Mara?")))).text
    assert answer.endswith("## Answer: cellar")
