"""What an incomplete CL-Bench run is scored on: complete arms only (SPECS §3; DESIGN.md,
"Trust"). A partial rollout is left out, a task without a complete stateless arm or any
complete rollout is withheld, and the snapshots of a rollout read back through their deltas.
Also the per-stage means (summary and report) and the normalized reward in the text table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main
from clstream.core.errors import DataError
from clstream.protocols.clbench.metrics import score_clbench, stage_means
from clstream.protocols.clbench.run_summary import (
    BUILTIN_POLICY_NOTE,
    builtin_policy_note,
    by_stage,
    scored_records,
    text_rows,
)
from clstream.protocols.clbench.snapshots import apply_delta
from clstream.store.snapshots import whole_state

VIEW = {"tasks": {"a": {"n_instances": 2, "r_max": 1.0}, "b": {"n_instances": 2, "r_max": 1.0}}}


def rows(task: str, arm: str, rollout: int, rewards: list[float]) -> list[dict[str, Any]]:
    return [{"kind": "instance", "task": task, "arm": arm, "rollout": rollout, "pos": i + 1,
             "instance_id": f"i{i}", "stage": 0, "reward": r} for i, r in enumerate(rewards)]


def test_partial_rollouts_are_left_out_and_tasks_without_complete_arms_withheld() -> None:
    stored = {
        "a": {("stateless", 0): rows("a", "stateless", 0, [0.0, 0.0]),
              ("stateful", 0): rows("a", "stateful", 0, [0.5, 1.0]),
              ("stateful", 1): rows("a", "stateful", 1, [1.0])},  # partial
        "b": {("stateless", 0): rows("b", "stateless", 0, [0.0]),  # partial: b withheld
              ("stateful", 0): rows("b", "stateful", 0, [1.0, 1.0])},
    }
    records, tasks = scored_records(VIEW, stored, rollouts=2)
    assert tasks["a"]["scored"] and tasks["a"]["rollouts_complete"] == [0]
    assert not tasks["b"]["scored"] and not tasks["b"]["stateless_complete"]
    assert [r["task"] for r in records if r["kind"] == "task"] == ["a"]
    assert len(records) == 1 + 2 + 2
    result = score_clbench(records)
    assert result["tasks"]["a"]["rollouts"] == 1
    assert result["tasks"]["a"]["normalized_gain"]["mean"] == pytest.approx(0.75)


def test_the_export_bounds_each_reward_by_the_task_best_reward() -> None:
    view = {"tasks": {"a": {"n_instances": 2, "r_max": 1.0,
                            "ceiling": {"basis": "best_reward", "best_reward": 1.0}}}}
    stored = {"a": {("stateless", 0): rows("a", "stateless", 0, [0.0, 0.0]),
                    ("stateful", 0): rows("a", "stateful", 0, [0.5, 1.0])}}
    records, _ = scored_records(view, stored, rollouts=1)
    assert records[0]["reward_max"] == 1.0
    score_clbench(records)
    records[-1]["reward"] = 1.25  # above best_reward, though the rollout's mean is not above r_max
    with pytest.raises(DataError, match="outside task 'a''s range"):
        score_clbench(records)
    records, _ = scored_records(VIEW, {"a": stored["a"]}, rollouts=1)  # a run recorded before
    assert "reward_max" not in records[0]


def test_a_snapshot_delta_rebuilds_the_state() -> None:
    old = {"system": {"memory": {"texts": [1, 2]}, "k": 1}, "env": {"completed": ["x"]}}
    new = {"system": {"memory": {"texts": [1, 2, 3]}, "j": 2}, "env": {"completed": ["y"]}}
    # as rollouts stored before the store kept deltas itself wrote them
    delta = {"dict": {"system": {"dict": {"memory": {"dict": {"texts": {"append": [3]}},
                                                     "del": []}, "j": {"=": 2}}, "del": ["k"]},
                      "env": {"dict": {"completed": {"=": ["y"]}}, "del": []}}, "del": []}
    assert apply_delta(old, delta) == new
    assert whole_state(new) == {"full": new}


def test_stage_means_by_hand() -> None:
    # stage 0: instances i0, i1; stage 1: instance i2. Two rollouts, permuted within stage 0.
    sl = [(0, 0.0), (0, 1.0), (1, 0.5)]
    sf = [[(0, 1.0), (0, 1.0), (1, 0.0)], [(0, 0.5), (0, 0.0), (1, 1.0)]]
    means = stage_means(sf, sl)
    assert list(means) == [0, 1]
    # stateful stage 0: rollout means 1.0 and 0.25 -> 0.625; stateless 0.5
    assert means[0]["n"] == 2
    assert means[0]["stateful"] == pytest.approx(0.625)
    assert means[0]["stateless"] == pytest.approx(0.5)
    assert means[0]["gain"] == pytest.approx(0.125)
    # stage 1: rollouts 0.0 and 1.0 -> 0.5; stateless 0.5
    assert means[1] == {"n": 1, "stateful": pytest.approx(0.5),
                        "stateless": pytest.approx(0.5), "gain": pytest.approx(0.0)}
    assert stage_means([], [(2, 1.0)])[2]["stateful"] is None


def test_by_stage_uses_only_the_scored_rollouts() -> None:
    def staged(arm: str, rollout: int, rewards: list[float]) -> list[dict[str, Any]]:
        out = rows("a", arm, rollout, rewards)
        for r, stage in zip(out, [0, 0, 1], strict=True):
            r["stage"] = stage
        return out

    stored = {("stateless", 0): staged("stateless", 0, [0.0, 1.0, 0.5]),
              ("stateful", 0): staged("stateful", 0, [1.0, 1.0, 0.0]),
              ("stateful", 1): staged("stateful", 1, [0.0, 0.0, 0.0])}
    table = by_stage(stored, [0], {0: "v0", 1: "v1"})
    assert table == [
        {"stage": 0, "variant": "v0", "n": 2, "stateful": 1.0, "stateless": 0.5, "gain": 0.5},
        {"stage": 1, "variant": "v1", "n": 1, "stateful": 0.0, "stateless": 0.5, "gain": -0.5}]


def _text_run(task_metrics: dict[str, Any], aggregate: dict[str, Any]) -> dict[str, Any]:
    return {"system": "full", "model": "builtin",
            "tasks": {"a": {"stateless_done": 2, "stateful_done": {"0": 2},
                            "instances_total": 4, "errors": 0, "tokens": 10}},
            "status": {"instances_done": 4, "instances_total": 4, "errors": 0, "tokens": 10,
                       "complete": True},
            "coverage": {"complete": True},
            "metrics": {"tasks": {"a": task_metrics}, "aggregate": aggregate}}


def _columns(lines: list[str], header: int, row: int) -> dict[str, str]:
    """The cells of line ``row`` under the header at line ``header``, by column name (the
    columns are separated by two spaces at least)."""
    import re

    names = re.split(r"\s{2,}", lines[header].strip())
    cells = re.split(r"\s{2,}", lines[row].strip())
    return dict(zip(names, cells, strict=True))


def test_the_text_tables_name_one_meaning_of_plus_minus_each() -> None:
    m = {"normalized_gain": {"mean": 0.5, "se": None}, "reward": {"mean": 1.5},
         "stateless_reward": 1.0, "stability": {"mean": 0.2}, "plasticity": {"mean": 0.3}}
    with_ref = text_rows([_text_run({**m, "normalized_reward": {"mean": 0.25, "se": 0.01}},
                                    {"normalized_gain": {"mean": 0.5, "ci95": None},
                                     "normalized_reward": {"mean": 0.25, "ci95": 0.02}})])
    without = text_rows([_text_run(m, {"normalized_gain": {"mean": 0.5, "ci95": None}})])
    # Per task: ± is a standard error; over tasks, a table of its own: the 95% half-width.
    assert _columns(with_ref, 0, 1)["norm reward ± SE"] == "0.250 ± 0.010"
    assert with_ref[2] == ""
    over = _columns(with_ref, 3, 4)
    assert over["norm reward ± 95% CI half-width"] == "0.250 ± 0.020"
    assert over["over tasks"] == "(all tasks)" and over["seed"] == "-"
    # The normalized reward is '-' without a reference.
    assert _columns(without, 0, 1)["norm reward ± SE"] == "-"
    assert _columns(without, 3, 4)["norm reward ± 95% CI half-width"] == "-"


def test_only_runs_all_played_by_the_builtin_policy_say_they_rank_no_method() -> None:
    builtin = {"system": "icl", "model_info": {"backend": "builtin", "baseline": True}}
    served = {"system": "icl", "model_info": {"backend": "openai"}}
    assert builtin_policy_note([builtin, {**builtin, "system": "mem0"}]) == BUILTIN_POLICY_NOTE
    assert "does not rank memory methods" in BUILTIN_POLICY_NOTE
    assert builtin_policy_note([builtin, served]) is None
    assert builtin_policy_note([]) is None and builtin_policy_note([{"system": "x"}]) is None
    assert text_rows([builtin])[-1] == f"  note: {BUILTIN_POLICY_NOTE}"
    assert not any(BUILTIN_POLICY_NOTE in line for line in text_rows([builtin, served]))


def test_summary_and_report_show_the_per_stage_means(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results"
    assert main(["run", "clbench", "--task", "database_exploration", "--schedule", "short",
                 "--rollouts", "2", "--system", "full", "--out", str(out),
                 "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["summary", str(out), "--json"]) == 0
    run = json.loads(capsys.readouterr().out)["runs"][0]
    task = run["tasks"]["database_exploration"]
    stages = task["by_stage"]
    assert [s["stage"] for s in stages] == sorted(s["stage"] for s in stages)
    assert sum(s["n"] for s in stages) == task["n_instances"]
    assert all(isinstance(s["variant"], str) for s in stages)
    # the instance-weighted stage means give back the cumulative rewards
    metrics = run["metrics"]["tasks"]["database_exploration"]
    assert sum(s["n"] * s["stateless"] for s in stages) == pytest.approx(
        metrics["stateless_reward"])
    assert sum(s["n"] * s["stateful"] for s in stages) == pytest.approx(
        metrics["reward"]["mean"])
    html = tmp_path / "report.html"
    assert main(["report", str(out), "--out", str(html)]) == 0
    page = html.read_text()
    assert "Per stage (database_exploration): mean reward, stateful against stateless" in page
    assert "does not rank memory methods" in page  # the builtin policy played every system
    assert stages[0]["variant"] in page
