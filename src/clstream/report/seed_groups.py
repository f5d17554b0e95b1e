"""Runs that differ only in their seed, grouped, and each headline metric over the seeds
(docs/statistics.md §1; docs/summary-json.md, "Seeds").

Built from a summary's runs, like the cross-protocol view, whose headline metrics it reads
(:func:`clstream.report.cross_protocol.headlines`). Two runs are seeds of one group when
their specs are equal once the seed (the run's and the sampling's) and the dataset hash are
set aside: a dataset made from the seed (a matrix run's data, CL-Bench's environments)
changes with it. A group in which one seed appears twice mixes datasets, so it is split by
dataset hash. Only groups of two or more seeds are listed.
"""

from __future__ import annotations

import json
from typing import Any

from clstream.metrics.seeds import seed_statistics
from clstream.report.cross_protocol import headlines, run_seed, run_spec

CONFIDENCE = 0.95


def _key(run: dict[str, Any]) -> str:
    spec = dict(run_spec(run))
    for field in ("seed", "dataset_hash"):
        spec.pop(field, None)
    sampling = spec.get("sampling")
    if isinstance(sampling, dict):
        spec["sampling"] = {k: v for k, v in sampling.items() if k != "seed"}
    return json.dumps([run.get("protocol"), run.get("model"), spec], sort_keys=True)


def _groups(runs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        found.setdefault(_key(run), []).append(run)
    out = []
    for members in found.values():
        seeds = [run_seed(r) for r in members]
        if len(set(seeds)) < len(seeds):  # a seed twice: several datasets, split by them
            by_data: dict[str, list[dict[str, Any]]] = {}
            for run in members:
                by_data.setdefault(str(run_spec(run).get("dataset_hash")), []).append(run)
            out += list(by_data.values())
        else:
            out.append(members)
    return out


def seed_groups(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"confidence", "groups"}``: each group of runs that differ only in seed (two or more
    seeds; broken runs left out), with each headline metric's mean, sd and t-interval."""
    usable = [r for r in runs if "broken" not in r and run_seed(r) is not None and headlines(r)]
    groups = []
    for members in _groups(usable):
        # One run per seed (the latest, should a seed repeat within one dataset).
        by_seed = {run_seed(r): r for r in members}
        if len(by_seed) < 2:
            continue
        ordered = [by_seed[s] for s in sorted(by_seed, key=lambda s: s or 0)]
        metrics: dict[str, Any] = {}
        for run in ordered:
            for head in headlines(run):
                entry = metrics.setdefault(head.key, {"label": head.label,
                                                      "better": head.better, "values": []})
                if head.value is not None:
                    entry["values"].append(head.value)
        out = {}
        for key, entry in metrics.items():
            stats = (seed_statistics(entry["values"], CONFIDENCE).as_json() if entry["values"]
                     else {"n": 0, "mean": None, "sd": None, "interval": None})
            out[key] = {"label": entry["label"], "better": entry["better"], **stats}
        first = ordered[0]
        groups.append({
            "protocol": first.get("protocol"), "system": first.get("system"),
            "model": first.get("model"), "seeds": [run_seed(r) for r in ordered],
            "run_ids": [r.get("run_id") for r in ordered],
            "datasets": list(dict.fromkeys(str(run_spec(r).get("dataset_hash"))
                                           for r in ordered)),
            "metrics": out})
    return {"confidence": CONFIDENCE, "groups": groups}


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def text_lines(view: dict[str, Any]) -> list[str]:
    """The groups as text: per group and metric, mean ± sd [t-interval] over n seeds."""
    lines = [f"Over seeds: mean ± sd [{view['confidence']:.0%} t-interval] (n seeds)"]
    # the metric column as wide as its longest label, so no number runs into a label
    width = max([len(m["label"]) for g in view["groups"] for m in g["metrics"].values()],
                default=0) + 2
    for group in view["groups"]:
        seeds = ",".join(str(s) for s in group["seeds"])
        lines.append(f"{group['protocol']} {group['system']} · {group['model']} "
                     f"(seeds {seeds})")
        for metric in group["metrics"].values():
            interval = metric["interval"]
            spread = f" ± {_num(metric['sd'])}" if metric["sd"] is not None else ""
            bracket = (f" [{_num(interval[0])}, {_num(interval[1])}]"
                       if interval is not None else "")
            lines.append(f"  {metric['label']:<{width}}{_num(metric['mean'])}{spread}{bracket} "
                         f"(n={metric['n']})")
    return lines
