"""`clstream generate / run / summary / export / score / report clbench` end to end with the
builtin model on the short schedules: a system that keeps past steps (``full``) gains on every
task, one with no memory (``memory-free``) acts on its instance's own steps and gains nothing
where the environment keeps nothing between instances, the export scores to exactly the
summary's metrics, the runner reproduces the reference policy drivers, and reruns (whatever
the concurrency) store the same records."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main
from clstream.core.environment import Environment, rollout_order
from clstream.protocols.clbench.commands import make_env
from clstream.protocols.clbench.envs import ENVIRONMENTS
from clstream.protocols.clbench.policies import (
    POLICIES,
    play_instance,
    play_stateful,
    play_stateless,
)
from clstream.store.db import ResultsStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from clbench_short_results import (  # noqa: E402
    OPTIONS,
    SEED,
    full_and_memory_free,
    run_argv,
)

TASKS = sorted(ENVIRONMENTS)


def summary(out: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, Any]]:
    capsys.readouterr()
    assert main(["summary", str(out), "--json"]) == 0
    return {r["system"]: r for r in json.loads(capsys.readouterr().out)["runs"]}


def export(out: Path, system: str, dest: Path) -> list[dict[str, Any]]:
    assert main(["export", str(out), "--system", system, "--out", str(dest)]) == 0
    return [json.loads(line) for line in dest.read_text().splitlines()]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_and_memory_free(tmp_path_factory)


def test_full_gains_on_every_task_and_memory_free_does_not(
        results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = summary(results, capsys)
    assert set(runs) == {"full", "memory-free"}
    for system, run in runs.items():
        assert run["protocol"] == "clbench"
        assert run["status"]["complete"] and run["status"]["errors"] == 0
        assert run["coverage"]["scored"] == run["coverage"]["total"] > 0
        tasks = run["metrics"]["tasks"]
        assert sorted(tasks) == TASKS
        for task, m in tasks.items():
            assert m["rollouts"] == 2
            gain = m["normalized_gain"]["mean"]
            split = m["stability"]["mean"] + m["plasticity"]["mean"]
            assert split == pytest.approx(gain, abs=1e-9)
            if system == "full":  # short spectrum stages are few scans against 3 MHz noise;
                # poker's r_max is the clairvoyant ceiling (docs/clbench.md §4.7)
                least = {"blind_spectrum_monitoring": 0.03, "exploitable_poker": 0.03}
                assert gain > least.get(task, 0.1), (task, gain)
            elif task != "sales_prediction":  # sales' workspace persists in a rollout
                assert gain == pytest.approx(0.0, abs=1e-9), (task, gain)
    agg = runs["full"]["metrics"]["aggregate"]
    assert agg["normalized_gain"]["mean"] > 0.1 and agg["cost"] > 0


def test_export_then_score_gives_the_summary_metrics(
        results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = summary(results, capsys)
    for system in ("full", "memory-free"):
        dest = tmp_path / f"{system}.jsonl"
        rows = export(results, system, dest)
        assert [r["task"] for r in rows if r["kind"] == "task"] == TASKS
        n = {r["task"]: r["n_instances"] for r in rows if r["kind"] == "task"}
        instances = [r for r in rows if r["kind"] == "instance"]
        assert len(instances) == sum(3 * k for k in n.values())  # stateless + 2 rollouts
        assert all(isinstance(r["tokens"], int) and r["tokens"] > 0 for r in instances)
        capsys.readouterr()
        assert main(["score", "clbench", str(dest), "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == runs[system]["metrics"]


def test_summary_text_and_report_show_clbench(
        results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["summary", str(results)]) == 0
    text = capsys.readouterr().out
    assert "[clbench]" in text and "norm gain" in text
    for task in TASKS:
        assert f"{task}" in text
    html = tmp_path / "report.html"
    assert main(["report", str(results), "--out", str(html)]) == 0
    page = html.read_text()
    assert 'id="protocol-clbench"' in page
    assert "CL-Bench" in page and "Cumulative reward: sales_prediction" in page
    assert "Stability and plasticity" in page and "Cost against normalized gain" in page


def _stored(out: Path, system: str, kind: str, arm: str | None = None) -> dict[str, Any]:
    with ResultsStore(out) as store:
        (run,) = [r for r in store.runs() if r.system == system]
        return {rec.key: (rec.score, rec.payload, rec.usage.prompt_tokens)
                for rec in store.read_records(run.run_id, kind, arm=arm)}


def test_reruns_store_the_same_records_whatever_the_concurrency(
        results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    again = tmp_path / "again"
    assert main(run_argv(again, "full", "memory-free", extra=("--parallel", "1"))) == 0
    for system in ("full", "memory-free"):
        for arm in ("stateless", "stateful"):
            first = _stored(results, system, "instance", arm)
            assert first and _stored(again, system, "instance", arm) == first
            assert _stored(again, system, "step", arm) == _stored(results, system, "step", arm)
    # A finished run asked again does nothing more.
    before = _stored(again, "full", "step")
    assert main(run_argv(again, "full", extra=("--parallel", "8"))) == 0
    assert _stored(again, "full", "step") == before


def test_the_runner_plays_exactly_the_reference_policy_runs(
        results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With the builtin model, ``full`` shows every past step, so the builtin policy acting on
    the prompt does what the reference drivers do with the policy's own memory."""
    stored = _stored(results, "full", "instance")
    options = {"database_exploration": {"notice": "on"}, "sales_prediction": {"feedback": "rich"}}
    assert OPTIONS == tuple(x for task, given in options.items() for name, value in given.items()
                            for x in ("--env-option", f"{task}:{name}={value}"))
    for task in TASKS:
        env: Environment = make_env(task, int(SEED), "short", options)
        policy = POLICIES[task]()
        for run in play_stateless(env, policy):
            key = f"{task}/stateless/0/{run.instance_id}"
            assert stored[key][0] == pytest.approx(run.reward), key
        for rollout in (0, 1):
            for pos, run in enumerate(play_stateful(env, policy, rollout), start=1):
                score, payload, _ = stored[f"{task}/stateful/{rollout}/{run.instance_id}"]
                assert (payload["pos"], payload["steps"]) == (pos, run.steps)
                assert score == pytest.approx(run.reward)


