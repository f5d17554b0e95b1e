"""Runs of one protocol as a report section reads them: the summary dict of each run, checked
field by field (errors name the run and field), with the label it is shown under.

A run that is not complete is labelled with the coverage its metrics were computed on (the
summary's ``coverage``: ``scored`` of ``total`` ``unit``, e.g. questions answered at every
interval, or tasks of the stream's completed prefix), so no number is shown without it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from clstream.render.base import Fields, run_fields
from clstream.render.common import is_complete


@dataclass
class RunView:
    label: str
    raw: dict[str, Any]
    f: Fields
    metrics: dict[str, Any] | None
    complete: bool

    def num(self, path: str) -> float | None:
        return self.f.number(self.raw, path)


def read_runs(source: object, runs: list[dict[str, Any]], labels: list[str]) -> list[RunView]:
    """One view per run; ``metrics`` must be an object or null."""
    out = []
    for index, (raw, label) in enumerate(zip(runs, labels, strict=True)):
        f = run_fields(source, index, raw)
        metrics = f.get(raw, "metrics")
        if metrics is not None and not isinstance(metrics, dict):
            raise f.error("metrics", f"expected an object or null, got {type(metrics).__name__}")
        out.append(RunView(label, raw, f, metrics, is_complete(f, raw)))
    return out


def _percent(share: float) -> str:
    """A share as a whole percentage, rounded down (an incomplete run never shows 100%)."""
    if 0.0 < share < 0.01:
        return "<1%"
    return f"{math.floor(share * 100 + 1e-9)}%"


def _coverage(raw: dict[str, Any]) -> tuple[int, int, float, str] | None:
    """(scored, total, share, unit) from a summary's ``coverage``, when it has a usable one."""
    cov = raw.get("coverage")
    if not isinstance(cov, dict):
        return None
    scored, total, unit = cov.get("scored"), cov.get("total"), cov.get("unit")
    if not (isinstance(scored, int) and isinstance(total, int) and isinstance(unit, str)):
        return None
    share = cov.get("share")
    if not isinstance(share, int | float):
        share = scored / total if total else 0.0
    return scored, total, float(share), unit


def incomplete_label(raw: dict[str, Any]) -> str:
    """``incomplete: 36% of questions`` (or ``incomplete`` without a coverage)."""
    cov = _coverage(raw)
    if cov is None:
        return "incomplete"
    if cov[0] >= cov[1]:  # every unit scored, some of their records not
        return "incomplete: records missing"
    return f"incomplete: {_percent(cov[2])} of {cov[3]}"


def coverage_note(raw: dict[str, Any]) -> str | None:
    """One line on what an incomplete run's metrics are computed over (None when complete)."""
    status = raw.get("status")
    if raw.get("metrics") is not None and isinstance(status, dict) and status.get("complete"):
        return None
    cov = _coverage(raw)
    if cov is None:
        return None
    scored, total, share, unit = cov
    if raw.get("metrics") is None or not scored:
        return f"incomplete: no complete {unit} yet, metrics withheld"
    if scored >= total:
        return (f"incomplete: metrics over all {total} {unit}; some of their records failed or "
                "are missing and are left out")
    return f"incomplete: metrics over {scored} of {total} {unit} ({_percent(share)})"


def scored_runs(runs: list[RunView]) -> list[RunView]:
    """The runs with metrics; an incomplete one is labelled with its coverage
    (``(incomplete: 36% of questions)``): its numbers cover only that part."""
    scored = [r for r in runs if r.metrics is not None]
    for r in scored:
        if not r.complete:
            r.label += f" ({incomplete_label(r.raw)})"
    return scored
