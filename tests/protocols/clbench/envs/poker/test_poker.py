"""Exploitable poker: pokerkit rules, fixed deals, the invalid-action cap, opponent notices,
and the builtin policies' gain (docs/clbench.md §4.4)."""

from __future__ import annotations

import pytest

from clstream.core.environment import NoteTaker, Turn, merge_notes, rollout_order
from clstream.protocols.clbench.envs.poker.environment import PokerEnv
from clstream.protocols.clbench.envs.poker.game import HandTable, hand_deck, holding
from clstream.protocols.clbench.envs.poker.policy import (
    OpponentModeler,
    OracleExploiter,
    TAGHeuristic,
    read_view,
)
from clstream.protocols.clbench.policies import (
    InstanceRun,
    play_instance,
    play_stateful,
    play_stateless,
    play_with_notes,
)


def mean(runs: list[InstanceRun]) -> float:
    return sum(r.reward for r in runs) / len(runs)


def first_observations(env: PokerEnv, order: list[str]) -> dict[str, str]:
    out = {}
    for instance_id in order:
        env.reset_to(instance_id)
        out[instance_id] = env.begin(instance_id).observation
        env.step({"action": "CHECK"} if "To call: 0" in out[instance_id] else {"action": "FOLD"})
    return out


def test_pokerkit_keeps_the_rules() -> None:
    table = HandTable(hand_deck(0, 0, 1))
    button = table.spot(1)
    assert table.actor == 1 and button.to_call == 5 and button.pot == 15
    assert button.min_raise_to == 20 and button.max_raise_to == 1000
    table.raise_to(30)
    blind = table.spot(0)
    assert blind.to_call == 20 and blind.min_raise_to == 50  # a re-raise adds at least 20
    table.raise_to(1000)
    assert table.spot(1).min_raise_to is None  # all-in: nothing left to raise over
    table.check_or_call()
    assert table.over and table.showdown and len(table.board) == 5
    assert table.net(0) + table.net(1) == 0 and abs(table.net(0)) in (0, 1000)
    assert table.final_pot == 2000


def test_holding_counts_only_what_the_hole_cards_add() -> None:
    assert holding(("Ah", "Kd"), ("Ks", "7d", "2c")).made == 2  # top pair
    assert holding(("Ah", "3d"), ("Ks", "7d", "3c")).made == 1  # bottom pair
    assert holding(("2h", "3d"), ("Ks", "Kd", "Kc", "Qs", "Qh")).made == 0  # plays the board
    assert holding(("7h", "8h"), ("9h", "Th", "2c")).draw
    assert holding(("9c", "9d"), ("9h", "Th", "2c")).made == 4


def test_legal_play_and_illegal_actions_named() -> None:
    env = PokerEnv(0, "short")
    env.reset()
    q = env.begin("hand-001")
    assert "Legal actions: FOLD, CALL, RAISE (raise-to between 20 and 1000)" in q.observation
    for bad, word in (({"action": "CHECK"}, "cannot check"),
                      ({"action": "RAISE", "amount": 15}, "between 20 and 1000")):
        res = env.step(bad)
        assert not res.valid and word in res.feedback and not res.instance_complete
    res = env.step({"action": "CALL", "amount": None})
    assert res.valid and res.feedback == "You call."


def test_invalid_action_cap_checks_or_folds_the_rest() -> None:
    env = PokerEnv(0, "short", max_invalid=2)
    env.reset()
    env.begin("hand-001")
    env.step({"action": "RAISE", "amount": 30})  # valid: the hand goes on to the flop
    results = [env.step({"action": "SHOVE"}) for _ in range(2)]
    last = results[-1]
    assert last.instance_complete and not last.valid and last.info["ended"] == "invalid_actions"
    # checked down from the flop; the station's flush wins the 30 chips put in
    assert last.reward == -3.0 and "played as check or fold" in last.feedback
    assert "Showdown" in last.feedback
    assert PokerEnv.min_reward == -100.0


