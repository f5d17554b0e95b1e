"""CL-Bench metrics as pure functions over stored rewards (docs/clbench.md §5, §3.2; paper §4, App. C).

Notation per task (docs/clbench.md §5): N instances, r_max the per-instance maximum reward; in stateful
rollout rho the instances come in some order t = 1..N with rewards r_t^sf; the stateless arm
(run once) gives r_i^sl for each instance id i, and i(t) is the instance at position t. Rewards
of the two arms are always paired by instance id, never by position: rollouts permute the
order, the stateless arm does not.

Every function here takes numbers or arrays and returns numbers; :func:`score_clbench` puts
them together into the JSON ``clstream score clbench RECORDS --json`` prints. A quantity that
is undefined (a zero denominator, a standard error from one rollout) is None, which JSON
writes as null.

Sums and means are exact and rounded once (:mod:`clstream.metrics.exact`): a score depends
only on the rewards, never on the order they are added in or on the machine.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from clstream.metrics.exact import exact_mean, exact_sum, scaled_integers, standard_error
from clstream.protocols.clbench.records import ClbenchRecords, TaskRecords, records_from_rows

__all__ = [
    "IDENTITY_TOLERANCE",
    "T_975",
    "Z_975",
    "RolloutMetrics",
    "aggregate_ci",
    "ci_multiplier",
    "cumulative",
    "instance_gains",
    "mean_se",
    "normalized_gain",
    "normalized_reward",
    "paired_rewards",
    "pareto_front",
    "pareto_systems",
    "rollout_cost",
    "rollout_metrics",
    "score_clbench",
    "stability_plasticity",
    "stage_means",
    "stage_starts",
    "system_cost",
    "t_quantile_975",
]

FloatArray = npt.NDArray[np.float64]

Z_975 = 1.96
"""The normal 97.5% quantile that reproduces the paper's Table 1 intervals."""

T_975 = (
    12.706204736, 4.302652730, 3.182446305, 2.776445105, 2.570581836,
    2.446911851, 2.364624252, 2.306004135, 2.262157163, 2.228138852,
    2.200985160, 2.178812830, 2.160368656, 2.144786688, 2.131449546,
    2.119905299, 2.109815578, 2.100922040, 2.093024054, 2.085963447,
    2.079613845, 2.073873068, 2.068657610, 2.063898562, 2.059538553,
    2.055529439, 2.051830516, 2.048407142, 2.045229642, 2.042272456,
)
"""Student t 97.5% quantiles for 1..30 degrees of freedom (``T_975[df - 1]``)."""

IDENTITY_TOLERANCE = 1e-9
"""How far stab + plas may be from the normalized gain, relative to the size of the terms (and
of the summed rewards against the headroom, where rounding comes from)."""


# -- per instance and per rollout ------------------------------------------------------------
def paired_rewards(
    order: Sequence[str], stateful: Mapping[str, float], stateless: Mapping[str, float]
) -> tuple[FloatArray, FloatArray]:
    """(r_t^sf, r_{i(t)}^sl) for t = 1..N in rollout order, paired by instance id (paper §4.2).

    ``order`` lists the instance ids in the rollout's order; both mappings are keyed by id.
    An id absent from either mapping is a ValueError naming it.
    """
    missing = [i for i in order if i not in stateful or i not in stateless]
    if missing:
        raise ValueError(f"instance {missing[0]!r} has no reward in both arms")
    sf = np.array([stateful[i] for i in order], dtype=float)
    sl = np.array([stateless[i] for i in order], dtype=float)
    return sf, sl


def instance_gains(
    order: Sequence[str], stateful: Mapping[str, float], stateless: Mapping[str, float]
) -> FloatArray:
    """g_t = r_t^sf - r_{i(t)}^sl in rollout order, paired by instance id (paper §4.2)."""
    sf, sl = paired_rewards(order, stateful, stateless)
    return sf - sl


def cumulative(rewards: Sequence[float] | FloatArray) -> float:
    """S = sum_t r_t, the cumulative reward of one arm (paper §4.1; Tables 2-7 report it).

    The cumulative gain is G = S_sf - S_sl (paper §4.2), i.e. ``cumulative(g)`` of the gains.
    """
    return exact_sum(np.asarray(rewards, dtype=float).tolist())


