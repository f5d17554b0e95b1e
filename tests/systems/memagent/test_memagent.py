"""memagent: one rewrite call per event (or per piece of a long one) whose reply replaces the
memory, cut at the budget; a failed rewrite keeps the memory and is returned; answers show the
memory alone; probes change nothing; snapshots round trip and are checked; the builtin model's
rewrites keep recent facts answerable (OAKS, against the loopback server too); a killed run
resumes to the records of an uninterrupted one."""

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
from clstream.core.errors import DataError
from clstream.core.events import Chunk, Document, Feedback, Observation
from clstream.core.registry import resolve
from clstream.core.types import GenerationRequest, GenerationResult, Message, Query
from clstream.models.builtin import BuiltinReader
from clstream.models.tokenizers import approx_tokenizer
from clstream.protocols.oaks.babi import generate_oaks_babi
from clstream.systems.memagent import MemAgent, formats
from clstream.systems.memagent.builtin_replies import new_memory


def user_text(request: GenerationRequest) -> str:
    return request.messages[-1].content


def chunk(index: int, text: str) -> Chunk:
    return Chunk("s", index, text)


class Failing(Scripted):
    """A scripted model whose update calls fail."""

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        self.requests.extend(requests)
        return [GenerationResult(key=r.key, error="server down", stage=r.stage)
                for r in requests]


def test_each_event_is_one_rewrite_whose_reply_replaces_the_memory() -> None:
    model = Scripted(update=["Mara is in the hall.", "Mara is in the cellar."])
    system = MemAgent(model)
    first = run(system.observe(chunk(0, "Mara went to the hall.")))
    assert [r.stage for r in first] == ["update"] and system.memory == "Mara is in the hall."
    run(system.observe(Document("d1", "Mara went down to the cellar.")))
    assert system.memory == "Mara is in the cellar."
    (request, second) = model.of_stage("update")
    assert request.key == "s/chunk0/rewrite" and second.key == "document/d1/rewrite"
    assert request.params.n == 1
    shown = formats.read_rewrite(second.messages[0].content, user_text(second))
    assert shown == formats.Rewrite(1024, "Mara is in the hall.",
                                    "Mara went down to the cellar.")
    assert "at most 1024 tokens (about 768 words)" in user_text(second)
    # Feedback and steps are read as the blocks the other memories keep.
    run(system.observe(Feedback("q1", "What is 2+2?", "4", 1.0, "right")))
    run(system.observe(Observation("i1", 0, "The door opens.", query="A door.",
                                   action='{"action": "open"}')))
    feedback, step = model.of_stage("update")[2:]
    assert "Past task: What is 2+2?" in user_text(feedback)
    assert "[step i1/0]" in user_text(step) and step.key == "i1/step0/rewrite"


def test_the_reply_is_cut_at_the_budget_keeping_its_start() -> None:
    long_reply = " ".join(f"Fact{n} holds." for n in range(200))
    system = MemAgent(Scripted(update=[long_reply, formats.EMPTY_MEMORY]), budget=40)
    run(system.observe(chunk(0, "Anything.")))
    tokens = approx_tokenizer().count(system.memory)
    assert 30 <= tokens <= 40 and system.memory.startswith("Fact0 holds. Fact1 holds.")
    run(system.observe(chunk(1, "Anything else.")))
    assert system.memory == ""  # the empty marker is no memory


def test_a_long_event_is_read_in_pieces_in_order() -> None:
    model = Scripted(update=["one", "two", "three"])
    system = MemAgent(model, chunk=20)
    lines = [f"Line {n} names Tirovan and Osk and Mara." for n in range(6)]
    calls = run(system.observe(chunk(3, "\n".join(lines))))
    requests = model.of_stage("update")
    assert len(calls) == len(requests) >= 2
    assert [r.key for r in requests] == [f"s/chunk3/rewrite{n}" for n in range(len(requests))]
    pieces = [formats.read_rewrite(r.messages[0].content, user_text(r)) for r in requests]
    assert [p.memory for p in pieces if p is not None][1:3] == ["one", "two"]
    assert "\n".join(p.piece for p in pieces if p is not None) == "\n".join(lines)


