"""The OAKS section of the report: streaming knowledge, one row and one colour per system.

Shows the OAKS score JSON (docs/oaks.md §3.3) of each run: accuracy and the intra-phase decomposition
AL / DS / PM (OAKS paper §6.2 and App. B.2.2; docs/oaks.md §5), the eight transition behaviours
(paper §6.1, App. E.1), accuracy per question type, per change-frequency subset and per
interval (paper §6.3-6.4). An incomplete run is scored over its complete questions only (those
answered at every interval; :mod:`clstream.protocols.oaks.run_summary`) and labelled with that
coverage; a run whose metrics are null (no complete question yet) keeps its row, marked
incomplete, and is left out of the charts.
"""

from __future__ import annotations

from typing import Any

from clstream.render import figures
from clstream.render.base import Cell, Column, Figure, Section, Table
from clstream.render.common import (
    UsageColumns,
    details_table,
    seed_cell,
    seed_column,
    status_cells,
    status_columns,
    system_cell,
)
from clstream.render.fmt import MISSING, fmt_ci, fmt_int, fmt_rate
from clstream.render.runs import RunView, read_runs, scored_runs

RATES = [
    ("accuracy", "Accuracy"),
    ("acquisition_latency", "AL"),
    ("distraction_susceptibility", "DS"),
    ("phase_miss", "PM"),
]
GT_CHANGE = ["adaptability", "maladaptation", "prescience", "stubbornness"]
GT_STAY = ["lag", "volatility", "stability", "obstinacy"]
SUBSETS = ["sparse", "moderate", "frequent"]
TYPE_ORDER = ["tracking", "counting", "bridge", "comparison"]
RATE_KEY = {name: key for key, name in RATES}
DECOMPOSITION_COLORS = {
    "accuracy": "#009E73",
    "acquisition_latency": "#E69F00",
    "distraction_susceptibility": "#D55E00",
    "phase_miss": "#999999",
}

LEGEND = [
    (
        "Accuracy",
        "Share of probes answered correctly: for each question, the fraction of "
        "intervals at which its answer was right, then averaged over questions. Higher is better.",
    ),
    (
        "AL (acquisition latency)",
        "Intervals spent wrong at the start of an answer phase before "
        "the system first gets that phase right, as a share of all intervals. Lower is better.",
    ),
    (
        "DS (distraction susceptibility)",
        "Wrong answers given after the system already had the "
        "current phase right (relapses), as a share of all intervals. Lower is better.",
    ),
    (
        "PM (phase miss)",
        "Intervals inside phases the system never got right at all, as a share "
        "of all intervals. Lower is better.",
    ),
    (
        "Decomposition",
        "Every interval of a question is exactly one of: right, still catching "
        "up, relapsed, or inside a missed phase, so Accuracy + AL + DS + PM = 1 per question.",
    ),
    (
        "Transition behaviours",
        "Between consecutive intervals the gold answer either changes or "
        "stays, and so does the system's answer. Crossed with correctness this gives eight "
        "behaviours, reported as shares within each gold group (each group's four rates sum to 1).",
    ),
    (
        "Adaptability / Maladaptation",
        "Gold changed and the system changed its answer: to the right one, or to a wrong one.",
    ),
    (
        "Prescience / Stubbornness",
        "Gold changed but the system kept its answer, which happens to "
        "be right already, or is now outdated.",
    ),
    (
        "Lag / Volatility",
        "Gold stayed but the system changed its answer: catching up to the right "
        "one late, or drifting to a wrong one.",
    ),
    (
        "Stability / Obstinacy",
        "Gold stayed and so did the system: keeping a right answer, or keeping a wrong one.",
    ),
    (
        "Subsets",
        "Questions binned by how often their gold answer changes over the stream: "
        "sparse, moderate, frequent.",
    ),
    ("[lo, hi]", "Bootstrap 95% confidence interval over questions, when the run provides one."),
]
CITATION = (
    "Metrics and behaviour names follow OAKS: Kim et al., \u201cCan Large Language "
    "Models Keep Up? Benchmarking Online Adaptation to Continual Knowledge Streams\u201d "
    "(\u00a73.2, \u00a76.1\u20136.4, App. B.2.2, E.1)."
)


