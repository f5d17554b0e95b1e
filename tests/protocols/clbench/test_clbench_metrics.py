"""CL-Bench metric functions: hand-computed cases, the App. C identity, and the paper's Table 1
recomputed from its per-task numbers (Tables 2-7)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clstream.protocols.clbench.metrics import (
    T_975,
    aggregate_ci,
    cumulative,
    instance_gains,
    mean_se,
    normalized_gain,
    normalized_reward,
    paired_rewards,
    pareto_front,
    pareto_systems,
    rollout_cost,
    score_clbench,
    stability_plasticity,
    stage_starts,
    system_cost,
    t_quantile_975,
)

# ---------------------------------------------------------------- hand-computed cases


def test_pairing_is_by_instance_id_not_position() -> None:
    stateless = {"a": 0.0, "b": 1.0, "c": 0.5}
    stateful = {"a": 1.0, "b": 1.0, "c": 0.0}
    sf, sl = paired_rewards(["c", "a", "b"], stateful, stateless)
    assert sf.tolist() == [0.0, 1.0, 1.0]
    assert sl.tolist() == [0.5, 0.0, 1.0]
    assert instance_gains(["c", "a", "b"], stateful, stateless).tolist() == [-0.5, 1.0, 0.0]
    with pytest.raises(ValueError, match="'d'"):
        paired_rewards(["a", "d"], {**stateful, "d": 1.0}, stateless)


def test_cumulative_and_normalized_by_hand() -> None:
    # N = 4, r_max = 2: S_sf = 5, S_sl = 3, ceiling 8.
    assert cumulative([1.0, 2.0, 0.5, 1.5]) == 5.0
    assert normalized_gain(5.0, 3.0, 4, 2.0) == pytest.approx(2 / 5)
    assert normalized_reward(5.0, 4.0, 4, 2.0) == pytest.approx(1 / 4)
    assert normalized_reward(3.0, 4.0, 4, 2.0) == pytest.approx(-1 / 4)
    # Zero headroom: undefined.
    assert normalized_gain(8.0, 8.0, 4, 2.0) is None
    assert normalized_reward(8.0, 8.0, 4, 2.0) is None


def test_stability_plasticity_by_hand() -> None:
    # Stages 0,0,1,1; r_max 1. rbar_sl = 0.25, D = 0.75; B = positions 1 and 3.
    sf, sl = [0.5, 1.0, 0.0, 1.0], [0.0, 0.5, 0.0, 0.5]
    stab, plas = stability_plasticity(sf, sl, [0, 0, 1, 1], 1.0)
    assert stab == pytest.approx(0.5 * (0.25 - 0.0) / 0.75)  # 1/6
    assert plas == pytest.approx(0.5 * (1.0 - 0.5) / 0.75)  # 1/3
    assert stab is not None and plas is not None
    assert stab + plas == pytest.approx(normalized_gain(2.5, 1.0, 4, 1.0))  # 1/2


def test_every_instance_a_stage_gives_no_plasticity() -> None:
    stab, plas = stability_plasticity([1.0, 0.0], [0.0, 0.0], [0, 1], 1.0)
    assert plas == 0.0 and stab == pytest.approx(0.5)
    assert stability_plasticity([1.0, 1.0], [1.0, 1.0], [0, 0], 1.0) == (None, None)


def test_recurring_stage_label_starts_a_new_stage() -> None:
    # Poker returns to an opponent: labels 0,0,1,1,0,0 are three stages, not two.
    assert stage_starts([0, 0, 1, 1, 0, 0]).tolist() == [True, False, True, False, True, False]
    assert stage_starts(["cs", "lag", "cs"]).tolist() == [True, True, True]
    sf, sl = [1.0, 1.0, 0.0, 0.0, 1.0, 1.0], [0.0] * 6
    stab, plas = stability_plasticity(sf, sl, [0, 0, 1, 1, 0, 0], 1.0)
    # B = {1, 3, 5}: stateful mean 2/3 there; f_B = 1/2, D = 1.
    assert stab == pytest.approx(0.5 * 2 / 3)
    assert plas == pytest.approx(0.5 * 2 / 3)


def test_stateless_rewards_of_b_follow_the_rollout_order() -> None:
    # Same instances, two orders within each stage: B holds different instances.
    stateless = {"a": 0.0, "b": 1.0, "c": 0.0, "d": 1.0}
    stateful = {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}
    stages = {"a": 0, "b": 0, "c": 1, "d": 1}
    results = []
    for order in (["a", "b", "c", "d"], ["b", "a", "d", "c"]):
        sf, sl = paired_rewards(order, stateful, stateless)
        results.append(stability_plasticity(sf, sl, [stages[i] for i in order], 2.0))
    # rbar_sl = 0.5, D = 1.5; order 1: B = {a, c} gain 1 each; order 2: B = {b, d} gain 0.
    assert results[0] == pytest.approx((0.5 * 1.0 / 1.5, 0.0))
    assert results[1] == pytest.approx((0.0, 0.5 * 1.0 / 1.5))
    totals = [sum(v for v in gains if v is not None) for gains in results]
    assert totals[0] == pytest.approx(totals[1])


def test_mean_se_by_hand() -> None:
    mean, se = mean_se([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5
    assert se == pytest.approx(math.sqrt(5 / 3) / 2)  # stdev (n-1) / sqrt(4)
    assert mean_se([7.0]) == (7.0, None)  # one rollout: SE undefined
    with pytest.raises(ValueError):
        mean_se([])


def test_aggregate_ci_by_hand() -> None:
    mean, ci = aggregate_ci([0.1, 0.3], [0.03, 0.04])
    assert mean == pytest.approx(0.2)
    assert ci == pytest.approx(1.96 * 0.05 / 2)
    _, ci_t = aggregate_ci([0.1, 0.3], [0.03, 0.04], multiplier=t_quantile_975(4))
    assert ci_t == pytest.approx(2.776445105 * 0.05 / 2)
    mean, half_width = aggregate_ci([0.1, 0.3], [0.03, None])
    assert mean == pytest.approx(0.2) and half_width is None


def _t_cdf_half(q: float, df: int) -> float:
    """P(0 < T < q) by Simpson's rule on the t density (independent of the table)."""
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    x = np.linspace(0.0, q, 20001)
    y = c * (1 + x * x / df) ** (-(df + 1) / 2)
    h = x[1] - x[0]
    return float(h / 3 * (y[0] + y[-1] + 4 * y[1:-1:2].sum() + 2 * y[2:-1:2].sum()))


