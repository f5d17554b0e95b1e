"""``score clbench`` against a second implementation written from SPECS §3 and §5 alone, on
random record sets: permuted rollouts, recurring stage labels, optional references and costs,
lines in random order. Plain Python (``statistics``), no numpy, nothing shared with the module
but the records format."""

from __future__ import annotations

import math
import random
import statistics
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clstream.protocols.clbench.metrics import score_clbench

# ---------------------------------------------------------------- the second implementation


def _mean_se(xs: list[float]) -> dict[str, float | None]:
    # SPECS §3: mean over rollouts ± standard error (stdev / sqrt R); one rollout: no SE.
    return {"mean": sum(xs) / len(xs),
            "se": statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else None}


def reference_score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    tasks = {r["task"]: r for r in rows if r["kind"] == "task"}
    out: dict[str, Any] = {}
    for name in sorted(tasks):
        spec = tasks[name]
        n, r_max = spec["n_instances"], spec["r_max"]
        mine = [r for r in rows if r["kind"] == "instance" and r["task"] == name]
        stateless = {r["instance_id"]: r["reward"] for r in mine if r["arm"] == "stateless"}
        s_sl = sum(stateless.values())
        runs: dict[int, list[dict[str, Any]]] = {}
        for r in mine:
            if r["arm"] == "stateful":
                runs.setdefault(r["rollout"], []).append(r)
        per: dict[str, list[float]] = {k: [] for k in ("S", "G", "gn", "rn", "stab", "plas",
                                                       "cost")}
        for rollout in sorted(runs):
            seq = sorted(runs[rollout], key=lambda r: r["pos"])
            s_sf = sum(r["reward"] for r in seq)
            per["S"].append(s_sf)
            per["G"].append(s_sf - s_sl)
            per["gn"].append((s_sf - s_sl) / (n * r_max - s_sl))
            if "s_ext" in spec:
                per["rn"].append((s_sf - spec["s_ext"]) / (n * r_max - spec["s_ext"]))
            # B: first instance of each stage (a stage is a contiguous run of one label).
            b_idx = [t for t in range(n) if t == 0 or seq[t]["stage"] != seq[t - 1]["stage"]]
            w_idx = [t for t in range(n) if t not in b_idx]
            d = r_max - s_sl / n
            parts = []
            for idx in (b_idx, w_idx):
                if not idx:
                    parts.append(0.0)
                    continue
                sf_bar = sum(seq[t]["reward"] for t in idx) / len(idx)
                sl_bar = sum(stateless[seq[t]["instance_id"]] for t in idx) / len(idx)
                parts.append(len(idx) / n * (sf_bar - sl_bar) / d)
            per["stab"].append(parts[0])
            per["plas"].append(parts[1])
            if all("cost" in r for r in seq):
                per["cost"].append(sum(r["cost"] for r in seq))
        entry: dict[str, Any] = {"n_instances": n, "rollouts": len(runs),
                                 "reward": _mean_se(per["S"]), "stateless_reward": s_sl,
                                 "gain": _mean_se(per["G"]),
                                 "normalized_gain": _mean_se(per["gn"])}
        if "s_ext" in spec:
            entry["normalized_reward"] = _mean_se(per["rn"])
        entry["stability"] = _mean_se(per["stab"])
        entry["plasticity"] = _mean_se(per["plas"])
        if len(per["cost"]) == len(runs):
            entry["cost"] = _mean_se(per["cost"])
        out[name] = entry
    k = len(out)

    def agg(key: str) -> dict[str, float | None]:
        ses = [t[key]["se"] for t in out.values()]
        ci = None if None in ses else 1.96 * math.sqrt(sum(s * s for s in ses)) / k
        return {"mean": sum(t[key]["mean"] for t in out.values()) / k, "ci95": ci}

    aggregate: dict[str, Any] = {"normalized_gain": agg("normalized_gain")}
    if all("normalized_reward" in t for t in out.values()):
        aggregate["normalized_reward"] = agg("normalized_reward")
    aggregate["stability"] = sum(t["stability"]["mean"] for t in out.values()) / k
    aggregate["plasticity"] = sum(t["plasticity"]["mean"] for t in out.values()) / k
    if all("cost" in t for t in out.values()):
        aggregate["cost"] = sum(t["cost"]["mean"] for t in out.values())
    return {"tasks": out, "aggregate": aggregate}


# ---------------------------------------------------------------- random record sets


