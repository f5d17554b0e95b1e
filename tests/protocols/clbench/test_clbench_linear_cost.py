"""A CL-Bench run's cost is linear in its schedule: each step is observed once, by the one
system that plays it (a fresh system per stateless instance, one per stateful rollout), and
each remembered step is indexed once (CL-Bench runner module docstring). A runner that rebuilt
a rollout's memory by replaying its earlier instances would observe each step many times."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

from clstream.cli import main
from clstream.store.db import ResultsStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from observe_counts import ObserveCounts  # noqa: E402


@pytest.mark.parametrize("system", ["full", "rag:k=2"])
def test_each_step_is_observed_once_by_the_system_that_played_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, system: str) -> None:
    counts = ObserveCounts(monkeypatch)
    out = tmp_path / "results"
    assert main(["run", "clbench", "--schedule", "short", "--rollouts", "2", "--seed", "1",
                 "--system", system, "--out", str(out), "--no-progress"]) == 0
    with ResultsStore(out) as store:
        (run,) = store.runs()
        steps = list(store.read_records(run.run_id, "step"))
        units: Counter[tuple[str, str, int, str]] = Counter()
        for step in steps:  # a stateless instance is its own unit; a rollout is one unit
            task = step.stream.split("/", 1)[0]
            instance = step.payload["instance_id"] if step.arm == "stateless" else ""
            units[(task, str(step.arm), int(step.rollout or 0), instance)] += 1
    assert steps and sum(counts.by_system.values()) == len(steps)
    assert sorted(counts.by_system.values()) == sorted(units.values())
    if system.startswith("rag"):
        assert counts.inserted and set(counts.inserted.values()) == {1}
    else:
        assert not counts.inserted  # a system that never retrieves builds no index
