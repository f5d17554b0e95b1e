"""What an incomplete CL-Bench run is scored on: complete arms only (SPECS §3; DESIGN.md,
"Trust"). A partial rollout is left out, a task without a complete stateless arm or any
complete rollout is withheld, and the snapshots of a rollout read back through their deltas."""

from __future__ import annotations

from typing import Any

import pytest

from clstream.protocols.clbench.metrics import score_clbench
from clstream.protocols.clbench.snapshots import apply_delta, json_delta, stored_form
from clstream.protocols.clbench.summary import scored_records

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


def test_a_snapshot_delta_rebuilds_the_state() -> None:
    old = {"system": {"memory": {"texts": [1, 2]}, "k": 1}, "env": {"completed": ["x"]}}
    new = {"system": {"memory": {"texts": [1, 2, 3]}, "j": 2}, "env": {"completed": ["y"]}}
    delta = json_delta(old, new)
    assert delta["dict"]["system"]["dict"]["memory"]["dict"]["texts"] == {"append": [3]}
    assert apply_delta(old, delta) == new
    assert stored_form(None, new, 5) == {"full": new}
    assert stored_form(old, new, 1) == {"full": new}
    assert "delta" in stored_form(old, new, 2)
