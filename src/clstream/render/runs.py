"""Runs of one protocol as a report section reads them: the summary dict of each run, checked
field by field (errors name the run and field), with the label it is shown under."""

from __future__ import annotations

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


def scored_runs(runs: list[RunView]) -> list[RunView]:
    """The runs with metrics, an incomplete one labelled so (its charts show partial work)."""
    scored = [r for r in runs if r.metrics is not None]
    for r in scored:
        if not r.complete:
            r.label += " (incomplete)"
    return scored
