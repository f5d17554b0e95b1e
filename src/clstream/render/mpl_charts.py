"""Report charts drawn with matplotlib, returned as inline SVG markup (and, inside
:func:`~clstream.render.chart_style.capture_pdfs`, saved as PDF from the same figure).

Imported only where a chart needs it (:mod:`clstream.render.figures`): a paper export's PDFs,
and the chart kinds :mod:`clstream.render.svg_charts` does not draw itself; importing
matplotlib costs about half a second, more than reading a small results directory.

Why inline SVG: the report must open offline as one file, so every figure lives inside the
HTML. Text stays text (``svg.fonttype = none``), so labels can be searched and selected, and
matplotlib escapes it. The pyplot state machine is never touched (figures are built with the
object API and saved through matplotlib's SVG writer), so rendering a report selects no global
backend. Element ids get a prefix derived from the figure's content, so several SVGs can share
one HTML document and the same summary always yields the same bytes.
"""

from __future__ import annotations

import hashlib
import io
import math
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import matplotlib
from markupsafe import Markup
from matplotlib.figure import Figure as MplFigure
from matplotlib.projections.polar import PolarAxes
from matplotlib.text import Annotation
from matplotlib.ticker import MaxNLocator

from clstream.render.chart_style import (
    DASHES,
    BandSeries,
    Panel,
    StackPanel,
    band_edges,
    captured_pdfs,
    colors_for,
    curve_key,
    identical_groups,
    plain,
    series_style,
)

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType


_RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "clstream-report",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica"],
    "font.size": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "legend.frameon": False,
}


def _note_identical(fig: MplFigure, legend: Any, groups: list[list[str]], width: float) -> None:
    """Under the legend, name the series drawn on top of each other (``identical curves:
    a, b; c, d``), since a reader cannot tell them apart by the lines alone."""
    if not groups or legend is None:
        return
    text = "identical curves: " + "; ".join(", ".join(g) for g in groups)
    wrapped = textwrap.fill(plain(text), width=max(40, int(width * 13)))
    fig.add_artist(Annotation(
        wrapped, xy=(0.5, 0.0), xycoords=legend, xytext=(0, -4), textcoords="offset points",
        ha="center", va="top", fontsize=9, color="#444444"))



def _pdf(fig: MplFigure) -> bytes:
    """The figure as PDF with TrueType fonts (text a journal's checks accept) and no creation
    date, so the same chart gives the same bytes."""
    buf = io.BytesIO()
    with matplotlib.rc_context({"pdf.fonttype": 42}):
        fig.savefig(buf, format="pdf", bbox_inches="tight", metadata={"CreationDate": None})
    return buf.getvalue()


def _svg(fig: MplFigure, label: str) -> Markup:
    markup = _svg_markup(fig, label)
    captured = captured_pdfs()
    if captured is not None:
        captured[str(markup)] = _pdf(fig)
    return markup


def _svg_markup(fig: MplFigure, label: str) -> Markup:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)
    prefix = "f" + hashlib.sha256((label + text).encode()).hexdigest()[:8] + "-"
    text = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{m.group(1)}"', text)
    text = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}{m.group(1)})", text)
    text = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}{m.group(1)}"', text)
    aria = label.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
    text = text.replace("<svg ", f'<svg role="img" aria-label="{aria}" ', 1)
    return Markup(text)


def _legend_below(fig: MplFigure, handles: list[Any], labels: list[str]) -> Any:
    if labels:
        return fig.legend(
            handles,
            labels,
            loc="upper center",
            bbox_to_anchor=(0.5, 0.0),
            ncol=min(len(labels), 4),
            handlelength=2.4,
        )
    return None


def line_chart(
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    width: float = 9.0,
    height: float = 3.4,
    bands: Mapping[str, Sequence[Sequence[float | None] | None]] | None = None,
) -> Markup:
    """One line per series over x = 1, 2, ...; missing values leave a gap. ``bands`` maps a
    series label to its interval ``[low, high]`` at each x (None where unknown), drawn as a
    shaded band in the series' colour behind its line."""
    with matplotlib.rc_context(_RC):
        fig = MplFigure(figsize=(width, height))
        ax = fig.add_subplot()
        longest = 1
        for i, ((label, ys), color) in enumerate(
                zip(series, colors_for([s[0] for s in series]), strict=True)):
            xs = list(range(1, len(ys) + 1))
            values = [float("nan") if y is None else y for y in ys]
            longest = max(longest, len(xs))
            ax.plot(xs, values, color=color, label=plain(label), linewidth=1.8,
                    **series_style(i, len(xs)))
            band = (bands or {}).get(label)
            if band:
                low, high = band_edges(band, len(xs))
                ax.fill_between(xs, low, high, color=color, alpha=0.15, linewidth=0)
        ax.set_xlim(0.5, longest + 0.5)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        locator = ax.xaxis.get_major_locator()  # AutoLocator, a MaxNLocator
        if isinstance(locator, MaxNLocator):
            locator.set_params(integer=True)
        handles, labels = ax.get_legend_handles_labels()
        legend = _legend_below(fig, handles, labels)
        _note_identical(fig, legend, identical_groups(
            [(label, curve_key(ys)) for label, ys in series]), width)
        fig.tight_layout()
        return _svg(fig, title)


