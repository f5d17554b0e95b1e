"""The ImprintBench section of the report: corpus internalization, one row per run.

Shows what ``clstream summary`` computes for an ImprintBench run (docs/imprint.md §7, §3.4): per setting a
table of Pass@1 ± 1 SE and AllCorrect@n by family with the plain-mean Avg, like the paper's
Tables 1–3 ("Pass@1 / AllCorrect@8"); tokens in context and the compression ratio per run;
Pass@1 by family as bars; Avg Pass@1 against the compression ratio (the paper's Fig. 3, with
tokens in context on a log scale); AllCorrect@n against Pass@1 (how consistent the right
answers are); news TempUpd by axis (Fig. 6) and the stale-answer rate (answers that give the
value from before an update). An incomplete run is scored over its answered items and
labelled with that coverage.
"""

from __future__ import annotations

import json
import math
from typing import Any

from clstream.protocols.imprint.chance import CONSTANT_ANSWERS
from clstream.protocols.imprint.run_summary import run_label
from clstream.protocols.imprint.schema import FAMILIES
from clstream.render import figures
from clstream.render.base import Cell, Column, Figure, Section, Table, display_labels
from clstream.render.common import details_table, seed_cell, seed_column
from clstream.render.fmt import MISSING, fmt_int, fmt_seconds
from clstream.render.runs import RunView, read_runs, scored_runs

LEGEND = [
    ("Pass@1", "Mean over items of the fraction of the n samples judged correct; ± one "
     "standard error over items (personalization: over personas)."),
    ("AllCorrect@n", "Mean over items of the unbiased estimate that k = n samples drawn "
     "without replacement are all correct, C(c, k) / C(n, k): 1 only when every sample is."),
    ("Avg", "Plain mean over the families shown for the setting."),
    ("Tokens in context", "Prompt tokens of the answering request minus those of the same "
     "question asked with nothing shown; mean over items."),
    ("Compression", "Corpus tokens of the instance divided by the tokens in context (the "
     "project's reading: the paper gives numbers without a formula). Methods that show nothing "
     "have none."),
    ("Judge", "deterministic: the project's rule-based judges; llm:<model> (yn | rubric | "
     "identifier | identifier+fallback | list): the paper's LLM judge of that family, run "
     "with --judge."),
    ("Stale", "Share of samples that give the value from before an update instead of after "
     "it (items with an update only)."),
    ("Constant answers", "Pass@1 of answering every item with the same text (Yes., No., I "
     "don't know., A), judged by the deterministic judges: the chance floor of each family."),
]
CITATION = ("Families and metrics follow ImprintBench: \u201cMeasuring the Limits of "
            "Continual Learning for LLMs\u201d (\u00a72, \u00a73.1, App. C.3, D, E).")


def _pct(value: Any) -> str:
    return MISSING if not isinstance(value, int | float) else f"{100 * value:.1f}"


def _setting(r: RunView) -> str:
    return r.f.text(r.raw, "dataset.setting", "?")


def _families(runs: list[RunView]) -> list[str]:
    present = {f for r in runs for f in r.f.mapping(r.raw, "metrics.by_family")}
    return [f for f in FAMILIES if f in present]


def _label(r: RunView) -> str:
    sup = r.f.text(r.raw, "supervision", "")
    return f"{r.label} [{sup}]" if sup and sup != "C" else r.label


def _training_text(r: RunView) -> str:
    """A parametric run's training cost: tokens read over all epochs and seconds spent."""
    if not isinstance(r.raw.get("training"), dict):
        return MISSING
    return (f"{fmt_int(r.f.integer(r.raw, 'training.tokens'))} / "
            f"{fmt_seconds(r.f.number(r.raw, 'training.seconds'))}")