def test_a_failed_rewrite_keeps_the_memory_and_is_returned() -> None:
    system = MemAgent(Scripted(update=["Mara is in the hall."]), chunk=16)
    run(system.observe(chunk(0, "Mara went to the hall.")))
    system.model = Failing()
    calls = run(system.observe(chunk(1, "Mara went to the yard. " * 20)))
    assert len(calls) == 1 and calls[0].error == "server down" and calls[0].stage == "update"
    assert system.memory == "Mara is in the hall."


def test_answers_show_only_the_memory_and_leave_it_unchanged() -> None:
    model = Scripted(update=["Mara is in the hall."], generate=["## Answer: hall"] * 3)
    system = MemAgent(model)
    run(system.observe(chunk(0, "Mara went to the hall. The rain fell on the old roofs.")))
    before = system.snapshot()
    responses = run(system.respond_batch([Query("q1", "Where is Mara?"),
                                          Query("q2", "Where is Osk?")]))
    assert [r.text for r in responses] == ["## Answer: hall"] * 2
    asked = model.of_stage("generate")[0]
    assert [m.role for m in asked.messages] == ["system", "user"]
    assert user_text(asked).startswith(formats.memory_section("Mara is in the hall."))
    assert "rain" not in user_text(asked) and "Question: Where is Mara?" in user_text(asked)
    assert system.snapshot() == before and len(model.of_stage("update")) == 1
    empty = Scripted(generate=["## Answer: x"])
    run(MemAgent(empty).respond(Query("q", "Where?")))
    assert formats.memory_section("") in user_text(empty.of_stage("generate")[0])


def test_snapshot_round_trip_and_checked_fields() -> None:
    system = MemAgent(Scripted(update=["Mara is in the hall."]), budget=64)
    run(system.observe(chunk(0, "Mara went to the hall.")))
    state = json.loads(json.dumps(system.snapshot()))
    assert state == {"method": "memagent", "memory": {"text": "Mara is in the hall."}}
    other = MemAgent(Scripted(), budget=64)
    other.restore(state)
    assert other.memory == system.memory and other.snapshot() == state
    for bad, field in [({"method": "mem0", "memory": {"text": ""}}, "method"),
                       ({"method": "memagent", "memory": {"text": 3}}, "text"),
                       ({"method": "memagent", "memory": {"text": "word " * 200}}, "text")]:
        with pytest.raises(DataError, match=field):
            other.restore(bad)
    run(other.reset())
    assert other.memory == ""


def test_builtin_rewrite_keeps_new_facts_and_recent_memory_within_budget() -> None:
    old = "\n\n".join(f"Person{n} went to Place{n}." for n in range(40))
    piece = "The rain fell on the roofs. Mara went to the Tall Hall. It was cold."
    text = new_memory(old, piece, budget=60)
    assert approx_tokenizer().count(text) <= 60
    kept = text.split("\n\n")
    assert kept[-1] == "Mara went to the Tall Hall." and "rain" not in text
    assert kept[-2] == "Person39 went to Place39." and "Person0 " not in text
    # Step blocks stay whole, so a policy still reads them from memory.
    step = "[step i1/0]\nObservation (1 line):\nA door.\nAction (1 line):\nopen\nFeedback " \
           "(1 line):\nopened"
    assert step in new_memory("", f"{step}\nThe end came.", budget=100).split("\n\n")
    # Reached through the builtin model: its reply to the rewrite request.
    request = GenerationRequest(key="k", messages=(
        Message(role="system", content=formats.REWRITE_SYSTEM),
        Message(role="user", content=formats.rewrite_prompt(old, piece, 60))))
    reply, _ = BuiltinReader().reply(request)
    assert reply == text


# --- end to end ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def oaks_stream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("oaks") / "stream.json"
    assert cli(["generate", "oaks-babi", "--seed", "5", "--docs", "1", "--chunks", "6",
                "--chunk-tokens", "120", "--max-questions", "4", "--out", str(path)]) == 0
    return path


def exported(results: Path, system: str, dest: Path) -> list[dict[str, Any]]:
    assert cli(["export", str(results), "--system", system, "--out", str(dest)]) == 0
    return [json.loads(line) for line in dest.read_text().splitlines()]


