"""The series the viewer's figures draw, taken from the summary as they are
(docs/viewer.md §2.6), so a figure shows the numbers the report shows.

Two kinds: ``bars``, one per column of the cross-protocol table (each method's headline value
with its interval, :func:`clstream.report.cross_protocol.cross_protocol`), and ``lines``, one
per curve the protocols' summaries hold: OAKS accuracy at each interval
(``metrics.accuracy_by_interval``), SeqMem online accuracy over the stream (``online_curve``)
and hold-out accuracy at each checkpoint (``holdout_curve``); runs of one protocol and dataset
share a figure, one series each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Point = dict[str, Any]


def _numbers(values: Any) -> list[Point] | None:
    if not isinstance(values, list) or not values:
        return None
    if not all(v is None or (isinstance(v, int | float) and not isinstance(v, bool))
               for v in values):
        return None
    return [{"x": i, "y": v} for i, v in enumerate(values, 1)]


def _oaks_intervals(run: dict[str, Any]) -> list[Point] | None:
    return _numbers((run.get("metrics") or {}).get("accuracy_by_interval"))


def _seqmem_online(run: dict[str, Any]) -> list[Point] | None:
    return _numbers(run.get("online_curve"))


def _seqmem_holdout(run: dict[str, Any]) -> list[Point] | None:
    curve = run.get("holdout_curve")
    if not isinstance(curve, list) or not curve:
        return None
    return [{"x": p.get("checkpoint"), "y": p.get("accuracy"), "n": p.get("items")}
            for p in curve if isinstance(p, dict)]


Curve = tuple[str, str, str, str, Callable[[dict[str, Any]], list[Point] | None]]
CURVES: tuple[Curve, ...] = (
    ("oaks", "accuracy_by_interval", "OAKS accuracy by interval", "interval", _oaks_intervals),
    ("seqmem", "online_curve", "SeqMem online accuracy over the stream", "task",
     _seqmem_online),
    ("seqmem", "holdout_curve", "SeqMem hold-out accuracy at each checkpoint", "checkpoint",
     _seqmem_holdout),
)
"""(protocol, name, title, x label, reader of a run's points)."""


def _dataset(run: dict[str, Any]) -> str:
    spec = (run.get("meta") or {}).get("spec") or {}
    return str(spec.get("dataset_hash") or "")


def _label(run: dict[str, Any]) -> str:
    seed = (run.get("meta") or {}).get("seed")
    return f"{run.get('system')} \u00b7 {run.get('model')}" + (
        f" \u00b7 seed {seed}" if seed is not None else "")


def figures(runs: list[dict[str, Any]], view: dict[str, Any]) -> list[dict[str, Any]]:
    """Every figure over the summary's ``runs`` (each with its ``ref``) and their
    cross-protocol ``view``."""
    from clstream.report.cross_protocol import seeds_differ, seeds_text

    out: list[dict[str, Any]] = []
    with_seed = seeds_differ(view)  # a method's seeds are bars of their own, named apart
    for column in view["columns"]:
        series = []
        for method in view["methods"]:
            cell = method["cells"].get(column["key"])
            if cell is None or cell["value"] is None:
                continue
            low, high = cell["interval"] if cell["interval"] is not None else (None, None)
            label = method["label"] + (f" \u00b7 seed {seeds_text(method)}"
                                       if with_seed and method["seeds"] else "")
            series.append({"label": label, "run_id": cell["run_id"],
                           "points": [{"x": column["label"], "y": cell["value"],
                                       "low": low, "high": high, "rank": cell["rank"]}]})
        if series:
            out.append({"id": f"bars:{column['key']}", "kind": "bars",
                        "protocol": column["protocol"],
                        "title": f"{column['protocol']}: {column['label']}"
                                 + (f" ({column['dataset']})" if column["dataset"] else ""),
                        "x_label": "method", "y_label": column["label"],
                        "better": column["better"], "interval": column["interval"],
                        "series": series})
    for protocol, name, title, x_label, read in CURVES:
        by_dataset: dict[str, list[dict[str, Any]]] = {}
        for run in runs:
            if run.get("protocol") != protocol or "broken" in run:
                continue
            points = read(run)
            if points:
                by_dataset.setdefault(_dataset(run), []).append(
                    {"label": _label(run), "ref": run.get("ref"), "points": points})
        for sha, series in by_dataset.items():
            out.append({"id": f"lines:{protocol}:{name}:{sha[:8]}", "kind": "lines",
                        "protocol": protocol, "title": f"{title} (dataset {sha[:8]})",
                        "x_label": x_label, "y_label": "accuracy", "series": series})
    return out
