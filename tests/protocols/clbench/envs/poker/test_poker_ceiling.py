"""The poker ceiling (docs/clbench.md §4.7): the clairvoyant best result of a hand is won by an
actual line played through the environment, no policy beats it hand by hand, a search over
sampled sizes finds nothing better, and the opponents keep what the solver assumes of them."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Sequence
from dataclasses import replace
from statistics import mean
from typing import Any

import pytest

from clstream.protocols.clbench.envs.poker import ceiling as ceiling_module
from clstream.protocols.clbench.envs.poker.ceiling import (
    CeilingError,
    HandSolver,
    Move,
    hand_ceiling,
)
from clstream.protocols.clbench.envs.poker.environment import VARIANTS, PokerEnv
from clstream.protocols.clbench.envs.poker.game import (
    BIG_BLIND,
    BLIND_SEAT,
    BUTTON_SEAT,
    STACK,
    HandTable,
    Spot,
    hand_deck,
)
from clstream.protocols.clbench.envs.poker.opponents import RULES, Act
from clstream.protocols.clbench.envs.poker.policy import (
    OpponentModeler,
    OracleExploiter,
    TAGHeuristic,
)
from clstream.protocols.clbench.policies import play_stateful, play_stateless

ActFn = Callable[[PokerEnv], tuple[str, int | None]]


def _play(env: PokerEnv, instance_id: str, choose: ActFn) -> float:
    """One hand from a clean state, ``choose`` reading the live table."""
    env.reset_to(instance_id)
    env.begin(instance_id)
    while True:
        verb, amount = choose(env)
        result = env.step({"action": verb, "amount": amount})
        assert result.valid, result.feedback
        if result.instance_complete:
            assert result.reward is not None
            return result.reward


def _spot(env: PokerEnv) -> Spot | None:
    table = env._table
    assert table is not None
    return None if table.over else table.spot(env._me)


def all_in(env: PokerEnv) -> tuple[str, int | None]:
    spot = _spot(env)
    if spot is None:
        return "CHECK", None
    if spot.max_raise_to is not None:
        return "RAISE", spot.max_raise_to
    return ("CALL", None) if spot.to_call else ("CHECK", None)


def random_legal(rng: random.Random) -> ActFn:
    def choose(env: PokerEnv) -> tuple[str, int | None]:
        spot = _spot(env)
        if spot is None:
            return "CHECK", None
        options: list[tuple[str, int | None]] = (
            [("FOLD", None), ("CALL", None)] if spot.to_call else [("CHECK", None)])
        if spot.min_raise_to is not None and spot.max_raise_to is not None:
            low, high = spot.min_raise_to, spot.max_raise_to
            options += [("RAISE", rng.randint(low, high)), ("RAISE", low), ("RAISE", high),
                        ("RAISE", max(low, high - 1))]
        return rng.choice(options)
    return choose


def replay(env: PokerEnv, instance_id: str, moves: Sequence[Move]) -> float:
    """The reward of playing ``moves`` in order (CHECK once the hand is already over)."""
    queue = list(moves)

    def choose(env: PokerEnv) -> tuple[str, int | None]:
        return queue.pop(0) if queue else ("CHECK", None)

    reward = _play(env, instance_id, choose)
    assert not queue, f"{instance_id}: moves left over: {queue}"
    return reward


@pytest.mark.parametrize("seed", range(5))
def test_the_best_line_replays_to_its_value(seed: int) -> None:
    env = PokerEnv(seed, "short")
    ceilings = env.hand_ceilings()
    for instance_id in env.schedule.instance_ids:
        hand = env.schedule.canonical_index(instance_id) + 1
        value, line = hand_ceiling(seed, env.schedule.stage_of(instance_id), hand,
                                   env.schedule.variant_of(instance_id))
        assert value == ceilings[instance_id]
        assert replay(env, instance_id, [m for street in line for m in street]) \
            == pytest.approx(value, abs=1e-9)


def _by_hand(env: PokerEnv, policy: Any, *, stateful: bool) -> dict[str, float]:
    runs = (play_stateful(env, policy, 0) if stateful else play_stateless(env, policy))
    return {run.instance_id: run.reward for run in runs}


@pytest.mark.parametrize("seed", range(20))
def test_no_policy_beats_the_ceiling_hand_by_hand(seed: int) -> None:
    env = PokerEnv(seed, "short")
    ceilings = env.hand_ceilings()
    rng = random.Random(seed)
    played: dict[str, dict[str, float]] = {
        "all-in": {i: _play(env, i, all_in) for i in env.schedule.instance_ids},
        "oracle exploiter": _by_hand(env, OracleExploiter(), stateful=False),
        "builtin stateful": _by_hand(env, OpponentModeler(), stateful=True),
        "builtin stateless": _by_hand(env, TAGHeuristic(), stateful=False),
    }
    for k in range(3):
        played[f"random {k}"] = {i: _play(env, i, random_legal(rng))
                                 for i in env.schedule.instance_ids}
    for name, rewards in played.items():
        for instance_id, reward in rewards.items():
            assert reward <= ceilings[instance_id] + 1e-9, (name, instance_id)
        assert mean(rewards.values()) <= env.r_max + 1e-9, name
    assert env.r_max == pytest.approx(mean(ceilings.values()))


def _sampled_best(table: HandTable, me: int, variant: str, rng: random.Random,
                  samples: int) -> int:
    """The best result over every verb and a sample of raise sizes (the smallest, the largest
    and the two below it always in), by copying pokerkit's state at every decision."""
    rule = RULES[variant]
    table.play_out(1 - me, rule)
    if table.over:
        return table.net(me)
    spot = table.spot(me)
    moves: list[tuple[str, int]] = [("fold", 0), ("call", 0)] if spot.to_call else [("call", 0)]
    if spot.min_raise_to is not None and spot.max_raise_to is not None:
        low, high = spot.min_raise_to, spot.max_raise_to
        sizes = {low, high, max(low, high - 1), max(low, high - 2)}
        sizes |= {rng.randint(low, high) for _ in range(samples)}
        moves += [("raise", x) for x in sorted(sizes)]
    best = -STACK
    for verb, amount in moves:
        branch = copy.deepcopy(table)
        if verb == "fold":
            branch.fold()
        elif verb == "call":
            branch.check_or_call()
        else:
            branch.raise_to(amount)
        best = max(best, _sampled_best(branch, me, variant, rng, max(1, samples - 2)))
    return best