def _rate(r: RunView, path: str) -> float | None:
    return None if r.metrics is None else r.num(f"metrics.{path}")


def _title(name: str) -> str:
    return name.replace("_", " ").capitalize()


def _metric_table(runs: list[RunView]) -> Table:
    usage = UsageColumns([(r.f, r.raw) for r in runs])
    models = {r.f.text(r.raw, "model", MISSING) for r in runs}
    columns = [Column("System")] + ([Column("Model")] if len(models) > 1 else [])
    columns.append(seed_column())
    columns += [Column(h, numeric=True, title=_title(k)) for k, h in RATES]
    columns += [Column("Questions", True), *status_columns(), *usage.columns]
    rows: list[tuple[Cell, ...]] = []
    for r in runs:
        row = [system_cell(r.f, r.raw, r.label)]
        if len(models) > 1:
            row.append(Cell(r.f.text(r.raw, "model", MISSING)))
        row.append(seed_cell(r.f, r.raw))
        for key, _ in RATES:
            ci = fmt_ci(r.f.interval(r.raw, f"ci.{key}"))
            row.append(Cell(fmt_rate(_rate(r, key)), True, sub=ci if _rate(r, key) is not None else ""))
        n_q = None if r.metrics is None else r.f.integer(r.raw, "metrics.n_questions")
        row += [Cell(fmt_int(n_q), True), *status_cells(r.f, r.raw), *usage.cells(r.f, r.raw)]
        rows.append(tuple(row))
    caption = "Scores per system (95% confidence intervals in brackets)"
    if len(models) == 1:
        caption += f"; every run uses the model \u201c{models.pop()}\u201d"
    return Table(caption, tuple(columns), rows)


def _data_table(
    caption: str, first: str, categories: list[str], runs: list[RunView], cell: Any
) -> Table:
    """Rows = categories, one column per system; ``cell(run, category) -> str``."""
    columns = (Column(first), *(Column(r.label, numeric=True) for r in runs))
    rows = [(Cell(c), *(Cell(cell(r, c), numeric=True) for r in runs)) for c in categories]
    return Table(caption, columns, rows)


def _interval_figure(runs: list[RunView]) -> Figure:
    curves = {r.label: r.f.numbers(r.raw, "metrics.accuracy_by_interval") for r in runs}
    bands = {r.label: r.f.intervals(r.raw, "ci.accuracy_by_interval") for r in runs}
    longest = max(len(ys) for ys in curves.values())
    svg = figures.line_chart(
        list(curves.items()), title="Accuracy by interval", xlabel="interval t", ylabel="accuracy",
        bands={label: band for label, band in bands.items() if band} or None,
    )

    def cell(r: RunView, t: str) -> str:
        ys, band, i = curves[r.label], bands[r.label], int(t) - 1
        return fmt_rate(ys[i], band[i] if i < len(band) else None) if i < len(ys) else MISSING

    table = _data_table(
        "Accuracy by interval", "t", [str(t) for t in range(1, longest + 1)], runs, cell
    )
    caption = "Mean correctness over the questions probed at each interval."
    if any(bands.values()):
        caption += " Shaded: 95% confidence interval at each interval, where the run has one."
    return Figure("Accuracy by interval", svg, caption, table)


def _transition_figure(runs: list[RunView]) -> Figure:
    panels = [
        figures.Panel(
            title,
            [_title(k) for k in keys],
            [[_rate(r, f"transitions.{k}") for k in keys] for r in runs],
        )
        for title, keys in (("Gold answer changes", GT_CHANGE), ("Gold answer stays", GT_STAY))
    ]
    svg = figures.grouped_bars(
        panels,
        [r.label for r in runs],
        title="Transition behaviours",
        ylabel="share within group",
        height=3.6,
    )
    table = _data_table(
        "Transition behaviours",
        "Behaviour",
        [_title(k) for k in GT_CHANGE + GT_STAY],
        runs,
        lambda r, c: fmt_rate(_rate(r, f"transitions.{c.lower()}")),
    )
    return Figure(
        "Transition behaviours", svg, "Each panel's four bars of one system sum to 1.", table
    )