def test_t_quantile_table_against_the_density() -> None:
    for df in range(1, 31):
        assert _t_cdf_half(T_975[df - 1], df) == pytest.approx(0.475, abs=2e-7)
    assert t_quantile_975(4) == 2.776445105
    for df in (31, 40, 120):
        assert _t_cdf_half(t_quantile_975(df), df) == pytest.approx(0.475, abs=1e-6)
    assert t_quantile_975(10**6) == pytest.approx(1.96, abs=1e-4)
    with pytest.raises(ValueError):
        t_quantile_975(0)


def test_cost_by_hand() -> None:
    assert rollout_cost([0.5, 0.25, 1.0]) == 1.75
    assert system_cost([1.75, 2.0]) == 3.75


def test_pareto_front_by_hand() -> None:
    costs = [1.0, 2.0, 2.0, 3.0, 1.0, 4.0]
    values = [0.1, 0.5, 0.4, 0.5, 0.1, 0.9]
    # 2 is dominated by 1 (same cost, lower value); 3 by 1 (higher cost, same value);
    # 0 and 4 are identical and both kept.
    assert pareto_front(costs, values) == [0, 4, 1, 5]
    assert pareto_front([], []) == []


# ---------------------------------------------------------------- App. C identity


@st.composite
def _rollout(draw: st.DrawFn) -> tuple[list[float], list[float], list[int], float]:
    n = draw(st.integers(1, 30))
    reward = st.floats(-50, 50, allow_nan=False, allow_infinity=False)
    sf = draw(st.lists(reward, min_size=n, max_size=n))
    sl = draw(st.lists(reward, min_size=n, max_size=n))
    labels = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    r_max = draw(st.floats(-60, 60, allow_nan=False, allow_infinity=False))
    return sf, sl, labels, r_max