def grouped_bars(
    panels: Sequence[Panel],
    series_labels: Sequence[str],
    *,
    title: str,
    ylabel: str,
    width: float = 9.0,
    height: float = 3.4,
) -> Markup:
    """Side-by-side panels of bars grouped by category, one bar colour per series."""
    n = max(len(series_labels), 1)
    with matplotlib.rc_context(_RC):
        fig = MplFigure(figsize=(width, height))
        ratios = [max(len(p.categories), 1) for p in panels]
        axes = fig.subplots(
            1, len(panels), sharey=True, squeeze=False, gridspec_kw={"width_ratios": ratios}
        )[0]
        bar = 0.8 / n
        for ax, panel in zip(axes, panels, strict=True):
            for s, (label, color) in enumerate(zip(series_labels, colors_for(series_labels),
                                                   strict=True)):
                xs = [c + (s - (n - 1) / 2) * bar for c in range(len(panel.categories))]
                ys = [float("nan") if v is None else v for v in panel.values[s]]
                ax.bar(xs, ys, width=bar * 0.92, color=color, label=plain(label))
            ax.set_xticks(range(len(panel.categories)), [plain(c) for c in panel.categories])
            ax.set_ylim(0, 1.04)  # headroom so a bar at 1.0 is not cut by the frame
            ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
            ax.grid(axis="x", visible=False)
            if panel.title:
                ax.set_title(panel.title, fontsize=10)
        axes[0].set_ylabel(ylabel)
        handles, labels = axes[0].get_legend_handles_labels()
        _legend_below(fig, handles, labels)
        fig.tight_layout()
        return _svg(fig, title)


def stacked_hbars(
    rows: Sequence[str],
    parts: Sequence[tuple[str, Sequence[float | None], str]],
    *,
    title: str,
    xlabel: str,
    width: float = 9.0,
) -> Markup:
    """One horizontal bar per row split into ``parts`` (name, value per row, colour).

    Segments wide enough carry their value; the first row is drawn at the top.
    """
    with matplotlib.rc_context(_RC):
        fig = MplFigure(figsize=(width, 0.9 + 0.42 * max(len(rows), 1)))
        ax = fig.add_subplot()
        ys = list(range(len(rows)))[::-1]
        left = [0.0] * len(rows)
        for name, values, color in parts:
            vals = [0.0 if v is None else v for v in values]
            ax.barh(ys, vals, left=left, color=color, label=plain(name), height=0.62)
            for y, x0, v in zip(ys, left, vals, strict=True):
                if v >= 0.07:
                    ink = (
                        "white"
                        if color in {"#0072B2", "#009E73", "#D55E00", "#555555"}
                        else "black"
                    )
                    ax.text(
                        x0 + v / 2, y, f"{v:.2f}", ha="center", va="center", fontsize=8.5, color=ink
                    )
            left = [a + b for a, b in zip(left, vals, strict=True)]
        ax.set_yticks(ys, [plain(r) for r in rows])
        ax.set_xlim(0, 1.0)
        ax.set_xlabel(xlabel)
        ax.grid(axis="y", visible=False)
        handles, labels = ax.get_legend_handles_labels()
        _legend_below(fig, handles, labels)
        fig.tight_layout()
        return _svg(fig, title)