def _breakdown_figure(runs: list[RunView], key: str, title: str, order: list[str]) -> Figure | None:
    seen: set[str] = set()
    for r in runs:
        seen.update(r.f.mapping(r.metrics, key))
    if not seen:
        return None
    cats = [c for c in order if c in seen] + sorted(seen - set(order))

    names = {_title(c): c for c in cats}

    def acc(r: RunView, c: str) -> float | None:
        groups = r.f.mapping(r.metrics, key)
        return r.f.number(groups, f"{c}.accuracy") if c in groups else None

    def cell(r: RunView, name: str) -> str:
        groups, c = r.f.mapping(r.metrics, key), names[name]
        if c not in groups:
            return MISSING
        return f"{fmt_rate(acc(r, c))} (n={fmt_int(r.f.integer(groups, f'{c}.n_questions'))})"

    panel = figures.Panel("", list(names), [[acc(r, c) for c in cats] for r in runs])
    svg = figures.grouped_bars(
        [panel], [r.label for r in runs], title=title, ylabel="accuracy", width=5.6, height=3.4
    )
    table = _data_table(title, "Group", list(names), runs, cell)
    return Figure(title, svg, "", table, wide=False)


def _decomposition_figure(runs: list[RunView]) -> Figure:
    parts = [(name, [_rate(r, key) for r in runs], DECOMPOSITION_COLORS[key]) for key, name in RATES]
    svg = figures.stacked_hbars(
        [r.label for r in runs],
        parts,
        title="Accuracy, AL, DS and PM per system",
        xlabel="share of intervals",
    )
    table = _data_table(
        "Decomposition",
        "Part",
        [name for _, name in RATES],
        runs,
        lambda r, c: fmt_rate(_rate(r, RATE_KEY[c])),
    )
    return Figure(
        "Where the intervals go: Accuracy + AL + DS + PM",
        svg,
        "Each bar sums to 1: right, catching up, relapsed, phase missed.",
        table,
    )


def render_oaks_section(runs: list[dict[str, Any]], labels: list[str], source: object) -> Section:
    """Build the OAKS section for ``runs`` (all with protocol ``oaks``), shown as ``labels``."""
    parsed = read_runs(source, runs, labels)
    table = _metric_table(parsed)
    scored = scored_runs(parsed)
    notes: list[str] = []
    pending = [r.label for r in parsed if r.metrics is None]
    if pending:
        notes.append(
            "Not scored yet (no question answered at every interval), so absent from the "
            "charts: " + ", ".join(pending) + "."
        )
    if any(not r.complete for r in scored):
        notes.append(
            "Runs marked \u201c(incomplete: N% of questions)\u201d are scored only over the "
            "questions answered at every interval, N% of the questions; their other questions "
            "are left out of every number and chart, and a failed or missing probe is never "
            "counted as a wrong answer."
        )
    figs: list[Figure] = []
    if scored:
        figs.append(_decomposition_figure(scored))
        if any(r.f.numbers(r.raw, "metrics.accuracy_by_interval") for r in scored):
            figs.append(_interval_figure(scored))
        figs.append(_transition_figure(scored))
        for key, title, order in (
            ("by_type", "Accuracy by question type", TYPE_ORDER),
            ("by_subset", "Accuracy by change frequency", SUBSETS),
        ):
            fig = _breakdown_figure(scored, key, title, order)
            if fig is not None:
                figs.append(fig)
    intro = [
        "Each system reads the chunks of every document in order and answers every question "
        "of the document after each chunk; the gold answer of a question can change from one "
        "interval to the next."
    ]
    return Section(
        protocol="oaks",
        title="OAKS \u2014 streaming knowledge",
        intro=intro,
        notes=notes,
        tables=[table],
        figures=figs,
        legend=LEGEND,
        citation=CITATION,
        details=[details_table([(r.f, r.raw, lab) for r, lab in zip(parsed, labels, strict=True)])],
    )