@settings(max_examples=300, deadline=None)
@given(_rollout())
def test_stab_plus_plas_is_the_normalized_gain(case: tuple[Any, ...]) -> None:
    sf, sl, labels, r_max = case
    stab, plas = stability_plasticity(sf, sl, labels, r_max)  # asserts internally too
    ghat = normalized_gain(sum(sf), sum(sl), len(sf), r_max)
    if ghat is None:
        assert (stab, plas) == (None, None)
        return
    assert stab is not None and plas is not None
    headroom = abs(len(sf) * r_max - sum(sl))
    spread = (sum(map(abs, sf)) + sum(map(abs, sl))) / headroom
    assert stab + plas == pytest.approx(ghat, rel=1e-9, abs=1e-9 * max(1.0, spread))


# ---------------------------------------------------------------- the paper's Table 1
# Brief §6 / paper Tables 2-7: per task "S_sf / G ± SE / S_sl" (5 rollouts), in task order
# BSM, codebase, cohort, DB, poker, sales.
TASKS = ("bsm", "codebase", "cohort", "db", "poker", "sales")
N = (90, 19, 20, 40, 120, 12)
R_MAX = (1.0, 1.0, 0.162202, 1.0, 9.4875, 1.0)
S_EXT = (19.761, 9.450, 0.994, 5.533, 133.6, 5.597)  # stateless ICL GPT-5.4 (paper §4.3)
PER_TASK = {
    "ICL Sonnet": "36.584/16.825/1.262/19.760 9.755/2.705/0.223/7.050 0.762/0.185/0.240/0.576 "
                  "15.013/8.480/1.427/6.533 339.92/23.22/19.53/316.7 10.018/4.840/0.215/5.178",
    "ICL GPT-5.4": "46.198/26.437/1.001/19.761 10.140/0.690/1.959/9.450 0.957/-0.037/0.393/0.994 "
                   "13.880/8.347/1.715/5.533 95.76/-37.84/26.41/133.6 9.230/3.633/0.254/5.597",
    "Claude Code Sonnet": "44.282/24.522/1.449/19.760 6.630/0.730/1.755/5.900 "
                          "0.496/-0.309/0.226/0.805 22.053/13.853/1.182/8.200 "
                          "343.02/58.52/29.37/284.5 9.573/4.537/0.254/5.036",
    "Mem0 GPT-5.4": "33.794/14.033/2.986/19.760 11.105/2.980/1.100/8.125 "
                    "0.778/-0.067/0.315/0.845 17.240/12.907/1.300/4.333 "
                    "73.42/-16.98/41.55/90.4 7.815/3.064/0.198/4.750",
    "ICL Opus": "33.572/13.813/3.082/19.760 10.360/1.485/0.924/8.875 -0.121/-0.091/0.093/-0.030 "
                "15.653/9.587/1.781/6.067 116.68/-41.02/26.49/157.7 9.039/4.649/0.292/4.390",
    "Notepad GPT-5.4": "31.915/12.153/2.122/19.761 8.860/0.610/0.685/8.250 "
                       "0.476/-0.900/0.046/1.376 12.373/6.373/1.158/6.000 "
                       "81.34/0.24/15.21/81.1 8.486/4.003/0.317/4.483",
    "ICL Flash": "33.039/13.279/0.879/19.760 7.420/-0.330/0.934/7.750 0.576/0.437/0.215/0.140 "
                 "15.027/11.493/0.712/3.533 94.84/-101.96/16.91/196.8 8.481/3.210/0.211/5.271",
    "ACE GPT-5.4": "19.778/0.017/0.009/19.761 11.580/1.580/0.181/10.000 0.759/0.383/0.127/0.376 "
                   "7.853/2.387/1.291/5.467 143.50/1.60/41.20/141.9 6.116/0.913/0.129/5.203",
    "Notepad Sonnet": "35.993/16.233/2.414/19.760 8.765/0.890/0.455/7.875 "
                      "-0.784/0.795/0.358/-1.579 11.000/3.667/0.877/7.333 "
                      "115.42/-201.58/29.93/317.0 10.073/5.790/0.095/4.282",
    "Notepad Gemini Pro": "29.122/9.362/3.011/19.760 7.110/-1.315/0.634/8.425 "
                          "0.327/-0.366/0.086/0.692 8.520/4.320/0.651/4.200 "
                          "53.50/17.00/6.68/36.5 8.108/4.952/0.350/3.156",
    "ICL Gemini Pro": "33.033/13.273/1.136/19.760 5.125/-1.550/0.652/6.675 "
                      "0.257/-0.563/0.143/0.820 11.560/6.827/2.894/4.733 "
                      "76.40/32.90/3.87/43.5 6.468/2.560/0.054/3.908",
}
# Table 1: normalized reward % ± CI, normalized gain % ± CI, cost $.
TABLE_1 = {
    "ICL Sonnet": (22.3, 4.1, 25.4, 3.6, 30.4),
    "ICL GPT-5.4": (20.1, 9.1, 20.1, 9.1, 18.4),
    "Claude Code Sonnet": (19.0, 7.1, 23.9, 5.7, 38.6),
    "Mem0 GPT-5.4": (15.1, 6.4, 20.2, 5.9, 18.3),
    "ICL Opus": (10.2, 4.4, 19.5, 4.1, 49.6),
    "Notepad GPT-5.4": (8.0, 3.3, 7.8, 3.0, 14.3),
    "ICL Flash": (8.0, 4.7, 16.4, 3.8, 7.6),
    "ACE GPT-5.4": (4.6, 2.7, 8.6, 2.5, 62.8),
    "Notepad Sonnet": (3.5, 5.7, 18.2, 3.4, 31.5),
    "Notepad Gemini Pro": (-0.2, 3.4, 9.4, 3.0, 13.3),
    "ICL Gemini Pro": (-5.6, 4.1, 6.2, 3.8, 15.2),
}
# The one printed digit not recovered from the rounded per-task inputs: Notepad GPT-5.4's gain
# CI comes out 3.051 (prints 3.1) against the paper's 3.0.
OFF_BY_ROUNDING = {("Notepad GPT-5.4", "gain_ci")}


