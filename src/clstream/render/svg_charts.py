"""Line, grouped-bar and stacked-bar charts written as SVG directly, without matplotlib.

A report of a small results directory spent more CPU importing matplotlib than reading the
directory; these three kinds (every chart of an OAKS report) are simple enough to lay out
here. They follow the matplotlib charts of :mod:`clstream.render.mpl_charts` in what a reader
and the tests rely on: the colour, dash pattern and marker of each series
(:mod:`clstream.render.chart_style`), axes from 0 to 1 with a light grid, the legend below
the axes, the note naming curves drawn on top of each other, every label as text (escaped,
shown verbatim), markers as ``<use>`` of one outline per series, and ids prefixed with a hash
of the chart, so charts share a page and the same data gives the same bytes. Lengths are in
points, as matplotlib writes them; text widths are estimated from the character count.
"""

from __future__ import annotations

import hashlib
import math
import textwrap
from collections.abc import Mapping, Sequence

from markupsafe import Markup, escape

from clstream.render.chart_style import (
    Panel,
    band_edges,
    colors_for,
    curve_key,
    identical_groups,
    series_style,
)

PT_PER_INCH = 72.0
FONT = 10.0
CHAR_WIDTH = 0.6  # of the font size, a sans-serif's average advance (DejaVu Sans: ~0.6)
_ID = "\x00"  # stands for the chart's id prefix until it is known; no escaped text holds it
_LEGEND_ROW = 16.0
_NOTE_ROW = 12.0
_INK_ON_DARK = {"#0072B2", "#009E73", "#D55E00", "#555555"}

_OUTLINES = {  # marker outlines around (0, 0), about markersize 4 across
    "o": "M 0 -2 A 2 2 0 1 1 0 2 A 2 2 0 1 1 0 -2 Z",
    "s": "M -2 -2 L 2 -2 L 2 2 L -2 2 Z",
    "^": "M 0 -2.3 L 2 1.5 L -2 1.5 Z",
    "D": "M 0 -2.6 L 2.6 0 L 0 2.6 L -2.6 0 Z",
    "v": "M 0 2.3 L 2 -1.5 L -2 -1.5 Z",
    "P": "M -0.7 -2.2 L 0.7 -2.2 L 0.7 -0.7 L 2.2 -0.7 L 2.2 0.7 L 0.7 0.7 L 0.7 2.2 "
         "L -0.7 2.2 L -0.7 0.7 L -2.2 0.7 L -2.2 -0.7 L -0.7 -0.7 Z",
    "X": "M -1.6 -2.4 L 0 -0.8 L 1.6 -2.4 L 2.4 -1.6 L 0.8 0 L 2.4 1.6 L 1.6 2.4 L 0 0.8 "
         "L -1.6 2.4 L -2.4 1.6 L -0.8 0 L -2.4 -1.6 Z",
}


def _n(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".") if math.isfinite(value) else "0"


def _text_width(text: str, size: float = FONT) -> float:
    return len(text) * size * CHAR_WIDTH


def _safe(text: str) -> str:
    return str(escape(text.replace(_ID, "\ufffd")))


def _dasharray(style: object, linewidth: float) -> str:
    """matplotlib's ``(offset, (on, off, ...))`` dash pattern, scaled by the line width as
    matplotlib scales it; empty for a solid line."""
    if not isinstance(style, tuple):
        return ""
    return ",".join(_n(v * linewidth) for v in style[1])


class _Canvas:
    """SVG elements in drawing order, with the definitions (marker outlines) they use."""

    def __init__(self) -> None:
        self.defs: list[str] = []
        self.body: list[str] = []
        self.groups = 0

    def group(self, kind: str, elements: list[str]) -> None:
        if elements:
            self.groups += 1
            self.body.append(f'<g id="{_ID}{kind}{self.groups}">' + "".join(elements) + "</g>")

    def text(self, x: float, y: float, text: str, *, anchor: str = "middle",
             size: float = FONT, colour: str = "#000000", rotate: bool = False) -> str:
        turn = f' transform="rotate(-90 {_n(x)} {_n(y)})"' if rotate else ""
        return (f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}"{turn} '
                f'style="font-size: {_n(size)}px; fill: {colour}">{_safe(text)}</text>')

    def marker(self, symbol: str, colour: str) -> str:
        """A new outline of ``symbol`` (one per series) and its id."""
        ref = f"{_ID}m{len(self.defs)}"
        self.defs.append(f'<path id="{ref}" d="{_OUTLINES[symbol]}" '
                         f'style="stroke: {colour.lower()}; stroke-width: 1"/>')
        return ref

    def markup(self, width: float, height: float, label: str) -> Markup:
        body = "".join(self.body)
        defs = "<defs>" + "".join(self.defs) + "</defs>" if self.defs else ""
        prefix = "f" + hashlib.sha256((label + defs + body).encode()).hexdigest()[:8] + "-"
        aria = _safe(label)
        svg = (f'<svg role="img" aria-label="{aria}" xmlns="http://www.w3.org/2000/svg" '
               f'xmlns:xlink="http://www.w3.org/1999/xlink" width="{_n(width)}pt" '
               f'height="{_n(height)}pt" viewBox="0 0 {_n(width)} {_n(height)}" '
               f'version="1.1" style="font-family: \'DejaVu Sans\', Arial, Helvetica, '
               f'sans-serif">{defs}{body}</svg>')
        return Markup(svg.replace(_ID, prefix))


