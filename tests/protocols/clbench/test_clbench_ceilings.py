"""Every task's r_max is a ceiling (docs/clbench.md §4.7): the builtin policies, a policy that
reads the answer out of the environment and random ones, over many seeds, never earn more than
``best_reward`` on an instance nor more than r_max on average; where the answer can be read,
the ceiling is reached. Poker has its own, hand by hand (envs/poker/test_poker_ceiling.py)."""

from __future__ import annotations

import importlib.util
import json
import random
from collections.abc import Callable
from pathlib import Path
from statistics import mean
from typing import Any

import pytest

from clstream.cli import main
from clstream.protocols.clbench.envs import (
    CodebaseEnv,
    CohortEnv,
    DatabaseEnv,
    SalesEnv,
    SpectrumEnv,
)
from clstream.protocols.clbench.envs.base import EnvironmentBase
from clstream.protocols.clbench.envs.codebase.shell import SUBMIT
from clstream.protocols.clbench.envs.cohort.scoring import COHORTS
from clstream.protocols.clbench.envs.spectrum.environment import BAND
from clstream.protocols.clbench.policies import POLICIES, play_stateful, play_stateless

Scripted = Callable[[EnvironmentBase, random.Random], dict[str, Any]]
"""One action for the instance in progress, read from the environment itself."""


def spectrum_truth(env: EnvironmentBase, rng: random.Random) -> dict[str, Any]:
    assert isinstance(env, SpectrumEnv)
    return {"transmitters": [{"center_freq": (lo + hi) / 2, "bandwidth": hi - lo}
                             for lo, hi in env.truth]}


def spectrum_random(env: EnvironmentBase, rng: random.Random) -> dict[str, Any]:
    lo, hi = BAND
    return {"transmitters": [{"center_freq": rng.uniform(lo, hi), "bandwidth": rng.uniform(1, 20)}
                             for _ in range(rng.randint(0, 12))]}


def database_gold(env: EnvironmentBase, rng: random.Random) -> dict[str, Any]:
    assert isinstance(env, DatabaseEnv) and env.current is not None
    return {"answer": env.questions[env.current].answer}


