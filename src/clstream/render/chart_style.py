"""What every report chart shares, whichever way it is drawn: the colour of each series label
across a report, the line style and marker of each series, the curves that coincide, and the
shapes of the data the chart functions take (docs/design.md §10).

Kept apart from the drawing (:mod:`clstream.render.svg_charts` writes SVG itself,
:mod:`clstream.render.mpl_charts` draws with matplotlib) so that a chart drawn either way gives
a system the same colour and marker, and so that reading these costs no matplotlib import.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

# Okabe-Ito colours (distinguishable with common colour-vision deficiencies), then tab20.
_PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000"]
_TAB20_BY_SHADE = [  # matplotlib's tab20, dark shades first
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
    "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"]


def rgb(colour: str) -> tuple[float, float, float]:
    """``#rrggbb`` as red, green and blue in [0, 1]."""
    return (int(colour[1:3], 16) / 255, int(colour[3:5], 16) / 255, int(colour[5:7], 16) / 255)


_EXTRA = [c for c in _TAB20_BY_SHADE  # without those too close to a palette colour
          if min(math.dist(rgb(c), rgb(p)) for p in _PALETTE) > 0.2]

Colour = str
_POOL: list[Colour] = [*_PALETTE, *_EXTRA]
_SHARED: ContextVar[dict[str, Colour] | None] = ContextVar("shared_colours", default=None)
_PDFS: ContextVar[dict[str, bytes] | None] = ContextVar("captured_pdfs", default=None)


def colors(n: int) -> list[Colour]:
    """``n`` distinct colours by position (a chart drawn outside :func:`shared_colours`)."""
    return [_POOL[i % len(_POOL)] for i in range(n)]


@contextmanager
def shared_colours() -> Iterator[None]:
    """Within this block a series label keeps one colour in every chart drawn, whichever
    charts leave it out, so a system reads the same across a report's charts."""
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def _colour_key(label: str) -> str:
    """A run shown with its coverage (``x (incomplete: 36% of tasks)``) keeps x's colour."""
    return label.split(" (incomplete", 1)[0]


def colors_for(labels: Sequence[str]) -> list[Colour]:
    """The colour of each series: by label inside :func:`shared_colours` (a new label takes
    the first colour no label has yet), else by position."""
    assigned = _SHARED.get()
    if assigned is None:
        return colors(len(labels))
    out = []
    for label in labels:
        key = _colour_key(label)
        if key not in assigned:
            assigned[key] = _POOL[len(assigned) % len(_POOL)]
        out.append(assigned[key])
    return out


# Dash patterns and marker shapes cycled by series position, on top of the colour, so series
# that coincide stay apart: one drawn over another still shows its gaps and its own markers.
# Four patterns and seven shapes (coprime) give 28 distinct combinations before one repeats.
DASHES: list[Any] = ["-", (0, (6, 2)), (0, (1.5, 1.5)), (0, (6, 2, 1.5, 2))]
MARKERS = ["o", "s", "^", "D", "v", "P", "X"]
MARKED_POINTS = 12  # a long series shows about this many markers, staggered by position


def series_style(index: int, n_points: int, *, dashes: bool = True) -> dict[str, Any]:
    """Line style and marker of the ``index``-th series of a chart (``Line2D`` keywords).

    A series of more than 30 points gets a marker every few points, starting at a different
    point per series, so markers of coinciding series do not hide each other. Without
    ``dashes`` the line stays solid (a chart whose caption reads solid against dashed)."""
    style: dict[str, Any] = {
        "linestyle": DASHES[index % len(DASHES)] if dashes else "-",
        "marker": MARKERS[index % len(MARKERS)],
        "markersize": 4.0,
    }
    if n_points > 30:
        step = -(-n_points // MARKED_POINTS)
        style["markevery"] = (index % step, step)
    return style


def identical_groups(curves: Sequence[tuple[str, Any]]) -> list[list[str]]:
    """Labels of the curves that coincide (equal data, in the order given), two or more per
    group; ``curves`` are (label, hashable data), missing points as ``None``."""
    groups: dict[Any, list[str]] = {}
    for label, data in curves:
        groups.setdefault(data, []).append(label)
    return [labels for labels in groups.values() if len(labels) > 1]


def curve_key(values: Sequence[float | None]) -> tuple[float | None, ...]:
    return tuple(None if v is None or math.isnan(v) else float(v) for v in values)




def plain(label: str) -> str:
    """A label matplotlib shows verbatim: no mathtext, and a leading '_' stays visible."""
    text = label.replace("$", r"\$")
    return " " + text if text.startswith("_") else text


@dataclass(frozen=True)
class Panel:
    """One axes of grouped bars: ``values[s][c]`` is series ``s`` at category ``c``."""

    title: str
    categories: list[str]
    values: list[list[float | None]]


def captured_pdfs() -> dict[str, bytes] | None:
    """Where a chart drawn now also leaves its PDF (inside :func:`capture_pdfs`), else None."""
    return _PDFS.get()


@contextmanager
def capture_pdfs() -> Iterator[dict[str, bytes]]:
    """Within this block every chart drawn is also saved as PDF, from the same matplotlib
    figure as its SVG; the dict yielded maps each chart's SVG markup to its PDF bytes. A paper
    export (:mod:`clstream.report.export`) needs both, and drawing the figure twice through two
    code paths could let them drift apart."""
    captured: dict[str, bytes] = {}
    token = _PDFS.set(captured)
    try:
        yield captured
    finally:
        _PDFS.reset(token)




def band_edges(band: Sequence[Sequence[float | None] | None], n: int
                ) -> tuple[list[float], list[float]]:
    """Lower and upper edges of an interval band over ``n`` points; an unknown interval (or
    one end unknown) leaves a gap in the band, as a missing value does in the line."""
    low, high = [], []
    for i in range(n):
        pair = band[i] if i < len(band) else None
        ends = (None, None) if pair is None or len(pair) != 2 else (pair[0], pair[1])
        if ends[0] is None or ends[1] is None:
            low.append(float("nan"))
            high.append(float("nan"))
        else:
            low.append(float(ends[0]))
            high.append(float(ends[1]))
    return low, high



@dataclass(frozen=True)
class StackPanel:
    """One axes of horizontal stacked bars: ``parts`` are (name, value per row, colour)."""

    title: str
    xlabel: str
    parts: list[tuple[str, list[float | None], str]]



@dataclass(frozen=True)
class BandSeries:
    """One line of :func:`~clstream.render.mpl_charts.band_chart`: ``ys`` over x = 1, 2, ..., an optional shaded band
    ``low``..``high`` around it, and an optional dashed reference line ``ref``."""

    label: str
    ys: Sequence[float]
    low: Sequence[float] | None = None
    high: Sequence[float] | None = None
    ref: Sequence[float] | None = None
    ref_label: str = ""