def test_memory_free_acts_on_the_steps_of_the_instance_in_progress(
        results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Within an instance every system sees its own steps (docs/clbench.md §2.4): with no
    memory, the builtin policy acting on the prompt does what it does given only the current
    instance's turns, in the stateless arm and in each rollout's environment."""
    stored = _stored(results, "memory-free", "instance")
    database = stored["database_exploration/stateless/0/q01"][1]
    assert database["steps"] > 1 and stored["database_exploration/stateless/0/q01"][0] > 0
    for task in TASKS:
        env: Environment = ENVIRONMENTS[task](int(SEED), "short")
        policy = POLICIES[task]()
        for run in play_stateless(env, policy):
            score, payload, _ = stored[f"{task}/stateless/0/{run.instance_id}"]
            assert (score, payload["steps"]) == (pytest.approx(run.reward), run.steps), task
        for rollout in (0, 1):
            env.reset()
            for iid in rollout_order(env.schedule, env.order_policy, env.seed, rollout):
                run = play_instance(env, policy, iid, [])
                score, payload, _ = stored[f"{task}/stateful/{rollout}/{iid}"]
                assert (score, payload["steps"]) == (pytest.approx(run.reward), run.steps), iid


def test_step_records_hold_the_actions_and_feedback(results: Path) -> None:
    with ResultsStore(results) as store:
        (run,) = [r for r in store.runs() if r.system == "full"]
        steps = list(store.read_records(run.run_id, "step", arm="stateful", rollout=0,
                                        stream="database_exploration/q01"))
        assert steps and [s.step for s in steps] == list(range(1, len(steps) + 1))
        for s in steps:
            assert s.payload["valid"] and not s.payload["repaired"]
            assert "reply" not in s.payload  # the builtin replies with the action itself
            assert isinstance(json.loads(s.payload["action"]), dict)
            assert s.payload["feedback"] and s.usage.prompt_tokens > 0
        assert steps[-1].payload["complete"]
        states = store.state_steps(run.run_id, "sales_prediction/stateful/0")
        assert states == [1, 2, 3]


def test_generate_writes_each_environment_s_materials(tmp_path: Path) -> None:
    out = tmp_path / "materials"
    assert main(["generate", "clbench", "--schedule", "short", "--seed", "2", "--out",
                 str(out)]) == 0
    for task in TASKS:
        schedule = json.loads((out / task / "schedule.json").read_text())
        ids = [i for s in schedule["schedule"]["stages"] for i in s["instance_ids"]]
        assert schedule["task"] == task and schedule["n_instances"] == len(ids)
        assert sorted(schedule["rollout_orders"]["1"]) == sorted(ids)
        lines = (out / task / "observations.jsonl").read_text().splitlines()
        shown = [json.loads(line) for line in lines]
        assert [s["instance_id"] for s in shown] == ids
        assert all(s["observation"].startswith(f"Instance {s['instance_id']}, step 1")
                   for s in shown)
        assert "JSON" in (out / task / "instructions.txt").read_text()
    channels = json.loads((out / "blind_spectrum_monitoring" / "channels.json").read_text())
    assert len(channels) == 13
    panel = (out / "sales_prediction" / "panel.csv").read_text().splitlines()
    assert panel[0] == "locality,furniture_name,year,items_sold" and len(panel) > 100
    assert list((out / "sales_prediction" / "files").glob("year-*/data/sales_*.csv"))
    for name in ("database_pre_migration.sqlite", "database_post_migration.sqlite"):
        conn = sqlite3.connect(out / "database_exploration" / name)
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        conn.close()
        assert any(t.endswith("_products") for t in tables)
    bank = [json.loads(line) for line in
            (out / "database_exploration" / "questions.jsonl").read_text().splitlines()]
    assert [q["post_migration"] for q in bank] == [False] * 3 + [True] * 3
    assert all(q["pre_migration_sql"] != q["sql"] for q in bank if q["post_migration"])


def test_unknown_task_and_bad_counts_are_one_line_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(run_argv(tmp_path / "x", "full", extra=("--task", "poker"))) == 2
    assert "unknown task 'poker'" in capsys.readouterr().err
    assert main(run_argv(tmp_path / "x", "full", extra=("--rollouts", "0"))) == 2
    assert "--rollouts" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_paired_comparison_of_instance_gains(results: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """full against memory-free on the same stateful instances (protocols/clbench/items.py):
    memory-free's stateful arm is its stateless arm replayed wherever the environment keeps
    nothing between instances (all but sales' workspace), so its gains there are 0; the
    difference is the mean of the paired differences."""
    from clstream.protocols.clbench.items import item_scores

    capsys.readouterr()
    assert main(["summary", str(results), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    (pair,) = [p for p in found["paired"]["pairs"] if p["protocol"] == "clbench"]
    assert pair["metric"] == "instance_gain" and pair["items"] > 0
    with ResultsStore(results) as store:
        scores = {run.system: item_scores(store, run)["instance_gain"] for run in store.runs()}
    assert set(scores["full"]) == set(scores["memory-free"])
    assert not any(v for k, v in scores["memory-free"].items()
                   if not k.startswith("sales_prediction/"))
    assert any(scores["full"].values())
    assert pair["items"] == len(scores["full"])
    sign = 1 if pair["a"] == "full" else -1
    mean = sum(scores["full"][k] - scores["memory-free"][k] for k in scores["full"]) \
        / len(scores["full"])
    assert pair["difference"] == pytest.approx(sign * mean)
    low, high = pair["interval"]
    assert low <= pair["difference"] <= high and 0.0 <= pair["p_value"] <= 1.0
