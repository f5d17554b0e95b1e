"""The SeqMem-Eval section of the report: sequential tasks with evolving memory, one row and one
colour per memory method.

Shows what ``clstream summary`` computes for a SeqMem run (docs/seqmem.md §5, §3; SeqMem-Eval
§3.2-3.6 and §5): online utility (OnlineAcc, PED, MER, r_min and the curve Abar(tau)),
hold-out generalization (H(k) per checkpoint, HoldOutAcc, Trend_HO), backward transfer and
forgetting per horizon (BWT(t), F(t), IV = BWT(1)), the cost of the sequential run split into
retrieve / generate / update, and the five-dimension radar. The paper's radar plots each
method's rank within a dimension; here the radar plots the normalized dimension scores of
:func:`clstream.protocols.seqmem.run_summary.radar` (ranks are in the numbers under the chart), and
only the dimensions every charted run has. An incomplete run is scored as the stream up to its
last contiguous completed task (:mod:`clstream.protocols.seqmem.run_summary`) and labelled with that
coverage; a run without metrics (no online record yet) keeps its row, marked incomplete, and is
left out of the charts.
"""

from __future__ import annotations

from typing import Any

from clstream.render import figures
from clstream.render.base import Cell, Column, Figure, Section, Table
from clstream.render.common import UsageColumns, details_table, seed_cell, seed_column, system_cell
from clstream.render.fmt import MISSING, fmt_ci, fmt_int, fmt_rate, fmt_seconds
from clstream.render.runs import RunView, read_runs, scored_runs

SCORES = [
    ("online_acc", "OnlineAcc", "Cumulative online accuracy Abar(T)"),
    ("ped", "PED", "Peak-to-end degradation: max Abar(tau) - Abar(T)"),
    ("mer", "MER", "Minimum-to-end recovery: Abar(T) - min Abar(tau)"),
    ("r_min", "r_min", "Where the curve bottoms out: first argmin of Abar(tau), over T"),
    ("holdout_acc", "HoldOutAcc", "Hold-out accuracy at the last checkpoint"),
    ("trend_ho", "Trend_HO", "Least-squares slope of H(k) against k/T, checkpoints k >= 1"),
    ("iv", "IV", "Immediate value: BWT(1)"),
]
STAGES = ["retrieve", "generate", "update"]
STAGE_COLORS = {"retrieve": "#56B4E9", "generate": "#0072B2", "update": "#E69F00"}
RADAR = [
    ("online_utility", "Online utility"),
    ("holdout_generalization", "Hold-out generalization"),
    ("backward_transfer", "Backward transfer"),
    ("forgetting", "Low forgetting"),
    ("efficiency", "Efficiency"),
]
CURVE_ROWS = 20  # rows of the numbers table under the online curve

LEGEND = [
    ("Abar(tau)", "Cumulative online accuracy: the share of tasks 1..tau answered correctly "
     "when they arrived, each under the memory built from the tasks before it."),
    ("OnlineAcc", "Abar at the end of the stream. Higher is better."),
    ("PED (peak-to-end degradation)", "How far the curve fell from its best point by the end. "
     "Lower is better."),
    ("MER (minimum-to-end recovery)", "How far the curve climbed from its worst point by the "
     "end. Higher means memory recovered from a bad start."),
    ("r_min", "Relative position of the curve's lowest point in the stream (0 to 1)."),
    ("H(k), HoldOutAcc", "Accuracy on a hold-out set never used for updates, answered with the "
     "memory held after k tasks (k = 0 is no memory); HoldOutAcc is H at the last checkpoint."),
    ("Trend_HO", "Slope of H(k) against the fraction of the stream seen (k = 0 not fitted): "
     "positive when memory keeps generalizing better."),
    ("BWT(t)", "Backward transfer at horizon t: accuracy on a past task re-answered t updates "
     "later, minus its accuracy when it arrived. Positive: later memory helps old tasks."),
    ("IV (immediate value)", "BWT(1): does the update made from a task's own feedback help "
     "that task right away."),
    ("F(t)", "Forgetting at horizon t: best accuracy a task reached up to t updates after it "
     "arrived (over the evaluated horizons), minus its accuracy t updates later. Lower is "
     "better."),
    ("Retrieve / generate / update", "Cost of the sequential run (online answers and memory "
     "updates; hold-out and re-evaluation probes are measurement and are not counted): tokens "
     "of the model calls made in each stage and the time spent in it."),
    ("Radar", "Each dimension scored in [0, 1], higher is better: online utility = mean of "
     "OnlineAcc and 1 - PED; hold-out generalization = mean of HoldOutAcc and the clipped "
     "trend; backward transfer = mean of (BWT(t) + 1) / 2; forgetting = 1 - mean F(t); "
     "efficiency = 1000 / (1000 + tokens per task)."),
]
CITATION = (
    "Metrics follow SeqMem-Eval: Dong et al., \u201cIs One Score Enough? Rethinking the "
    "Evaluation of Sequentially Evolving LLM Memory\u201d (\u00a73.2\u20133.6, \u00a75)."
)


