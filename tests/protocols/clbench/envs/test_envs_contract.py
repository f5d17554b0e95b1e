"""The environment contract: schedules, rollout order policies, action parsing, the
malformed-action cap and snapshots, checked on every environment."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest

from clstream.core.environment import (
    ActionError,
    Environment,
    EnvironmentStateError,
    OrderPolicy,
    Policy,
    Schedule,
    Stage,
    Turn,
    parse_action,
    rollout_order,
)
from clstream.core.events import Observation
from clstream.protocols.clbench.envs import (
    ENVIRONMENTS,
    CohortEnv,
    DatabaseEnv,
    PokerEnv,
    SalesEnv,
    SpectrumEnv,
)
from clstream.protocols.clbench.policies import POLICIES, play, play_instance, play_stateful

SMALL_DB: dict[str, Any] = {"n_products": 300, "n_reviews": 1200}
EXTRA_REASON = "needs the clbench extra: pip install 'clstream[clbench]'"
USABLE = [name for name in ENVIRONMENTS
          if name != CohortEnv.name or importlib.util.find_spec("lifelines") is not None]


def make(name: str, seed: int = 0, schedule: str = "short") -> Environment:
    if name not in USABLE:
        pytest.skip(EXTRA_REASON)
    extra = SMALL_DB if name == DatabaseEnv.name else {}
    env: Environment = ENVIRONMENTS[name](seed, schedule, **extra)
    return env


def test_each_builtin_policy_lies_beside_its_environment() -> None:
    """The registry's policy of every task is the one the driver plays, from the task's own
    folder (docs/clbench.md §4: a folder per task, its policy in ``policy.py``)."""
    from clstream.core import registry

    registry.names("policy")  # the protocols fill the registry on first use
    for task, policy in POLICIES.items():
        assert registry.resolve("policy", task) is policy
        env_module = ENVIRONMENTS[task].__module__.rsplit(".", 1)[0]
        assert policy.__module__ == f"{env_module}.policy", task


def test_contracts_are_satisfied() -> None:
    for name in USABLE:
        env = make(name)
        assert isinstance(env, Environment) and env.name == name
        assert isinstance(POLICIES[name](), Policy)
        described = json.loads(json.dumps(env.describe()))
        assert described["task"] == name and described["r_max"] == env.r_max > env.min_reward
        # r_max 1 but in poker (BB/hand) and cohort studies (bits), computed per seed there
        # (docs/clbench.md §4.7)
        assert env.r_max == 1.0 or name in (PokerEnv.name, CohortEnv.name)
        assert env.r_max <= described["ceiling"]["best_reward"] and described["ceiling"]["basis"]
        assert described["order_policy"] == env.order_policy.value


def test_default_schedules_have_the_specs_stage_sizes() -> None:
    assert SpectrumEnv(0).schedule.sizes == (30, 30, 30)
    assert SalesEnv(0).schedule.sizes == (4, 4, 4)
    assert PokerEnv(0).schedule.sizes == (20, 30, 10, 35, 25)
    assert DatabaseEnv(0, **SMALL_DB).schedule.sizes == (20, 20)
    assert [s.variant for s in SpectrumEnv(0).schedule.stages] == [
        "five_ch_wide", "five_plus_four_mixed", "full_grid_active"]
    for name in USABLE:
        short = make(name).schedule
        assert len(short.stages) == len(make(name, schedule="default").schedule.stages)
        assert 3 <= len(short) <= 15


def test_schedule_validates_and_locates() -> None:
    sched = Schedule("s", (Stage("a", ("x", "y")), Stage("b", ("z",)), Stage("a", ("w",))))
    assert sched.stage_of("w") == 2 and sched.variant_of("w") == "a"
    assert sched.canonical_index("z") == 2
    with pytest.raises(ValueError, match="repeats"):
        Schedule("s", (Stage("a", ("x",)), Stage("b", ("x",))))
    with pytest.raises(KeyError):
        sched.stage_of("nope")


def test_order_policies_per_task() -> None:
    sales = SalesEnv(0).schedule
    for r in range(5):
        assert rollout_order(sales, SalesEnv.order_policy, 0, r) == list(sales.instance_ids)
    spectrum = SpectrumEnv(0).schedule
    assert rollout_order(spectrum, SpectrumEnv.order_policy, 0, 0) == list(spectrum.instance_ids)
    permuted = rollout_order(spectrum, SpectrumEnv.order_policy, 0, 1)
    assert permuted != list(spectrum.instance_ids)
    for k, stage in enumerate(spectrum.stages):
        assert sorted(permuted[30 * k:30 * (k + 1)]) == sorted(stage.instance_ids)
    assert permuted == rollout_order(spectrum, OrderPolicy.STAGE_PERMUTE, 0, 1)
    db = DatabaseEnv(0, **SMALL_DB).schedule
    orders = [rollout_order(db, DatabaseEnv.order_policy, 0, r) for r in range(3)]
    assert orders[0] != list(db.instance_ids)  # shuffled on run 0 too
    assert len({tuple(o) for o in orders}) == 3
    for order in orders:
        assert set(order[:20]) == set(db.stages[0].instance_ids)
        assert set(order[20:]) == set(db.stages[1].instance_ids)
    assert orders[1] == rollout_order(db, "stage_shuffle", 0, 1)


def test_parse_action_takes_objects_from_text() -> None:
    assert parse_action({"a": 1}) == {"a": 1}
    assert parse_action('```json\n{"answer": "7"}\n```') == {"answer": "7"}
    assert parse_action('I will run {"tool": "sql", "query": "SELECT 1"} now') == {
        "tool": "sql", "query": "SELECT 1"}
    for bad in ("", "no json here", "[1, 2]", '{"x": NaN}'):
        with pytest.raises(ActionError):
            parse_action(bad)


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_malformed_actions_are_capped(name: str) -> None:
    env = make(name)
    env.reset()
    first = env.schedule.instance_ids[0]
    env.begin(first)
    results = [env.step("this is not an action") for _ in range(env.max_invalid)]
    assert all(not r.valid for r in results)
    assert all(not r.instance_complete for r in results[:-1])
    assert all(r.next_query is not None and r.next_query.instance_id == first
               for r in results[:-1])
    assert "Invalid action" in results[0].feedback and "JSON object" in results[0].feedback
    last = results[-1]
    # a poker hand ended this way is folded: the button loses its small blind
    forfeit = -0.5 if name == PokerEnv.name else env.min_reward
    assert last.instance_complete and last.reward == forfeit
    assert name == PokerEnv.name or env.min_reward == 0.0
    assert last.info["ended"] == "invalid_actions"
    event = last.to_event()
    assert isinstance(event, Observation) and event.done and event.reward == forfeit
    with pytest.raises(EnvironmentStateError):
        env.step({"answer": "1"})  # the instance is over
    second = env.schedule.instance_ids[1]
    query = env.begin(second)
    assert query.step == 1 and query.observation.startswith(f"Instance {second}, step 1")


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_queries_carry_rules_schema_and_no_position(name: str) -> None:
    env = make(name, schedule="default") if name != DatabaseEnv.name else DatabaseEnv(
        0, **SMALL_DB)
    env.reset()
    last = env.schedule.instance_ids[-1]
    env.reset_to(last)
    q = env.begin(last)
    query = q.to_query()
    assert query.instructions == env.instructions and query.meta["instance_id"] == last
    assert query.prompt.startswith("Question: Instance") and "JSON object" in query.prompt
    n = len(env.schedule)
    assert f"/{n}" not in q.observation and f"of {n}" not in q.observation
    assert json.loads(json.dumps(dict(q.action_schema)))


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_snapshot_restore_round_trip(name: str) -> None:
    order = make(name).schedule.instance_ids
    whole = play(make(name), POLICIES[name](), order, stateful=True)
    env = make(name)
    env.reset()
    policy = POLICIES[name]()
    history: list[Turn] = []
    first = [play_instance(env, policy, i, history) for i in order[:2]]
    state = json.loads(json.dumps(env.snapshot()))
    resumed = make(name)
    resumed.restore(state)
    assert resumed.snapshot() == state
    rest = [play_instance(resumed, policy, i, history) for i in order[2:]]
    assert [r.reward for r in first + rest] == [r.reward for r in whole]
    with pytest.raises(EnvironmentStateError):
        resumed.begin(order[0])  # already played before the snapshot
    with pytest.raises(EnvironmentStateError, match="seed"):
        make(name, seed=1).restore(state)


def test_snapshot_only_between_instances() -> None:
    env = SpectrumEnv(0, "short")
    env.reset()
    env.begin("scan-001")
    with pytest.raises(EnvironmentStateError):
        env.snapshot()
    with pytest.raises(EnvironmentStateError):
        env.begin("scan-002")


def test_stateful_rollouts_are_deterministic() -> None:
    env = SpectrumEnv(3, "short")
    a = [r.reward for r in play_stateful(env, POLICIES[env.name](), 2)]
    b = [r.reward for r in play_stateful(SpectrumEnv(3, "short"), POLICIES[env.name](), 2)]
    assert a == b