def random_records(rng: random.Random, *, with_ext: bool,
                   with_cost: bool) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for k in range(rng.randint(1, 4)):
        name = f"task{k}"
        n = rng.randint(1, 14)
        # Stage labels: contiguous runs whose labels may recur (0, 1, 0, ...).
        labels: list[int] = []
        label = 0
        while len(labels) < n:
            labels += [label] * rng.randint(1, 5)
            label = rng.choice([0, 1, 2]) if rng.random() < 0.5 else label + 1
        labels = labels[:n]
        ids = [f"{name}-x{rng.randrange(10**6)}-{i}" for i in range(n)]
        r_max = rng.choice([1.0, 0.162202, 9.4875, rng.uniform(0.5, 20)])
        stateless = [rng.uniform(-r_max, r_max) for _ in range(n)]
        spec: dict[str, Any] = {"kind": "task", "task": name, "r_max": r_max, "n_instances": n}
        if with_ext:
            spec["s_ext"] = rng.uniform(-n * r_max, 0.9 * n * r_max)
        rows.append(spec)
        for i in range(n):
            rows.append({"kind": "instance", "task": name, "arm": "stateless", "rollout": 0,
                         "pos": i + 1, "instance_id": ids[i], "stage": labels[i],
                         "reward": stateless[i]})
        for rollout in range(rng.randint(1, 5)):
            # Permute within each contiguous stage (as the runner does for rollouts > 0).
            order: list[int] = []
            start = 0
            for t in range(1, n + 1):
                if t == n or labels[t] != labels[t - 1]:
                    block = list(range(start, t))
                    if rollout:
                        rng.shuffle(block)
                    order += block
                    start = t
            # At most r_max each, so that no rollout, nor what is left of one, averages above
            # the ceiling (score refuses that: docs/clbench.md §3.1).
            for pos, i in enumerate(order, start=1):
                row = {"kind": "instance", "task": name, "arm": "stateful", "rollout": rollout,
                       "pos": pos, "instance_id": ids[i], "stage": labels[i],
                       "reward": rng.uniform(-r_max, r_max), "steps": rng.randint(1, 9)}
                if with_cost:
                    row["cost"] = rng.uniform(0, 2)
                rows.append(row)
    rng.shuffle(rows)
    return rows


def assert_close(got: Any, want: Any, path: str = "") -> None:
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), (path, got, want)
        for key in want:
            assert_close(got[key], want[key], f"{path}.{key}")
    elif want is None or isinstance(want, int) and not isinstance(want, float):
        assert got == want, (path, got, want)
    else:
        assert got == pytest.approx(want, rel=1e-9, abs=1e-9), (path, got, want)


@pytest.mark.parametrize("seed", range(40))
def test_matches_the_reference_on_random_records(seed: int) -> None:
    rng = random.Random(seed)
    rows = random_records(rng, with_ext=seed % 3 != 0, with_cost=seed % 2 == 0)
    assert_close(score_clbench(rows), reference_score(rows))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans(), st.booleans())
def test_matches_the_reference_hypothesis(seed: int, with_ext: bool, with_cost: bool) -> None:
    rows = random_records(random.Random(seed), with_ext=with_ext, with_cost=with_cost)
    got = score_clbench(rows)
    assert_close(got, reference_score(rows))
    # App. C identity, after averaging over rollouts and over tasks (it is linear).
    for t in got["tasks"].values():
        assert t["stability"]["mean"] + t["plasticity"]["mean"] == pytest.approx(
            t["normalized_gain"]["mean"], rel=1e-9, abs=1e-9)
    agg = got["aggregate"]
    assert agg["stability"] + agg["plasticity"] == pytest.approx(
        agg["normalized_gain"]["mean"], rel=1e-9, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_allow_missing_equals_scoring_what_is_left(seed: int) -> None:
    rng = random.Random(seed)
    rows = random_records(rng, with_ext=False, with_cost=True)
    instance_rows = [r for r in rows if r["kind"] == "instance"]
    victim = rng.choice(instance_rows)
    holed = [r for r in rows if r is not victim]
    # Dropping one record drops that instance from both arms of its task.
    gone = (victim["task"], victim["instance_id"])
    kept = [dict(r) for r in rows if (r.get("task"), r.get("instance_id")) != gone]
    for r in kept:
        if r["kind"] == "task" and r["task"] == gone[0]:
            r["n_instances"] -= 1
    if all(r["kind"] == "task" or r["task"] != gone[0] for r in kept):
        return  # the task's only instance: nothing left to score
    # Positions close up around the instance left out (order is what matters).
    slots: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in kept:
        if r["kind"] == "instance":
            slots.setdefault((r["task"], r["arm"], r["rollout"]), []).append(r)
    for group in slots.values():
        for pos, r in enumerate(sorted(group, key=lambda r: r["pos"]), start=1):
            r["pos"] = pos
    assert_close(score_clbench(holed, allow_missing=True), reference_score(kept))
