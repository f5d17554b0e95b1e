"""Chunked summary (ImprintBench §3.1, Table 12): chronological packing, 1.5x completion and
1.25x hard cap, per-document variant, the labelled extractive stand-in, resumable memory."""

from __future__ import annotations

import pytest
from imprint_fakes import Scripted, article, corpus, ingest, item, run, user_text

from clstream.core import layout
from clstream.core.contracts import supervision_of
from clstream.core.errors import SpecError
from clstream.core.events import Chunk
from clstream.core.registry import resolve
from clstream.core.types import GenerationRequest
from clstream.models.builtin import BuiltinReader
from clstream.models.tokenizers import approx_tokenizer
from clstream.systems.chunked_summary import ChunkedSummary, split_document, truncate_right


def _echo_first_line(request: GenerationRequest) -> str:
    docs = request.messages[1].content.split("Documents:\n\n", 1)[1]
    titles = [line for line in docs.splitlines() if line.startswith("Title:")]
    return "Notes: " + "; ".join(titles)


def test_packs_chronologically_and_summarises_at_finalize() -> None:
    model = Scripted(_echo_first_line)
    system = ChunkedSummary(model, tokens=20, chunk=60)
    calls = run(ingest(system, corpus()))
    requests = model.of_stage("summary")
    assert len(calls) == len(requests) >= 2 and all(c.stage == "summary" for c in calls)
    assert all(r.params.max_tokens == 30 and r.params.n == 1 for r in requests)
    packed = [s.doc_ids for s in system.summaries]
    assert [d for ids in packed for d in ids] == ["n1", "n2", "n3", "n4"]
    assert all(s.source_tokens <= 60 for s in system.summaries)
    # Observing alone calls nothing: before finalize the memory is empty.
    fresh = ChunkedSummary(model, tokens=20, chunk=60)
    for doc in corpus():
        assert run(fresh.observe(doc)) == []
    assert fresh._sections(item("q", "x")) == []
    shown = system._request(item("q", "Who leads Acme?")).messages[1].content
    passages = layout.parse_passages(layout.split_prompt(shown)[0])
    assert [i for i, _ in passages] == list(range(len(packed)))
    assert "Notes: Title: Acme names a leader" in passages[0][1]


def test_summary_cut_at_one_and_a_quarter_target() -> None:
    system = ChunkedSummary(Scripted(lambda r: "word " * 200), tokens=40)
    run(ingest(system, corpus()))
    (summary,) = system.summaries
    assert summary.truncated and approx_tokenizer().count(summary.text) <= 50
    assert truncate_right("alpha beta gamma", 2, approx_tokenizer()) == "alpha beta"


def test_per_document_variant_keeps_the_nominal_ratio() -> None:
    model = Scripted(lambda r: "short note")
    system = ChunkedSummary(model, tokens=1024, chunk=32768, per_doc=True)
    run(ingest(system, corpus()))
    assert [s.doc_ids for s in system.summaries] == [("n1",), ("n2",), ("n3",), ("n4",)]
    assert all(s.target == 32 for s in system.summaries)  # tiny articles get the floor
    assert all(r.params.max_tokens == 48 for r in model.of_stage("summary"))


def test_oversized_document_is_cut_into_pieces() -> None:
    tok = approx_tokenizer()
    text = "\n".join(f"Line {i} says something about the harbor." for i in range(40))
    pieces = split_document(text, 50, tok)
    assert len(pieces) > 1 and all(tok.count(p) <= 50 for p in pieces)
    assert " ".join(pieces).split() == text.split()
    system = ChunkedSummary(Scripted(lambda r: "n"), tokens=10, chunk=50)
    run(ingest(system, [article("big", "2026-01-01", "Big", text)]))
    assert system.summaries[0].doc_ids[0] == "big#1"


def test_failed_call_keeps_earlier_summaries_and_the_rest_pending() -> None:
    def flaky(request: GenerationRequest) -> str | None:
        return None if "Leadership change" in user_text(request) else "fine"

    system = ChunkedSummary(Scripted(flaky), tokens=20, chunk=40)
    calls = run(ingest(system, corpus()))
    assert any(not c.ok for c in calls)
    done = [d for s in system.summaries for d in s.doc_ids]
    pending = [p["doc_id"] for p in system.snapshot()["pending"]]
    assert done + pending == ["n1", "n2", "n3", "n4"] and "n3" in pending


def test_snapshot_resumes_without_a_new_call() -> None:
    model = Scripted(_echo_first_line)
    system = ChunkedSummary(model, tokens=20, chunk=60)
    run(ingest(system, corpus()))
    state = system.snapshot()
    other = Scripted(lambda r: pytest.fail("no call expected"))
    again = ChunkedSummary(other, tokens=20, chunk=60)
    again.restore(state)
    assert run(again.finalize()) == []
    q = item("q", "Who leads Acme?")
    assert again._request(q).messages == system._request(q).messages


def test_extractive_stand_in_is_labelled_and_fits() -> None:
    system = ChunkedSummary(BuiltinReader(), tokens=30, summarizer="extractive")
    assert run(ingest(system, corpus())) == []
    (summary,) = system.summaries
    assert approx_tokenizer().count(summary.text) <= 30
    assert summary.text.startswith("Acme names a leader (2026-02-01): Maria Lopez")
    assert "not a model summary" in system.describe()["summarizer"]["note"]


def test_builtin_summarizer_and_other_events_work() -> None:
    system = ChunkedSummary(BuiltinReader(), tokens=64)
    calls = run(ingest(system, [*corpus(), Chunk("s", 0, "Some chunk text.")]))
    assert len(calls) == 1 and calls[0].ok and system.summaries[0].text
    response = run(system.respond(item("q", "Who leads Acme?")))
    assert response.results[-1].ok


def test_summarizer_spec_resolves_through_the_registry() -> None:
    system = ChunkedSummary(Scripted(lambda r: "x"), summarizer="builtin")
    assert isinstance(system.summarizer, BuiltinReader)
    with pytest.raises(SpecError):
        ChunkedSummary(BuiltinReader(), summarizer="nosuch:thing")
    with pytest.raises(SpecError):
        ChunkedSummary(BuiltinReader(), summarizer_options="base_url=http://x")
    cls = resolve("system", "summary")
    assert supervision_of(cls(BuiltinReader())) == ("C", "Q", "C+Q")