def _use(ref: str, x: float, y: float, colour: str) -> str:
    c = colour.lower()
    return f'<use xlink:href="#{ref}" x="{_n(x)}" y="{_n(y)}" style="fill: {c}; stroke: {c}"/>'


def _line(points: Sequence[tuple[float, float]], colour: str, width: float,
          dashes: str = "") -> str:
    d = " ".join(f"{'M' if i == 0 else 'L'} {_n(x)} {_n(y)}" for i, (x, y) in enumerate(points))
    dash = f"stroke-dasharray: {dashes}; " if dashes else ""
    return (f'<path d="{d}" style="fill: none; {dash}stroke: {colour.lower()}; '
            f'stroke-width: {_n(width)}; stroke-linecap: square"/>')


def _rect(x: float, y: float, w: float, h: float, colour: str) -> str:
    return (f'<path d="M {_n(x)} {_n(y)} L {_n(x + w)} {_n(y)} L {_n(x + w)} {_n(y + h)} '
            f'L {_n(x)} {_n(y + h)} Z" style="fill: {colour.lower()}"/>')


def _grid(canvas: _Canvas, xs: Sequence[float], ys: Sequence[float], box: tuple[float, ...]
          ) -> None:
    left, top, right, bottom = box
    lines = [_line([(x, top), (x, bottom)], "#dddddd", 0.6) for x in xs]
    lines += [_line([(left, y), (right, y)], "#dddddd", 0.6) for y in ys]
    canvas.group("grid", lines)


def _spines(canvas: _Canvas, box: tuple[float, ...]) -> None:
    left, top, right, bottom = box
    canvas.group("axes", [_line([(left, top), (left, bottom), (right, bottom)], "#000000", 0.8)])


