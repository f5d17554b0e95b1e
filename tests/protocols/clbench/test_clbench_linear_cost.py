"""A CL-Bench run's cost is linear in its schedule: each step is observed once, by the one
system that plays it (a fresh system per stateless instance, one per stateful rollout), and
each remembered step is indexed once (CL-Bench runner module docstring). A runner that rebuilt
a rollout's memory by replaying its earlier instances would observe each step many times."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main
from clstream.core.events import Event
from clstream.retrieval.bm25 import IncrementalBM25
from clstream.store.db import ResultsStore
from clstream.systems import context


class Counts:
    """Steps observed per system instance and passages inserted per index, counted at class
    level so that every instance the runner builds is seen."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.observed: Counter[int] = Counter()
        self.inserted: Counter[tuple[int, int]] = Counter()  # (index, passage): insertions
        self.kept: list[object] = []  # systems and indexes kept alive, so no two share an id
        observe, add = context._ContextSystem.observe, IncrementalBM25.add
        counts = self

        async def counting_observe(system: Any, event: Event) -> Any:
            if system not in counts.kept:
                counts.kept.append(system)
            counts.observed[id(system)] += 1
            return await observe(system, event)

        def counting_add(index: IncrementalBM25, doc_id: int, text: str) -> None:
            if index not in counts.kept:
                counts.kept.append(index)
            counts.inserted[(id(index), doc_id)] += 1
            add(index, doc_id, text)

        monkeypatch.setattr(context._ContextSystem, "observe", counting_observe)
        monkeypatch.setattr(IncrementalBM25, "add", counting_add)


@pytest.mark.parametrize("system", ["full", "rag:k=2"])
def test_each_step_is_observed_once_by_the_system_that_played_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, system: str) -> None:
    counts = Counts(monkeypatch)
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
    assert steps and sum(counts.observed.values()) == len(steps)
    assert sorted(counts.observed.values()) == sorted(units.values())
    if system.startswith("rag"):
        assert counts.inserted and set(counts.inserted.values()) == {1}
    else:
        assert not counts.inserted  # a system that never retrieves builds no index