def _horizons(r: RunView, group: str) -> dict[int, float | None]:
    values = r.f.mapping(r.metrics, group)
    out = {}
    for key in values:
        if not str(key).isdigit():
            raise r.f.error(f"metrics.{group}", f"horizon {key!r} is not a whole number")
        out[int(key)] = r.f.number(values, str(key))
    return out


def _stage_tokens(r: RunView, stage: str) -> float:
    b = r.f.mapping(r.raw, f"efficiency.tokens_by_stage.{stage}")
    return sum(r.f.number(b, k) or 0.0 for k in ("prompt", "completion", "reasoning"))


def _horizon_keys(runs: list[RunView]) -> list[int]:
    keys: set[int] = set()
    for r in runs:
        keys.update(_horizons(r, "bwt"), _horizons(r, "forgetting"))
    return sorted(keys)


def _score_cell(r: RunView, key: str) -> Cell:
    """A score with its 95% interval under it, where the summary has one (``ci.<key>``)."""
    value = r.num(f"metrics.{key}")
    interval = fmt_ci(r.f.interval(r.raw, f"ci.{key}")) if value is not None else ""
    return Cell(fmt_rate(value), True, sub=interval)


def _score_table(runs: list[RunView]) -> Table:
    usage = UsageColumns([(r.f, r.raw) for r in runs])
    models = {r.f.text(r.raw, "model", MISSING) for r in runs}
    columns = [Column("System")] + ([Column("Model")] if len(models) > 1 else [])
    columns.append(seed_column())
    columns += [Column(h, True, title) for _, h, title in SCORES]
    columns += [Column("Tasks", True, "online tasks done / in the stream"),
                Column("Tokens / task", True, "sequential run: answers and memory updates"),
                Column("Errors", True), *usage.columns]
    rows = []
    for r in runs:
        row = [system_cell(r.f, r.raw, r.label)]
        if len(models) > 1:
            row.append(Cell(r.f.text(r.raw, "model", MISSING)))
        row.append(seed_cell(r.f, r.raw))
        row += [_score_cell(r, k) for k, _, _ in SCORES]
        done, total = r.f.integer(r.raw, "status.online_done"), r.f.integer(r.raw,
                                                                            "status.online_total")
        per_task = r.num("efficiency.tokens_per_task")
        row += [Cell(f"{fmt_int(done)} / {fmt_int(total)}", True),
                Cell(MISSING if per_task is None else f"{per_task:,.0f}", True),
                Cell(fmt_int(r.f.integer(r.raw, "status.errors")), True), *usage.cells(r.f, r.raw)]
        rows.append(tuple(row))
    caption = "Scores per memory method (95% Wilson intervals in brackets, where a score has one)"
    if len(models) == 1:
        caption += f"; every run uses the model \u201c{models.pop()}\u201d"
    return Table(caption, tuple(columns), rows)


def _horizon_table(runs: list[RunView], keys: list[int]) -> Table:
    columns = (Column("System"), *(Column(f"BWT({t})", True) for t in keys),
               *(Column(f"F({t})", True) for t in keys))
    rows = []
    for r in runs:
        bwt, forget = _horizons(r, "bwt"), _horizons(r, "forgetting")
        rows.append((system_cell(r.f, r.raw, r.label),
                     *(Cell(fmt_rate(bwt.get(t)), True) for t in keys),
                     *(Cell(fmt_rate(forget.get(t)), True) for t in keys)))
    return Table("Backward transfer BWT(t) and forgetting F(t) per horizon t", columns, rows)