def database_random(env: EnvironmentBase, rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.5:
        return {"query": "SELECT 1"}
    return {"answer": str(rng.randint(0, 100))}


def sales_actuals(env: EnvironmentBase, rng: random.Random) -> dict[str, Any]:
    assert isinstance(env, SalesEnv) and env.current is not None
    return {"tool": "submit", "predictions": [
        {"locality": city, "furniture_name": name, "year": year, "items_sold": units}
        for (city, name, year), units in env.actuals(env.current).items()]}


def sales_random(env: EnvironmentBase, rng: random.Random) -> dict[str, Any]:
    assert isinstance(env, SalesEnv) and env.current is not None
    return {"tool": "submit", "predictions": [
        {"locality": city, "furniture_name": name, "year": year,
         "items_sold": units * rng.uniform(0.0, 2.5)}
        for (city, name, year), units in env.actuals(env.current).items()]}


def cohort_truth(env: EnvironmentBase, rng: random.Random) -> dict[str, Any]:
    assert isinstance(env, CohortEnv)
    return {"tool": "submit", "estimates": {c: dict(zip(("s12", "s24", "s36"), s, strict=True))
                                            for c, s in env.truth.items()}}


def cohort_random(env: EnvironmentBase, rng: random.Random) -> dict[str, Any]:
    return {"tool": "submit", "estimates": {
        c.cohort_id: {k: rng.random() for k in ("s12", "s24", "s36")} for c in COHORTS}}


def codebase_random(env: EnvironmentBase, rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.4:
        return {"command": SUBMIT}
    return {"command": rng.choice(["ls", "cat README.md", "python -c 'print(1)'"])}


SCRIPTED: dict[str, dict[str, Scripted]] = {
    SpectrumEnv.name: {"truth": spectrum_truth, "random": spectrum_random},
    DatabaseEnv.name: {"gold": database_gold, "random": database_random},
    SalesEnv.name: {"actuals": sales_actuals, "random": sales_random},
    CohortEnv.name: {"truth": cohort_truth, "random": cohort_random},
    CodebaseEnv.name: {"random": codebase_random},
}
READ_OFF = {"truth", "gold", "actuals"}
"""Policies that read the answer: they reach the ceiling on every instance."""
SEEDS = {SpectrumEnv.name: range(20), DatabaseEnv.name: range(10), SalesEnv.name: range(10),
         CohortEnv.name: range(4), CodebaseEnv.name: range(2)}
"""Seeds per task, fewer where an instance is expensive (cohort's population, the sandbox)."""
CASES = [(task, seed) for task, seeds in SEEDS.items() for seed in seeds]


def _scripted(env: EnvironmentBase, policy: Scripted, rng: random.Random) -> dict[str, float]:
    rewards = {}
    for instance_id in env.schedule.instance_ids:
        env.reset_to(instance_id)
        env.begin(instance_id)
        while True:
            result = env.step(policy(env, rng))
            if result.instance_complete:
                assert result.reward is not None
                rewards[instance_id] = result.reward
                break
    return rewards


@pytest.mark.parametrize(("task", "seed"), CASES)
def test_no_policy_earns_more_than_the_ceiling(task: str, seed: int) -> None:
    if task == CohortEnv.name and importlib.util.find_spec("lifelines") is None:
        pytest.skip("needs the clbench extra: pip install 'clstream[clbench]'")
    env: Any = {SpectrumEnv.name: SpectrumEnv, DatabaseEnv.name: DatabaseEnv,
                SalesEnv.name: SalesEnv, CohortEnv.name: CohortEnv,
                CodebaseEnv.name: CodebaseEnv}[task](seed, "short")
    assert isinstance(env, EnvironmentBase)
    rng = random.Random(seed)
    policy = POLICIES[task]()
    played = {"builtin stateless": {r.instance_id: r.reward for r in play_stateless(env, policy)},
              "builtin stateful": {r.instance_id: r.reward
                                   for r in play_stateful(env, policy, 0)}}
    for name, scripted in SCRIPTED[task].items():
        played[name] = _scripted(env, scripted, rng)
    for name, rewards in played.items():
        for instance_id, reward in rewards.items():
            bound = (env.ceiling(instance_id) if isinstance(env, CohortEnv)
                     else env.best_reward)
            assert reward <= bound + 1e-9, (name, instance_id, reward, bound)
            if name in READ_OFF:
                assert reward == pytest.approx(bound), (name, instance_id)
        assert mean(rewards.values()) <= env.r_max + 1e-9, name
    close = getattr(env, "close", None)
    if callable(close):
        close()


def _records(r_max: float, rewards: list[float]) -> str:
    rows: list[dict[str, Any]] = [{"kind": "task", "task": "t", "r_max": r_max,
                                   "n_instances": len(rewards)}]
    for pos, reward in enumerate(rewards, start=1):
        for arm in ("stateless", "stateful"):
            rows.append({"kind": "instance", "task": "t", "arm": arm, "rollout": 0, "pos": pos,
                         "instance_id": f"i{pos}", "stage": 0,
                         "reward": 0.0 if arm == "stateless" else reward})
    return "".join(json.dumps(row) + "\n" for row in rows)


def test_score_refuses_a_rollout_above_r_max(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text(_records(2.0, [3.0, 2.0, 2.5]), encoding="utf-8")
    assert main(["score", "clbench", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("clstream: error: ")
    assert "'r_max'" in lines[0] and "rollout 0's mean reward 2.5 is above r_max 2" in lines[0]
    path.write_text(_records(2.0, [3.0, 1.0, 2.0]), encoding="utf-8")  # one above, mean at it
    assert main(["score", "clbench", str(path)]) == 0