def _cells(system: str) -> list[tuple[float, float, float, float]]:
    out = []
    for cell in PER_TASK[system].split():
        s_sf, gain, se, s_sl = map(float, cell.split("/"))
        out.append((s_sf, gain, se, s_sl))
    return out


def _table_1_row(system: str) -> dict[str, float]:
    """Per-task rollout mean and SE -> aggregate mean and 95% CI, with the module's functions.

    ghat and rhat are affine in S_sf with the stateless sums fixed, so the rollout mean of
    ghat is ghat of the mean S_sf and its SE is SE(S_sf) = SE(G) over the denominator.
    """
    gains, gain_ses, rewards, reward_ses = [], [], [], []
    for (s_sf, _gain, se, s_sl), n, r_max, s_ext in zip(_cells(system), N, R_MAX, S_EXT,
                                                        strict=True):
        g = normalized_gain(s_sf, s_sl, n, r_max)
        r = normalized_reward(s_sf, s_ext, n, r_max)
        assert g is not None and r is not None
        gains.append(g)
        gain_ses.append(se / (n * r_max - s_sl))
        rewards.append(r)
        reward_ses.append(se / (n * r_max - s_ext))
    g_mean, g_ci = aggregate_ci(gains, gain_ses)
    r_mean, r_ci = aggregate_ci(rewards, reward_ses)
    assert g_ci is not None and r_ci is not None
    return {"reward": 100 * r_mean, "reward_ci": 100 * r_ci,
            "gain": 100 * g_mean, "gain_ci": 100 * g_ci}


