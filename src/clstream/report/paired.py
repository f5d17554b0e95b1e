"""Paired differences between systems run on the same items (docs/statistics.md §2;
docs/summary-json.md, "Paired differences").

Two runs are compared when their specs are equal but for the system: same protocol, dataset,
model, sampling, seed and protocol settings, so they answered the same items. For each
headline metric that is a mean over items, the protocol gives each run's per-item scores
(``item_scores`` of the protocol); the items both runs scored are compared with
:func:`clstream.metrics.paired.paired_difference` (A minus B, A the system run first). Only
runs that have such a partner are read again, so a directory of one system costs nothing.

Every pair of a group is compared, so a group of k systems makes k(k-1)/2 tests per metric;
each pair's ``p_holm`` is its p-value adjusted by Holm's method
(:func:`clstream.metrics.paired.holm_adjusted`) over that family: the pairs of one group on
one metric. ``p_value`` stays the unadjusted p of the one test. The text and the report show
the adjusted value.
"""

from __future__ import annotations

import json
from itertools import combinations
from typing import Any

from clstream.core.reader import ResultsReader
from clstream.core.registry import names, resolve
from clstream.metrics.paired import (
    BOOTSTRAP_RESAMPLES,
    EXACT_ITEMS,
    PERMUTATIONS,
    holm_adjusted,
    paired_difference,
)
from clstream.report.cross_protocol import headlines, run_spec

CONFIDENCE = 0.95
ADJUSTMENT = ("Holm over the pairs of one metric among runs that differ only in the system "
              "(same protocol, dataset, model, seed and settings)")


def _key(run: dict[str, Any]) -> str:
    spec = {k: v for k, v in run_spec(run).items() if k != "system"}
    return json.dumps([run.get("protocol"), run.get("model"), spec], sort_keys=True)


def _scores(store: ResultsReader, run: dict[str, Any]) -> dict[str, dict[str, float]]:
    protocol = resolve("protocol", run["protocol"])
    reader = getattr(protocol, "item_scores", None)
    if reader is None:
        return {}
    try:
        scores: dict[str, dict[str, float]] = reader(store, store.get_run(run["run_id"]))
    except Exception:  # a run whose records its summary read but whose items cannot be:
        return {}      # it is simply not compared, as a broken run is not
    return scores


def paired_view(store: ResultsReader, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"confidence", "resamples", "permutations", "exact_up_to", "pairs"}`` over the
    summary's ``runs`` (broken runs left out)."""
    known = names("protocol")
    groups: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        if "broken" not in run and run.get("protocol") in known and run_spec(run):
            groups.setdefault(_key(run), []).append(run)
    pairs = []
    for members in groups.values():
        if len(members) < 2:
            continue
        scores = {str(r["run_id"]): _scores(store, r) for r in members}
        described = {h.key: h for h in headlines(members[0])}
        families: dict[str, list[dict[str, Any]]] = {}
        for a, b in combinations(members, 2):
            for metric, a_items in scores[str(a["run_id"])].items():
                b_items = scores[str(b["run_id"])].get(metric, {})
                common = sorted(set(a_items) & set(b_items))
                if not common:
                    continue
                result = paired_difference([a_items[i] for i in common],
                                           [b_items[i] for i in common],
                                           confidence=CONFIDENCE)
                head = described.get(metric)
                pair = {
                    "protocol": a["protocol"], "metric": metric,
                    "label": head.label if head is not None else metric,
                    "better": head.better if head is not None else "higher",
                    "dataset_sha256": run_spec(a).get("dataset_hash"),
                    "seed": run_spec(a).get("seed"), "model": a.get("model"),
                    "a": a.get("system"), "b": b.get("system"),
                    "run_a": a.get("run_id"), "run_b": b.get("run_id"),
                    "items": result.n, "difference": result.mean,
                    "interval": list(result.interval), "p_value": result.p_value,
                    "exact": result.exact}
                families.setdefault(metric, []).append(pair)
                pairs.append(pair)
        for family in families.values():
            for pair, adjusted in zip(family, holm_adjusted([p["p_value"] for p in family]),
                                      strict=True):
                pair["p_holm"] = adjusted
    return {"confidence": CONFIDENCE, "resamples": BOOTSTRAP_RESAMPLES,
            "permutations": PERMUTATIONS, "exact_up_to": EXACT_ITEMS,
            "adjustment": ADJUSTMENT, "pairs": pairs}


def adjusted_p(pair: dict[str, Any]) -> float:
    """The pair's Holm-adjusted p-value (its own p where a summary predates the field)."""
    value = pair.get("p_holm", pair["p_value"])
    return float(value)


def text_lines(view: dict[str, Any]) -> list[str]:
    """The pairs as text: A - B, its interval, the p-value and the items compared."""
    lines = [f"Paired differences A - B on the same items: mean [{view['confidence']:.0%} "
             f"bootstrap interval], sign-flip p-value adjusted for multiple comparisons "
             f"(p_holm: {view.get('adjustment', ADJUSTMENT)}; unadjusted p_value in --json)"]
    for pair in view["pairs"]:
        low, high = pair["interval"]
        p = f"{adjusted_p(pair):.4f}" + ("" if pair["exact"] else " (Monte Carlo)")
        lines.append(f"{pair['protocol']} seed {pair['seed']} {pair['label']}: "
                     f"{pair['a']} - {pair['b']} = {pair['difference']:+.3f} "
                     f"[{low:+.3f}, {high:+.3f}] p_holm={p} ({pair['items']} items)")
    return lines