def _family_table(setting: str, runs: list[RunView]) -> Table:
    fams = _families(runs)
    columns = [Column("System"), seed_column(), Column("Supervision"),
               Column("Tokens in context", True),
               Column("Compression", True)]
    columns += [Column(f"{f} (\u00b1 SE of Pass@1)", True,
                       "Pass@1 / AllCorrect@n (%), then \u00b1 one standard error of Pass@1")
                for f in fams]
    columns += [Column("Avg", True, "Pass@1 / AllCorrect@n (%)"), Column("Items", True)]
    # Parametric methods put nothing in context; what they cost is their training.
    trained = any(isinstance(r.raw.get("training"), dict) for r in runs)
    if trained:
        columns.append(Column("Training", True, "tokens read / seconds"))
    rows = []
    for r in runs:
        by = r.f.mapping(r.raw, "metrics.by_family")
        ctx = r.f.mapping(r.raw, "context")
        tokens, ratio = ctx.get("tokens_in_context"), ctx.get("compression_ratio")
        row = [Cell(r.label), seed_cell(r.f, r.raw), Cell(r.f.text(r.raw, "supervision", "C")),
               Cell(f"{tokens:.0f}" if isinstance(tokens, int | float) else MISSING, True),
               Cell(f"{ratio:.1f}\u00d7" if isinstance(ratio, int | float) else MISSING,
                    True)]
        for fam in fams:
            cell = by.get(fam)
            if not isinstance(cell, dict):
                row.append(Cell(MISSING, True))
                continue
            n = max((int(k) for k in (cell.get("all_correct_at_k") or {})), default=None)
            ac = (cell.get("all_correct_at_k") or {}).get(str(n)) if n is not None else None
            se = cell.get("se")
            row.append(Cell(f"{_pct(cell.get('pass_at_1'))} / {_pct(ac)}", True,
                            sub=f"\u00b1{_pct(se)}" if isinstance(se, int | float) else ""))
        avg = r.f.mapping(r.raw, "metrics.avg")
        row += [Cell(f"{_pct(avg.get('pass_at_1'))} / {_pct(avg.get('all_correct_at_n'))}",
                     True),
                Cell(f"{r.f.integer(r.raw, 'coverage.scored')} / "
                     f"{r.f.integer(r.raw, 'coverage.total')}", True)]
        if trained:
            row.append(Cell(_training_text(r), True))
        rows.append(tuple(row))
    return Table(f"{setting}: Pass@1 / AllCorrect@n by family (%; \u00b1 one standard error of "
                 "Pass@1 over items)", tuple(columns), rows)


def _judge_table(setting: str, runs: list[RunView]) -> Table:
    """Which judge produced each number of the family table (docs/imprint.md §6)."""
    fams = _families(runs)
    columns = (Column("System"), *(Column(f) for f in fams))
    rows = []
    for r in runs:
        by = r.f.mapping(r.raw, "metrics.by_family")
        rows.append((Cell(_label(r)), *(Cell(str((by.get(f) or {}).get("judge", MISSING))
                                             if isinstance(by.get(f), dict) else MISSING)
                                        for f in fams)))
    return Table(f"{setting}: the judge behind each number", columns, rows)


def _chance_table(setting: str, runs: list[RunView]) -> Table | None:
    """What a constant answer scores per family on the items the runs answered (the chance
    floor, docs/imprint.md §7.11): one row per constant answer, per group of runs that
    answered different items."""
    groups: dict[str, tuple[dict[str, Any], list[str]]] = {}
    for r in runs:
        chance = r.f.mapping(r.raw, "metrics.chance")
        if isinstance(chance.get("by_family"), dict):
            groups.setdefault(json.dumps(chance, sort_keys=True), (chance, []))[1].append(
                _label(r))
    if not groups:
        return None
    fams = [f for f in FAMILIES
            if any(f in chance["by_family"] for chance, _ in groups.values())]
    several = len(groups) > 1
    columns = (Column("Constant answer"), *((Column("Runs"),) if several else ()),
               *(Column(f, True) for f in fams), Column("Avg", True))
    rows = []
    for chance, labels in groups.values():
        for name, text in CONSTANT_ANSWERS.items():
            cells = [Cell(_pct((chance["by_family"].get(f) or {}).get(name)), True)
                     for f in fams]
            rows.append((Cell(text), *((Cell(", ".join(labels)),) if several else ()),
                         *cells, Cell(_pct((chance.get("avg") or {}).get(name)), True)))
    return Table(f"{setting}: what a constant answer scores (Pass@1 %, the chance floor of "
                 "each family)", columns, rows)


def _bars(setting: str, runs: list[RunView]) -> Figure:
    fams = _families(runs)
    values = [[r.num(f"metrics.by_family.{f}.pass_at_1") for f in fams] for r in runs]
    panel = figures.Panel(setting, fams, values)
    svg = figures.grouped_bars([panel], [_label(r) for r in runs],
                               title=f"Pass@1 by family ({setting})", ylabel="Pass@1")
    columns = (Column("System"), *(Column(f, True) for f in fams))
    rows = [(Cell(_label(r)), *(Cell(_pct(v), True) for v in vals))
            for r, vals in zip(runs, values, strict=True)]
    return Figure(f"Pass@1 by family ({setting})", svg, "Bars: Pass@1 per family.",
                  Table(f"Pass@1 by family, % ({setting})", columns, rows))


def _compression_figure(setting: str, runs: list[RunView]) -> Figure | None:
    points = []
    for r in runs:
        tokens = r.num("context.tokens_in_context")
        avg = r.num("metrics.avg.pass_at_1")
        if tokens is not None and tokens > 0 and avg is not None:
            points.append((_label(r), math.log2(tokens), avg))
    if not points:
        return None
    svg = figures.scatter_front(points, [], title=f"Accuracy against context ({setting})",
                                xlabel="log2 tokens in context", ylabel="Avg Pass@1")
    columns = (Column("System"), Column("Tokens in context", True), Column("Avg Pass@1", True))
    rows: list[tuple[Cell, ...]] = [
        (Cell(label), Cell(f"{2 ** x:.0f}", True), Cell(_pct(y), True))
        for label, x, y in points]
    return Figure(f"Accuracy against context ({setting})", svg,
                  "Each point is a run: fewer tokens in context is more compression.",
                  Table(f"Avg Pass@1 and tokens in context ({setting})", columns, rows),
                  wide=False)