def normalized_gain(s_sf: float, s_sl: float, n: int, r_max: float) -> float | None:
    """ghat = (S_sf - S_sl) / (N r_max - S_sl) = (rbar_sf - rbar_sl) / (r_max - rbar_sl).

    Paper §4.3: the gain as a fraction of the system's own headroom over its stateless
    reward. None when the headroom is zero (the stateless arm already at r_max).
    """
    headroom = n * r_max - s_sl
    if headroom == 0:
        return None
    return float((s_sf - s_sl) / headroom)


def normalized_reward(s_sf: float, s_ext: float, n: int, r_max: float) -> float | None:
    """rhat = (S_sf - S_ext) / (N r_max - S_ext), S_ext a fixed external reference (§4.3).

    The paper's S_ext is the stateless ICL reward of GPT-5.4 on the task, the same for every
    system. None when the denominator is zero.
    """
    headroom = n * r_max - s_ext
    if headroom == 0:
        return None
    return float((s_sf - s_ext) / headroom)


def stage_starts(stages: Sequence[Hashable]) -> npt.NDArray[np.bool_]:
    """The boundary set B of paper App. C.1 as a mask over positions t = 1..N.

    ``stages`` gives each position's stage label in rollout order. Position t is in B when
    t = 1 or its label differs from position t-1's: a stage is a contiguous run (App. C.1
    defines variants as contiguous runs), so a label that recurs later starts a new stage.
    """
    labels = list(stages)
    mask = np.zeros(len(labels), dtype=bool)
    for t, label in enumerate(labels):
        mask[t] = t == 0 or label != labels[t - 1]
    return mask


def stage_means(
    stateful: Sequence[Sequence[tuple[int, float]]], stateless: Sequence[tuple[int, float]]
) -> dict[int, dict[str, Any]]:
    """Mean reward per stage index s, stateful against stateless.

    ``stateful`` holds each scored rollout's (stage, reward) pairs, ``stateless`` the
    stateless arm's. With I_s the instances of stage s (n_s = |I_s|) and R rollouts:
    stateful(s) = (1/R) sum_r (1/n_s) sum_{i in I_s} r_{r,i} (the mean over rollouts of the
    rollout's stage mean), stateless(s) = (1/n_s) sum_{i in I_s} r_i, and gain(s) their
    difference. A stage missing from an arm gives None there. Keys are the stage indices in
    ascending order; ``n`` is n_s, from the stateless arm (or the first rollout without one).
    """
    def by_stage(pairs: Sequence[tuple[int, float]]) -> dict[int, list[float]]:
        out: dict[int, list[float]] = {}
        for stage, reward in pairs:
            out.setdefault(int(stage), []).append(float(reward))
        return out

    sl = by_stage(stateless)
    sf = [by_stage(r) for r in stateful]
    stages = sorted({*sl, *(s for r in sf for s in r)})
    result: dict[int, dict[str, Any]] = {}
    for s in stages:
        means = [exact_mean(r[s]) for r in sf if r.get(s)]
        a = exact_mean(means) if means else None
        b = exact_mean(sl[s]) if sl.get(s) else None
        n = len(sl[s]) if s in sl else len(next((r[s] for r in sf if s in r), []))
        result[s] = {"n": n, "stateful": a, "stateless": b,
                     "gain": a - b if a is not None and b is not None else None}
    return result


