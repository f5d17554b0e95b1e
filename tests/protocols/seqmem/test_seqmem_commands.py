"""``run seqmem`` / ``score seqmem`` / ``generate seqmem-synthetic`` through their argparse
set-up, the SPECS §5 export, and the run summary (metrics, curves, costs by stage, radar)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import build_parser
from clstream.core.errors import DataError, SpecError, StoreError
from clstream.protocols.seqmem.commands import export_seqmem
from clstream.protocols.seqmem.metrics import load_seqmem_records, score_seqmem
from clstream.protocols.seqmem.run_summary import radar, summarize_seqmem_run
from clstream.store.db import ResultsStore
from clstream.store.export import select_run


def parser() -> argparse.ArgumentParser:
    return build_parser()


def call(*argv: str) -> int:
    args = parser().parse_args(list(argv))
    return int(args.handler(args))


@pytest.fixture
def synthetic(tmp_path: Path) -> Path:
    path = tmp_path / "syn.json"
    assert call("generate", "seqmem-synthetic", "--seed", "2", "--tasks", "12", "--holdout", "4",
                "--out", str(path)) == 0
    return path


def test_generate_is_byte_identical_for_a_seed(tmp_path: Path, synthetic: Path) -> None:
    again = tmp_path / "again.json"
    call("generate", "seqmem-synthetic", "--seed", "2", "--tasks", "12", "--holdout", "4",
         "--out", str(again))
    assert again.read_bytes() == synthetic.read_bytes()
    with pytest.raises(SpecError, match="tasks"):
        call("generate", "seqmem-synthetic", "--tasks", "3", "--out", str(again))


def test_run_export_score_and_resume(tmp_path: Path, synthetic: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "runs"
    argv = ("run", "seqmem", str(synthetic), "--system", "exp-rag", "--system", "dc-rs",
            "--out", str(out), "--checkpoints", "0,6,12", "--horizons", "1,2,4", "--no-progress")
    assert call(*argv) == 0
    err = capsys.readouterr().err
    assert "ran exp-rag" in err and "online 12/12" in err and "hold-out 12/12" in err
    with ResultsStore(out) as store:
        before = {r.run_id: store.count(r.run_id, "call") for r in store.runs()}
    assert call(*argv) == 0
    assert "resumed dc-rs" in capsys.readouterr().err
    with ResultsStore(out) as store:
        assert {r.run_id: store.count(r.run_id, "call") for r in store.runs()} == before
        run = select_run(store, "exp-rag")
        assert run.spec["params"]["checkpoints"] == [0, 6, 12]
        n = export_seqmem(store, run, tmp_path / "rec.jsonl")
    assert n == 12 + 3 * 4 + (11 + 10 + 8)
    capsys.readouterr()
    assert call("score", "seqmem", str(tmp_path / "rec.jsonl"), "--json") == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == score_seqmem(load_seqmem_records(tmp_path / "rec.jsonl"))
    assert call("score", "seqmem", str(tmp_path / "rec.jsonl")) == 0
    table = capsys.readouterr().out
    assert "online_acc" in table and "bwt(4)" in table


def test_summary_reports_metrics_curves_costs_and_radar(tmp_path: Path, synthetic: Path) -> None:
    out = tmp_path / "runs"
    call("run", "seqmem", str(synthetic), "--system", "dc-rs", "--out", str(out),
         "--checkpoints", "0,4,8,12", "--no-progress")
    with ResultsStore(out) as store:
        run = select_run(store, "dc-rs")
        summary = summarize_seqmem_run(store, run)
        export_seqmem(store, run, tmp_path / "rec.jsonl")
    json.dumps(summary)
    assert summary["metrics"] == score_seqmem(load_seqmem_records(tmp_path / "rec.jsonl"))
    assert summary["status"]["complete"] and summary["status"]["online_done"] == 12
    assert summary["dataset"]["n_tasks"] == 12 and summary["dataset"]["n_holdout"] == 4
    assert len(summary["online_curve"]) == 12
    assert summary["online_curve"][-1] == pytest.approx(summary["metrics"]["online_acc"])
    assert [c["checkpoint"] for c in summary["holdout_curve"]] == [0, 4, 8, 12]
    assert set(summary["bwt"]) == {"1", "2", "4", "8"} == set(summary["forgetting"])
    eff = summary["efficiency"]
    assert set(eff["tokens_by_stage"]) >= {"retrieve", "generate", "update"}
    assert eff["tokens_by_stage"]["update"]["prompt"] > 0  # the curator calls
    assert eff["tokens_by_stage"]["generate"]["prompt"] > 0
    assert eff["time_s_by_stage"]["retrieve"] > 0 and eff["time_s_by_stage"]["update"] > 0
    assert eff["tokens"] == sum(b["prompt"] + b["completion"] + b["reasoning"]
                                for b in eff["tokens_by_stage"].values())
    assert eff["tokens_per_task"] == pytest.approx(eff["tokens"] / 12)
    assert summary["probe_cost"]["tokens"] > 0
    dims = summary["radar"]
    assert set(dims) == {"online_utility", "holdout_generalization", "backward_transfer",
                         "forgetting", "efficiency"}
    assert all(v is not None and 0.0 <= v <= 1.0 for v in dims.values())


def test_radar_normalization() -> None:
    m = {"online_acc": 0.6, "ped": 0.2, "holdout_acc": 0.5, "trend_ho": 3.0,
         "bwt": {"1": 0.2, "2": -0.2}, "forgetting": {"1": 0.1, "2": 0.3}}
    dims = radar(m, 1000.0)
    assert dims == pytest.approx({"online_utility": 0.7, "holdout_generalization": 0.75,
                                  "backward_transfer": 0.5, "forgetting": 0.8,
                                  "efficiency": 0.5})
    assert radar({"online_acc": 1.0, "ped": 0.0}, None) == {
        "online_utility": 1.0, "holdout_generalization": None, "backward_transfer": None,
        "forgetting": None, "efficiency": None}


def test_summary_of_a_partial_run_scores_the_prefix(tmp_path: Path, synthetic: Path) -> None:
    out = tmp_path / "runs"
    call("run", "seqmem", str(synthetic), "--system", "exp-rag", "--out", str(out),
         "--checkpoints", "0,2,6,12", "--no-progress")
    with ResultsStore(out, writer=True) as store:
        run = store.runs()[0]
        # as if stopped during online task 8, and while answering hold-out items at step 6
        store.conn.execute("DELETE FROM records WHERE kind='online' AND t > 7")
        store.conn.execute("DELETE FROM records WHERE kind='holdout' AND t = 6 AND key LIKE "
                           "'%0001'")
        summary = summarize_seqmem_run(store, run)
    assert not summary["status"]["complete"] and len(summary["online_curve"]) == 7
    assert [c["checkpoint"] for c in summary["holdout_curve"]] == [0, 2]
    assert set(summary["bwt"]) == {"1", "2", "4"}  # tau + t <= 7 leaves no horizon 8


def test_task_file_source(tmp_path: Path) -> None:
    rows = [{"question_id": f"q{i}", "question": f"Which letter is number {i}?",
             "options": ["alpha", "beta", "gamma"], "answer": "ABC"[i % 3]} for i in range(6)]
    data = tmp_path / "mmlu.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "runs"
    assert call("run", "seqmem", str(data), "--source", "mmlu-pro", "--holdout", "2",
                "--system", "exp-rag", "--out", str(out), "--no-progress") == 0
    with ResultsStore(out) as store:
        run = store.runs()[0]
        summary = summarize_seqmem_run(store, run)
        assert run.info["evaluator"] == "mc"
    assert summary["dataset"]["n_tasks"] == 4 and summary["dataset"]["n_holdout"] == 2
    assert summary["status"]["complete"]


@pytest.mark.parametrize("argv, error, needle", [
    (("--checkpoints", "0,x"), SpecError, "--checkpoints"),
    (("--horizons", "12"), SpecError, "--horizons"),
    (("--retro-sample", "2"), SpecError, "--retro-sample"),
    (("--holdout", "3"), SpecError, "--holdout"),
    (("--api-pool", "pool.jsonl"), SpecError, "--api-pool"),
    (("--source", "humaneval"), DataError, "JSON array"),
    (("--source", "apibench"), SpecError, "--api-pool"),
    (("--system", "nope"), SpecError, "unknown system"),
])
def test_bad_flags_are_one_line_errors(tmp_path: Path, synthetic: Path, argv: tuple[str, ...],
                                       error: Any, needle: str) -> None:
    base = ["run", "seqmem", str(synthetic), "--system", "exp-rag", "--out",
            str(tmp_path / "runs"), "--no-progress"]
    with pytest.raises(error, match=needle) as info:
        call(*base, *argv)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "runs" / "results.sqlite").exists()


def test_export_refuses_other_protocols(tmp_path: Path) -> None:
    from clstream.store.db import RunRow

    with ResultsStore(tmp_path, writer=True) as store:
        row = RunRow("r1", "oaks", "full", "builtin", "d", {}, {}, 0.0, 0.0)
        with pytest.raises(StoreError, match="not seqmem"):
            export_seqmem(store, row, tmp_path / "x.jsonl")
