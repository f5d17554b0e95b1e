"""Memory scaffold (ImprintBench §3.1, Table 12): a rewrite per document under B = corpus tokens /
ratio, max completion min(2B, 8192); robust parsing; the labelled append fallback; answers from
the memory alone; resumable memory."""

from __future__ import annotations

import pytest
from imprint_fakes import Scripted, corpus, ingest, item, run, user_text

from clstream.core.contracts import supervision_of
from clstream.core.errors import DataError
from clstream.core.registry import resolve
from clstream.core.types import GenerationRequest
from clstream.models.builtin import BuiltinReader
from clstream.models.tokenizers import approx_tokenizer
from clstream.systems import corpus_prompts
from clstream.systems.scaffold import MemoryScaffold, fit_budget


def _rewrite(request: GenerationRequest) -> str:
    doc = user_text(request).split("New document:\n", 1)[1]
    title = doc.splitlines()[0].removeprefix("Title: ")
    return (f"Here it is.\n<memory>\n## Active\n- {title}\n**Superseded:**\n(empty)\n"
            "Uncertain:\n- nothing disputed\n</memory>")


def test_parse_accepts_heading_styles_and_refuses_missing_sections() -> None:
    parsed = corpus_prompts.parse_scaffold("<memory>\n## Active\n- a\n- b\n## Superseded\n- c\n"
                                           "## Uncertain\n(none)\n</memory>")
    assert parsed.sections == {"Active": ["- a", "- b"], "Superseded": ["- c"], "Uncertain": []}
    assert corpus_prompts.parse_scaffold("Active:\nx\nUncertain:\ny").problem == \
        "missing section(s) Superseded"
    assert corpus_prompts.parse_scaffold("").problem == "empty reply"
    assert corpus_prompts.parse_scaffold("<memory>\nActive\nz\nSuperseded\nUncertain").sections == \
        {"Active": ["z"], "Superseded": [], "Uncertain": []}


def test_rewrites_after_every_document_under_the_budget() -> None:
    model = Scripted(_rewrite)
    system = MemoryScaffold(model, ratio=32, min_budget=1)
    calls = run(ingest(system, corpus()))
    assert [c.stage for c in calls] == ["update"] * 4
    requests = model.of_stage("update")
    tok = approx_tokenizer()
    seen = 0
    for request, doc in zip(requests, corpus(), strict=True):
        seen += tok.count(doc.text)
        budget = max(1, seen // 32)
        assert request.params.max_tokens == min(2 * budget, 8192) and request.params.n == 1
        assert f"about {budget} tokens" in user_text(request)
    assert "Harbor reopens" in user_text(requests[2])  # the current memory is shown
    assert system.memory["Active"] == ["- Bridge toll rises"]
    assert system.memory["Uncertain"] == ["- nothing disputed"]
    assert [e["status"] for e in system.log] == ["rewritten"] * 4
    shown = system._request(item("q", "What rose?")).messages[1].content
    assert shown.startswith(corpus_prompts.SCAFFOLD_HEADER) and "Osk" not in shown


def test_fixed_budget_and_its_completion_cap() -> None:
    model = Scripted(_rewrite)
    run(ingest(MemoryScaffold(model, budget=5000), corpus()[:1]))
    assert model.requests[0].params.max_tokens == 8192


def test_unusable_reply_appends_under_active_within_budget_and_is_labelled() -> None:
    system = MemoryScaffold(Scripted(lambda r: "I cannot do that."), min_budget=40)
    calls = run(ingest(system, corpus()))
    assert [c.stage for c in calls] == ["update-fallback"] * 4
    assert all(e["status"] == "fallback" and "missing" in e["problem"] for e in system.log)
    assert approx_tokenizer().count(system.text()) <= 40
    assert system.memory["Active"][-1].startswith("Bridge toll rises (2026-02-11): The Osk")
    assert not any("Maria" in line for line in system.memory["Active"])  # oldest dropped
    kept = MemoryScaffold(Scripted(lambda r: "no"), fallback="keep")
    calls = run(ingest(kept, corpus()))
    assert [c.stage for c in calls] == ["update"] * 4
    assert kept.text() == corpus_prompts.render_scaffold(
        {"Active": [], "Superseded": [], "Uncertain": []})
    assert kept._sections(item("q", "x")) == []


def test_fit_budget_cuts_a_single_long_line() -> None:
    long = {"Active": ["word " * 300], "Superseded": [], "Uncertain": []}
    fitted = fit_budget(long, 30, approx_tokenizer())
    assert approx_tokenizer().count(corpus_prompts.render_scaffold(fitted)) <= 30
    assert fitted["Active"]


def test_failed_call_changes_nothing() -> None:
    system = MemoryScaffold(Scripted(_rewrite))
    run(ingest(system, corpus()[:2]))
    before = system.snapshot()
    failing = MemoryScaffold(Scripted(lambda r: None))
    failing.restore(before)
    (call,) = run(failing.observe(corpus()[2]))
    assert not call.ok and failing.snapshot() == before


def test_builtin_leaves_a_usable_memory() -> None:
    system = MemoryScaffold(BuiltinReader())
    run(ingest(system, corpus()))
    assert system.fallback_count() == 4
    response = run(system.respond(item("q", "What did the Osk bridge toll rise to?")))
    assert "7 crowns" in response.text or "crowns" in response.text


def test_snapshot_resumes_without_a_new_call() -> None:
    system = MemoryScaffold(Scripted(_rewrite))
    run(ingest(system, corpus()))
    again = MemoryScaffold(Scripted(lambda r: pytest.fail("no call expected")))
    again.restore(system.snapshot())
    q = item("q", "What rose?")
    assert again._request(q).messages == system._request(q).messages
    with pytest.raises(DataError):
        again.restore({"memory": {"Active": []}, "corpus_tokens": 0, "log": []})


def test_registered_with_every_supervision() -> None:
    system = resolve("system", "scaffold")(BuiltinReader(), ratio=64)
    assert supervision_of(system) == ("C", "Q", "C+Q")
    assert system.describe()["args"]["ratio"] == 64
