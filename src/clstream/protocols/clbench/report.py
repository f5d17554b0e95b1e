"""The CL-Bench section of the report: stateful environments, one colour per run (system).

Shows what ``clstream summary`` computes for a CL-Bench run (docs/clbench.md §5, §3.2): per task the
cumulative reward of the stateful arm (mean ± SE over rollouts) against the stateless arm, the
gain and normalized gain, stability and plasticity, and the cost in tokens; over tasks the
normalized gain with its 95% interval. Figures: the cumulative reward by position in the
rollout with a band over rollouts (lowest to highest) against the stateless arm's rewards in
the same order; per task and stage the mean reward of both arms; stability and plasticity
per run; cost against normalized gain with the Pareto
front. An incomplete run is scored over its complete arms (:mod:`.run_summary`) and labelled with
that coverage; a run with no task scored keeps its rows, marked incomplete, and is left out of
the charts.
"""

from __future__ import annotations

from typing import Any

from clstream.protocols.clbench.metrics import pareto_systems
from clstream.protocols.clbench.run_summary import builtin_policy_note
from clstream.render import figures
from clstream.render.base import Cell, Column, Figure, Section, Table
from clstream.render.common import UsageColumns, details_table, seed_cell, seed_column, system_cell
from clstream.render.fmt import MISSING, fmt_int
from clstream.render.runs import RunView, read_runs, scored_runs

LEGEND = [
    ("Stateful / stateless arm", "The stateful arm runs one system through the whole schedule "
     "of a task (R rollouts, the instances permuted within stages); the stateless arm runs "
     "every instance from a fresh system, in the environment state it has in the schedule."),
    ("Reward", "Cumulative reward of a stateful rollout, summed over the task's N instances; "
     "mean ± standard error over rollouts. Stateless: the same sum for the stateless arm."),
    ("Gain", "Stateful minus stateless cumulative reward, paired by instance."),
    ("Normalized gain", "(S_sf - S_sl) / (N r_max - S_sl): the share of the headroom the "
     "stateless arm left that the stateful arm took. 0 means nothing learned. Over tasks: the "
     "mean with a 95% interval 1.96 sqrt(sum SE^2) / K."),
    ("Stability / plasticity", "The normalized gain split over the first instance of each stage "
     "(stability: what carried over a drift) and the other instances (plasticity: learning "
     "within a stage); they add up to the normalized gain."),
    ("Cost", "Tokens of every model call a stateful rollout made (answers, repairs, memory "
     "updates), mean over rollouts; over tasks, the sum."),
]
CITATION = (
    "Metrics follow CL-Bench: \u201cContinual Learning Bench: Evaluating Frontier AI Systems "
    "in Real-World Stateful Environments\u201d (\u00a74, App. C)."
)


def _pm(stat: Any, spread: str = "se") -> str:
    if not isinstance(stat, dict) or not isinstance(stat.get("mean"), int | float):
        return MISSING
    text = f"{round(stat['mean'], 3) + 0.0:.3f}"
    value = stat.get(spread)
    return f"{text} \u00b1 {value:.3f}" if isinstance(value, int | float) else text


def _tokens(stat: Any) -> str:
    if not isinstance(stat, dict) or not isinstance(stat.get("mean"), int | float):
        return MISSING
    se = stat.get("se")
    return f"{stat['mean']:,.0f}" + (f" \u00b1 {se:,.0f}" if isinstance(se, int | float) else "")


def _num(value: Any, digits: int = 3) -> str:
    return f"{round(value, digits) + 0.0:.{digits}f}" if isinstance(value, int | float) else MISSING


def _tasks(runs: list[RunView]) -> list[str]:
    out: list[str] = []
    for r in runs:
        for task in r.f.mapping(r.raw, "tasks"):
            if task not in out:
                out.append(task)
    return out


def _task_table(runs: list[RunView]) -> Table:
    columns = (Column("Task"), Column("System"),
               Column("Normalized gain (\u00b1 SE)", True, "mean \u00b1 SE over rollouts"),
               Column("Stability (\u00b1 SE)", True), Column("Plasticity (\u00b1 SE)", True),
               Column("Reward (\u00b1 SE)", True, "cumulative, mean \u00b1 SE over rollouts"),
               Column("Stateless", True, "cumulative reward of the stateless arm"),
               Column("Gain (\u00b1 SE)", True, "cumulative, mean \u00b1 SE over rollouts"),
               Column("Rollouts", True, "scored / planned"),
               Column("Instances", True, "done / planned, both arms"),
               Column("Errors", True), Column("Tokens / rollout (\u00b1 SE)", True))
    rows: list[tuple[Cell, ...]] = []
    for task in _tasks(runs):
        for r in runs:
            info = r.f.mapping(r.raw, f"tasks.{task}")
            if not info:
                continue
            m = r.f.mapping(r.raw, f"metrics.tasks.{task}")
            done = (r.f.integer(info, "stateless_done") or 0) + sum(
                int(v) for v in r.f.mapping(info, "stateful_done").values())
            scored = len(r.f.get(info, "rollouts_complete") or []) if info.get("scored") else 0
            rows.append((
                Cell(task), system_cell(r.f, r.raw, r.label),
                Cell(_pm(m.get("normalized_gain")), True),
                Cell(_pm(m.get("stability")), True), Cell(_pm(m.get("plasticity")), True),
                Cell(_pm(m.get("reward")), True), Cell(_num(m.get("stateless_reward")), True),
                Cell(_pm(m.get("gain")), True),
                Cell(f"{scored} / {fmt_int(r.f.integer(info, 'rollouts_total'))}", True),
                Cell(f"{fmt_int(done)} / {fmt_int(r.f.integer(info, 'instances_total'))}",
                     True),
                Cell(fmt_int(r.f.integer(info, "errors")), True),
                Cell(_tokens(m.get("cost")), True)))
    return Table("Per task: stateful against stateless (\u00b1 standard error over rollouts)",
                 columns, rows)