def stability_plasticity(
    sf: Sequence[float] | FloatArray,
    sl: Sequence[float] | FloatArray,
    stages: Sequence[Hashable],
    r_max: float,
) -> tuple[float | None, float | None]:
    """(ghat_stab, ghat_plas) for one rollout (paper App. C.2).

    ``sf`` and ``sl`` are the paired rewards in rollout order (:func:`paired_rewards`) and
    ``stages`` their stage labels. With B = :func:`stage_starts`, W the other positions,
    f_B = |B|/N, f_W = 1 - f_B and D = r_max - rbar_sl (all instances):

        stab = f_B (rbar_sf,B - rbar_sl,B) / D,    plas = f_W (rbar_sf,W - rbar_sl,W) / D,

    where rbar_sl,B is the mean stateless reward of the instances that occupy B in this
    rollout. A term over an empty set (no W when every stage has one instance) is 0. The
    identity stab + plas = ghat (App. C.2) is checked and an AssertionError raised if it fails.
    Both are None when D is zero (ghat undefined).
    """
    sf_arr = np.asarray(sf, dtype=float)
    sl_arr = np.asarray(sl, dtype=float)
    n = sf_arr.size
    if n == 0 or sl_arr.size != n or len(stages) != n:
        raise ValueError("stateful rewards, stateless rewards and stages must have one "
                         "entry per instance (N >= 1)")
    s_sl = exact_sum(sl_arr.tolist())
    headroom = n * r_max - s_sl  # N * D, zero exactly when ghat is undefined
    if headroom == 0:
        return None, None
    d = headroom / n
    boundary = stage_starts(stages)

    def term(mask: npt.NDArray[np.bool_]) -> float:
        count = int(mask.sum())
        if count == 0:
            return 0.0
        gap = exact_mean(sf_arr[mask].tolist()) - exact_mean(sl_arr[mask].tolist())
        return (count / n) * gap / d

    stab, plas = term(boundary), term(~boundary)
    ghat = normalized_gain(exact_sum(sf_arr.tolist()), s_sl, n, r_max)
    assert ghat is not None
    # Rounding in the sums grows with the rewards' size against the headroom, so the
    # tolerance is relative to that as well as to the terms themselves.
    spread = exact_sum([*np.abs(sf_arr).tolist(), *np.abs(sl_arr).tolist()]) / abs(headroom)
    scale = max(1.0, abs(stab), abs(plas), spread)
    if abs(stab + plas - ghat) > IDENTITY_TOLERANCE * scale:
        raise AssertionError(f"stab {stab!r} + plas {plas!r} != normalized gain {ghat!r}")
    return stab, plas


# -- over rollouts and tasks -----------------------------------------------------------------
def mean_se(values: Sequence[float] | FloatArray) -> tuple[float, float | None]:
    """(mean, standard error) over rollouts: SE = stdev (n - 1 denominator) / sqrt(R).

    As the paper's Tables 2-7 (± standard error across rollouts). With R = 1 the spread is
    unknown and SE is None (not 0: one rollout says nothing about rollout variance).
    """
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError("need at least one rollout value")
    data = arr.tolist()
    mean = exact_mean(data)
    if arr.size == 1:
        return mean, None
    return mean, standard_error(data)


def t_quantile_975(df: int) -> float:
    """The Student t 97.5% quantile for ``df`` degrees of freedom (two-sided 95%).

    df 1..30 from :data:`T_975`; above 30 the Cornish-Fisher expansion of the t quantile
    around the normal one (Abramowitz & Stegun 26.7.5), which is within 1e-6 there.
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df <= len(T_975):
        return T_975[df - 1]
    z = 1.959963984540054
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def aggregate_ci(
    means: Sequence[float], ses: Sequence[float | None], multiplier: float = Z_975
) -> tuple[float, float | None]:
    """(mean over K tasks, half-width of its 95% interval), reproducing the paper's Table 1.

    mean = (1/K) sum_k m_k with equal task weights; CI = multiplier * sqrt(sum_k SE_k^2) / K,
    the standard error of that mean with independent tasks. The paper states no formula: this
    one is reconstructed from Table 1, whose intervals it reproduces from Tables 2-7
    (docs/clbench.md §7, item 5). The multiplier that reproduces them is 1.96;
    pass :func:`t_quantile_975` of R - 1 for a small-sample interval. The CI is None when any
    task's SE is (a task with one rollout).
    """
    if not means or len(means) != len(ses):
        raise ValueError("need one mean and one standard error per task (K >= 1)")
    k = len(means)
    mean = exact_mean(means)
    if any(se is None for se in ses):
        return mean, None
    return mean, multiplier * math.sqrt(_exact_sum_of_squares(ses)) / k


def _exact_sum_of_squares(values: Sequence[float | None]) -> float:
    """sum v^2 over the values given, exact and rounded once."""
    numerators, denominator = scaled_integers(v for v in values if v is not None)
    return sum(v * v for v in numerators) / (denominator * denominator)


def rollout_cost(costs: Sequence[float] | FloatArray) -> float:
    """One rollout's cost: the sum of its call costs, or of its tokens offline (docs/clbench.md §5.8).

    A task's cost is the mean over its rollouts (:func:`mean_se`); the paper's Table 1 cost of
    a system is the sum of those over tasks (:func:`system_cost`).
    """
    return exact_sum(np.asarray(costs, dtype=float).tolist())


def system_cost(task_costs: Iterable[float]) -> float:
    """A system's cost: the sum over tasks of the mean rollout cost (Table 1, "Cost")."""
    return exact_sum(task_costs)


