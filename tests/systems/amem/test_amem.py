"""amem: one note-construction call and one link call per event, strict line replies, links
both ways, neighbour evolution re-indexed in place, failed calls recorded with memory whole,
probes change nothing, snapshots round-trip, answers show retrieved and linked notes; the
builtin model answers through it, over a loopback server too, and a killed run resumes to the
records of an uninterrupted one."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conversation_fakes import Scripted, run
from fake_openai_server import PolicyServer
from killed_runs import whole_and_resumed

from clstream.cli import main as cli
from clstream.core import layout
from clstream.core.errors import DataError
from clstream.core.events import Chunk, Document, Feedback, Observation
from clstream.core.types import GenerationRequest, GenerationResult, Query
from clstream.models.builtin import BuiltinReader
from clstream.systems.amem import AMem
from clstream.systems.amem import formats as amem_format

SEEDED = ["The red door opens with the brass key.", "The vault code of Tirovan is 4721.",
          "Mara keeps the lantern in the cellar."]
NOTE = "KEYWORDS: red door, key\nTAGS: doors\nCONTEXT: A door that sticks."


def scripted(note: str = NOTE, link: str = "NONE") -> Scripted:
    def reply(request: GenerationRequest) -> str:
        if request.stage == "generate":
            return "## Answer: yes"
        return note if request.key.endswith("/note") else link
    return Scripted(reply)


def seeded(model: Any, **args: Any) -> AMem:
    """A system holding the three SEEDED notes (built by a scripted model: no links)."""
    system = AMem(scripted(), **args)
    for n, text in enumerate(SEEDED):
        run(system.observe(Chunk("doc", n, text)))
    system.model = model
    return system


def notes(system: AMem) -> list[dict[str, Any]]:
    memory: list[dict[str, Any]] = system.snapshot()["memory"]["notes"]
    return memory


def user_text(request: GenerationRequest) -> str:
    return request.messages[-1].content


def test_note_fields_parsed_and_two_calls_per_event() -> None:
    model = scripted(link="LINK 1")
    system = seeded(model)
    calls = run(system.observe(Chunk("doc", 3, "Rain fell; the red door stuck.")))
    assert [c.key for c in calls] == ["doc/chunk3/note", "doc/chunk3/link"]
    assert all(c.stage == "update" for c in calls)
    new = notes(system)[-1]
    assert new["content"] == "Rain fell; the red door stuck."
    assert (new["keywords"], new["tags"], new["context"]) == (
        ["red door", "key"], ["doors"], "A door that sticks.")
    assert (new["id"], new["index"]) == (3, 3)
    link = model.requests[-1]
    assert "[1] keywords: red door, key" in user_text(link)  # the most similar note first
    assert "The red door opens with the brass key." in user_text(link)


@pytest.mark.parametrize(("reply", "fields"), [
    (NOTE, (("red door", "key"), ("doors",), "A door that sticks.")),
    ("Sure!\n  KEYWORDS: a, , A, b  \nTAGS: x", (("a", "b"), ("x",), "")),
    ("KEYWORDS:\nTAGS x\ncontext: lower", ((), (), "")),  # no value, no colon, lower case
    ("KEYWORDS: a\nKEYWORDS: b\nCONTEXT: c", ((), (), "c")),  # a field given twice differently
    ("- KEYWORDS: a", ((), (), "")),  # not at the line's start
])
def test_note_replies_are_read_strictly(reply: str, fields: tuple[Any, ...]) -> None:
    parsed = amem_format.parse_note(reply)
    assert (parsed.keywords, parsed.tags, parsed.context) == fields


def test_links_are_stored_both_ways_in_link_order() -> None:
    system = seeded(scripted(link="LINK 2\nLINK 1\nLINK 2"))
    run(system.observe(Chunk("doc", 3, "The red door and the vault of Tirovan.")))
    held = notes(system)
    new = held[-1]
    assert len(new["links"]) == 2
    for linked in new["links"]:
        assert held[linked]["links"] == [3]
    unlinked = {0, 1, 2} - set(new["links"])
    assert all(held[n]["links"] == [] for n in unlinked)


def test_neighbour_evolution_is_applied_and_reindexed() -> None:
    system = seeded(scripted(link="LINK 1\nTAGS 1: doors, weather\nCONTEXT 1: A door that "
                                  "sticks when it rains.\nTAGS 2: ignored"))
    index = system._index
    run(system.observe(Chunk("doc", 3, "Rain fell; the red door stuck.")))
    held = notes(system)
    (linked,) = held[3]["links"]
    assert held[linked]["tags"] == ["doors", "weather"]
    assert held[linked]["context"] == "A door that sticks when it rains."
    others = [n for n in held[:3] if n["id"] != linked]
    assert all(n["tags"] == ["doors"] and n["context"] == "A door that sticks." for n in others)
    assert system._index is index  # updated in place, not rebuilt
    assert system._search("weather", 5) == [linked]  # the new tag is searchable
    restored = AMem(scripted())
    restored.restore(system.snapshot())
    assert restored._search("weather", 5) == [linked]
    assert restored._index.search("door sticks rains", 4) == system._index.search(
        "door sticks rains", 4)


@pytest.mark.parametrize("reply", [
    "I would link the first one.", "LINK 9", "LINK 0", "link 1", "LINK 1.", "LINK one",
    "TAGS 1: a, b\nCONTEXT 1: new", "", "NONE",
])
def test_malformed_link_replies_change_nothing(reply: str) -> None:
    system = seeded(scripted(link=reply))
    before = notes(system)
    run(system.observe(Chunk("doc", 3, "Rain fell; the red door stuck.")))
    after = notes(system)
    assert after[:3] == before and after[3]["links"] == []


def test_conflicting_revisions_are_ignored_but_the_link_stands() -> None:
    system = seeded(scripted(link="LINK 1\nTAGS 1: a\nTAGS 1: b\nCONTEXT 1: same\n"
                                  "CONTEXT 1: same"))
    run(system.observe(Chunk("doc", 3, "Rain fell; the red door stuck.")))
    held = notes(system)
    (linked,) = held[3]["links"]
    assert held[linked]["tags"] == ["doors"] and held[linked]["context"] == "same"


class Failing(Scripted):
    """A scripted model whose requests of the named kind (``note`` or ``link``) fail."""

    def __init__(self, failing: str, **kwargs: Any):
        super().__init__(scripted(link="LINK 1\nTAGS 1: changed").reply, **kwargs)
        self.failing = failing

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        results = await super().generate(requests)
        return [GenerationResult(key=r.key, error="server said no", stage=r.stage)
                if r.key.endswith("/" + self.failing) else r for r in results]


@pytest.mark.parametrize("failing", ["note", "link"])
def test_a_failed_call_is_returned_and_memory_stays_whole(failing: str) -> None:
    system = seeded(Failing(failing))
    before = notes(system)
    calls = run(system.observe(Chunk("doc", 3, "Rain fell; the red door stuck.")))
    assert calls[-1].error == "server said no" and calls[-1].stage == "update"
    assert len(calls) == (1 if failing == "note" else 2)
    after = notes(system)
    assert after[:3] == before  # nothing linked, nothing evolved
    assert after[3]["content"] == "Rain fell; the red door stuck." and after[3]["links"] == []
    if failing == "note":
        assert (after[3]["keywords"], after[3]["tags"], after[3]["context"]) == ([], [], "")
    restored = AMem(scripted())
    restored.restore(system.snapshot())
    assert restored.snapshot() == system.snapshot()


def test_first_event_makes_no_link_call() -> None:
    system = AMem(scripted())
    calls = run(system.observe(Document("d1", "Mara keeps the lantern in the cellar.")))
    assert [c.key for c in calls] == ["document/d1/note"]


def test_answers_show_retrieved_notes_plus_linked_ones_and_change_nothing() -> None:
    system = AMem(scripted(), top_k=1)
    system.model = scripted(link="LINK 1")
    for n, text in enumerate(["Mara keeps the lantern in the cellar.",
                              "The cellar floods every spring.",
                              "Tirovan sells bread on Mondays."]):
        run(system.observe(Chunk("doc", n, text)))
    snapshot = system.snapshot()
    response = run(system.respond(Query("q1", "Where is the lantern kept?")))
    assert response.results[0].stage == "generate"
    request = system.model.of_stage("generate")[-1]
    memory, block = layout.split_prompt(user_text(request))
    shown = layout.parse_passages(memory)
    assert [index for index, _ in shown] == [0, 1]  # retrieved note 0, linked note 1
    assert "keywords: red door, key | tags: doors | context: A door that sticks." in shown[0][1]
    assert shown[0][1].endswith("Mara keeps the lantern in the cellar.")
    assert memory.startswith(amem_format.MEMORY_HEADER) and "Where is the lantern" in block
    assert system.snapshot() == snapshot


def test_snapshot_round_trip_and_bad_snapshots() -> None:
    system = seeded(scripted(link="LINK 1\nLINK 2\nCONTEXT 2: revised"))
    run(system.observe(Feedback("t1", "What opens the red door?", "the key", 1.0, "right")))
    run(system.observe(Observation("inst", 1, "The door opened.", query="A door.",
                                   action='{"action": "open"}')))
    state = json.loads(json.dumps(system.snapshot()))
    restored = AMem(scripted())
    restored.restore(state)
    assert restored.snapshot() == system.snapshot()
    assert restored.shown_notes("red door key") == system.shown_notes("red door key")
    assert notes(restored)[3]["index"] == 3 and notes(restored)[4]["index"] == 4
    broken = json.loads(json.dumps(state))
    broken["memory"]["notes"][0]["links"] = [4]  # not linked back
    with pytest.raises(DataError, match="links"):
        restored.restore(broken)
    broken = json.loads(json.dumps(state))
    broken["memory"]["notes"][1]["id"] = 7
    with pytest.raises(DataError, match="position"):
        restored.restore(broken)
    assert restored.snapshot() == system.snapshot()  # a refused snapshot changes nothing


def test_observe_work_is_bounded_by_k() -> None:
    """The link prompt shows k notes whatever the memory holds, and the index only grows."""
    model = scripted(link="LINK 1\nLINK 2\nTAGS 2: grown")
    system = AMem(model, k=3)
    index = system._index
    for n in range(60):
        run(system.observe(Chunk("doc", n, f"Mara moved crate {n % 7} to shelf {n % 5}.")))
    assert system._index is index and len(index) == 60
    links = [r for r in model.requests if r.key.endswith("/link")]
    assert len(links) == 59
    assert all(user_text(r).count("\ncontent:\n") == 4 for r in links[3:])  # new + k


def test_builtin_builds_notes_links_and_answers() -> None:
    model = BuiltinReader()
    system = AMem(model, k=3, top_k=2)
    texts = ["Mary went to the kitchen. Mary picked up the apple.",
             "John travelled to the garden.",
             "Mary journeyed to the office. Sandra went to the hallway."]
    calls = [run(system.observe(Chunk("babi", n, t))) for n, t in enumerate(texts)]
    first = notes(system)[0]
    assert first["keywords"][0] == "Mary" and "kitchen" in first["keywords"]
    assert first["tags"] == ["Mary", "kitchen"] and first["context"] == \
        "Mary went to the kitchen."
    held = notes(system)
    assert held[2]["links"] == [0] and held[0]["links"] == [2]  # they share Mary
    assert held[1]["links"] == []  # John's note shares nothing
    assert calls[2][1].samples[0].text == "LINK 1"  # shown first, it is the Mary note
    query = Query("q", "Where is Mary?",
                  prompt=layout.question_block("Where is Mary?", (), layout.DEFAULT_OPEN_FORMAT))
    answer = run(system.respond(query)).results[0].samples[0].text
    assert answer.rsplit("## Answer:", 1)[1].strip() == "office"


def test_builtin_link_reply_evolves_tags_with_shared_names() -> None:
    from clstream.systems.amem.builtin_replies import decide
    prompt = amem_format.link_prompt(
        amem_format.shown_note("[new]", ["Mary", "office"], ["Mary", "office"], "", "x"),
        [amem_format.shown_note("[1]", ["Mary", "kitchen"], ["kitchen"], "", "y"),
         amem_format.shown_note("[2]", ["John"], ["John"], "", "z"),
         amem_format.shown_note("[3]", ["office", "desk"], ["office"], "", "w")])
    assert decide(prompt) == "LINK 1\nTAGS 1: kitchen, Mary\nLINK 3"


def _export(results: Path, dest: Path) -> list[dict[str, Any]]:
    assert cli(["export", str(results), "--system", "amem", "--out", str(dest)]) == 0
    rows = [json.loads(line) for line in dest.read_text().splitlines()]
    for row in rows:
        row.pop("tokens", None)
    return rows


@pytest.fixture(scope="module")
def stream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("amem") / "oaks.json"
    assert cli(["generate", "oaks-babi", "--seed", "7", "--docs", "2", "--chunks", "6",
                "--chunk-tokens", "150", "--max-questions", "4", "--out", str(data)]) == 0
    return data


def test_served_run_matches_the_builtin_run(stream: Path, tmp_path: Path) -> None:
    builtin, served = tmp_path / "builtin", tmp_path / "served"
    base = ["run", "oaks", str(stream), "--system", "amem", "--no-progress", "--out"]
    assert cli([*base, str(builtin)]) == 0
    with PolicyServer(model="served") as server:
        assert cli([*base, str(served), "--model", "openai:served", "--base-url",
                    server.base_url]) == 0
        bodies = server.requests
    assert any(amem_format.LINK_PROMPT[:40] in b["messages"][-1]["content"] for b in bodies)
    assert _export(served, tmp_path / "s.jsonl") == _export(builtin, tmp_path / "b.jsonl")


def test_sigkill_resume_matches_uninterrupted(tmp_path: Path) -> None:
    data = tmp_path / "big.json"
    assert cli(["generate", "oaks-babi", "--seed", "11", "--docs", "2", "--chunks", "30",
                "--chunk-tokens", "400", "--max-questions", "4", "--out", str(data)]) == 0
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    argv = ["run", "oaks", str(data), "--system", "amem", "--no-progress"]
    whole_and_resumed(argv, whole, killed, records=20)
    assert _export(killed, tmp_path / "k.jsonl") == _export(whole, tmp_path / "w.jsonl")