def _stage_tables(runs: list[RunView]) -> list[Table]:
    """A table per task: the mean reward per stage, stateful (mean over rollouts) against
    stateless, with the stage's instance count."""
    columns = (Column("Stage"), Column("Variant"), Column("System"),
               Column("Instances", True),
               Column("Stateful", True, "mean reward per instance, mean over rollouts"),
               Column("Stateless", True, "mean reward per instance"),
               Column("Gain", True, "stateful minus stateless"))
    tables = []
    for task in _tasks(runs):
        rows: list[tuple[Cell, ...]] = []
        for r in runs:
            stages = r.f.get(r.raw, f"tasks.{task}.by_stage")
            for st in stages if isinstance(stages, list) else []:
                if not isinstance(st, dict):
                    continue
                variant = st.get("variant")
                rows.append((Cell(str(st.get("stage", MISSING))),
                             Cell(str(variant) if variant is not None else MISSING),
                             system_cell(r.f, r.raw, r.label),
                             Cell(fmt_int(st.get("n")) if isinstance(st.get("n"), int)
                                  else MISSING, True),
                             Cell(_num(st.get("stateful")), True),
                             Cell(_num(st.get("stateless")), True),
                             Cell(_num(st.get("gain")), True)))
        if rows:
            rows.sort(key=lambda row: int(row[0].text) if row[0].text.isdigit() else 0)
            tables.append(Table(f"Per stage ({task}): mean reward, stateful against stateless",
                                columns, rows))
    return tables


def _aggregate_table(runs: list[RunView]) -> Table:
    usage = UsageColumns([(r.f, r.raw) for r in runs])
    models = {r.f.text(r.raw, "model", MISSING) for r in runs}
    columns = [Column("System")] + ([Column("Model")] if len(models) > 1 else [])
    columns.append(seed_column())
    columns += [Column("Normalized gain (\u00b1 95% CI half-width)", True,
                       "mean over tasks \u00b1 the half-width of its 95% interval"),
                Column("Stability", True), Column("Plasticity", True),
                Column("Tasks scored", True),
                Column("Cost (tokens)", True, "sum over tasks of the mean rollout cost"),
                Column("Errors", True), *usage.columns]
    rows = []
    for r in runs:
        agg = r.f.mapping(r.raw, "metrics.aggregate")
        row = [system_cell(r.f, r.raw, r.label)]
        if len(models) > 1:
            row.append(Cell(r.f.text(r.raw, "model", MISSING)))
        row.append(seed_cell(r.f, r.raw))
        scored = len(r.f.get(r.raw, "coverage.tasks_scored") or [])
        cost = agg.get("cost")
        row += [Cell(_pm(agg.get("normalized_gain"), "ci95"), True),
                Cell(_num(agg.get("stability")), True), Cell(_num(agg.get("plasticity")), True),
                Cell(f"{scored} / {len(r.f.mapping(r.raw, 'tasks'))}", True),
                Cell(fmt_int(int(cost)) if isinstance(cost, int | float) else MISSING, True),
                Cell(fmt_int(r.f.integer(r.raw, "status.errors")), True),
                *usage.cells(r.f, r.raw)]
        rows.append(tuple(row))
    caption = "Over tasks (equal weight; \u00b1 the half-width of the 95% interval)"
    if len(models) == 1:
        caption += f"; every run uses the model \u201c{models.pop()}\u201d"
    return Table(caption, tuple(columns), rows)


