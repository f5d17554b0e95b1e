"""The report's section on seeds and paired differences (docs/statistics.md §1, §2): per
protocol, each group of runs that differ only in seed with its headline metrics over the seeds,
and each pair of systems compared on the same items, from the summary's ``seeds`` and
``paired`` (docs/summary-json.md)."""

from __future__ import annotations

from typing import Any

from clstream.core.registry import names
from clstream.render.base import Cell, Column, Section, Table
from clstream.report.paired import adjusted_p


def _num(value: float | None, sign: str = "") -> str:
    return "\u2013" if value is None else f"{value:{sign}.3f}"


def _order(protocols: set[str]) -> list[str]:
    known = names("protocol")
    return [p for p in known if p in protocols] + sorted(protocols - set(known))


def _seed_table(protocol: str, groups: list[dict[str, Any]], confidence: float) -> Table:
    header = (Column("System"), Column("Model"), Column("Seeds"), Column("Metric"),
              Column("Mean", True), Column("SD", True),
              Column(f"{confidence:.0%} t-interval", True, "Student t over the seeds; none "
                                                           "for one seed"))
    rows: list[tuple[Cell, ...]] = []
    for group in groups:
        for metric in group["metrics"].values():
            interval = metric["interval"]
            rows.append((Cell(str(group["system"])), Cell(str(group["model"])),
                         Cell(", ".join(str(s) for s in group["seeds"]), numeric=True),
                         Cell(str(metric["label"])), Cell(_num(metric["mean"]), numeric=True),
                         Cell(_num(metric["sd"]), numeric=True),
                         Cell("\u2013" if interval is None
                              else f"[{_num(interval[0])}, {_num(interval[1])}]",
                              numeric=True)))
    return Table(f"{protocol}: headline metrics over seeds", header, rows)


def _pair_table(protocol: str, pairs: list[dict[str, Any]], confidence: float) -> Table:
    header = (Column("Metric"), Column("Seed", True), Column("A"), Column("B"),
              Column("A \u2212 B", True, "mean over the items of A's score minus B's"),
              Column(f"{confidence:.0%} interval", True, "paired bootstrap over items"),
              Column("p (Holm)", True, "two-sided paired sign-flip test, Holm-adjusted over "
                                       "the pairs of the metric"),
              Column("Items", True, "items both runs scored"))
    rows: list[tuple[Cell, ...]] = []
    for pair in pairs:
        low, high = pair["interval"]
        rows.append((Cell(str(pair["label"]), title=f"{pair['better']} is better"),
                     Cell(str(pair["seed"]), numeric=True), Cell(str(pair["a"])),
                     Cell(str(pair["b"])), Cell(_num(pair["difference"], "+"), numeric=True),
                     Cell(f"[{_num(low, '+')}, {_num(high, '+')}]", numeric=True),
                     Cell(f"{adjusted_p(pair):.4f}", numeric=True,
                          title=f"unadjusted {pair['p_value']:.4f}, "
                          + ("exact" if pair["exact"] else "Monte Carlo estimate")),
                     Cell(f"{pair['items']:,}", numeric=True)))
    return Table(f"{protocol}: paired differences", header, rows)


def render_paired_section(summary: dict[str, Any]) -> Section | None:
    """The section, or None when the summary has neither seeds nor pairs."""
    seeds = summary.get("seeds") or {}
    paired = summary.get("paired") or {}
    groups = seeds.get("groups") or []
    pairs = paired.get("pairs") or []
    if not groups and not pairs:
        return None
    tables = []
    for protocol in _order({str(g["protocol"]) for g in groups}
                           | {str(p["protocol"]) for p in pairs}):
        mine = [g for g in groups if g["protocol"] == protocol]
        if mine:
            tables.append(_seed_table(protocol, mine, float(seeds["confidence"])))
        matched = [p for p in pairs if p["protocol"] == protocol]
        if matched:
            tables.append(_pair_table(protocol, matched, float(paired["confidence"])))
    intro = [
        "Runs that differ only in their seed: each headline metric's mean over the seeds, its "
        "standard deviation and a Student t-interval (docs/statistics.md).",
        "Pairs of systems run on the same dataset and seed, compared item by item on each "
        "headline metric that is a mean over items: the mean of A's score minus B's, a "
        "paired bootstrap interval of it "
        f"({paired.get('resamples', 0):,} resamples of the items) and the two-sided p-value "
        "of a paired sign-flip test (exact up to "
        f"{paired.get('exact_up_to', 0)} items, else {paired.get('permutations', 0):,} "
        "random sign flips). Every pair of systems is tested, so the p-values are adjusted "
        "for multiple comparisons by Holm's step-down method over the pairs of one metric in "
        "one group; the unadjusted p-value is in each cell's tooltip."]
    return Section("seeds-and-pairs", "Seeds and paired differences", intro=intro,
                   tables=tables)
