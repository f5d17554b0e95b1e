"""The report's cross-protocol section (docs/summary-json.md, "Cross-protocol view"): the
table of :func:`clstream.report.cross_protocol.cross_protocol` as a report
:class:`~clstream.render.base.Section`, shown first when runs of two or more protocols exist.
"""

from __future__ import annotations

from typing import Any

from clstream.render.base import Cell, Column, Section, Table
from clstream.report.cross_protocol import NOT_RUN, seeds_differ, seeds_text


def _num(value: float | None) -> str:
    return "\u2013" if value is None else f"{value:.3f}"


def _cell(cell: dict[str, Any] | None) -> Cell:
    if cell is None:
        return Cell(NOT_RUN, title="this method has no run of this protocol and dataset")
    sub = []
    if cell["interval"] is not None:
        sub.append(f"[{_num(cell['interval'][0])}, {_num(cell['interval'][1])}]")
    if cell["rank"] is not None:
        sub.append(f"#{cell['rank']}")
    return Cell(_num(cell["value"]), numeric=True, sub=" ".join(sub),
                title=f"run {cell['run_id']}")


def render_cross_section(view: dict[str, Any]) -> Section:
    columns = view["columns"]
    header = [Column("Method")]
    with_seed = seeds_differ(view)
    if with_seed:  # runs that differ only in their seed are rows of their own
        header.append(Column("Seed", True, "the seeds the method's runs name"))
    for column in columns:
        arrow = "\u2191" if column["better"] == "higher" else "\u2193"
        where = f" ({column['dataset']})" if column["dataset"] else ""
        title = f"{column['better']} is better" + (
            f"; interval: {column['interval']}" if column["interval"] else "; no interval")
        header.append(Column(f"{column['label']}{where} {arrow}", numeric=True, title=title))
    header += [Column("Tokens", numeric=True, title="prompt and completion tokens summed "
                                                    "over the method's runs shown"),
               Column("Training", numeric=True, title="training tokens and seconds, where "
                                                      "runs trained"),
               Column("Wall s", numeric=True)]
    rows = []
    for method in view["methods"]:
        cost = method["cost"]
        training = ("\u2013" if cost["training_tokens"] is None
                    else f"{cost['training_tokens']:,} tok \u00b7 {cost['training_s']:.1f} s")
        seed = [Cell(seeds_text(method), numeric=True)] if with_seed else []
        rows.append((Cell(method["label"]), *seed, *[_cell(method["cells"][c["key"]]) for c in columns],
                     Cell(f"{cost['tokens']:,}", numeric=True), Cell(training, numeric=True),
                     Cell(f"{cost['wall_s']:.1f}", numeric=True)))
    lower = [c["label"] for c in columns if c["better"] == "lower"]
    intro = [
        "Each method (a system spec and model) across the protocols it ran: each protocol's "
        "headline metrics, the interval the protocol gives in brackets, and the rank in the "
        "column (#1 = best; equal numbers share a rank). \u2191 higher is better, "
        "\u2193 lower is better" + (f" ({', '.join(dict.fromkeys(lower))})" if lower else "")
        + ". \u201cnot run\u201d: the method has no run of that protocol and dataset."]
    return Section("cross-protocol", "Across protocols", intro=intro, notes=list(view["notes"]),
                   tables=[Table("Methods by protocol", tuple(header), rows)])
