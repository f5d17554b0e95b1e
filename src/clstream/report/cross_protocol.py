"""The cross-protocol view: one row per method, each protocol's headline metrics as columns
(docs/summary-json.md, "Cross-protocol view").

Built from the runs of a summary (``clstream summary --json``), never from records, so the
JSON, the text, the CSV and the HTML report show the same numbers. The rules:

* a method is a system spec (its canonical name and arguments) with a model, and with the
  run's seed when a method has runs of one protocol and dataset under several seeds: two runs
  that differ only in their seed are then two rows, side by side, never one hiding the other;
  a seed column (the seeds of each row's runs) is shown wherever the runs name several seeds;
  its label is the system's label, with `` · MODEL`` when the runs use several models;
* each protocol names its headline metrics, their direction and their interval
  (``headline_metrics`` of the protocol, :class:`~clstream.core.protocol.HeadlineMetric`);
* a cell is one run: runs of one method on one protocol are the same cell only when their
  dataset (hash) is the same. A protocol whose runs read several datasets gets one group of
  columns per dataset, named in the column and in a note; runs of one cell that differ in
  something else (sampling, protocol settings) show the latest, and a note names them;
* a rank per column over the methods that have a number, 1 = best in the column's direction,
  equal numbers sharing the best rank of the tie (1, 1, 3); a method without the run is
  "not run" (``null``);
* the cost of a method sums its shown runs: tokens (prompt and completion, training aside),
  training tokens and seconds where a run trained, wall seconds, dollars when every run is
  priced.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import PurePath
from typing import Any

from clstream.core.protocol import HeadlineMetric
from clstream.core.registry import names, resolve

NOT_RUN = "not run"
TIE_DIGITS = 9
"""Numbers equal to this many decimals share a rank."""


def headlines(run: dict[str, Any]) -> list[HeadlineMetric]:
    """The run's headline metrics, as its protocol names them (none for an unknown one)."""
    if run.get("protocol") not in names("protocol"):
        return []
    metrics = getattr(resolve("protocol", run["protocol"]), "headline_metrics", None)
    return list(metrics(run)) if metrics is not None else []