def test_deals_are_fixed_by_instance_id() -> None:
    env = PokerEnv(3)
    canonical = first_observations(env, list(env.schedule.instance_ids))
    permuted = rollout_order(env.schedule, env.order_policy, env.seed, 1)
    assert permuted != list(env.schedule.instance_ids)
    assert first_observations(PokerEnv(3), permuted) == canonical
    other = first_observations(PokerEnv(4), list(env.schedule.instance_ids))
    assert other != canonical
    runs = play_stateless(PokerEnv(3), TAGHeuristic())
    again = play(PokerEnv(3), TAGHeuristic(), permuted)
    assert {r.instance_id: r.reward for r in runs} == again


def play(env: PokerEnv, policy: TAGHeuristic, order: list[str]) -> dict[str, float]:
    out = {}
    for instance_id in order:
        env.reset_to(instance_id)
        out[instance_id] = play_instance(env, policy, instance_id, []).reward
    return out


def test_notice_when_the_opponent_changes() -> None:
    env = PokerEnv(0, "short")
    env.reset()
    notices = []
    for instance_id in env.schedule.instance_ids:
        q = env.begin(instance_id)
        notices.append("You are now playing against" in q.observation)
        while True:
            action = OpponentModeler().act((), q.observation)
            res = env.step(action)
            if res.instance_complete:
                break
            assert res.next_query is not None
            q = res.next_query
    starts = {s.instance_ids[0] for s in env.schedule.stages[1:]}
    assert notices == [i in starts for i in env.schedule.instance_ids]
    env.reset_to("hand-004")
    q = env.begin("hand-004")
    assert "now playing" not in q.observation and "Opponent: Alex" in q.observation


@pytest.mark.parametrize("schedule", ["short", "default"])
def test_memory_gains_over_the_stateless_twin(schedule: str) -> None:
    env = PokerEnv(0, schedule)
    stateless = mean(play_stateless(env, OpponentModeler()))
    assert stateless == mean(play_stateless(env, TAGHeuristic()))
    for rollout in (0, 1):
        for runs in (play_stateful(env, OpponentModeler(), rollout),
                     play_with_notes(env, OpponentModeler(), rollout)):
            gain = (mean(runs) - stateless) / (env.r_max - stateless)
            assert gain > 0.01, (schedule, rollout, mean(runs), stateless)


def test_r_max_is_above_the_stateful_builtin() -> None:
    env = PokerEnv(0)
    assert env.r_max >= mean(play_stateful(env, OpponentModeler(), 0))
    exploiter = mean(play_stateless(env, OracleExploiter()))
    assert env.r_max >= exploiter == pytest.approx(env.describe()["ceiling"]["oracle_exploiter"])


def test_notes_name_the_opponent_and_merge_idempotently() -> None:
    env = PokerEnv(0, "short")
    policy = OpponentModeler()
    assert isinstance(policy, NoteTaker)
    history: list[Turn] = []
    env.reset()
    for instance_id in env.schedule.instance_ids[:6]:
        play_instance(env, policy, instance_id, history)
    notes = policy.notes(history)
    assert [n.split(":")[0] for n in notes] == ["opponent Alex", "opponent Tom"]
    tom = notes[1]
    assert "style calling station" in tom and "hand-001=" in tom
    early = policy.notes(history[:2])
    merged = policy.merge(early[0], tom)
    assert merged == policy.merge(merged, tom) == policy.merge(tom, early[0])
    assert merge_notes(policy, [*notes, *notes]) == notes
    q = env.begin(env.schedule.instance_ids[6])
    assert policy.act_from_notes(notes, (), q.observation) == policy.act(history, q.observation)


def test_observation_reads_back() -> None:
    env = PokerEnv(0, "short")
    env.reset()
    q = env.begin("hand-002")
    view = read_view(q.observation)
    assert view is not None and view.name == "Tom" and not view.spot.on_button
    assert view.spot.hole == tuple(env.deck("hand-002")[:2])
