"""The section for a protocol that has no dedicated renderer: its runs and scalar metrics.

A report must never fail because a protocol's section is not written yet; this one shows each
run's status, effort and every top-level numeric metric it stored, as plain numbers.
"""

from __future__ import annotations

from typing import Any

from clstream.render.base import Cell, Column, Fields, Section, Table, run_fields
from clstream.render.common import (
    UsageColumns,
    details_table,
    seed_cell,
    seed_column,
    status_cells,
    status_columns,
    system_cell,
)
from clstream.render.fmt import MISSING, fmt_int, fmt_rate


def _scalar_keys(runs: list[dict[str, Any]]) -> list[str]:
    keys: set[str] = set()
    for raw in runs:
        metrics = raw.get("metrics")
        if isinstance(metrics, dict):
            keys.update(
                k
                for k, v in metrics.items()
                if isinstance(v, int | float) and not isinstance(v, bool)
            )
    return sorted(keys)


def _score(f: Fields, raw: dict[str, Any], metrics: dict[str, Any], key: str) -> str:
    if key not in metrics:
        return MISSING
    if isinstance(metrics[key], int) and not isinstance(metrics[key], bool):
        return fmt_int(metrics[key])
    return fmt_rate(f.number(metrics, key), f.interval(raw, f"ci.{key}"))


def render_generic_section(
    runs: list[dict[str, Any]], labels: list[str], source: object, protocol: str
) -> Section:
    """Runs of ``protocol`` as one table: status, scalar metrics (with CIs), tokens, time."""
    fields = [run_fields(source, i, raw) for i, raw in enumerate(runs)]
    keys = _scalar_keys(runs)
    usage = UsageColumns(list(zip(fields, runs, strict=True)))
    columns = (
        Column("System"),
        Column("Model"),
        seed_column(),
        *(Column(k.replace("_", " "), True) for k in keys),
        *status_columns(),
        *usage.columns,
    )
    rows = []
    for f, raw, label in zip(fields, runs, labels, strict=True):
        metrics = f.mapping(raw, "metrics")
        scores = [Cell(_score(f, raw, metrics, k), True) for k in keys]
        rows.append(
            (
                system_cell(f, raw, label),
                Cell(f.text(raw, "model", MISSING)),
                seed_cell(f, raw),
                *scores,
                *status_cells(f, raw),
                *usage.cells(f, raw),
            )
        )
    table = Table("Scores per system", columns, rows)
    note = (
        f"This report has no dedicated view for the \u201c{protocol}\u201d protocol; the "
        "table lists the scalar metrics each run stored."
    )
    return Section(
        protocol,
        protocol,
        notes=[note],
        tables=[table],
        details=[details_table(list(zip(fields, runs, labels, strict=True)))],
    )


def render_broken_section(runs: list[dict[str, Any]], source: object) -> Section:
    """The runs whose records could not be summarized (``broken`` in the summary), each with
    its reason, so that one damaged run is shown as such and never hides the others."""
    fields = [run_fields(source, i, raw) for i, raw in enumerate(runs)]
    columns = (Column("Protocol"), Column("System"), Column("Model"), Column("Run id"),
               Column("Why it could not be summarized"))
    rows: list[tuple[Cell, ...]] = [
        (Cell(f.text(raw, "protocol", MISSING)), Cell(f.text(raw, "system", MISSING)),
         Cell(f.text(raw, "model", MISSING)), Cell(f.text(raw, "run_id", MISSING)),
         Cell(f.text(raw, "broken", MISSING))) for f, raw in zip(fields, runs, strict=True)]
    return Section("broken", "Runs that could not be summarized",
                   notes=["Their records could not be read into a summary; every other run "
                          "is shown as usual. `clstream runs DIR` lists them and `clstream runs "
                          "rm DIR RUN_ID` removes one."],
                   tables=[Table("Runs that could not be summarized", columns, rows)])
