"""Retrospective probes cost no replay: a stream of T tasks makes T ``observe`` calls and T
index insertions, however many horizons re-ask earlier tasks (SeqMem runner module docstring:
each probe is answered at the state the stream has just reached)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from clstream.core.registry import resolve
from clstream.core.specs import ComponentSpec, RunSpec
from clstream.driver.components import system_factory
from clstream.models.builtin import BuiltinReader
from clstream.protocols.seqmem.plan import SeqMemPlan
from clstream.protocols.seqmem.runner import SeqMemRunner
from clstream.protocols.seqmem.synthetic import generate_seqmem_synthetic, synthetic_stream
from clstream.store.db import ResultsStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from planned import drive_runner  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from observe_counts import ObserveCounts  # noqa: E402

TASKS = 16


@pytest.mark.parametrize("system", ["exp-rag", "rag:k=2"])
def test_retro_probes_replay_nothing(tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                                     system: str) -> None:
    data = synthetic_stream(generate_seqmem_synthetic(seed=2, tasks=TASKS, holdout=3))
    spec = RunSpec(protocol="seqmem", dataset_hash=data.sha256,
                   system=ComponentSpec.parse(system), model=ComponentSpec(name="builtin"))
    system_class = resolve("system", spec.system.name)
    assert isinstance(system_class, type)
    counts = ObserveCounts(monkeypatch, system_class)
    horizons = [1, 2, 4, 8]  # every power of two below T: about T log T retro probes
    plan = SeqMemPlan.build(TASKS, horizons=horizons)
    with ResultsStore(tmp_path, writer=True) as store:
        model = BuiltinReader()
        make = system_factory(spec, model)
        runner = SeqMemRunner(data.tasks, data.holdout, spec, store, make,
                              data.evaluator().evaluate, plan)
        result = drive_runner(runner, store, spec, {"online": "online", "holdout": "hold-out", "retro": "retro"}, model, make)
    assert result.counts["retro"][0] == sum(TASKS - h for h in horizons) > TASKS
    assert counts.by_kind == {"Feedback": TASKS}
    assert counts.inserted and sum(counts.inserted.values()) <= TASKS