def _check_row(system: str, row: dict[str, float]) -> None:
    printed = dict(zip(("reward", "reward_ci", "gain", "gain_ci"), TABLE_1[system][:4],
                       strict=True))
    for key, value in printed.items():
        if (system, key) in OFF_BY_ROUNDING:
            assert row[key] == pytest.approx(value, abs=0.06), (system, key)
        else:
            assert round(row[key], 1) == pytest.approx(value, abs=1e-9), (system, key, row[key])


@pytest.mark.parametrize("system", list(PER_TASK))
def test_table_1_from_per_task_means_and_ses(system: str) -> None:
    _check_row(system, _table_1_row(system))


def _standard_scores(r: int) -> np.ndarray:
    z = np.arange(r, dtype=float)
    z -= z.mean()
    scores: np.ndarray = z / z.std(ddof=1)  # mean 0, sample stdev 1
    return scores


def _records_for(system: str, rollouts: int = 5) -> list[dict[str, Any]]:
    """Instance records whose per-task rollout mean and SE are the paper's (5 rollouts)."""
    rows: list[dict[str, Any]] = []
    z = _standard_scores(rollouts)
    for name, (s_sf, _gain, se, s_sl), n, r_max, s_ext in zip(
            TASKS, _cells(system), N, R_MAX, S_EXT, strict=True):
        rows.append({"kind": "task", "task": name, "r_max": r_max, "n_instances": n,
                     "s_ext": s_ext})
        for i in range(n):
            rows.append({"kind": "instance", "task": name, "arm": "stateless", "rollout": 0,
                         "pos": i + 1, "instance_id": f"{name}-{i}", "stage": i * 3 // n,
                         "reward": s_sl / n})
        for r in range(rollouts):
            total = s_sf + se * math.sqrt(rollouts) * z[r]
            for i in range(n):
                rows.append({"kind": "instance", "task": name, "arm": "stateful",
                             "rollout": r, "pos": n - i, "instance_id": f"{name}-{i}",
                             "stage": i * 3 // n, "reward": total / n, "cost": 0.01})
    return rows


@pytest.mark.parametrize("system", ["ICL Sonnet", "ICL GPT-5.4", "Mem0 GPT-5.4",
                                    "Notepad Sonnet", "ACE GPT-5.4", "ICL Flash"])
def test_table_1_end_to_end_through_score_clbench(system: str) -> None:
    result = score_clbench(_records_for(system))
    agg = result["aggregate"]
    row = {"reward": 100 * agg["normalized_reward"]["mean"],
           "reward_ci": 100 * agg["normalized_reward"]["ci95"],
           "gain": 100 * agg["normalized_gain"]["mean"],
           "gain_ci": 100 * agg["normalized_gain"]["ci95"]}
    _check_row(system, row)
    bsm = result["tasks"]["bsm"]
    s_sf, gain, se, s_sl = _cells(system)[0]
    assert bsm["reward"]["mean"] == pytest.approx(s_sf)
    assert bsm["reward"]["se"] == pytest.approx(se)
    assert bsm["gain"]["mean"] == pytest.approx(s_sf - s_sl)
    assert bsm["gain"]["se"] == pytest.approx(se)  # SE(G) = SE(S_sf): S_sl is fixed
    assert bsm["stateless_reward"] == pytest.approx(s_sl)


LEADERBOARD = {  # brief §6: per-task rhat / ghat, tasks in the order of TASKS
    "ICL Sonnet": ".240/.240 .032/.226 -.104/.070 .275/.253 .205/.028 .690/.709",
    "ICL GPT-5.4": ".376/.376 .072/.072 -.017/-.017 .242/.242 -.038/-.038 .567/.567",
    "Claude Code Sonnet": ".349/.349 -.295/.056 -.222/-.126 .479/.436 .208/.069 .621/.651",
    "Mem0 GPT-5.4": ".200/.200 .173/.274 -.096/-.028 .340/.362 -.060/-.016 .346/.423",
    "ICL Opus": ".197/.197 .095/.147 -.496/-.028 .294/.283 -.017/-.042 .538/.611",
    "Notepad GPT-5.4": ".173/.173 -.062/.057 -.231/-.482 .198/.187 -.052/.000 .451/.532",
    "ICL Flash": ".189/.189 -.213/-.029 -.186/.141 .275/.315 -.039/-.108 .450/.477",
    "ACE GPT-5.4": ".000/.000 .223/.176 -.105/.134 .067/.069 .010/.002 .081/.134",
    "Notepad Sonnet": ".231/.231 -.072/.080 -.791/.165 .159/.112 -.018/-.245 .699/.750",
    "Notepad Gemini Pro": ".133/.133 -.245/-.124 -.297/-.143 .087/.121 -.080/.015 .392/.560",
    "ICL Gemini Pro": ".189/.189 -.453/-.126 -.328/-.232 .175/.194 -.057/.030 .136/.316",
}


@pytest.mark.parametrize("system", list(LEADERBOARD))
def test_per_task_normalized_values_of_the_leaderboard(system: str) -> None:
    # Most cells agree to the printed three decimals; cohort's ceiling is small (3.244), so the
    # three-decimal sums of Table 4 move its values by up to 1e-3 (one more unit allowed).
    cells = [tuple(map(float, c.split("/"))) for c in LEADERBOARD[system].split()]
    for (s_sf, _g, _se, s_sl), n, r_max, s_ext, (r_hat, g_hat) in zip(
            _cells(system), N, R_MAX, S_EXT, cells, strict=True):
        assert normalized_reward(s_sf, s_ext, n, r_max) == pytest.approx(r_hat, abs=1.5e-3)
        assert normalized_gain(s_sf, s_sl, n, r_max) == pytest.approx(g_hat, abs=1.5e-3)


def test_table_1_cost_is_the_sum_of_per_task_costs() -> None:
    # Per-task $/rollout from Tables 2-7 (one decimal each, so sums agree to 6 x 0.05).
    per_task = {"ICL Sonnet": [3.6, 6.9, 5.6, 1.9, 9.4, 3.0],
                "ICL GPT-5.4": [1.9, 3.6, 3.7, 1.0, 4.6, 3.5],
                "Mem0 GPT-5.4": [1.4, 2.6, 6.0, 2.0, 3.6, 2.8],
                "ICL Flash": [0.7, 2.8, 1.2, 0.4, 1.9, 0.6]}
    for system, costs in per_task.items():
        assert system_cost(costs) == pytest.approx(TABLE_1[system][4], abs=0.3)
    # The brief's unrounded ICL Sonnet costs: 3.60 + 6.92 + 5.62 + 1.95 + 9.39 + 2.96 = 30.44.
    assert round(system_cost([3.60, 6.92, 5.62, 1.95, 9.39, 2.96]), 1) == 30.4


def test_pareto_fronts_of_table_1() -> None:
    scores = {name: {"aggregate": {"cost": row[4],
                                   "normalized_reward": {"mean": row[0] / 100},
                                   "normalized_gain": {"mean": row[2] / 100}}}
              for name, row in TABLE_1.items()}
    assert pareto_systems(scores, "normalized_gain") == ["ICL Flash", "Mem0 GPT-5.4",
                                                         "ICL Sonnet"]
    assert pareto_systems(scores, "normalized_reward") == ["ICL Flash", "Mem0 GPT-5.4",
                                                           "ICL GPT-5.4", "ICL Sonnet"]
    scores["no cost"] = {"aggregate": {"normalized_gain": {"mean": 1.0}}}
    assert "no cost" not in pareto_systems(scores, "normalized_gain")
    with pytest.raises(ValueError):
        pareto_systems(scores, "reward")
