"""``--seeds`` runs every system once per seed (docs/design.md §11.6); ``summary --json``
then groups the seeds and compares the systems item by item (docs/statistics.md §1, §2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main

SYSTEMS = ["--system", "memory-free", "--system", "exp-recent:k=2"]


def _summary(results: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["summary", str(results), "--json"]) == 0
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


@pytest.fixture(scope="module")
def stream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("seeds") / "syn.json"
    assert main(["generate", "seqmem-synthetic", "--seed", "2", "--tasks", "8", "--holdout",
                 "3", "--out", str(path)]) == 0
    return path


def test_seeds_run_each_seed_aggregate_and_pair(stream: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    argv = ["run", "seqmem", str(stream), "--out", str(results), "--no-progress", *SYSTEMS,
            "--seeds", "0,1"]
    assert main(argv) == 0
    summary = _summary(results, capsys)
    runs = summary["runs"]
    assert sorted((r["system"], r["meta"]["seed"]) for r in runs) == [
        ("exp-recent:k=2", 0), ("exp-recent:k=2", 1), ("memory-free", 0), ("memory-free", 1)]
    groups = summary["seeds"]["groups"]
    assert sorted(g["system"] for g in groups) == ["exp-recent:k=2", "memory-free"]
    for group in groups:
        assert group["seeds"] == [0, 1]
        online = group["metrics"]["online_acc"]
        values = [next(r["metrics"]["online_acc"] for r in runs if r["run_id"] == run_id)
                  for run_id in group["run_ids"]]
        assert online["n"] == 2 and online["mean"] == pytest.approx(sum(values) / 2)
        assert online["interval"] is not None
    pairs = summary["paired"]["pairs"]
    assert sorted(p["seed"] for p in pairs) == [0, 1]
    for pair in pairs:
        assert (pair["a"], pair["b"], pair["metric"], pair["items"]) == (
            "memory-free", "exp-recent:k=2", "online_acc", 8)
        by_id = {r["run_id"]: r["metrics"]["online_acc"] for r in runs}
        assert pair["difference"] == pytest.approx(by_id[pair["run_a"]] - by_id[pair["run_b"]])
        assert pair["exact"] and 0.0 < pair["p_value"] <= 1.0
    capsys.readouterr()
    assert main(["summary", str(results)]) == 0
    text = capsys.readouterr().out
    assert "Over seeds" in text and "Paired differences" in text
    assert "adjusted for multiple comparisons" in text
    # The table tells apart runs that differ only in seed.
    header = next(line for line in text.splitlines() if line.startswith("system "))
    assert header.split()[:3] == ["system", "model", "seed"]
    rows = [line.split()[:3] for line in text.splitlines() if line.startswith("memory-free ")]
    assert rows == [["memory-free", "builtin", "0"], ["memory-free", "builtin", "1"]]

    # A rerun does nothing; --seed 1 alone is the same run as --seeds' seed 1.
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err.count("resumed ") == 4 and "ran " not in err
    assert main(["run", "seqmem", str(stream), "--out", str(results), "--no-progress",
                 "--system", "memory-free", "--seed", "1"]) == 0
    assert "resumed memory-free" in capsys.readouterr().err
    assert len(_summary(results, capsys)["runs"]) == 4


def test_seed_and_seeds_together_is_one_line(stream: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    code = main(["run", "seqmem", str(stream), "--out", str(tmp_path / "r"), "--no-progress",
                 "--system", "memory-free", "--seed", "1", "--seeds", "0,1"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--seed and --seeds" in err
    assert not (tmp_path / "r").exists()
    assert main(["run", "seqmem", str(stream), "--out", str(tmp_path / "r"), "--no-progress",
                 "--system", "memory-free", "--seeds", "0,x"]) == 2
    err = capsys.readouterr().err
    assert "flag --seeds" in err and "must be an integer" in err and "'x'" in err


def test_matrix_runs_every_seed_on_its_own_data(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "matrix"
    assert main(["run", "matrix", "--protocols", "seqmem", "--systems", "memory-free",
                 "--out", str(results), "--no-progress", "--seeds", "0,1"]) == 0
    assert sorted(p.name for p in (results / "data" / "seqmem").iterdir()) == [
        "seqmem-synthetic-seed0.json", "seqmem-synthetic-seed1.json"]
    summary = _summary(results, capsys)
    assert sorted(r["meta"]["seed"] for r in summary["runs"]) == [0, 1]
    (group,) = summary["seeds"]["groups"]
    assert group["seeds"] == [0, 1] and len(group["datasets"]) == 2
