"""The SeqMem plan (checkpoints, horizons, sampled re-evaluations), and memory states handed to
the store whole while the deltas of runs stored before still load."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clstream.core.errors import SpecError
from clstream.protocols.seqmem.plan import (
    MEMORY,
    SeqMemPlan,
    apply_delta,
    default_checkpoints,
    default_horizons,
    load_memory,
    sample_taus,
)
from clstream.store.db import ResultsStore
from clstream.store.snapshots import whole_state

# --- the plan ------------------------------------------------------------------------------


def test_default_checkpoints_and_horizons() -> None:
    assert default_checkpoints(18) == [0, 2, 4, 6, 8, 10, 12, 14, 16, 18]
    assert default_checkpoints(10) == [0, 1, 2, 3, 4, 6, 7, 8, 9, 10]
    assert default_checkpoints(4) == [0, 1, 2, 3, 4]
    assert default_checkpoints(3, count=2) == [0, 2, 3]  # 1.5 rounds up
    assert default_horizons(10) == [1, 2, 4, 8] and default_horizons(8) == [1, 2, 4]
    assert default_horizons(1) == []


def test_plan_validation_and_retro_pairs() -> None:
    plan = SeqMemPlan.build(6, checkpoints=[3, 0, 3], horizons=[2, 1])
    assert plan.checkpoints == (0, 3) and plan.horizons == (1, 2)
    assert plan.retro_at(0) == [] and plan.retro_at(6) == []
    assert plan.retro_at(3) == [(3, 1), (2, 2)]
    assert sum(len(plan.retro_at(k)) for k in range(7)) == 5 + 4
    for kwargs, flag in (({"checkpoints": [7]}, "--checkpoints"), ({"horizons": [6]}, "--horizons"),
                         ({"retro_sample": 1.5}, "--retro-sample")):
        with pytest.raises(SpecError, match=flag):
            SeqMemPlan.build(6, **kwargs)


def test_retro_sample_is_seeded_and_shared_by_horizons() -> None:
    a, b = sample_taus(41, 0.25, seed=1), sample_taus(41, 0.25, seed=1)
    assert a == b and len(a) == 10 and a <= set(range(1, 41))
    assert sample_taus(41, 0.25, seed=2) != a
    assert sample_taus(41, 1.0, 0) == frozenset(range(1, 41)) and sample_taus(41, 0.0, 0) == set()
    plan = SeqMemPlan.build(41, horizons=[1, 4], retro_sample=0.25, seed=1)
    pairs = [p for k in range(42) for p in plan.retro_at(k)]
    assert {tau for tau, h in pairs if h == 1} == a
    assert {tau for tau, h in pairs if h == 4} == {t for t in a if t + 4 <= 41}



# --- snapshots stored as deltas ------------------------------------------------------------


@pytest.mark.parametrize("old, delta, new", [
    ({"a": [1, 2], "b": "x", "c": {"d": 1}},
     {"$dict": {"a": {"$append": [3]}, "b": {"$set": "y"},
                "c": {"$dict": {"e": {"$set": [2]}}}}},
     {"a": [1, 2, 3], "b": "y", "c": {"d": 1, "e": [2]}}),
    ({"a": [1, 2], "gone": 1}, {"$dict": {"a": {"$set": [2]}}, "$del": ["gone"]}, {"a": [2]}),
    ("s", {"$set": 3}, 3),
])
def test_a_delta_stored_before_applies(old: Any, delta: dict[str, Any], new: Any) -> None:
    assert apply_delta(old, json.loads(json.dumps(delta))) == new



def test_every_step_is_handed_over_whole_and_older_deltas_still_load(tmp_path: Any) -> None:
    state = {"records": [1, 2, 3]}
    assert whole_state(state) == {"full": state}
    with ResultsStore(tmp_path, writer=True) as store:
        store.save_state("r", MEMORY, 0, {"full": {"records": []}})
        store.save_state("r", MEMORY, 1, {"delta": {"$dict": {"records": {"$append": [1]}}}})
        store.save_state("r", MEMORY, 2, {"delta": {"$dict": {"records": {"$append": [2]}}}})
        store.save_state("r", MEMORY, 3, whole_state(state))
        assert [load_memory(store, "r", k) for k in range(4)] \
            == [{"records": list(range(1, k + 1))} for k in range(4)]
        assert load_memory(store, "r", 4) is None
