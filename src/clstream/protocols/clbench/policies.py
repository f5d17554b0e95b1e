"""The builtin (non-LLM) policies of the CL-Bench environments, by task, and a driver that
plays them. Each policy lies beside its environment (``envs/<task>/policy.py``).

Each policy is a pure function of (turns seen, current observation) over the environments'
*texts* only (observations, its own JSON actions, feedback), so the builtin model can run it
from a prompt later. The stateful arm hands a policy the whole run's turns; the stateless arm
only the current instance's turns: the same code with its memory wiped, which is all that
separates the two (docs/clbench.md §6: each task has a stateful builtin policy that learns the latent
structure and a stateless one that cannot).

* :class:`~clstream.protocols.clbench.envs.spectrum.policy.SpectrumRegistry` -- keeps a
  registry of transmitters seen across scans (running mean centre and width, hit count) and
  reports confirmed ones even while they are silent; without memory it reports only the peaks
  of the current scan.
* :class:`~clstream.protocols.clbench.envs.sales.policy.SalesForecaster` -- keeps a
  forecasting program and a pooled panel (every export its program copied, and every year of
  actuals revealed where the feedback reveals them, ``feedback=rich``) in the workspace and reruns the program each year, so it estimates one
  growth rate per category; in a fresh workspace, with only the current instance's turns, it
  forecasts flat from the one visible store-year. It also keeps notes (revealed actuals,
  growth estimates) for notes-only memories.
* :class:`~clstream.protocols.clbench.envs.database.policy.SchemaExplorer` -- caches schema
  facts (table per category, columns, price/time/boolean encodings) and answers with one
  query once it knows them; forgets all on a drift notice or a wrong answer; without memory
  it rediscovers them for every question.
* :class:`~clstream.protocols.clbench.envs.poker.policy.OpponentModeler` -- counts each named
  opponent's folds, calls and raises over earlier hands and exploits the style they show;
  without memory it is :class:`~clstream.protocols.clbench.envs.poker.policy.TAGHeuristic`,
  the same tight-aggressive play against everyone.
* :class:`~clstream.protocols.clbench.envs.cohort.policy.PooledCohorts` -- pools per-cohort
  survival evidence (patients counted, Kaplan-Meier curve, the instance it came from) across
  studies and regions; without memory it has the one study's in-sample estimates. Its notes
  are that evidence (a :class:`~clstream.core.environment.NoteTaker`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from clstream.core.environment import (
    Environment,
    NoteTaker,
    Policy,
    Turn,
    action_text,
    merge_notes,
    rollout_order,
)
from clstream.protocols.clbench.envs.base import instance_of
from clstream.protocols.clbench.envs.codebase.policy import ScriptedDebugger
from clstream.protocols.clbench.envs.cohort.policy import PooledCohorts
from clstream.protocols.clbench.envs.database.policy import SchemaExplorer
from clstream.protocols.clbench.envs.poker.policy import OpponentModeler, TAGHeuristic
from clstream.protocols.clbench.envs.sales.policy import SalesForecaster
from clstream.protocols.clbench.envs.spectrum.policy import SpectrumRegistry

__all__ = [
    "POLICIES",
    "InstanceRun",
    "OpponentModeler",
    "PooledCohorts",
    "SalesForecaster",
    "SchemaExplorer",
    "ScriptedDebugger",
    "SpectrumRegistry",
    "TAGHeuristic",
    "current_turns",
    "play",
    "play_instance",
    "play_stateful",
    "play_stateless",
    "play_with_notes",
]


# --- driving a policy ----------------------------------------------------------------------


@dataclass(frozen=True)
class InstanceRun:
    """One finished instance of a policy run."""

    instance_id: str
    stage: int
    reward: float
    success: bool | None
    steps: int
    info: dict[str, Any] = field(default_factory=dict)


def current_turns(history: Sequence[Turn], observation: str) -> list[Turn]:
    """The turns of the instance ``observation`` belongs to (by its header line)."""
    instance = instance_of(observation)
    return [t for t in history if instance_of(t.observation) == instance]


def play_instance(env: Environment, policy: Policy, instance_id: str, history: list[Turn]
                  ) -> InstanceRun:
    """Play one instance from ``env``'s current state, appending its turns to ``history``."""
    query = env.begin(instance_id)
    while True:
        action = policy.act(tuple(history), query.observation)
        result = env.step(action)
        history.append(Turn(query.observation, action_text(action), result.feedback))
        if result.instance_complete:
            assert result.reward is not None
            return InstanceRun(instance_id, query.stage, result.reward, result.success,
                               result.step, dict(result.info))
        assert result.next_query is not None
        query = result.next_query


def play(env: Environment, policy: Policy, order: Sequence[str], *, stateful: bool
         ) -> list[InstanceRun]:
    """Play ``order``: one memory through all of it (stateful), or each instance from
    :meth:`~clstream.core.environment.Environment.reset_to` with no memory (stateless)."""
    history: list[Turn] = []
    runs = []
    if stateful:
        env.reset()
    for instance_id in order:
        if not stateful:
            env.reset_to(instance_id)
            history = []
        runs.append(play_instance(env, policy, instance_id, history))
    return runs


def play_with_notes(env: Environment, policy: NoteTaker, rollout: int = 0) -> list[InstanceRun]:
    """A stateful rollout where the policy remembers earlier instances only through its notes
    (what a notepad would hold): after each instance its turns become notes, merged into the
    notes kept; within an instance the policy sees that instance's turns."""
    env.reset()
    notes: list[str] = []
    runs = []
    for instance_id in rollout_order(env.schedule, env.order_policy, env.seed, rollout):
        query = env.begin(instance_id)
        turns: list[Turn] = []
        while True:
            action = policy.act_from_notes(notes, tuple(turns), query.observation)
            result = env.step(action)
            turns.append(Turn(query.observation, action_text(action), result.feedback))
            if result.instance_complete:
                break
            assert result.next_query is not None
            query = result.next_query
        assert result.reward is not None
        runs.append(InstanceRun(instance_id, query.stage, result.reward, result.success,
                                result.step, dict(result.info)))
        notes = merge_notes(policy, [*notes, *policy.notes(turns)])
    return runs


def play_stateful(env: Environment, policy: Policy, rollout: int = 0) -> list[InstanceRun]:
    """A stateful rollout in the task's order for ``rollout`` (seeded by the env's seed)."""
    return play(env, policy, rollout_order(env.schedule, env.order_policy, env.seed, rollout),
                stateful=True)


def play_stateless(env: Environment, policy: Policy) -> list[InstanceRun]:
    """The stateless arm, every instance once in canonical order (it does not depend on order)."""
    return play(env, policy, env.schedule.instance_ids, stateful=False)


POLICIES: dict[str, Callable[[], Policy]] = {
    "blind_spectrum_monitoring": SpectrumRegistry,
    "sales_prediction": SalesForecaster,
    "database_exploration": SchemaExplorer,
    "exploitable_poker": OpponentModeler,
    "codebase_adaptation": ScriptedDebugger,
    "cohort_studies": PooledCohorts,
}
"""The builtin policy of each task, by environment name."""