def run_spec(run: dict[str, Any]) -> dict[str, Any]:
    """The run's stored spec (empty when the summary holds none)."""
    spec = (run.get("meta") or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def run_seed(run: dict[str, Any]) -> int | None:
    """The seed the run's spec names (None where it names none)."""
    seed = (run.get("meta") or {}).get("seed", run_spec(run).get("seed"))
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else None


def seeds_differ(view: dict[str, Any]) -> bool:
    """Whether the view's runs name several seeds, so that its tables show a seed column."""
    return len({seed for method in view["methods"] for seed in method["seeds"]}) > 1


def seeds_text(method: dict[str, Any]) -> str:
    """A method's seeds as its seed column shows them: ``0``, ``0,3``; ``-`` for none."""
    return ",".join(map(str, method["seeds"])) or "-"


def _system_model(run: dict[str, Any]) -> list[Any]:
    """What makes a method, seeds aside: the system spec (or label) and the model."""
    return [run_spec(run).get("system") or {"label": run.get("system")}, run.get("model")]


def _dataset(run: dict[str, Any]) -> tuple[str, str]:
    """The run's dataset hash and a name for it (file name or setting, and 8 hex digits)."""
    found = run.get("dataset")
    data: dict[str, Any] = found if isinstance(found, dict) else {}
    sha = str(run_spec(run).get("dataset_hash") or data.get("sha256") or "")
    name = data.get("path") or data.get("setting")
    if isinstance(name, str) and "/" in name and not name.startswith("clbench:"):
        name = PurePath(name).name
    return sha, f"{name} (dataset {sha[:8]})" if name else f"dataset {sha[:8]}"


def _rank(values: dict[str, float | None], better: str) -> dict[str, int]:
    """Competition ranks (1, 1, 3): 1 is the best in direction ``better``."""
    found = {k: round(v, TIE_DIGITS) for k, v in values.items() if v is not None}
    ordered = sorted(found.values(), reverse=better == "higher")
    return {k: ordered.index(v) + 1 for k, v in found.items()}


def _cost(runs: list[dict[str, Any]]) -> dict[str, Any]:
    trained = [r["training"] for r in runs if isinstance(r.get("training"), dict)]
    prices = [r.get("cost_usd") for r in runs]
    tokens = sum(int((r.get("tokens") or {}).get("prompt", 0))
                 + int((r.get("tokens") or {}).get("completion", 0)) for r in runs)
    return {
        "runs": len(runs), "tokens": tokens,
        "training_tokens": sum(int(t["tokens"]) for t in trained) if trained else None,
        "training_s": round(sum(float(t["seconds"]) for t in trained), 3) if trained else None,
        "wall_s": round(sum(float(r.get("wall_s") or 0.0) for r in runs), 3),
        "cost_usd": (sum(float(p) for p in prices if p is not None)
                     if runs and all(isinstance(p, int | float) for p in prices) else None),
    }


def cross_protocol(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The view over ``runs`` (a summary's runs, oldest first; broken runs are left out)."""
    usable = [(run, headlines(run)) for run in runs if "broken" not in run]
    usable = [(run, heads) for run, heads in usable if heads]
    models = {str(run.get("model")) for run, _ in usable}
    cell_seeds: dict[str, set[int | None]] = {}
    for run, _ in usable:
        cell = json.dumps([_system_model(run), run["protocol"], _dataset(run)[0]],
                          sort_keys=True)
        cell_seeds.setdefault(cell, set()).add(run_seed(run))
    by_seed = any(len(seeds) > 1 for seeds in cell_seeds.values())
    known = names("protocol")
    groups: dict[tuple[str, str], str] = {}  # (protocol, dataset sha) -> dataset name
    for run, _ in usable:
        sha, name = _dataset(run)
        groups.setdefault((run["protocol"], sha), name)
    several = {p for p, _ in groups if sum(1 for q, _ in groups if q == p) > 1}
    order = sorted(groups, key=lambda g: (known.index(g[0]) if g[0] in known else len(known),
                                          g[0], groups[g]))
    columns: dict[str, dict[str, Any]] = {}
    methods: dict[str, dict[str, Any]] = {}
    cell_runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for group in order:
        protocol, sha = group
        prefix = f"{protocol}@{sha[:8]}" if protocol in several else protocol
        for run, heads in usable:
            if (run["protocol"], _dataset(run)[0]) != group:
                continue
            key = json.dumps([_system_model(run), run_seed(run) if by_seed else None],
                             sort_keys=True)
            label = str(run.get("system")) + (f" \u00b7 {run.get('model')}"
                                              if len(models) > 1 else "")
            method = methods.setdefault(key, {"label": label, "system": run.get("system"),
                                              "model": run.get("model"), "seeds": [],
                                              "cells": {}})
            cell_runs.setdefault((key, prefix), []).append(run)
            for head in heads:
                column = f"{prefix}.{head.key}"
                columns.setdefault(column, {
                    "key": column, "protocol": protocol, "metric": head.key,
                    "label": head.label, "better": head.better,
                    "dataset": groups[group] if protocol in several else None,
                    "dataset_sha256": sha, "interval": head.interval_kind or None})
                method["cells"][column] = {
                    "value": head.value,
                    "interval": list(head.interval) if head.interval is not None else None,
                    "rank": None, "run_id": run.get("run_id")}
    notes = [f"{p} runs read {sum(1 for q, _ in groups if q == p)} datasets: one group of "
             "columns per dataset (" + "; ".join(f"{p}@{s[:8]} = {groups[(q, s)]}"
                                                 for q, s in order if q == p) + ")"
             for p in sorted(several, key=lambda p: (known.index(p) if p in known else 0, p))]
    for (key, prefix), found in cell_runs.items():
        if len(found) > 1:
            others = ", ".join(str(r.get("run_id")) for r in found[:-1])
            seed = run_seed(found[-1]) if by_seed else None
            notes.append(f"{methods[key]['label']}"
                         + (f" (seed {seed})" if seed is not None else "")
                         + f" on {prefix}: {len(found)} runs of the same dataset "
                         + ("and seed (other settings)" if by_seed else
                            "(other settings)") + "; shown: the latest, "
                         f"{found[-1].get('run_id')} (also {others})")
    for described in columns.values():
        ranks = _rank({k: (m["cells"].get(described["key"]) or {}).get("value")
                       for k, m in methods.items()}, described["better"])
        for k, rank in ranks.items():
            methods[k]["cells"][described["key"]]["rank"] = rank
    for key, method in methods.items():
        method["cells"] = {c: method["cells"].get(c) for c in columns}
        shown = [found[-1] for (k, _), found in cell_runs.items() if k == key]
        method["cost"] = _cost(shown)
        method["seeds"] = sorted({s for s in map(run_seed, shown) if s is not None})
    # A method's seeds side by side, in the order the method first appears.
    first = list(dict.fromkeys(json.dumps(json.loads(k)[0]) for k in methods))
    rows = sorted(methods.items(), key=lambda item: (
        first.index(json.dumps(json.loads(item[0])[0])),
        item[1]["seeds"]))
    return {"protocols": list(dict.fromkeys(p for p, _ in order)),
            "columns": list(columns.values()), "methods": [m for _, m in rows],
            "notes": notes}


# -- text and CSV -------------------------------------------------------------------------------
def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def cell_text(cell: dict[str, Any] | None, with_interval: bool = True) -> str:
    """``0.887 [0.812, 0.950] #1``; ``not run``; ``- `` for a run without the number."""
    if cell is None:
        return NOT_RUN
    text = _num(cell["value"])
    if with_interval and cell["interval"] is not None:
        text += f" [{_num(cell['interval'][0])}, {_num(cell['interval'][1])}]"
    return text + (f" #{cell['rank']}" if cell["rank"] is not None else "")


def text_lines(view: dict[str, Any]) -> list[str]:
    """The view as text: one block of columns per protocol (and dataset), then the cost."""
    methods = view["methods"]
    width = max([len("method")] + [len(m["label"]) for m in methods]) + 2
    with_seed = seeds_differ(view)
    seeds = [seeds_text(m) for m in methods]
    seed_width = max([len("seed")] + [len(s) for s in seeds]) + 2 if with_seed else 0

    def lead(label: str, seed: str) -> str:
        """The method's label, then its seeds where the runs name several."""
        return f"{label:<{width}}" + (f"{seed:>{seed_width}}" if with_seed else "")

    lower = list(dict.fromkeys(c["label"] for c in view["columns"] if c["better"] == "lower"))
    lines = ["Across protocols: value [interval] #rank (1 = best); higher is better"
             + (f" except {', '.join(lower)} (lower is better)" if lower else "")]
    blocks: dict[str, list[dict[str, Any]]] = {}
    for column in view["columns"]:
        blocks.setdefault(column["key"].rsplit(".", 1)[0], []).append(column)
    for prefix, columns in blocks.items():
        texts = [[cell_text(m["cells"][c["key"]]) for c in columns] for m in methods]
        widths = [max(len(c["label"]), *(len(t[i]) for t in texts)) + 2
                  for i, c in enumerate(columns)]
        lines.append("")
        lines.append(lead("method", "seed") + "".join(
            f"{c['label']:>{w}}" for c, w in zip(columns, widths, strict=True))
            + (f"  ({prefix})" if "@" in prefix else ""))
        for method, seed, row in zip(methods, seeds, texts, strict=True):
            lines.append(lead(method["label"], seed)
                         + "".join(f"{t:>{w}}" for t, w in zip(row, widths, strict=True)))
    lines.append("")
    lines.append(lead("method", "seed") + f"{'runs':>6}{'tokens':>14}{'train tok':>12}"
                 f"{'train s':>9}{'wall s':>9}")
    for method, seed in zip(methods, seeds, strict=True):
        cost = method["cost"]
        lines.append(
            lead(method["label"], seed) + f"{cost['runs']:>6}{cost['tokens']:>14,}"
            f"{'-' if cost['training_tokens'] is None else format(cost['training_tokens'], ','):>12}"
            f"{'-' if cost['training_s'] is None else format(cost['training_s'], '.1f'):>9}"
            f"{cost['wall_s']:>9.1f}")
    return lines + [f"note: {note}" for note in view["notes"]]


COST_FIELDS = ("runs", "tokens", "training_tokens", "training_s", "wall_s", "cost_usd")


def csv_text(view: dict[str, Any]) -> str:
    """The view as CSV: the method and its seed, per metric column its value, interval ends
    and rank (``not run`` in the value where the method has no run), then the cost."""
    header = ["method", "system", "model", "seeds"]
    for column in view["columns"]:
        key = column["key"]
        header += [key, f"{key}.low", f"{key}.high", f"{key}.rank"]
    header += [f"cost.{name}" for name in COST_FIELDS]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)

    def show(value: Any) -> str:
        return "" if value is None else repr(value) if isinstance(value, float) else str(value)

    for method in view["methods"]:
        row = [method["label"], method["system"], method["model"],
               ",".join(map(str, method["seeds"]))]
        for column in view["columns"]:
            cell = method["cells"][column["key"]]
            if cell is None:
                row += [NOT_RUN, "", "", ""]
                continue
            low, high = cell["interval"] if cell["interval"] is not None else (None, None)
            row += [show(cell["value"]), show(low), show(high), show(cell["rank"])]
        row += [show(method["cost"][name]) for name in COST_FIELDS]
        writer.writerow(row)
    return out.getvalue()