def pareto_front(costs: Sequence[float], values: Sequence[float]) -> list[int]:
    """Indices of the points not dominated on (cost lower, value higher), by cost.

    Point j dominates i when cost_j <= cost_i and value_j >= value_i with one strict (paper
    Fig. 6: the frontier of normalized reward, or gain, against cost). Identical points do
    not dominate each other; all are kept.
    """
    if len(costs) != len(values):
        raise ValueError("need one value per cost")
    pts = [(float(c), float(v)) for c, v in zip(costs, values, strict=True)]
    if any(math.isnan(c) or math.isnan(v) for c, v in pts):
        raise ValueError("costs and values must not be NaN")
    front = [i for i, (c, v) in enumerate(pts)
             if not any(cj <= c and vj >= v and (cj < c or vj > v) for cj, vj in pts)]
    return sorted(front, key=lambda i: (pts[i][0], -pts[i][1], i))


def pareto_systems(scores: Mapping[str, Mapping[str, Any]], metric: str) -> list[str]:
    """The systems on the cost / ``metric`` Pareto front, from their ``score_clbench`` JSON.

    ``metric`` is "normalized_reward" or "normalized_gain"; a system whose aggregate lacks a
    cost or a value for it is left out. Returned in order of increasing cost.
    """
    if metric not in ("normalized_reward", "normalized_gain"):
        raise ValueError(f"metric must be normalized_reward or normalized_gain, got {metric!r}")
    labels, costs, values = [], [], []
    for label, result in scores.items():
        agg = result.get("aggregate", {})
        value = (agg.get(metric) or {}).get("mean")
        if agg.get("cost") is None or value is None:
            continue
        labels.append(label)
        costs.append(float(agg["cost"]))
        values.append(float(value))
    return [labels[i] for i in pareto_front(costs, values)]


# -- from records ----------------------------------------------------------------------------
@dataclass(frozen=True)
class RolloutMetrics:
    """One stateful rollout of one task: cumulative reward S_sf and gain G, ghat, rhat (None
    without a reference or with a zero denominator), stab, plas, and cost (None without)."""

    rollout: int
    reward: float
    gain: float
    normalized_gain: float | None
    normalized_reward: float | None
    stability: float | None
    plasticity: float | None
    cost: float | None


def _s_ext(task: TaskRecords) -> float | None:
    """S_ext over the scored instances. The reference is a sum over the N instances the task
    declares; when some were left out it is scaled to the N scored (rhat in the paper's mean
    form, (rbar_sf - rbar_ext) / (r_max - rbar_ext), §4.3)."""
    if task.s_ext is None:
        return None
    if task.n_instances == task.n_declared:
        return task.s_ext
    return task.s_ext * task.n_instances / task.n_declared


def rollout_metrics(task: TaskRecords) -> list[RolloutMetrics]:
    """The per-rollout metrics of one task, rollouts in increasing number (docs/clbench.md §5)."""
    n = task.n_instances
    s_sl = cumulative([task.stateless[i] for i in sorted(task.stateless)])
    s_ext = _s_ext(task)
    out = []
    for r in task.rollouts:
        order = task.orders[r]
        sf, sl = paired_rewards(order, task.stateful[r], task.stateless)
        s_sf = cumulative(sf)
        stab, plas = stability_plasticity(sf, sl, [task.stages[i] for i in order], task.r_max)
        cost = (rollout_cost([task.costs[r][i] for i in order])
                if task.cost_unit is not None else None)
        out.append(RolloutMetrics(
            rollout=r, reward=s_sf, gain=s_sf - s_sl,
            normalized_gain=normalized_gain(s_sf, s_sl, n, task.r_max),
            normalized_reward=(normalized_reward(s_sf, s_ext, n, task.r_max)
                               if s_ext is not None else None),
            stability=stab, plasticity=plas, cost=cost))
    return out


