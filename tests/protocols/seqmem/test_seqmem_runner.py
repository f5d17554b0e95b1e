"""The SeqMem-Eval runner: every method end to end on the synthetic stream with the builtin
model, the records it stores, multi-try systems, failed model calls, and stored snapshots."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from clstream.core.specs import ComponentSpec, RunSpec
from clstream.core.types import GenerationRequest, GenerationResult
from clstream.driver.components import system_factory
from clstream.driver.plan import RunResult
from clstream.models.builtin import BuiltinReader
from clstream.protocols.seqmem.metrics import load_seqmem_records, score_seqmem
from clstream.protocols.seqmem.plan import SeqMemPlan, load_memory
from clstream.protocols.seqmem.runner import SeqMemRunner
from clstream.protocols.seqmem.synthetic import generate_seqmem_synthetic, synthetic_stream
from clstream.store.db import ResultsStore
from clstream.systems.experience import ExpRag

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from planned import drive_runner  # noqa: E402

SYSTEMS = [
    "memory-free", "exp-recent", "exp-rag", "dc-rs", "awm", "expel-st", "expel-mt", "g-memory",
]


class Failing(BuiltinReader):
    """Fails the answering call of chosen request keys."""

    def __init__(self, fail: set[str]):
        super().__init__()
        self.fail = fail

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        out = await super().generate(requests)
        return [r.model_copy(update={"samples": [], "error": "server said no"})
                if r.key in self.fail else r for r in out]


def stream(tasks: int = 12, holdout: int = 4, seed: int = 3) -> Any:
    return synthetic_stream(generate_seqmem_synthetic(seed=seed, tasks=tasks, holdout=holdout))


class Driven:
    """A SeqMem runner and what the driver needs to run it."""

    def __init__(self, store: ResultsStore, data: Any, system: str, model: Any,
                 plan: SeqMemPlan | None) -> None:
        self.spec = RunSpec(protocol="seqmem", dataset_hash=data.sha256,
                            system=ComponentSpec.parse(system), model=ComponentSpec(name="builtin"))
        self.plan = plan or SeqMemPlan.build(len(data.tasks))
        self.make = system_factory(self.spec, model)
        self.runner = SeqMemRunner(data.tasks, data.holdout, self.spec, store, self.make,
                                   data.evaluator().evaluate, self.plan)
        self.store, self.model, self.run_id = store, model, self.spec.run_id

    def run(self) -> RunResult:
        return drive_runner(self.runner, self.store, self.spec, UNITS, self.model, self.make)


UNITS = {"online": "online", "holdout": "hold-out", "retro": "retro"}


def make_runner(store: ResultsStore, data: Any, system: str, model: Any,
                plan: SeqMemPlan | None = None) -> Driven:
    return Driven(store, data, system, model, plan)


def rows(store: ResultsStore, run_id: str, kind: str) -> list[dict[str, Any]]:
    return [{**json.loads(r["payload"]), "_error": r["error"], "_stage": r["stage"],
             "_tokens": r["prompt_tokens"]} for r in store.iter_records(run_id, kind)]


# --- end to end ----------------------------------------------------------------------------


@pytest.mark.parametrize("system", sorted(SYSTEMS))
def test_every_method_runs_end_to_end_with_the_builtin_model(tmp_path: Path, system: str) -> None:
    data = stream()
    with ResultsStore(tmp_path, writer=True) as store:
        runner = make_runner(store, data, system, BuiltinReader())
        result = runner.run()
        assert result.errors == 0
        assert (result.counts["online"][0], result.counts["holdout"][0]) == (
            12, 4 * len(runner.plan.checkpoints))
        online = rows(store, runner.run_id, "online")
        holdout = rows(store, runner.run_id, "holdout")
        retro = rows(store, runner.run_id, "retro")
        assert sorted(r["tau"] for r in online) == list(range(1, 13))
        assert all(r["_stage"] == "generate" and r["_tokens"] > 0 for r in online)
        ks = sorted({r["checkpoint"] for r in holdout})
        assert ks[0] == 0 and len([k for k in ks if k > 0]) >= 2
        per_h: dict[int, list[int]] = {}
        for r in retro:
            per_h.setdefault(r["horizon"], []).append(r["tau"])
        assert sorted(per_h) == [1, 2, 4, 8]
        assert all(sorted(v) == list(range(1, 13 - h)) for h, v in per_h.items())
        assert store.state_steps(runner.run_id, "memory") == list(range(13))
        updates = rows(store, runner.run_id, "update")
        assert len(updates) == 12 and all(r["time_s"] >= 0 for r in updates)


def test_exp_rag_beats_memory_free_on_the_synthetic_stream(tmp_path: Path) -> None:
    """The synthetic stream asks items again and feedback states each answer; the builtin
    reader reuses a matching past task's stated answer, so it gains only when memory shows
    that task."""
    data = stream(tasks=60, holdout=12, seed=1)
    acc = {}
    for system in ("memory-free", "exp-rag", "exp-recent"):
        with ResultsStore(tmp_path / system, writer=True) as store:
            runner = make_runner(store, data, system, BuiltinReader(),
                                 SeqMemPlan.build(60, checkpoints=[0, 60], horizons=[1]))
            runner.run()
            online = rows(store, runner.run_id, "online")
            acc[system] = sum(r["correct"] for r in online) / len(online)
    assert acc["memory-free"] <= 0.05
    assert acc["exp-rag"] >= acc["memory-free"] + 0.10
    assert acc["exp-rag"] > acc["exp-recent"]


def test_multi_try_scores_any_try_online_and_one_try_on_probes(tmp_path: Path) -> None:
    data = stream()
    with ResultsStore(tmp_path, writer=True) as store:
        runner = make_runner(store, data, "expel-mt:tries=2", BuiltinReader())
        runner.run()
        online = rows(store, runner.run_id, "online")
        retried = [r for r in online if r["tries"] == 2]
        assert retried, "the synthetic stream's first questions fail on the first try"
        for r in retried:
            assert len(r["attempts"]) == 2 and r["attempts"][0]["score"] == 0.0
            assert r["correct"] == int(r["attempts"][1]["score"] >= 1.0)
        assert all(r["tries"] == 1 and "attempts" not in r for r in online if r not in retried)
        keys = [r["key"] for r in store.iter_records(runner.run_id, "call")]
        assert any(k.startswith("update/") and "/try1#" in k for k in keys)  # reflections
        assert all("#try" not in json.dumps(r) for r in rows(store, runner.run_id, "holdout"))


def test_failed_online_call_stops_the_run_and_resume_finishes_it(tmp_path: Path) -> None:
    data = stream()
    with ResultsStore(tmp_path, writer=True) as store:
        runner = make_runner(store, data, "exp-rag", Failing({"online/5"}))
        stopped = runner.run()
        assert stopped.stopped is not None and "online task 5" in stopped.stopped
        assert not stopped.complete
        assert store.state_steps(runner.run_id, "memory") == [0, 1, 2, 3, 4]
        assert store.count(runner.run_id, "online") == 4
        resumed = make_runner(store, data, "exp-rag", BuiltinReader())
        result = resumed.run()
        assert result.counts["online"][0] == 12 and result.errors == 0


def test_failed_probe_is_stored_as_an_error_and_retried_on_resume(tmp_path: Path) -> None:
    data = stream()
    item = data.holdout[0].id
    with ResultsStore(tmp_path, writer=True) as store:
        runner = make_runner(store, data, "exp-recent", Failing({f"holdout/{item}@0", "retro/2@1"}))
        result = runner.run()
        assert result.errors == 2
        assert store.count(runner.run_id, "holdout", errors=True) == 1
        again = make_runner(store, data, "exp-recent", BuiltinReader())
        result = again.run()
        assert result.errors == 0 and result.counts["retro"][0] == result.counts["retro"][1]


def test_records_score_through_the_public_format(tmp_path: Path) -> None:
    from clstream.protocols.seqmem.commands import export_seqmem

    data = stream()
    with ResultsStore(tmp_path, writer=True) as store:
        runner = make_runner(store, data, "g-memory", BuiltinReader())
        runner.run()
        run = store.runs()[0]
        n = export_seqmem(store, run, tmp_path / "records.jsonl")
    lines = [json.loads(x) for x in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert len(lines) == n
    assert {tuple(sorted(x)) for x in lines} == {
        ("correct", "kind", "tau"), ("checkpoint", "correct", "item", "kind"),
        ("correct", "horizon", "kind", "tau")}
    scored = score_seqmem(load_seqmem_records(tmp_path / "records.jsonl"))
    assert set(scored) >= {"online_acc", "holdout_acc", "trend_ho", "bwt", "forgetting", "iv"}
    assert sorted(scored["bwt"]) == ["1", "2", "4", "8"]


# --- snapshots stored as deltas ------------------------------------------------------------


def test_append_only_memory_is_stored_as_tails(tmp_path: Path) -> None:
    data = stream()
    with ResultsStore(tmp_path, writer=True) as store:
        runner = make_runner(store, data, "exp-rag", BuiltinReader())
        runner.run()
        stored = store.conn.execute("SELECT t, base, state FROM states WHERE run_id=?"
                                    " ORDER BY t", (runner.run_id,)).fetchall()
        deltas = [json.loads(r["state"]) for r in stored if r["base"] is not None]
        assert len(deltas) >= len(stored) - 3
        for delta in deltas:  # the store keeps what the step appended: one record
            memory = delta["keys"]["full"]["keys"]["memory"]["keys"]
            assert len(memory["records"]["append"]) == 1
        for k in range(13):
            state = load_memory(store, runner.run_id, k)
            system = system_factory(runner.spec, BuiltinReader())()
            assert state is not None and isinstance(system, ExpRag)
            system.restore(state)
            assert [r.task_id for r in system.pool.records] == [t.id for t in data.tasks[:k]]
        assert load_memory(store, runner.run_id, 13) is None