def _curve_figure(runs: list[RunView], task: str) -> Figure | None:
    series = []
    for r in runs:
        curve = r.f.mapping(r.raw, f"tasks.{task}.curve")
        mean = r.f.numbers(curve, "stateful_mean")
        if not mean:
            continue
        low, high = r.f.numbers(curve, "stateful_low"), r.f.numbers(curve, "stateful_high")
        ref = r.f.numbers(curve, "stateless")
        series.append(figures.BandSeries(
            r.label, [v or 0.0 for v in mean], [v or 0.0 for v in low],
            [v or 0.0 for v in high], [v or 0.0 for v in ref], f"{r.label} (stateless)"))
    if not series:
        return None
    title = f"Cumulative reward: {task}"
    svg = figures.band_chart(series, title=title, xlabel="instance (position in the rollout)",
                             ylabel="cumulative reward")
    n = max(len(s.ys) for s in series)
    step = max(1, -(-n // 15))
    positions = sorted({*range(step, n + 1, step), n})
    columns = (Column("Position"), *(Column(f"{s.label}", True) for s in series))
    rows = [(Cell(str(p)), *(Cell(f"{s.ys[p - 1]:.2f} (sl {s.ref[p - 1]:.2f})"
                                  if s.ref is not None and p <= len(s.ys) else MISSING, True)
                             for s in series)) for p in positions]
    return Figure(title, svg, "Solid: stateful mean over rollouts, band from the lowest to the "
                  "highest rollout; dashed or dotted, open markers: the stateless "
                  "arm's rewards in the same order.",
                  Table(f"Cumulative reward ({task}): stateful mean (stateless)", columns, rows))


def _split_figure(runs: list[RunView]) -> Figure:
    labels = [r.label for r in runs]
    stab = [r.num("metrics.aggregate.stability") for r in runs]
    plas = [r.num("metrics.aggregate.plasticity") for r in runs]
    svg = figures.signed_bars(labels, [("stability", stab), ("plasticity", plas)],
                              title="Stability and plasticity", ylabel="share of headroom",
                              width=5.6, height=3.8)
    tasks = _tasks(runs)
    columns = (Column("System"), *(Column(f"{t} stab / plas", True) for t in tasks))
    rows = []
    for r in runs:
        cells = []
        for t in tasks:
            m = r.f.mapping(r.raw, f"metrics.tasks.{t}")
            cells.append(Cell(f"{_num((m.get('stability') or {}).get('mean'))} / "
                              f"{_num((m.get('plasticity') or {}).get('mean'))}"
                              if m else MISSING, True))
        rows.append((Cell(r.label), *cells))
    return Figure("Stability and plasticity", svg, "Means over tasks; stability + plasticity "
                  "= normalized gain.", Table("Per task: stability / plasticity", columns, rows),
                  wide=False)


def _pareto_figure(runs: list[RunView]) -> Figure | None:
    scores = {r.label: r.metrics or {} for r in runs}
    points = []
    for r in runs:
        cost = r.num("metrics.aggregate.cost")
        gain = r.num("metrics.aggregate.normalized_gain.mean")
        if cost is not None and gain is not None:
            points.append((r.label, cost, gain))
    if not points:
        return None
    front = pareto_systems(scores, "normalized_gain")
    svg = figures.scatter_front(points, front, title="Cost against normalized gain",
                                xlabel="cost (tokens, sum over tasks)",
                                ylabel="normalized gain")
    columns = (Column("System"), Column("Cost (tokens)", True), Column("Normalized gain", True),
               Column("On the front"))
    rows: list[tuple[Cell, ...]] = [
        (Cell(label), Cell(fmt_int(int(x)), True), Cell(_num(y), True),
         Cell("yes" if label in front else "")) for label, x, y in points]
    return Figure("Cost against normalized gain", svg, "The dotted line joins the runs no "
                  "other run beats on both cost and normalized gain (the Pareto front).",
                  Table("Cost and normalized gain", columns, rows), wide=False)


def render_clbench_section(runs: list[dict[str, Any]], labels: list[str], source: object
                           ) -> Section:
    """Build the CL-Bench section for ``runs`` (all with protocol ``clbench``)."""
    parsed = read_runs(source, runs, labels)
    tables = [_aggregate_table(parsed), _task_table(parsed), *_stage_tables(parsed)]
    scored = scored_runs(parsed)
    notes: list[str] = []
    pending = [r.label for r in parsed if r.metrics is None]
    if pending:
        notes.append("Not scored yet (no task with a complete stateless arm and a complete "
                     "rollout), so absent from the charts: " + ", ".join(pending) + ".")
    if any(not r.complete for r in scored):
        notes.append("Runs marked \u201c(incomplete: ...)\u201d are scored over their complete "
                     "arms only: a task needs its whole stateless arm and at least one whole "
                     "rollout, partial rollouts are left out, and a failed or missing instance "
                     "is never scored.")
    same_policy = builtin_policy_note(runs)
    if same_policy:
        notes.append(same_policy)
    figs: list[Figure] = []
    if scored:
        figs += [f for f in (_curve_figure(scored, t) for t in _tasks(scored)) if f is not None]
        figs.append(_split_figure(scored))
        pareto = _pareto_figure(scored)
        if pareto is not None:
            figs.append(pareto)
    intro = ["Each system works through the instances of stateful tasks whose environment "
             "drifts between stages, once carrying its memory through the whole schedule "
             "(several rollouts) and once starting fresh on every instance; what the first "
             "gains over the second, paired by instance, is what it learned."]
    return Section(
        protocol="clbench", title="CL-Bench \u2014 stateful environments",
        intro=intro, notes=notes, tables=tables, figures=figs, legend=LEGEND, citation=CITATION,
        details=[details_table([(r.f, r.raw, lab) for r, lab in zip(parsed, labels,
                                                                     strict=True)])],
    )
