"""The eight SeqMem memory methods: arguments, what memory holds after feedback, that answering
never changes memory, snapshot/restore round trips, and robustness to unparseable replies."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from clstream.core import layout
from clstream.core.errors import DataError, SpecError
from clstream.core.events import Chunk, Feedback
from clstream.core.types import GenerationRequest, GenerationResult, Query, Sample, Usage
from clstream.models.tokenizers import approx_tokenizer
from clstream.systems import memory_prompts
from clstream.systems.curated import Awm, DcRs
from clstream.systems.expel import ExpelMt, ExpelSt, Rule, apply_rule_ops
from clstream.systems.experience import ExpRag, ExpRecent, MemoryFree
from clstream.systems.gmemory import GMemory

ALL = (MemoryFree, ExpRecent, ExpRag, DcRs, Awm, ExpelSt, ExpelMt, GMemory)
UPDATE_REPLY = ("ADD: lesson {h}\nAGREE 1\nREFLECTION: retry {h}\nINSIGHT: insight {h}\n"
                "WORKFLOW: flow {h} :: step one; step two\n<cheatsheet>sheet {h}</cheatsheet>")


class Scripted:
    """A model whose reply is a function of the request; it records every request."""

    name = "scripted"

    def __init__(self, reply: Callable[[GenerationRequest], str]):
        self.reply = reply
        self.tokenizer = approx_tokenizer()
        self.requests: list[GenerationRequest] = []

    def describe(self) -> dict[str, Any]:
        return {"backend": "scripted"}

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        out = []
        for r in requests:
            self.requests.append(r)
            text = self.reply(r)
            out.append(GenerationResult(key=r.key, samples=[Sample(text=text)], stage=r.stage,
                                        usage=Usage(prompt_tokens=3, completion_tokens=2)))
        return out


def updates_parse(r: GenerationRequest) -> str:
    if r.stage == "update":
        return UPDATE_REPLY.format(h=len(r.prompt_text) % 97)
    return "thinking\n## Answer: 42"


def nothing_parses(r: GenerationRequest) -> str:
    return "Closest statement names no answer.\n## Answer: Unknown"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def query(i: int, text: str | None = None, attempt: int = 1) -> Query:
    return Query(id=f"online/{i}" + (f"#try{attempt}" if attempt > 1 else ""),
                 text=text or f"What is the code of Tiro{i % 3}?", kind="synthetic",
                 meta={"task_id": f"t{i}", "attempt": attempt})


def feedback(q: Query, answer: str, success: bool, final: bool = True) -> Feedback:
    return Feedback(q.id, q.text, answer, 1.0 if success else 0.0,
                    "Correct." if success else "Incorrect. Correct answer: 7.",
                    meta={"task_id": q.meta["task_id"], "attempt": q.meta["attempt"],
                          "final": final})


async def drive(system: Any, n: int, pattern: Callable[[int], bool]) -> None:
    """n online tasks; success of task i is pattern(i), retries fail until the last try."""
    for i in range(1, n + 1):
        tries = system.max_tries
        for z in range(1, tries + 1):
            q = query(i, attempt=z)
            resp = await system.respond(q)
            ok = pattern(i) and z == tries if tries > 1 else pattern(i)
            await system.observe(feedback(q, resp.text, ok, final=ok or z == tries))
            if ok:
                break


def test_bare_names_work_and_bad_arguments_are_spec_errors() -> None:
    model = Scripted(updates_parse)
    for cls in ALL:
        system = cls(model=model)
        assert system.describe()["name"] == cls.name
        json.dumps(system.snapshot())
    assert ExpelMt(model=model).max_tries == 3 and ExpelMt(model=model, tries=2).max_tries == 2
    assert ExpRag(model=model).max_tries == 1
    with pytest.raises(SpecError, match="unknown argument 'kk'"):
        ExpRag(model=model, kk=3)
    with pytest.raises(SpecError, match="must be >= 1"):
        ExpRecent(model=model, k=0)
    with pytest.raises(SpecError, match="must be an integer"):
        ExpelSt(model=model, batch="x")
    with pytest.raises(SpecError, match="unknown retriever"):
        ExpRag(model=model, retriever="dense")
    rag = ExpRag(model=model)
    assert run(rag.observe(Chunk("s", 0, "text"))) == []  # kept as text, no model call
    assert len(rag.texts) == 1 and len(rag.pool) == 0 and model.requests == []


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("reply", [updates_parse, nothing_parses])
def test_snapshot_restore_round_trip_and_probes_leave_memory_alone(cls: Any, reply: Any) -> None:
    model = Scripted(reply)
    system = cls(model=model, seed=5)
    run(drive(system, 12, lambda i: i % 3 != 0))
    state = system.snapshot()
    assert json.loads(json.dumps(state)) == state
    probe = Query(id="holdout/x@3", text="What is the code of Tiro1?", kind="synthetic",
                  meta={"task_id": "x"})
    first = run(system.respond(probe))
    assert system.snapshot() == state  # answering is not updating
    other = cls(model=model, seed=5)
    other.restore(json.loads(json.dumps(state)))
    assert other.snapshot() == state
    again = run(other.respond(probe))
    assert [m.content for m in model.requests[-1].messages] == [
        m.content for m in model.requests[-1 - len(again.results)].messages]
    assert again.text == first.text
    run(other.reset())
    assert other.snapshot() == cls(model=model).snapshot()


def test_restore_rejects_malformed_snapshots() -> None:
    model = Scripted(updates_parse)
    with pytest.raises(DataError, match="snapshot"):
        ExpRag(model=model).restore({"method": "exp-rag", "memory": {"records": [{"x": 1}]}})
    with pytest.raises(DataError, match="method"):
        ExpRag(model=model).restore(ExpRecent(model=model).snapshot())
    with pytest.raises(DataError, match="links"):
        GMemory(model=model).restore({"method": "g-memory", "memory": {
            "nodes": [], "links": [[3]], "insights": []}})
    with pytest.raises(DataError, match="rules"):
        ExpelSt(model=model).restore({"method": "expel-st", "memory": {
            "solved": [], "recent": [], "rules": [{"text": 1}]}})


def test_responses_tag_stages_and_time_them() -> None:
    model = Scripted(updates_parse)
    dc = DcRs(model=model)
    resp = run(dc.respond(query(1)))
    assert [r.stage for r in resp.results] == ["update", "generate"]
    assert set(resp.timings) == {"retrieve", "generate", "update"}
    assert all(v >= 0 for v in resp.timings.values())
    assert [r.stage for r in model.requests] == ["update", "generate"]
    seeds = {r.params.seed for r in model.requests}
    assert len(seeds) == 2  # per-request seeds derive from distinct keys


def test_exp_recent_and_exp_rag_show_the_right_records() -> None:
    model = Scripted(updates_parse)
    recent, rag = ExpRecent(model=model, k=2), ExpRag(model=model, k=1)
    texts = ["What is the vault code of Tirovan?", "How many zaps make 3 brous?",
             "Translate the Vhaeth word 'gralo'."]
    for i, text in enumerate(texts, 1):
        for system in (recent, rag):
            q = query(i, text)
            run(system.observe(feedback(q, "## Answer: 1", False)))
    run(recent.respond(query(9, "Anything at all?")))
    shown = model.requests[-1].messages[1].content
    assert "Tirovan" not in shown and "brous" in shown and "gralo" in shown
    run(rag.respond(query(9, "Tell me the vault code of Tirovan")))
    shown = model.requests[-1].messages[1].content
    assert "Tirovan?" in shown and "brous" not in shown and "gralo" not in shown
    assert len(rag.pool) == 3 and rag.pool.records[0].feedback.endswith("answer: 7.")


def test_dc_rs_commits_the_curated_cheatsheet_only_on_its_own_feedback() -> None:
    model = Scripted(updates_parse)
    dc = DcRs(model=model)
    q1 = query(1)
    run(dc.respond(q1))
    assert dc.cheatsheet == ""
    run(dc.respond(query(2)))  # a probe in between: its cheatsheet is never committed
    run(dc.observe(feedback(q1, "x", False)))
    assert dc.cheatsheet == "" and len(dc.history) == 1
    q3 = query(3)
    run(dc.respond(q3))
    pending = memory_prompts.parse_cheatsheet(updates_parse(model.requests[-2]))
    assert pending
    run(dc.observe(feedback(q3, "x", True)))
    assert dc.cheatsheet == pending and len(dc.history) == 2
    answer_prompt = model.requests[-1].messages[1].content
    assert memory_prompts.CHEATSHEET_HEADER in answer_prompt
    assert layout.EXPERIENCES_HEADER not in answer_prompt


def test_dc_rs_without_a_cheatsheet_shows_the_retrieved_records() -> None:
    model = Scripted(nothing_parses)
    dc = DcRs(model=model)
    q = query(1, "What is the vault code of Tirovan?")
    run(dc.respond(q))
    run(dc.observe(feedback(q, "## Answer: Unknown", False)))
    run(dc.respond(query(2, "What is the vault code of Tirovan?")))
    shown = model.requests[-1].messages[1].content
    assert layout.EXPERIENCES_HEADER in shown and "Correct answer: 7." in shown
    assert dc.cheatsheet == ""


def test_awm_induces_workflows_on_success_only() -> None:
    model = Scripted(updates_parse)
    awm = Awm(model=model)
    q1, q2 = query(1), query(2)
    assert run(awm.observe(feedback(q1, "## Answer: 1", False))) == []
    calls = run(awm.observe(feedback(q2, "## Answer: 7", True)))
    assert [c.stage for c in calls] == ["update"] and len(awm.solved) == 1
    assert awm.workflows[0][0].startswith("flow")
    run(awm.respond(query(3, q2.text)))
    shown = model.requests[-1].messages[1].content
    assert memory_prompts.WORKFLOWS_HEADER in shown and "Outcome: correct" in shown
    plain = Awm(model=Scripted(nothing_parses))
    run(plain.observe(feedback(q2, "## Answer: 7", True)))
    assert plain.workflows == [[]] and len(plain.solved) == 1


def test_rule_operations_follow_importance_counts() -> None:
    rules = [Rule("a", 1), Rule("b", 2), Rule("c", 3)]
    op = memory_prompts.RuleOp
    ops = [op("REMOVE", 1, ""), op("EDIT", 2, "b2"), op("AGREE", 3, ""), op("AGREE", 9, ""),
           op("ADD", None, "d"), op("ADD", None, "c")]
    out = apply_rule_ops(rules, ops, 10)
    assert [(r.text, r.importance) for r in out] == [("b2", 3), ("c", 4), ("d", 2)]
    assert [r.importance for r in rules] == [1, 2, 3]  # input untouched
    capped = apply_rule_ops([Rule("x", 1), Rule("y", 5)], [op("ADD", None, "z")], 2)
    assert [r.text for r in capped] == ["y", "z"]


def test_expel_st_updates_rules_every_batch_successes() -> None:
    model = Scripted(updates_parse)
    st = ExpelSt(model=model, batch=3)
    run(drive(st, 7, lambda i: i != 2))  # successes: 1,3,4,5,6,7 -> two batch updates
    updates = [r for r in model.requests if r.stage == "update"]
    assert len(updates) == 2 and len(st.solved) == 6 and st.recent == []
    assert [r.text for r in st.rules][:1] and st.rules[0].importance == 3  # ADD 2 + AGREE 1
    quiet = ExpelSt(model=Scripted(nothing_parses), batch=2)
    run(drive(quiet, 4, lambda i: True))
    assert quiet.rules == [] and len(quiet.solved) == 4


def test_expel_mt_reflects_between_tries_and_updates_on_pairs() -> None:
    model = Scripted(updates_parse)
    mt = ExpelMt(model=model, tries=3, batch=10)
    q1 = query(1, attempt=1)
    run(mt.respond(q1))
    calls = run(mt.observe(feedback(q1, "## Answer: 1", False, final=False)))
    assert [c.key for c in calls] == [f"{q1.id}/reflect"]
    q2 = query(1, attempt=2)
    run(mt.respond(q2))
    assert memory_prompts.REFLECTIONS_HEADER in model.requests[-1].messages[1].content
    calls = run(mt.observe(feedback(q2, "## Answer: 7", True, final=True)))
    assert [c.key for c in calls] == [f"{q2.id}/pair-rules"]
    assert len(mt.solved) == 1 and mt.rules and mt._scratch is None
    # a probe (attempt 1) never sees reflections
    run(mt.respond(query(5)))
    assert memory_prompts.REFLECTIONS_HEADER not in model.requests[-1].messages[1].content


def test_expel_mt_shows_the_failed_attempt_when_no_reflection_parses() -> None:
    model = Scripted(nothing_parses)
    mt = ExpelMt(model=model)
    q1 = query(1, attempt=1)
    run(mt.observe(feedback(q1, "## Answer: 1", False, final=False)))
    run(mt.respond(query(1, attempt=2)))
    shown = model.requests[-1].messages[1].content
    assert layout.FAILED_EXPERIENCES_HEADER in shown and "Correct answer: 7." in shown
    q3 = query(1, attempt=3)
    calls = run(mt.observe(feedback(q3, "## Answer: 1", False, final=True)))
    assert calls == [] and len(mt.solved) == 0 and mt._scratch is None


def test_g_memory_links_nodes_and_scores_insights() -> None:
    model = Scripted(updates_parse)
    g = GMemory(model=model)
    q1 = query(1, "What is the vault code of Tirovan?")
    run(g.respond(q1))
    assert run(g.observe(feedback(q1, "## Answer: 1", False))) == []  # nothing to compare yet
    q2 = query(2, "What is the vault code of Tirovan?")
    run(g.respond(q2))
    calls = run(g.observe(feedback(q2, "## Answer: 7", True)))
    assert [c.key for c in calls] == [f"{q2.id}/insights"]
    assert g.links == [[], [0]] and len(g.insights) == 1
    assert g.insights[0].score == 2 and g.insights[0].sources == [1, 0]
    q3 = query(3, "What is the vault code of Tirovan?")
    run(g.respond(q3))
    shown = model.requests[-1].messages[1].content
    assert memory_prompts.INSIGHTS_HEADER in shown and layout.FAILED_EXPERIENCES_HEADER in shown
    run(g.observe(feedback(q3, "## Answer: 7", True)))
    assert g.insights[0].score == 3  # shown and succeeded: +1
    for i in (4, 5):
        q = query(i, "What is the vault code of Tirovan?")
        run(g.respond(q))
        run(g.observe(feedback(q, "## Answer: 1", False)))
    assert all(x.score >= 0 for x in g.insights)
    assert [x for x in g.insights if x.sources == [1, 0]] == []  # 3 - 2 - 2 < 0: dropped
