"""CL-Bench scores are exact sums and means rounded once: the same bits for any order of the
rewards, rollouts and tasks (SPECS §3)."""

from __future__ import annotations

import math
import random
from fractions import Fraction

from clstream.protocols.clbench.metrics import (
    aggregate_ci,
    cumulative,
    mean_se,
    rollout_cost,
    stage_means,
    system_cost,
)

# Rewards whose left-to-right float sum depends on their order.
REWARDS = [0.1, 0.2, 0.3, 0.7, 1e-3, 0.35, 0.15, 0.9, 0.45, 1 / 3]


def _orders(values: list[float], count: int = 30) -> list[list[float]]:
    rng = random.Random(5)
    return [rng.sample(values, len(values)) for _ in range(count)]


def _exact_sum(values: list[float]) -> Fraction:
    return sum((Fraction(v) for v in values), Fraction(0))


def test_cumulative_and_costs_are_the_rounded_exact_sum() -> None:
    assert len({sum(order) for order in _orders(REWARDS)}) > 1  # plain sums differ
    expected = float(_exact_sum(REWARDS))
    for order in _orders(REWARDS):
        assert cumulative(order) == expected
        assert rollout_cost(order) == expected
        assert system_cost(iter(order)) == expected


def test_mean_and_se_over_rollouts_do_not_depend_on_their_order() -> None:
    mean, se = mean_se(REWARDS)
    n = len(REWARDS)
    exact_mean = _exact_sum(REWARDS) / n
    variance = sum(((Fraction(v) - exact_mean) ** 2 for v in REWARDS), Fraction(0)) / (n - 1)
    assert mean == float(exact_mean)
    assert se == math.sqrt(float(variance)) / math.sqrt(n)
    for order in _orders(REWARDS):
        assert mean_se(order) == (mean, se)


def test_aggregate_over_tasks_does_not_depend_on_their_order() -> None:
    ses = [0.01, 0.02, 0.03, 0.015, 0.025, 0.011, 0.012, 0.013, 0.014, 0.016]
    pairs = list(zip(REWARDS, ses, strict=True))
    expected = aggregate_ci(REWARDS, ses)
    squares = sum((Fraction(s) ** 2 for s in ses), Fraction(0))
    assert expected == (float(_exact_sum(REWARDS) / len(REWARDS)),
                        1.96 * math.sqrt(float(squares)) / len(ses))
    for seed in range(10):
        random.Random(seed).shuffle(pairs)
        assert aggregate_ci([p[0] for p in pairs], [p[1] for p in pairs]) == expected


def test_stage_means_do_not_depend_on_the_order_of_instances_or_rollouts() -> None:
    rollouts = [[(i % 3, v) for i, v in enumerate(order)] for order in _orders(REWARDS, 4)]
    stateless = [(i % 3, v) for i, v in enumerate(REWARDS)]
    expected = stage_means(rollouts, stateless)
    shuffled = [list(reversed(r)) for r in reversed(rollouts)]
    assert stage_means(shuffled, list(reversed(stateless))) == expected
    by_stage = [v for i, v in enumerate(REWARDS) if i % 3 == 0]
    assert expected[0]["stateless"] == float(_exact_sum(by_stage) / len(by_stage))