def _summary(values: Sequence[float | None]) -> dict[str, float | None]:
    if any(v is None for v in values):
        return {"mean": None, "se": None}
    mean, se = mean_se([float(v) for v in values if v is not None])
    return {"mean": mean, "se": se}


def _task_json(task: TaskRecords, rows: list[RolloutMetrics]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "n_instances": task.n_instances,
        "rollouts": len(rows),
        "reward": _summary([m.reward for m in rows]),
        "stateless_reward": cumulative([task.stateless[i] for i in sorted(task.stateless)]),
        "gain": _summary([m.gain for m in rows]),
        "normalized_gain": _summary([m.normalized_gain for m in rows]),
    }
    if task.s_ext is not None:
        out["normalized_reward"] = _summary([m.normalized_reward for m in rows])
    out["stability"] = _summary([m.stability for m in rows])
    out["plasticity"] = _summary([m.plasticity for m in rows])
    if task.cost_unit is not None:
        out["cost"] = _summary([m.cost for m in rows])
    return out


def _aggregate(stats: list[dict[str, float | None]], multiplier: float
               ) -> dict[str, float | None]:
    means = [s["mean"] for s in stats]
    if any(m is None for m in means):
        return {"mean": None, "ci95": None}
    mean, ci = aggregate_ci([float(m) for m in means if m is not None],
                            [s["se"] for s in stats], multiplier)
    return {"mean": mean, "ci95": ci}


def _plain_mean(stats: list[dict[str, float | None]]) -> float | None:
    means = [s["mean"] for s in stats]
    if any(m is None for m in means):
        return None
    return exact_mean([float(m) for m in means if m is not None])


def ci_multiplier(records: ClbenchRecords, t_multiplier: bool = False) -> float:
    """The CI multiplier: 1.96 (paper Table 1), or with ``t_multiplier`` the t quantile for
    the smallest rollout count R over the tasks (df = R - 1; with R = 1 there is no CI)."""
    if not t_multiplier:
        return Z_975
    r_min = min(len(t.stateful) for t in records.tasks.values())
    return t_quantile_975(r_min - 1) if r_min > 1 else Z_975


def score_clbench(
    records: ClbenchRecords | Iterable[Mapping[str, Any]],
    *,
    allow_missing: bool = False,
    t_multiplier: bool = False,
) -> dict[str, Any]:
    """The JSON ``clstream score clbench RECORDS --json`` prints (docs/clbench.md §3.2).

    Per task: n_instances (scored), rollouts (R), reward and gain (cumulative, mean and SE
    over rollouts), stateless_reward (S_sl), normalized_gain, normalized_reward (when the task
    gives s_ext), stability, plasticity, cost (when its records carry cost or tokens). The
    aggregate averages task means with equal weight (paper §4.3, App. C): normalized_gain and
    normalized_reward (only when every task gives s_ext) with the Table 1 95% CI; stability and
    plasticity; cost as the sum over tasks (only when every task has a cost in one unit).
    ``allow_missing`` applies when ``records`` are raw rows (a :class:`ClbenchRecords` was
    validated already).
    """
    if not isinstance(records, ClbenchRecords):
        records = records_from_rows(enumerate(records, start=1), allow_missing=allow_missing)
    multiplier = ci_multiplier(records, t_multiplier)
    tasks = {name: _task_json(task, rollout_metrics(task))
             for name, task in records.tasks.items()}
    per_task = list(tasks.values())
    aggregate: dict[str, Any] = {
        "normalized_gain": _aggregate([t["normalized_gain"] for t in per_task], multiplier)}
    if all("normalized_reward" in t for t in per_task):
        aggregate["normalized_reward"] = _aggregate(
            [t["normalized_reward"] for t in per_task], multiplier)
    aggregate["stability"] = _plain_mean([t["stability"] for t in per_task])
    aggregate["plasticity"] = _plain_mean([t["plasticity"] for t in per_task])
    units = {t.cost_unit for t in records.tasks.values()}
    if len(units) == 1 and None not in units:
        aggregate["cost"] = system_cost(float(t["cost"]["mean"]) for t in per_task)
    return {"tasks": tasks, "aggregate": aggregate}
