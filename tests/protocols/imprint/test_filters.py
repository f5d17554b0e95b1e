"""No-context and with-context filters (brief §3.4) with a scripted model: thresholds,
BoundAbs exemption, recorded counts, one n-sample request per item and pass, and the cache."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from clstream.core import layout
from clstream.core.types import GenerationRequest, GenerationResult, Sample, Usage
from clstream.models.tokenizers import approx_tokenizer
from clstream.protocols.imprint.filters import apply_filters, document_text
from clstream.protocols.imprint.judging import JudgeError
from clstream.protocols.imprint.llm_judges import LLMJudge
from clstream.protocols.imprint.schema import (
    CorpusDoc,
    Dataset,
    Family,
    Item,
    JudgeName,
    Manifest,
)

N = 8

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripted_judge import ScriptedJudgeModel  # noqa: E402


class ScriptedFilterModel:
    """Answers each question with a scripted list of n texts, one list without documents and
    one with them (an unscripted question: "Unknown"); records every request."""

    name = "scripted-filter"

    def __init__(self, script: dict[tuple[str, str], list[str]], fail_on: str | None = None):
        self.script, self.fail_on = script, fail_on
        self.tokenizer = approx_tokenizer()
        self.requests: list[GenerationRequest] = []

    def describe(self) -> dict[str, Any]:
        return {"backend": "scripted", "name": self.name}

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        self.requests.extend(requests)
        out = []
        for r in requests:
            text = r.messages[-1].content
            mode = "ctx" if layout.PASSAGES_HEADER.strip() in text else "blind"
            qid = next((k for (k, _) in self.script if f"[{k}]" in text), None)
            if qid is not None and qid == self.fail_on:
                out.append(GenerationResult(key=r.key, error="server error"))
                continue
            texts = (self.script[qid, mode] if qid is not None
                     else ["## Answer: Unknown"] * r.params.n)
            assert len(texts) == r.params.n
            out.append(GenerationResult(key=r.key, usage=Usage(),
                                        samples=[Sample(text=t) for t in texts]))
        return out


def answers(correct: int, right: str, wrong: str) -> list[str]:
    return [f"## Answer: {right}"] * correct + [f"## Answer: {wrong}"] * (N - correct)


def dataset() -> Dataset:
    docs = [CorpusDoc(doc_id="a1", date="2026-02-01", title="Harbor vote",
                      text="The council approved the canal toll. Mara Velez chairs the port."),
            CorpusDoc(doc_id="a2", date="2026-02-03", title="Port news",
                      text="Ilse Brandt leads the dock union.")]

    def it(qid: str, family: Family, gold: str, judge: JudgeName, **extra: Any) -> Item:
        return Item(item_id=qid, setting="news", family=family, question=f"[{qid}] question?",
                    gold=gold, judge=judge, source_doc_ids=extra.pop("docs", ["a1"]), **extra)

    items = [
        it("yes_guessable", "DirAcq", "Yes", "yesno"),    # binary, 7/8 blind: dropped
        it("yes_hard", "DirAcq", "Yes", "yesno"),         # binary, 6/8 blind: kept
        it("open_leaked", "TempUpd", "Mara Velez", "exact"),  # open, 1/8 blind: dropped
        it("open_good", "TempUpd", "Mara Velez", "exact", docs=["a2", "a1"]),
        it("open_unanswerable", "CompRel", "Ilse Brandt", "exact"),  # 0/8 with context
        it("absent", "BoundAbs", "No", "abstain", docs=[]),          # never filtered
        it("judged_by_llm", "ImpRel", "the toll dispute", "llm"),
    ]
    return Dataset(Manifest(setting="news", generator="test", seed=0), docs, [], items)


SCRIPT = {
    ("yes_guessable", "blind"): answers(7, "Yes", "No"),
    ("yes_guessable", "ctx"): answers(8, "Yes", "No"),
    ("yes_hard", "blind"): answers(6, "Yes", "No"),
    ("yes_hard", "ctx"): answers(8, "Yes", "No"),
    ("open_leaked", "blind"): answers(1, "Mara Velez", "Tomas Greer"),
    ("open_leaked", "ctx"): answers(8, "Mara Velez", "Tomas Greer"),
    ("open_good", "blind"): answers(0, "Mara Velez", "Tomas Greer"),
    ("open_good", "ctx"): answers(3, "Mara Velez", "Tomas Greer"),
    ("open_unanswerable", "blind"): answers(0, "Ilse Brandt", "Unknown"),
    ("open_unanswerable", "ctx"): answers(0, "Ilse Brandt", "Unknown"),
    ("absent", "blind"): answers(0, "no record of it", "Yes"),
    ("absent", "ctx"): answers(0, "no record of it", "Yes"),
    ("judged_by_llm", "blind"): answers(8, "the toll dispute", "x"),
    ("judged_by_llm", "ctx"): answers(8, "the toll dispute", "x"),
}


def run(model: Any, cache: Path | None, **options: Any) -> tuple[Dataset, dict[str, Any]]:
    return asyncio.run(apply_filters(dataset(), model, n=N, cache_path=cache, **options))


def test_thresholds_exemption_and_records(tmp_path: Path) -> None:
    model = ScriptedFilterModel(SCRIPT)
    kept, report = run(model, tmp_path / "cache.jsonl")
    ids = [i.item_id for i in kept.items]
    assert ids == ["yes_hard", "open_good", "absent", "judged_by_llm"]
    dropped = {d["item_id"]: d for d in report["dropped"]}
    assert dropped["yes_guessable"]["reasons"] == ["blind"]
    assert dropped["open_leaked"]["reasons"] == ["blind"]
    assert dropped["open_unanswerable"] == {"item_id": "open_unanswerable", "family": "CompRel",
                                            "reasons": ["ctx"], "blind": 0, "ctx": 0}
    records = {i.item_id: i.filters for i in kept.items}
    assert records["yes_hard"] == {"blind": {"model": "scripted-filter", "k_correct": 6, "n": N},
                                   "ctx": {"model": "scripted-filter", "k_correct": 8, "n": N}}
    assert records["open_good"]["ctx"]["k_correct"] == 3
    assert records["absent"]["ctx"]["k_correct"] == 0  # counted, kept regardless
    assert records["judged_by_llm"]["blind"]["k_correct"] is None  # no judge: unjudged
    fam = report["families"]
    assert fam["DirAcq"] == {"items": 2, "kept": 1, "dropped_blind": 1, "dropped_ctx": 0,
                             "exempt": 0, "unjudged": 0}
    assert fam["BoundAbs"]["exempt"] == 1 and fam["ImpRel"]["unjudged"] == 1
    assert report["kept"] == 4 and report["sent"] == 14 and report["cache_hits"] == 0
    assert kept.manifest.config["filters"]["blind_max_binary"] == 6
    assert kept.corpus == dataset().corpus
    # one request per item and pass, each asking for all n samples
    assert len(model.requests) == 14 and {r.params.n for r in model.requests} == {N}
    blind = [r for r in model.requests if r.key.startswith("filter/blind/")]
    assert all("Harbor vote" not in r.messages[-1].content for r in blind)


def test_context_request_shows_the_source_documents_in_corpus_order() -> None:
    model = ScriptedFilterModel(SCRIPT)
    run(model, None)
    ctx = next(r for r in model.requests if r.key == "filter/ctx/open_good").messages[-1].content
    assert ctx.index("Title: Harbor vote\nDate: 2026-02-01") < ctx.index("Title: Port news")
    assert "[open_good] question?" in ctx
    assert document_text(dataset().corpus[1]).startswith("Title: Port news\nDate: 2026-02-03\n")


def test_thresholds_are_configurable() -> None:
    kept, _ = run(ScriptedFilterModel(SCRIPT), None, blind_max_open=1, blind_max_binary=7,
                  ctx_min=4)
    # open_leaked (1/8 blind) and yes_guessable (7/8) now pass the blind filter; open_good
    # (3/8 with context) fails ctx_min=4
    assert [i.item_id for i in kept.items] == ["yes_guessable", "yes_hard", "open_leaked",
                                               "absent", "judged_by_llm"]


def test_cache_makes_a_rerun_free(tmp_path: Path) -> None:
    cache = tmp_path / "filter_cache.jsonl"
    first, report = run(ScriptedFilterModel(SCRIPT), cache)
    assert len(cache.read_text().splitlines()) == 14
    assert all(json.loads(line)["model"] == "scripted-filter"
               for line in cache.read_text().splitlines())
    again = ScriptedFilterModel({})
    second, report2 = run(again, cache)
    assert again.requests == []
    assert report2["sent"] == 0 and report2["cache_hits"] == 14
    assert second.items == first.items
    # another n is another request
    asyncio.run(apply_filters(dataset(), again, n=4, cache_path=cache))
    assert len(again.requests) == 14 and {r.params.n for r in again.requests} == {4}


def test_llm_judge_filters_llm_items() -> None:
    kept, report = run(ScriptedFilterModel(SCRIPT), None, llm=LLMJudge(ScriptedJudgeModel()))
    assert "judged_by_llm" not in [i.item_id for i in kept.items]  # 0/8 with context
    assert report["llm_judge"] == "scripted-judge"


def test_a_failed_call_is_an_error_naming_the_item() -> None:
    with pytest.raises(JudgeError, match="open_good"):
        run(ScriptedFilterModel(SCRIPT, fail_on="open_good"), None)