def _consistency_figure(setting: str, runs: list[RunView]) -> Figure | None:
    points = []
    for r in runs:
        p1, ac = r.num("metrics.avg.pass_at_1"), r.num("metrics.avg.all_correct_at_n")
        if p1 is not None and ac is not None:
            points.append((_label(r), p1, ac))
    if not points:
        return None
    svg = figures.scatter_front(points, [], title=f"AllCorrect@n against Pass@1 ({setting})",
                                xlabel="Avg Pass@1", ylabel="Avg AllCorrect@n", diagonal=True)
    columns = (Column("System"), Column("Avg Pass@1", True), Column("Avg AllCorrect@n", True))
    rows: list[tuple[Cell, ...]] = [
        (Cell(label), Cell(_pct(x), True), Cell(_pct(y), True)) for label, x, y in points]
    return Figure(f"AllCorrect@n against Pass@1 ({setting})", svg,
                  "On the dashed diagonal every right answer is right in all n samples; below it, "
                  "right only sometimes.", Table(f"Consistency ({setting})", columns, rows),
                  wide=False)


def _axis_table(setting: str, runs: list[RunView]) -> Table | None:
    axes: list[tuple[str, str]] = []
    for r in runs:
        for fam, by_axis in r.f.mapping(r.raw, "details.by_axis").items():
            for axis in by_axis if isinstance(by_axis, dict) else {}:
                if (fam, axis) not in axes:
                    axes.append((fam, axis))
    if not axes and not any(r.f.mapping(r.raw, "details.stale") for r in runs):
        return None
    stale = [f for f in FAMILIES
             if any(r.f.mapping(r.raw, f"details.stale.{f}") for r in runs)]
    columns = (Column("System"), *(Column(f"{fam} {axis}", True) for fam, axis in axes),
               *(Column(f"{fam} stale", True, "share of samples giving the pre-update value")
                 for fam in stale))
    rows = []
    for r in runs:
        cells = [Cell(_pct(r.num(f"details.by_axis.{fam}.{axis}.pass_at_1")), True)
                 for fam, axis in axes]
        cells += [Cell(_pct(r.num(f"details.stale.{fam}.stale_rate")), True) for fam in stale]
        rows.append((Cell(_label(r)), *cells))
    return Table(f"{setting}: Pass@1 by sub-axis (%) and stale answers", columns, rows)


def render_imprint_section(runs: list[dict[str, Any]], labels: list[str], source: object
                           ) -> Section:
    """Build the ImprintBench section for ``runs`` (all with protocol ``imprint``); each run's
    label carries the spec choices that change its numbers (:func:`run_label`)."""
    if any(run_label(r) != str(r.get("system", "?")) for r in runs if isinstance(r, dict)):
        labels = display_labels([{**r, "system": run_label(r)} if isinstance(r, dict) else r
                                 for r in runs])
    parsed = read_runs(source, runs, labels)
    scored = scored_runs(parsed)
    settings: list[str] = []
    for r in parsed:
        if _setting(r) not in settings:
            settings.append(_setting(r))
    tables: list[Table] = []
    figs: list[Figure] = []
    for setting in settings:
        group = [r for r in scored if _setting(r) == setting]
        if not group:
            continue
        tables.append(_family_table(setting, group))
        tables.append(_judge_table(setting, group))
        chance = _chance_table(setting, group)
        if chance is not None:
            tables.append(chance)
        axis = _axis_table(setting, group)
        if axis is not None:
            tables.append(axis)
        figs.append(_bars(setting, group))
        figs += [f for f in (_compression_figure(setting, group),
                             _consistency_figure(setting, group)) if f is not None]
    notes: list[str] = []
    pending = [r.label for r in parsed if r.metrics is None]
    if pending:
        notes.append("No item answered yet, so not shown: " + ", ".join(pending) + ".")
    if any(not r.complete for r in scored):
        notes.append("Runs marked \u201c(incomplete: ...)\u201d are scored over the items they "
                     "answered; a failed or missing item is never scored as wrong.")
    intro = ["Each method takes in a corpus of new knowledge (articles, a library's new API, "
             "a user's chats) and then answers held-out questions in six families: direct "
             "recall, temporal updates, references through aliases and paraphrases, "
             "composition, implicit relevance and abstention, n samples each."]
    return Section(
        protocol="imprint", title="ImprintBench \u2014 corpus internalization",
        intro=intro, notes=notes, tables=tables, figures=figs, legend=LEGEND,
        citation=CITATION,
        details=[details_table([(r.f, r.raw, lab) for r, lab in zip(parsed, labels,
                                                                     strict=True)])],
    )
