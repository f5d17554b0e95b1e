"""`clstream run clbench --reference`: S_ext from numbers given or from a stored run's stateless
arm, recorded with the run, reported by ``summary`` as the normalized reward and written into
the export so that ``score clbench`` gives the same metrics."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main
from clstream.store.db import ResultsStore

TASKS = ["blind_spectrum_monitoring", "database_exploration", "sales_prediction"]
NUMBERS = {task: 0.05 * (i + 1) for i, task in enumerate(TASKS)}  # below every ceiling


def run_argv(out: Path, system: str, *extra: str) -> list[str]:
    return ["run", "clbench", *(a for t in TASKS for a in ("--task", t)),
            "--schedule", "short", "--rollouts", "2", "--seed", "5",
            "--out", str(out), "--no-progress", "--system", system, *extra]


def summary_of(out: Path, system: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["summary", str(out), "--json"]) == 0
    (run,) = [r for r in json.loads(capsys.readouterr().out)["runs"] if r["system"] == system]
    return dict(run)


def export_of(out: Path, system: str, dest: Path) -> list[dict[str, Any]]:
    assert main(["export", str(out), "--system", system, "--out", str(dest)]) == 0
    return [json.loads(line) for line in dest.read_text().splitlines()]


def run_id(out: Path, system: str) -> str:
    with ResultsStore(out) as store:
        (run,) = [r for r in store.runs() if r.system == system]
        return run.run_id


def scored_equals_summary(dest: Path, run: dict[str, Any],
                          capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["score", "clbench", str(dest), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == run["metrics"]


@pytest.fixture(scope="module")
def numbers_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("numbers") / "results"
    given = ",".join(f"{task}={value}" for task, value in NUMBERS.items())
    assert main(run_argv(out, "full", "--reference", given)) == 0
    return out


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("by_run") / "results"
    assert main(run_argv(out, "memory-free")) == 0
    assert main(run_argv(out, "full", "--reference", run_id(out, "memory-free"))) == 0
    return out


def test_numbers_give_the_normalized_reward_of_the_formula(
        numbers_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = summary_of(numbers_dir, "full", capsys)
    assert run["reference"] == {"source": "numbers", "s_ext": NUMBERS}
    dest = tmp_path / "full.jsonl"
    rows = export_of(numbers_dir, "full", dest)
    task_lines = {r["task"]: r for r in rows if r["kind"] == "task"}
    assert {t: line["s_ext"] for t, line in task_lines.items()} == NUMBERS
    means = []
    for task, line in task_lines.items():
        n, r_max, s_ext = line["n_instances"], line["r_max"], line["s_ext"]
        sums: dict[int, float] = {}
        for r in rows:
            if r["kind"] == "instance" and r["task"] == task and r["arm"] == "stateful":
                sums[r["rollout"]] = sums.get(r["rollout"], 0.0) + r["reward"]
        assert sorted(sums) == [0, 1]
        values = [(s - s_ext) / (n * r_max - s_ext) for s in sums.values()]
        mean = sum(values) / 2
        se = math.sqrt(sum((v - mean) ** 2 for v in values) / 1) / math.sqrt(2)
        got = run["metrics"]["tasks"][task]["normalized_reward"]
        assert got["mean"] == pytest.approx(mean, abs=1e-12)
        assert got["se"] == pytest.approx(se, abs=1e-12)
        means.append(mean)
    agg = run["metrics"]["aggregate"]["normalized_reward"]
    assert agg["mean"] == pytest.approx(sum(means) / len(means), abs=1e-12)
    assert isinstance(agg["ci95"], float)
    scored_equals_summary(dest, run, capsys)


def test_a_reference_run_gives_its_stateless_sums(
        run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref_rows = export_of(run_dir, "memory-free", tmp_path / "ref.jsonl")
    stateless = {task: sum(r["reward"] for r in ref_rows if r["kind"] == "instance"
                           and r["task"] == task and r["arm"] == "stateless")
                 for task in TASKS}
    run = summary_of(run_dir, "full", capsys)
    ref = run["reference"]
    assert ref["source"] == "run" and ref["run_id"] == run_id(run_dir, "memory-free")
    assert ref["system"] == "memory-free"
    assert ref["s_ext"] == pytest.approx(stateless, abs=1e-12)
    dest = tmp_path / "full.jsonl"
    rows = export_of(run_dir, "full", dest)
    assert {r["task"]: r["s_ext"] for r in rows if r["kind"] == "task"} == ref["s_ext"]
    assert set(run["metrics"]["tasks"]) == set(TASKS)
    assert all("normalized_reward" in m for m in run["metrics"]["tasks"].values())
    assert "normalized_reward" in run["metrics"]["aggregate"]
    scored_equals_summary(dest, run, capsys)
    # The reference run itself has none.
    assert summary_of(run_dir, "memory-free", capsys)["reference"] is None
    assert "normalized_reward" not in summary_of(run_dir, "memory-free", capsys)["metrics"][
        "aggregate"]


@pytest.mark.parametrize("given", ["no_such_task=1.0", "0123456789abcdef"])
def test_an_unknown_task_or_run_is_a_one_line_error(
        run_dir: Path, given: str, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(run_argv(run_dir, "window", "--reference", given)) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--reference" in err and given.split("=")[0] in err
    with ResultsStore(run_dir) as store:
        assert "window" not in {r.system for r in store.runs()}


def test_a_resume_must_keep_the_reference(
        numbers_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(run_argv(numbers_dir, "full", "--reference", f"{TASKS[0]}=0")) == 2
    assert "same one" in capsys.readouterr().err


def test_a_reference_at_or_above_the_ceiling_is_refused_before_anything_is_stored(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "runs"
    task = "sales_prediction"
    capsys.readouterr()
    assert main(run_argv(out, "full", "--task", task, "--reference", f"{task}=1000000")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "must be below the task's ceiling" in err
    assert not out.exists()
