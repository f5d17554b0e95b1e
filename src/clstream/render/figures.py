"""Charts for the report, returned as inline SVG markup (docs/design.md §10).

Why inline SVG: the report must open offline as one file, so every figure lives inside the
HTML; text stays text, so labels can be searched and selected. Element ids get a prefix derived
from the figure's content, so several SVGs can share one HTML document and the same summary
always yields the same bytes.

Who draws: the line, grouped-bar and stacked-bar charts (every chart of an OAKS report) are
written as SVG directly (:mod:`clstream.render.svg_charts`), so a report of a small results
directory does not pay for importing matplotlib (about half a second, more than reading the
directory). The other kinds, and every chart drawn inside :func:`capture_pdfs` (a paper
export needs a PDF drawn from the same figure as its SVG), are drawn with matplotlib
(:mod:`clstream.render.mpl_charts`), imported then and only then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from clstream.render.chart_style import (
    BandSeries,
    Panel,
    StackPanel,
    capture_pdfs,
    captured_pdfs,
    colors,
    colors_for,
    identical_groups,
    plain,
    series_style,
    shared_colours,
)

if TYPE_CHECKING:
    from clstream.render.mpl_charts import (
        band_chart,
        radar_chart,
        scatter_front,
        signed_bars,
        stacked_hbar_panels,
        xy_chart,
    )

__all__ = [
    "BandSeries", "Panel", "StackPanel", "band_chart", "capture_pdfs", "colors", "colors_for",
    "grouped_bars", "identical_groups", "line_chart", "plain", "radar_chart", "scatter_front",
    "series_style", "shared_colours", "signed_bars", "stacked_hbar_panels", "stacked_hbars",
    "xy_chart",
]


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
    if captured_pdfs() is not None:
        from clstream.render import mpl_charts

        return mpl_charts.line_chart(series, title=title, xlabel=xlabel, ylabel=ylabel,
                                     width=width, height=height, bands=bands)
    from clstream.render import svg_charts

    return svg_charts.line_chart(series, title=title, xlabel=xlabel, ylabel=ylabel,
                                 width=width, height=height, bands=bands)


def grouped_bars(panels: Sequence[Panel], series_labels: Sequence[str], *, title: str,
                 ylabel: str, width: float = 9.0, height: float = 3.4) -> Markup:
    """Side-by-side panels of bars grouped by category, one bar colour per series."""
    if captured_pdfs() is not None:
        from clstream.render import mpl_charts

        return mpl_charts.grouped_bars(panels, series_labels, title=title, ylabel=ylabel,
                                       width=width, height=height)
    from clstream.render import svg_charts

    return svg_charts.grouped_bars(panels, series_labels, title=title, ylabel=ylabel,
                                   width=width, height=height)


def stacked_hbars(rows: Sequence[str], parts: Sequence[tuple[str, Sequence[float | None], str]],
                  *, title: str, xlabel: str, width: float = 9.0) -> Markup:
    """One horizontal bar per row split into ``parts`` (name, value per row, colour); segments
    wide enough carry their value; the first row is drawn at the top."""
    if captured_pdfs() is not None:
        from clstream.render import mpl_charts

        return mpl_charts.stacked_hbars(rows, parts, title=title, xlabel=xlabel, width=width)
    from clstream.render import svg_charts

    return svg_charts.stacked_hbars(rows, parts, title=title, xlabel=xlabel, width=width)


_MATPLOTLIB_ONLY = frozenset({"xy_chart", "stacked_hbar_panels", "radar_chart", "band_chart",
                              "signed_bars", "scatter_front"})


def __getattr__(name: str) -> Any:
    """The chart kinds only matplotlib draws, imported on first use (module docstring)."""
    if name in _MATPLOTLIB_ONLY:
        from clstream.render import mpl_charts

        return getattr(mpl_charts, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