@pytest.mark.parametrize(("seed", "hand", "variant"), [
    (0, 1, "loose_aggressive"), (7, 1, "loose_aggressive"), (7, 5, "fit_or_fold"),
    (3, 2, "calling_station")])
def test_a_search_over_sampled_sizes_finds_nothing_better(seed: int, hand: int,
                                                          variant: str) -> None:
    stage = VARIANTS.index(variant)
    me = BUTTON_SEAT if hand % 2 else BLIND_SEAT
    value, _ = hand_ceiling(seed, stage, hand, variant)
    sampled = _sampled_best(HandTable(hand_deck(seed, stage, hand)), me, variant,
                            random.Random(seed), 4) / BIG_BLIND
    assert sampled <= value + 1e-9


@pytest.mark.parametrize("variant", sorted(RULES))
def test_the_opponents_keep_what_the_solver_assumes(variant: str) -> None:
    """After the flop a verb does not depend on the sizes: swept over the chips already in
    and the bet faced, it is the same for a bet as for any other below all-in, a raise is
    three times the bet, nothing raises twice on a street, and who raised last before the flop
    is not read."""
    rng = random.Random(variant)
    for hand in range(1, 13):
        solver = HandSolver(hand_deck(0, 0, hand), hand % 2, variant)
        for street in (1, 2, 3):
            seen: dict[tuple[bool, bool], set[str]] = {}
            for _ in range(60):
                t = rng.randint(BIG_BLIND, STACK - 4 * BIG_BLIND)
                most = STACK - t
                x = rng.randint(BIG_BLIND, most - 1)
                spot = solver._spot(street, t, 0, x, raised=False, increment=x)
                verb, amount = RULES[variant](spot)
                assert RULES[variant](replace(spot, preflop_aggressor=True)) == (verb, amount)
                seen.setdefault((False, x < most), set()).add(verb)
                if verb == "RAISE":
                    assert amount == min(3 * x, most)
                bet = rng.randint(BIG_BLIND, most // 3)
                z = rng.randint(min(2 * bet, most - 1), most - 1)
                verb, _ = RULES[variant](solver._spot(street, t, bet, z, raised=True,
                                                      increment=z - bet))
                seen.setdefault((True, True), set()).add(verb)
                assert verb != "RAISE"
            assert all(len(verbs) == 1 for verbs in seen.values()), (hand, street, seen)


def test_a_rule_outside_the_assumptions_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def size_minded(spot: Spot) -> Act:  # folds to big bets only: a verb that reads sizes
        if spot.to_call > 200:
            return "FOLD", None
        return ("CALL", None) if spot.to_call else ("CHECK", None)

    monkeypatch.setitem(RULES, "size_minded", size_minded)
    with pytest.raises(CeilingError, match="by its size"):
        HandSolver(hand_deck(0, 0, 2), BLIND_SEAT, "size_minded").solve()
    assert ceiling_module.CeilingError is CeilingError


def test_r_max_is_recorded_with_the_figures_beside_it() -> None:
    env = PokerEnv(0, "short")
    described = env.describe()
    assert described["r_max"] == env.r_max
    ceiling = described["ceiling"]
    assert ceiling["authors_r_max"] == 9.4875 and ceiling["best_reward"] == 100.0
    assert env.r_max > ceiling["oracle_exploiter"]
    assert PokerEnv(1, "short").r_max != env.r_max  # per seed
