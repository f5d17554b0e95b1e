"""`clstream run / summary / export / score imprint` end to end on a hand-made dataset with the
builtin model: the oracle beats the base model, ingestion feeds C, Q or C+Q in the documented
order, a rerun makes no model call, a failing model's items are errors (never wrong answers)
with exit status 3, and the export scores to exactly the summary's metrics."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main
from clstream.core import registry
from clstream.core.types import GenerationRequest, GenerationResult, Sample
from clstream.models.builtin import BuiltinReader
from clstream.protocols.imprint.runner import documents
from clstream.protocols.imprint.schema import (
    CorpusDoc,
    Dataset,
    Item,
    Manifest,
    QAPair,
    load_dataset,
    write_dataset,
)
from clstream.store.db import ResultsStore


def tiny_dataset() -> Dataset:
    docs = [
        CorpusDoc(doc_id="a1", date="2031-03-02", title="Cabinet news",
                  text="Ivo Brenn was named finance minister of Ostrava. The Ostrava central "
                       "bank raised its rate to 4 percent."),
        CorpusDoc(doc_id="a2", date="2031-03-20", title="Reshuffle",
                  text="Ana Kowal replaced Ivo Brenn as finance minister of Ostrava."),
    ]
    qa = [QAPair(qa_id="q1", doc_id="a1", question="What rate did the bank set?",
                 answer="4 percent"),
          QAPair(qa_id="q2", doc_id="a2", question="Whom did Ana Kowal replace?",
                 answer="Ivo Brenn")]
    items = [
        Item(item_id="d1", setting="news", family="DirAcq", judge="yesno", gold="Yes",
             question="Did the Ostrava central bank raise its rate to 4 percent in early "
                      "March 2031?", source_doc_ids=["a1"]),
        Item(item_id="d2", setting="news", family="DirAcq", judge="yesno", gold="No",
             question="Did the Ostrava central bank raise its rate to 7 percent in early "
                      "March 2031?", source_doc_ids=["a1"]),
        Item(item_id="t1", setting="news", family="TempUpd", judge="yesno", gold="No",
             axis="negation", gold_before="Yes",
             question="As of 2031-03-25, is Ivo Brenn still the finance minister of Ostrava?",
             source_doc_ids=["a1", "a2"]),
        Item(item_id="b1", setting="news", family="BoundAbs", judge="abstain",
             gold="No record of a Velmar broadcasting deal",
             question="Did the Velmar league sign a broadcasting deal in March 2031?"),
    ]
    return Dataset(Manifest(setting="news", generator="hand-made"), docs, qa, items)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("imprint") / "data", tiny_dataset())


def run_argv(data: Path, out: Path, *systems: str, extra: Sequence[str] = ()) -> list[str]:
    argv = ["run", "imprint", str(data), "--model", "builtin", "--samples", "2",
            "--out", str(out), "--no-progress", *extra]
    for s in systems:
        argv += ["--system", s]
    return argv


def summaries(out: Path, capsys: pytest.CaptureFixture[str]
              ) -> dict[tuple[str, str], dict[str, Any]]:
    capsys.readouterr()
    assert main(["summary", str(out), "--json"]) == 0
    return {(r["system"], r["supervision"]): r
            for r in json.loads(capsys.readouterr().out)["runs"]}


def test_oracle_beats_base_and_export_scores_to_the_summary(
        data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results"
    assert main(run_argv(data_dir, out, "base", "oracle")) == 0
    runs = summaries(out, capsys)
    assert set(runs) == {("memory-free", "C"), ("oracle", "C")}
    base, oracle = runs[("memory-free", "C")], runs[("oracle", "C")]
    for run in (base, oracle):
        assert run["status"]["complete"] and run["coverage"]["scored"] == 4
        assert run["metrics"]["n_samples"] == 2
    fam = {r: runs[r]["metrics"]["by_family"] for r in runs}
    assert fam[("oracle", "C")]["DirAcq"]["pass_at_1"] == 1.0
    assert fam[("memory-free", "C")]["DirAcq"]["pass_at_1"] == 0.0
    assert fam[("oracle", "C")]["TempUpd"]["pass_at_1"] == 1.0
    # Nothing shown, nothing claimed: the base model abstains on the unanswerable item.
    assert fam[("memory-free", "C")]["BoundAbs"]["pass_at_1"] == 1.0
    assert oracle["context"]["tokens_in_context"] > 0
    assert base["context"]["tokens_in_context"] == 0
    assert base["context"]["compression_ratio"] is None
    assert oracle["context"]["compression_ratio"] > 0

    predictions = tmp_path / "oracle.jsonl"
    assert main(["export", str(out), "--system", "oracle", "--out", str(predictions)]) == 0
    items = predictions.with_name("oracle.items.jsonl")
    capsys.readouterr()
    assert main(["score", "imprint", str(items), str(predictions), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == oracle["metrics"]


def test_score_summary_and_report_show_what_constant_answers_score(
        data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results"
    assert main(run_argv(data_dir, out, "oracle")) == 0
    capsys.readouterr()
    assert main(["summary", str(out)]) == 0
    text = capsys.readouterr().out
    # DirAcq one Yes one No; TempUpd's only item has gold No; "No." denies on BoundAbs
    assert "news: DirAcq 50.0/50.0/0.0/0.0  TempUpd 0.0/100.0/0.0/0.0  BoundAbs " \
           "0.0/100.0/100.0/0.0  Avg 16.7/83.3/33.3/0.0" in text
    predictions = tmp_path / "oracle.jsonl"
    assert main(["export", str(out), "--system", "oracle", "--out", str(predictions)]) == 0
    capsys.readouterr()
    assert main(["score", "imprint", str(predictions.with_name("oracle.items.jsonl")),
                 str(predictions)]) == 0
    scored = capsys.readouterr().out
    assert "constant answers, pass@1 % (Yes. / No. / I don't know. / A; deterministic" in scored
    assert "  DirAcq 50.0/50.0/0.0/0.0  TempUpd 0.0/100.0/0.0/0.0" in scored
    html = tmp_path / "report.html"
    assert main(["report", str(out), "--out", str(html)]) == 0
    assert "news: what a constant answer scores" in html.read_text(encoding="utf-8")


def test_a_rerun_makes_no_model_call(data_dir: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "results"
    assert main(run_argv(data_dir, out, "rag:k=1")) == 0
    with ResultsStore(out) as store:
        before = [(r.key, r.payload) for run in store.runs()
                  for r in store.read_records(run.run_id)]

    async def refuse(self: BuiltinReader, requests: Sequence[GenerationRequest]
                     ) -> list[GenerationResult]:
        raise AssertionError("a finished run called the model again")

    monkeypatch.setattr(BuiltinReader, "generate", refuse)
    capsys.readouterr()
    assert main(run_argv(data_dir, out, "rag:k=1")) == 0
    assert "resumed rag" in capsys.readouterr().err
    with ResultsStore(out) as store:
        after = [(r.key, r.payload) for run in store.runs()
                 for r in store.read_records(run.run_id)]
    assert after == before


def test_supervision_orders_documents(data_dir: Path) -> None:
    data = load_dataset(data_dir)
    assert [d.doc_id for d in documents(data, "all", "C")] == ["a1", "a2"]
    assert [d.doc_id for d in documents(data, "all", "Q")] == ["q1", "q2"]
    assert [d.doc_id for d in documents(data, "all", "C+Q")] == ["a1", "q1", "a2", "q2"]
    qa = documents(data, "all", "Q")[0]
    assert qa.text == "Q: What rate did the bank set?\nA: 4 percent"
    assert qa.meta["kind"] == "qa" and qa.meta["source_doc_id"] == "a1"
    article = documents(data, "all", "C")[0]
    assert article.text.startswith("Title: Cabinet news\nDate: 2031-03-02\n\n")


def test_supervision_is_part_of_the_run(data_dir: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results"
    assert main(run_argv(data_dir, out, "full", extra=["--supervision", "Q"])) == 0
    assert main(run_argv(data_dir, out, "full", extra=["--supervision", "C+Q"])) == 0
    runs = summaries(out, capsys)
    assert set(runs) == {("full", "Q"), ("full", "C+Q")}
    q, cq = runs[("full", "Q")], runs[("full", "C+Q")]
    assert cq["context"]["tokens_in_context"] > q["context"]["tokens_in_context"] > 0


class FailingOn(BuiltinReader):
    """The builtin reader, failing every request about the Velmar league."""

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        results = await super().generate(requests)
        return [GenerationResult(key=r.key, error="server said no")
                if "Velmar" in q.prompt_text else r for q, r in zip(requests, results,
                                                                     strict=True)]


def test_failed_items_are_errors_not_wrong_answers(
        data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    registry.register("model", "failing-builtin", f"{__name__}:FailingOn")
    try:
        out = tmp_path / "results"
        argv = run_argv(data_dir, out, "oracle")
        argv[argv.index("builtin")] = "failing-builtin"
        capsys.readouterr()
        assert main(argv) == 3
        err = capsys.readouterr().err
        assert "server said no" in err and "clstream run imprint" in err
        runs = summaries(out, capsys)
        run = runs[("oracle", "C")]
        assert run["coverage"] == {"scored": 3, "total": 4, "unit": "items", "errors": 1}
        assert not run["status"]["complete"]
        assert "BoundAbs" not in run["metrics"]["by_family"]
    finally:
        registry.unregister("model", "failing-builtin")


def test_a_bad_dataset_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_dataset(tmp_path / "data", tiny_dataset())
    lines = (data / "items.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace('"judge": "yesno"', '"judge": "vibes"')
    (data / "items.jsonl").write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(run_argv(data, tmp_path / "out", "oracle")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "items.jsonl" in err and "line 2" in err and "judge" in err
    assert not (tmp_path / "out").exists()


class AlwaysMatch(BuiltinReader):
    """A judge model that finds every answer right, in each judge's verdict word (and
    counts its calls)."""

    calls = 0
    WORDS = {"rubric": "MATCH", "yn": "Y", "identifier": "YES"}

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        type(self).calls += len(requests)
        return [GenerationResult(key=r.key, samples=[Sample(
                    text=f"Close enough.\n{self.WORDS[r.key.split('/')[1]]}")])
                for r in requests]


def test_llm_judged_items_are_judged_once_and_recorded(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tiny_dataset()
    data.items.append(Item(item_id="r1", setting="news", family="ImpRel", judge="llm",
                           gold="the reshuffle", question="What happened in Ostrava's "
                           "cabinet in March 2031?", source_doc_ids=["a2"]))
    directory = write_dataset(tmp_path / "data", data)
    out = tmp_path / "results"
    capsys.readouterr()
    assert main(run_argv(directory, out, "oracle")) == 2
    assert "--judge" in capsys.readouterr().err
    registry.register("model", "always-match", f"{__name__}:AlwaysMatch")
    try:
        AlwaysMatch.calls = 0
        argv = run_argv(directory, out, "oracle", extra=["--judge", "always-match"])
        assert main(argv) == 0
        # r1 (judged 'llm') and t1 (news TempUpd: the Y/N judge under --judge); two
        # identical samples each: one distinct judgment each
        assert AlwaysMatch.calls == 2
        assert main(argv) == 0
        assert AlwaysMatch.calls == 2
    finally:
        registry.unregister("model", "always-match")
    run = summaries(out, capsys)[("oracle", "C")]
    assert run["metrics"]["by_family"]["ImpRel"]["pass_at_1"] == 1.0
    with ResultsStore(out) as store:
        stored = [r for rid in store.runs() for r in store.read_records(rid.run_id, "judgment")]
    assert sorted(r.key for r in stored) == ["r1", "t1"]
    verdict = next(r for r in stored if r.key == "r1").payload["verdicts"][0]
    assert verdict["verdict"] == "MATCH" and verdict["judge_model"] == "builtin"
    assert run["metrics"]["by_family"]["TempUpd"]["judge"] == "llm:builtin (yn)"
    assert run["metrics"]["by_family"]["DirAcq"]["judge"] == "deterministic"
    assert verdict["judge_prompt_hash"]