def xy_chart(
    series: Sequence[tuple[str, Sequence[float], Sequence[float | None]]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    ylim: tuple[float, float] | None = (0.0, 1.02),
    log2_x: bool = False,
    zero_line: bool = False,
    width: float = 9.0,
    height: float = 3.4,
) -> Markup:
    """One line per series over its own x values (checkpoints, horizons); ``log2_x`` spaces
    powers of two evenly and labels the ticks with the x values themselves."""
    with matplotlib.rc_context(_RC):
        fig = MplFigure(figsize=(width, height))
        ax = fig.add_subplot()
        ticks: set[float] = set()
        for i, ((label, xs, ys), color) in enumerate(
                zip(series, colors_for([s[0] for s in series]), strict=True)):
            values = [float("nan") if y is None else y for y in ys]
            ticks.update(xs)
            ax.plot(xs, values, color=color, label=plain(label), linewidth=1.8,
                    **series_style(i, len(xs)))
        if log2_x and ticks and min(ticks) > 0:
            ax.set_xscale("log", base=2)
            shown = sorted(ticks)
            ax.set_xticks(shown, [f"{x:g}" for x in shown])
            ax.minorticks_off()
        if zero_line:
            ax.axhline(0.0, color="#888888", linewidth=0.8)
        if ylim is not None:
            ax.set_ylim(*ylim)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        handles, labels = ax.get_legend_handles_labels()
        legend = _legend_below(fig, handles, labels)
        _note_identical(fig, legend, identical_groups(
            [(label, (tuple(map(float, xs)), curve_key(ys))) for label, xs, ys in series]),
            width)
        fig.tight_layout()
        return _svg(fig, title)
def stacked_hbar_panels(
    rows: Sequence[str], panels: Sequence[StackPanel], *, title: str, width: float = 9.0
) -> Markup:
    """Side-by-side panels of absolute stacked bars (tokens, seconds), one bar per row, the
    first row at the top; the panels share rows and part colours, so one legend serves all."""
    with matplotlib.rc_context(_RC):
        fig = MplFigure(figsize=(width, 1.1 + 0.42 * max(len(rows), 1)))
        axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
        ys = list(range(len(rows)))[::-1]
        for ax, panel in zip(axes, panels, strict=True):
            left = [0.0] * len(rows)
            for name, values, color in panel.parts:
                vals = [0.0 if v is None else v for v in values]
                ax.barh(ys, vals, left=left, color=color, label=plain(name), height=0.62)
                left = [a + b for a, b in zip(left, vals, strict=True)]
            ax.set_title(panel.title, fontsize=10)
            ax.set_xlabel(panel.xlabel)
            ax.grid(axis="y", visible=False)
        axes[0].set_yticks(ys, [plain(r) for r in rows])
        handles, labels = axes[0].get_legend_handles_labels()
        _legend_below(fig, handles, labels)
        fig.tight_layout()
        return _svg(fig, title)


def radar_chart(
    dimensions: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    *,
    title: str,
    width: float = 5.6,
    height: float = 5.0,
) -> Markup:
    """One closed polygon per series over ``dimensions`` (values in [0, 1], outward = better).

    The radius is the score itself: 0 at the centre, 1 on the rim, the rings labelled from
    0 up, so a small polygon means low scores. A series at 0 on every dimension is a point at
    the centre (no polygon); values are drawn clipped to [0, 1] (the numbers under the chart
    keep them as they are)."""
    with matplotlib.rc_context(_RC):
        fig = MplFigure(figsize=(width, height))
        ax = fig.add_subplot(projection="polar")
        assert isinstance(ax, PolarAxes)
        ax.set_theta_offset(math.pi / 2)  # the first dimension at the top, then clockwise
        ax.set_theta_direction(-1)
        angles = [2 * math.pi * i / len(dimensions) for i in range(len(dimensions))]
        for i, ((label, values), color) in enumerate(
                zip(series, colors_for([s[0] for s in series]), strict=True)):
            radii = [min(max(float(v), 0.0), 1.0) for v in values]
            style = series_style(i, len(radii))
            if not any(radii):
                ax.plot([0.0], [0.0], color=color, label=plain(label), linestyle="none",
                        marker=style["marker"], markersize=6.0, zorder=4)
                continue
            xs, ys = [*angles, angles[0]], [*radii, radii[0]]
            ax.plot(xs, ys, color=color, label=plain(label), linewidth=1.8, **style)
            ax.fill(xs, ys, color=color, alpha=0.08)
        ax.set_xticks(angles, [plain(d) for d in dimensions])
        ax.set_rorigin(0.0)
        ax.set_rlim(0.0, 1.0)
        ax.set_yticks([0.25, 0.5, 0.75, 1.0], ["0.25", "0.5", "0.75", "1"], fontsize=8)
        # matplotlib writes no tick label at the origin, so the centre's value is put there
        ax.annotate("0", xy=(0.0, 0.0), xytext=(3, 2), textcoords="offset points", fontsize=8,
                    ha="left", va="bottom", color="#444444")
        handles, labels = ax.get_legend_handles_labels()
        legend = _legend_below(fig, handles, labels)
        _note_identical(fig, legend, identical_groups(
            [(label, curve_key(values)) for label, values in series]), width)
        fig.tight_layout()
        return _svg(fig, title)
def band_chart(
    series: Sequence[BandSeries],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    width: float = 9.0,
    height: float = 3.4,
) -> Markup:
    """Lines with shaded bands (a spread over repetitions) and dashed reference lines in the
    same colour, over x = 1, 2, ...; the y axis fits the data."""
    with matplotlib.rc_context(_RC):
        fig = MplFigure(figsize=(width, height))
        ax = fig.add_subplot()
        longest = 1
        curves: list[tuple[str, Any]] = []
        for i, (s, color) in enumerate(
                zip(series, colors_for([s.label for s in series]), strict=True)):
            xs = list(range(1, len(s.ys) + 1))
            longest = max(longest, len(xs))
            ax.plot(xs, list(s.ys), color=color, label=plain(s.label), linewidth=1.8,
                    **series_style(i, len(xs), dashes=False))
            curves.append((s.label, curve_key(s.ys)))
            if s.low is not None and s.high is not None:
                ax.fill_between(xs, list(s.low), list(s.high), color=color, alpha=0.18,
                                linewidth=0)
            if s.ref is not None:
                ref_style = series_style(i, len(s.ref))
                ref_style["linestyle"] = DASHES[1 + i % (len(DASHES) - 1)]
                ax.plot(list(range(1, len(s.ref) + 1)), list(s.ref), color=color,
                        linewidth=1.2, markerfacecolor="white", label=plain(s.ref_label or s.label),
                        **ref_style)
                curves.append((s.ref_label or s.label, curve_key(s.ref)))
        ax.set_xlim(0.5, longest + 0.5)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        locator = ax.xaxis.get_major_locator()
        if isinstance(locator, MaxNLocator):
            locator.set_params(integer=True)
        handles, labels = ax.get_legend_handles_labels()
        legend = _legend_below(fig, handles, labels)
        _note_identical(fig, legend, identical_groups(curves), width)
        fig.tight_layout()
        return _svg(fig, title)


def signed_bars(
    categories: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    title: str,
    ylabel: str,
    width: float = 9.0,
    height: float = 3.4,
) -> Markup:
    """Bars grouped by category, one colour per series, on an axis that fits negative values
    too (with a line at zero); a missing value leaves a gap."""
    n = max(len(series), 1)
    with matplotlib.rc_context(_RC):
        fig = MplFigure(figsize=(width, height))
        ax = fig.add_subplot()
        bar = 0.8 / n
        for s, ((label, values), color) in enumerate(
                zip(series, colors_for([label for label, _ in series]), strict=True)):
            xs = [c + (s - (n - 1) / 2) * bar for c in range(len(categories))]
            ys = [float("nan") if v is None else v for v in values]
            ax.bar(xs, ys, width=bar * 0.92, color=color, label=plain(label))
        ax.axhline(0.0, color="#888888", linewidth=0.8)
        ax.set_xticks(range(len(categories)), [plain(c) for c in categories])
        ax.grid(axis="x", visible=False)
        ax.set_ylabel(ylabel)
        handles, labels = ax.get_legend_handles_labels()
        _legend_below(fig, handles, labels)
        fig.tight_layout()
        return _svg(fig, title)


def scatter_front(
    points: Sequence[tuple[str, float, float]],
    front: Sequence[str],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    width: float = 5.6,
    height: float = 3.8,
    diagonal: bool = False,
) -> Markup:
    """One labelled point per (label, x, y), one colour each, and a step line through the
    points named in ``front`` (a Pareto front, in increasing x); with ``diagonal``, the line
    y = x over the points' range (where a caption reads points against it)."""
    with matplotlib.rc_context(_RC):
        fig = MplFigure(figsize=(width, height))
        ax = fig.add_subplot()
        for (label, x, y), color in zip(points, colors_for([p[0] for p in points]), strict=True):
            ax.scatter([x], [y], color=color, label=plain(label), s=36, zorder=3)
        at = {label: (x, y) for label, x, y in points}
        shown = [at[label] for label in front if label in at]
        if len(shown) > 1:
            ax.plot([p[0] for p in shown], [p[1] for p in shown], color="#555555",
                    linewidth=1.0, linestyle=":", drawstyle="steps-post", zorder=2,
                    label="Pareto front")
        ax.axhline(0.0, color="#888888", linewidth=0.8)
        if diagonal and points:
            values = [v for _, x, y in points for v in (x, y)]
            low, high = min(0.0, *values), max(1.0, *values)
            ax.plot([low, high], [low, high], color="#888888", linewidth=1.0, linestyle="--",
                    zorder=1, label="y = x")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        handles, labels = ax.get_legend_handles_labels()
        _legend_below(fig, handles, labels)
        fig.tight_layout()
        return _svg(fig, title)