def correct(stream: Path, rows: list[dict[str, Any]]) -> set[tuple[str, int]]:
    """(question id, interval) of the rows whose answer is one the stream accepts."""
    (doc,) = json.loads(stream.read_text())
    gold = {qa["question_id"]: qa["chunk_to_answer"] for qa in doc["data"]["qas"].values()}
    out = set()
    for row in rows:
        answer = row["output"].rsplit("## Answer:", 1)[-1].strip().lower()
        if answer in {a.lower() for a in gold[row["question_id"]][str(row["t"] - 1)]}:
            out.add((row["question_id"], row["t"]))
    return out


def test_builtin_memagent_answers_what_memory_free_cannot(oaks_stream: Path,
                                                           tmp_path: Path) -> None:
    out = tmp_path / "res"
    assert cli(["run", "oaks", str(oaks_stream), "--system", "memagent", "--system",
                "memory-free", "--out", str(out), "--no-progress"]) == 0
    agent = correct(oaks_stream, exported(out, "memagent", tmp_path / "a.jsonl"))
    free = correct(oaks_stream, exported(out, "memory-free", tmp_path / "f.jsonl"))
    gained = agent - free
    assert gained and any(qid.endswith("_q0") for qid, _ in gained), (agent, free)


def test_runs_against_an_openai_compatible_server(oaks_stream: Path, tmp_path: Path) -> None:
    builtin, served = tmp_path / "builtin", tmp_path / "served"
    assert cli(["run", "oaks", str(oaks_stream), "--system", "memagent:budget=200",
                "--out", str(builtin), "--no-progress"]) == 0
    with PolicyServer(model="served-model") as server:
        assert cli(["run", "oaks", str(oaks_stream), "--system", "memagent:budget=200",
                    "--model", "openai:served-model", "--base-url", server.base_url,
                    "--out", str(served), "--no-progress"]) == 0
        rewrites = [b for b in server.requests
                    if b["messages"][0]["content"] == formats.REWRITE_SYSTEM]
    assert len(rewrites) == 6
    answers = [r["output"] for r in exported(builtin, "memagent:budget=200", tmp_path / "b.jsonl")]
    assert [r["output"] for r in exported(served, "memagent:budget=200", tmp_path / "s.jsonl")] == answers


def test_sigkill_resume_matches_uninterrupted(tmp_path: Path) -> None:
    data = tmp_path / "stream.json"
    assert cli(["generate", "oaks-babi", "--seed", "11", "--docs", "2", "--chunks", "30",
                "--chunk-tokens", "300", "--out", str(data)]) == 0
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    argv = ["run", "oaks", str(data), "--system", "memagent:budget=256", "--no-progress"]
    whole_and_resumed(argv, whole, killed, records=20)
    a = exported(whole, "memagent:budget=256", tmp_path / "whole.jsonl")
    b = exported(killed, "memagent:budget=256", tmp_path / "killed.jsonl")
    assert a and a == b


def test_registered() -> None:
    assert resolve("system", "memagent") is MemAgent
    described = MemAgent(BuiltinReader(), budget=512).describe()
    assert described["args"] == {"budget": 512, "chunk": 2048}
    assert described["prompt_template_hash"] == formats.template_fingerprint()


def test_observe_cost_is_bounded_by_budget_and_piece_not_by_events_seen() -> None:
    chunks = generate_oaks_babi(seed=2, docs=1, chunks=80, chunk_tokens=150)[0]["data"]["chunks"]
    system = MemAgent(BuiltinReader(), budget=96)
    count = approx_tokenizer().count
    overhead = count(formats.REWRITE_SYSTEM) + count(formats.rewrite_prompt("", "", 96))
    prompts = []
    for n in range(80):
        (call,) = run(system.observe(chunk(n, chunks[str(n)])))
        assert call.usage.prompt_tokens <= overhead + 96 + count(chunks[str(n)]) + 4
        assert count(system.memory) <= 96
        prompts.append(call.usage.prompt_tokens)
    assert max(prompts[60:]) <= max(prompts[:40]) + 8  # no growth with the events seen