def _legend(canvas: _Canvas, entries: list[tuple[str, list[str]]], centre: float, top: float
            ) -> tuple[float, float]:
    """Entries (label, sample elements drawn around (0, 0)) in rows of up to four, centred
    under the axes; returns the legend's width and height."""
    if not entries:
        return 0.0, 0.0
    columns = min(len(entries), 4)
    cell = max(_text_width(label) for label, _ in entries) + 24 + 6 + 14
    start = centre - columns * cell / 2
    items = []
    for i, (label, sample) in enumerate(entries):
        x = start + (i % columns) * cell
        y = top + (i // columns + 0.5) * _LEGEND_ROW
        items.append(f'<g transform="translate({_n(x + 12)} {_n(y)})">' + "".join(sample)
                     + "</g>")
        items.append(canvas.text(x + 30, y + FONT * 0.35, label, anchor="start"))
    canvas.group("legend", items)
    return columns * cell, math.ceil(len(entries) / columns) * _LEGEND_ROW


def _note(canvas: _Canvas, groups: list[list[str]], centre: float, top: float, width: float
          ) -> float:
    """Under the legend, the series drawn on top of each other (``identical curves: a, b``),
    which a reader cannot tell apart by the lines alone; returns the height it takes."""
    if not groups:
        return 0.0
    text = "identical curves: " + "; ".join(", ".join(g) for g in groups)
    lines = textwrap.wrap(text, width=max(40, int(width * 13)))
    canvas.group("note", [canvas.text(centre, top + (i + 0.8) * _NOTE_ROW, line, size=9,
                                      colour="#444444") for i, line in enumerate(lines)])
    return len(lines) * _NOTE_ROW


def _int_ticks(last: int) -> list[int]:
    """Integer ticks over 1..``last``: a step of 1, 2 or 5 times a power of ten, at most ten."""
    step, power = 1, 1
    while last // step > 10:
        step = next((f * power for f in (2, 5, 10) if last // (f * power) <= 10), 10 * power)
        power *= 10
    return list(range(step, last + 1, step)) if step > 1 else list(range(1, last + 1))


_UNIT_TICKS = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]


def line_chart(series: Sequence[tuple[str, Sequence[float | None]]], *, title: str,
               xlabel: str, ylabel: str, width: float = 9.0, height: float = 3.4,
               bands: Mapping[str, Sequence[Sequence[float | None] | None]] | None = None
               ) -> Markup:
    """:func:`clstream.render.figures.line_chart`, drawn here."""
    canvas = _Canvas()
    w, h = width * PT_PER_INCH, height * PT_PER_INCH
    box = (52.0, 8.0, w - 10.0, h - 36.0)
    left, top, right, bottom = box
    longest = max([1, *(len(ys) for _, ys in series)])

    def px(x: float) -> float:
        return left + (x - 0.5) / longest * (right - left)

    def py(y: float) -> float:
        return bottom - y / 1.02 * (bottom - top)

    xticks = _int_ticks(longest)
    _grid(canvas, [px(t) for t in xticks], [py(t) for t in _UNIT_TICKS], box)
    colours = colors_for([label for label, _ in series])
    entries = []
    for i, ((label, ys), colour) in enumerate(zip(series, colours, strict=True)):
        band = (bands or {}).get(label)
        if band:
            low, high = band_edges(band, len(ys))
            polygons: list[list[tuple[int, float, float]]] = []
            run: list[tuple[int, float, float]] = []
            for j, (lo, hi) in enumerate([*zip(low, high, strict=True), (math.nan, math.nan)]):
                if math.isnan(lo) or math.isnan(hi):
                    if run:
                        polygons.append(run)
                    run = []
                else:
                    run.append((j + 1, lo, hi))
            canvas.group("band", [
                '<path d="' + " ".join(
                    f"{'M' if k == 0 else 'L'} {_n(x)} {_n(y)}" for k, (x, y) in enumerate(
                        [(px(x), py(hi)) for x, _, hi in poly]
                        + [(px(x), py(lo)) for x, lo, _ in reversed(poly)]))
                + f' Z" style="fill: {colour.lower()}; fill-opacity: 0.15; stroke: none"/>'
                for poly in polygons])
        style = series_style(i, len(ys))
        dashes = _dasharray(style["linestyle"], 1.8)
        segments: list[list[tuple[float, float]]] = [[]]
        for j, y in enumerate(ys):
            if y is None or math.isnan(y):
                segments.append([])
            else:
                segments[-1].append((px(j + 1), py(min(max(float(y), -0.5), 1.5))))
        ref = canvas.marker(style["marker"], colour)
        start, step = style.get("markevery", (0, 1))
        dots = [_use(ref, px(j + 1), py(float(y)), colour) for j, y in enumerate(ys)
                if j >= start and (j - start) % step == 0 and y is not None
                and not math.isnan(y)]
        canvas.group("line", [_line(s, colour, 1.8, dashes) for s in segments if s] + dots)
        entries.append((label, [_line([(-12, 0), (12, 0)], colour, 1.8, dashes),
                                _use(ref, 0, 0, colour)]))
    _spines(canvas, box)
    axis = [canvas.text(px(t), bottom + 13, str(t)) for t in xticks]
    axis += [canvas.text(left - 5, py(t) + 3.5, f"{t:.1f}", anchor="end") for t in _UNIT_TICKS]
    axis += [canvas.text((left + right) / 2, bottom + 29, xlabel),
             canvas.text(14, (top + bottom) / 2, ylabel, rotate=True)]
    canvas.group("labels", axis)
    legend_w, legend_h = _legend(canvas, entries, w / 2, h)
    note_h = _note(canvas, identical_groups([(label, curve_key(ys)) for label, ys in series]),
                   w / 2, h + legend_h, width)
    return canvas.markup(max(w, legend_w + 10), h + legend_h + note_h + 4, title)


def grouped_bars(panels: Sequence[Panel], series_labels: Sequence[str], *, title: str,
                 ylabel: str, width: float = 9.0, height: float = 3.4) -> Markup:
    """:func:`clstream.render.figures.grouped_bars`, drawn here."""
    canvas = _Canvas()
    w, h = width * PT_PER_INCH, height * PT_PER_INCH
    n = max(len(series_labels), 1)
    colours = colors_for(series_labels)
    titled = any(p.title for p in panels)
    top, bottom, gap = (26.0 if titled else 8.0), h - 22.0, 14.0
    ratios = [max(len(p.categories), 1) for p in panels]
    span = (w - 52.0 - 10.0 - gap * (len(panels) - 1)) / max(sum(ratios), 1)
    widest = max((_text_width(c) for p in panels for c in p.categories), default=0.0)
    # category labels wider than their slot are set upright, hanging under their bars (a
    # slanted label would reach past the chart's left edge), and the chart grows downwards
    # to hold them, so that no label runs into the next
    tilted = widest > span * 0.95
    h += widest if tilted else 0.0
    bar = 0.8 / n
    x0 = 52.0
    labels: list[str] = []

    def py(y: float) -> float:
        return bottom - y / 1.04 * (bottom - top)

    for panel, ratio in zip(panels, ratios, strict=True):
        box = (x0, top, x0 + ratio * span, bottom)
        _grid(canvas, [], [py(t) for t in _UNIT_TICKS], box)

        def px(x: float, x0: float = x0) -> float:
            return x0 + (x + 0.5) * span

        bars = []
        for s, colour in enumerate(colours):
            for c in range(len(panel.categories)):
                value = panel.values[s][c] if s < len(panel.values) else None
                if value is None or math.isnan(value):
                    continue
                centre = c + (s - (n - 1) / 2) * bar
                y = py(max(0.0, min(float(value), 1.04)))
                bars.append(_rect(px(centre - bar * 0.46), y, bar * 0.92 * span, bottom - y,
                                  colour))
        canvas.group("bars", bars)
        _spines(canvas, box)
        labels += [canvas.text(px(c) + 3.5, bottom + 6, name, anchor="end", rotate=True)
                   if tilted else
                   canvas.text(px(c), bottom + 13, name)
                   for c, name in enumerate(panel.categories)]
        if panel.title:
            labels.append(canvas.text((box[0] + box[2]) / 2, top - 8, panel.title))
        x0 = box[2] + gap
    labels += [canvas.text(47, py(t) + 3.5, f"{t:.1f}", anchor="end") for t in _UNIT_TICKS]
    labels.append(canvas.text(14, (top + bottom) / 2, ylabel, rotate=True))
    canvas.group("labels", labels)
    legend_w, legend_h = _legend(canvas, [(label, [_rect(-8, -5, 16, 10, colour)]) for
                                          label, colour in zip(series_labels, colours,
                                                               strict=True)], w / 2, h)
    return canvas.markup(max(w, legend_w + 10), h + legend_h + 4, title)


def stacked_hbars(rows: Sequence[str], parts: Sequence[tuple[str, Sequence[float | None], str]],
                  *, title: str, xlabel: str, width: float = 9.0) -> Markup:
    """:func:`clstream.render.figures.stacked_hbars`, drawn here."""
    canvas = _Canvas()
    w = width * PT_PER_INCH
    h = (0.9 + 0.42 * max(len(rows), 1)) * PT_PER_INCH
    left = 12.0 + max([0.0, *(_text_width(r) for r in rows)])
    box = (left, 8.0, w - 10.0, h - 36.0)
    _, top, right, bottom = box
    row_h = (bottom - top) / max(len(rows), 1)

    def px(x: float) -> float:
        return left + x * (right - left)

    _grid(canvas, [px(t) for t in _UNIT_TICKS], [], box)
    ends = [0.0] * len(rows)
    for _, values, colour in parts:
        segments, texts = [], []
        for r, value in enumerate(values):
            v = 0.0 if value is None else float(value)
            y = top + (r + 0.19) * row_h
            segments.append(_rect(px(ends[r]), y, v * (right - left), row_h * 0.62, colour))
            if v >= 0.07:
                ink = "#ffffff" if colour in _INK_ON_DARK else "#000000"
                texts.append(canvas.text(px(ends[r] + v / 2), y + row_h * 0.31 + 3, f"{v:.2f}",
                                         size=8.5, colour=ink))
            ends[r] += v
        canvas.group("bars", segments + texts)
    _spines(canvas, box)
    labels = [canvas.text(left - 5, top + (r + 0.5) * row_h + 3.5, row, anchor="end")
              for r, row in enumerate(rows)]
    labels += [canvas.text(px(t), bottom + 13, f"{t:.1f}") for t in _UNIT_TICKS]
    labels.append(canvas.text((left + right) / 2, bottom + 29, xlabel))
    canvas.group("labels", labels)
    legend_w, legend_h = _legend(canvas, [(name, [_rect(-8, -5, 16, 10, colour)])
                                          for name, _, colour in parts], w / 2, h)
    return canvas.markup(max(w, legend_w + 10), h + legend_h + 4, title)