def _by_label(runs: list[RunView], first: str, keys: list[str], cell: Any, caption: str) -> Table:
    """Rows = ``keys``, one column per run; ``cell(run, key) -> str``."""
    columns = (Column(first), *(Column(r.label, True) for r in runs))
    return Table(caption, columns, [(Cell(k), *(Cell(cell(r, k), True) for r in runs))
                                    for k in keys])


def _online_figure(runs: list[RunView]) -> Figure | None:
    curves = {r.label: r.f.numbers(r.raw, "online_curve") for r in runs}
    bands = {r.label: r.f.intervals(r.raw, "ci.online_curve") for r in runs}
    longest = max(len(c) for c in curves.values())
    if not longest:
        return None
    step = max(1, -(-longest // CURVE_ROWS))
    taus = sorted({*range(step, longest + 1, step), longest})
    svg = figures.line_chart(list(curves.items()), title="Online accuracy Abar(tau)",
                             xlabel="task tau", ylabel="cumulative accuracy",
                             bands={label: b for label, b in bands.items() if b} or None)

    def cell(r: RunView, tau: str) -> str:
        ys, band, i = curves[r.label], bands[r.label], int(tau) - 1
        return fmt_rate(ys[i], band[i] if i < len(band) else None) if i < len(ys) else MISSING

    table = _by_label(runs, "tau", [str(t) for t in taus], cell, "Abar(tau)")
    caption = "Share of tasks 1..tau answered correctly on arrival."
    if any(bands.values()):
        caption += " Shaded: 95% confidence interval at each tau, where the run has one."
    return Figure("Online accuracy Abar(tau)", svg, caption, table)


def _holdout_points(r: RunView) -> dict[int, float | None]:
    raw = r.f.get(r.raw, "holdout_curve") or []
    if not isinstance(raw, list):
        raise r.f.error("holdout_curve", "expected a list of checkpoints")
    points = {}
    for i, item in enumerate(raw):
        k = r.f.integer(item, "checkpoint") if isinstance(item, dict) else None
        if k is None:
            raise r.f.error(f"holdout_curve[{i}].checkpoint", "expected a whole number")
        points[k] = r.f.number(item, "accuracy")
    return points


def _holdout_figure(runs: list[RunView]) -> Figure | None:
    points = {r.label: _holdout_points(r) for r in runs}
    if not any(points.values()):
        return None
    series = [(label, sorted(p), [p[k] for k in sorted(p)]) for label, p in points.items() if p]
    svg = figures.xy_chart(series, title="Hold-out accuracy H(k)", xlabel="checkpoint k "
                           "(tasks processed)", ylabel="hold-out accuracy", width=5.6)
    ks = sorted({k for p in points.values() for k in p})
    table = _by_label(runs, "k", [str(k) for k in ks],
                      lambda r, k: fmt_rate(points[r.label].get(int(k))), "H(k)")
    return Figure("Hold-out accuracy H(k)", svg, "k = 0 is the empty memory.", table, wide=False)


def _horizon_figures(runs: list[RunView], keys: list[int]) -> list[Figure]:
    out = []
    for group, title, ylabel, ylim in (
        ("bwt", "Backward transfer BWT(t)", "BWT(t)", None),
        ("forgetting", "Forgetting F(t)", "F(t)", (0.0, 1.02)),
    ):
        values = {r.label: _horizons(r, group) for r in runs}
        series = [(label, sorted(v), [v[t] for t in sorted(v)]) for label, v in values.items() if v]
        if not series:
            continue
        svg = figures.xy_chart(series, title=title, xlabel="horizon t", ylabel=ylabel, ylim=ylim,
                               log2_x=True, zero_line=group == "bwt", width=5.6)
        table = _by_label(runs, "t", [str(t) for t in keys],
                          lambda r, t, v=values: fmt_rate(v[r.label].get(int(t))), title)
        out.append(Figure(title, svg, "", table, wide=False))
    return out


def _cost_figure(runs: list[RunView]) -> Figure:
    tokens = {s: [_stage_tokens(r, s) for r in runs] for s in STAGES}
    seconds = {s: [r.num(f"efficiency.time_s_by_stage.{s}") for r in runs] for s in STAGES}
    panels = [
        figures.StackPanel("Tokens", "tokens",
                           [(s, list(tokens[s]), STAGE_COLORS[s]) for s in STAGES]),
        figures.StackPanel("Time", "seconds",
                           [(s, list(seconds[s]), STAGE_COLORS[s]) for s in STAGES]),
    ]
    svg = figures.stacked_hbar_panels([r.label for r in runs], panels,
                                      title="Cost by stage: retrieve, generate, update")
    names = [f"{s} tokens" for s in STAGES] + [f"{s} time" for s in STAGES]

    position = {r.label: i for i, r in enumerate(runs)}

    def cell(r: RunView, name: str) -> str:
        stage, kind = name.split()
        i = position[r.label]
        if kind == "tokens":
            return fmt_int(int(tokens[stage][i]))
        return fmt_seconds(seconds[stage][i])

    table = _by_label(runs, "Stage", names, cell, "Cost of the sequential run by stage")
    return Figure("Cost by stage: retrieve, generate, update", svg,
                  "Online answers and memory updates; probes are not counted.", table)


def _radar_figure(runs: list[RunView]) -> Figure | None:
    scores = {r.label: {k: r.num(f"radar.{k}") for k, _ in RADAR} for r in runs}
    dims = [(k, name) for k, name in RADAR if all(s[k] is not None for s in scores.values())]
    if len(dims) < 3:
        return None
    series = [(label, [float(s[k] or 0.0) for k, _ in dims]) for label, s in scores.items()]
    svg = figures.radar_chart([name for _, name in dims], series,
                              title="Methods on the SeqMem-Eval dimensions")

    def rank(key: str, label: str) -> int:
        mine = scores[label][key] or 0.0
        return 1 + sum(1 for s in scores.values() if (s[key] or 0.0) > mine)

    table = _by_label(runs, "Dimension", [name for _, name in dims],
                      lambda r, name: f"{fmt_rate(scores[r.label][_key(name)])} "
                                      f"(rank {rank(_key(name), r.label)})",
                      "Dimension scores (rank among these runs)")
    left_out = [name for k, name in RADAR if (k, name) not in dims]
    caption = "Scores in [0, 1], 0 at the centre; farther out is better."
    if left_out:
        caption += " Left out (some run has no records for it): " + ", ".join(left_out) + "."
    return Figure("Methods on the SeqMem-Eval dimensions", svg, caption, table, wide=False)


def _key(name: str) -> str:
    return next(k for k, n in RADAR if n == name)


def render_seqmem_section(runs: list[dict[str, Any]], labels: list[str], source: object
                          ) -> Section:
    """Build the SeqMem section for ``runs`` (all with protocol ``seqmem``), shown as ``labels``."""
    parsed = read_runs(source, runs, labels)
    keys = _horizon_keys(parsed)
    tables = [_score_table(parsed)] + ([_horizon_table(parsed, keys)] if keys else [])
    scored = scored_runs(parsed)
    notes: list[str] = []
    pending = [r.label for r in parsed if r.metrics is None]
    if pending:
        notes.append("Not scored yet (no online record), so absent from the charts: "
                     + ", ".join(pending) + ".")
    if any(not r.complete for r in scored):
        notes.append("Runs marked \u201c(incomplete: N% of tasks)\u201d are scored as a stream "
                     "of their first tasks answered without a failure, N% of the stream; "
                     "hold-out checkpoints missing an answer and re-evaluations beyond those "
                     "tasks are left out, and a failed or missing answer is never counted as "
                     "wrong.")
    shares = {r.num("plan.retro_sample") for r in parsed}
    sampled = sorted(s for s in shares if s is not None and s != 1.0)
    if sampled:
        notes.append("Some runs re-evaluated only a sampled share of past tasks "
                     f"({', '.join(f'{s:g}' for s in sampled)}); their BWT(t) and F(t) average "
                     "over the sampled tasks.")
    figs: list[Figure] = []
    if scored:
        figs += [f for f in (_online_figure(scored), _holdout_figure(scored),
                             _radar_figure(scored)) if f is not None]
        figs += _horizon_figures(scored, _horizon_keys(scored))
        figs.append(_cost_figure(scored))
    intro = ["Each method answers a stream of tasks one at a time, gets the evaluator's "
             "feedback, and updates its memory; a hold-out set is answered at checkpoints, and "
             "past tasks are answered again under later memory to measure transfer and "
             "forgetting."]
    return Section(
        protocol="seqmem", title="SeqMem-Eval \u2014 sequential tasks with evolving memory",
        intro=intro, notes=notes, tables=tables, figures=figs, legend=LEGEND, citation=CITATION,
        details=[details_table([(r.f, r.raw, lab) for r, lab in zip(parsed, labels,
                                                                     strict=True)])],
    )
