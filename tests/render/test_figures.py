"""Report charts: one colour per series label across a report; the lines captions read against."""

from __future__ import annotations

import math
import re

from clstream.render.figures import (
    colors_for,
    line_chart,
    radar_chart,
    scatter_front,
    shared_colours,
    xy_chart,
)


def _stroke_colours(svg: str) -> set[str]:
    return set(re.findall(r"stroke: (#[0-9a-f]{6})", svg))


def test_a_system_keeps_its_colour_when_a_neighbouring_chart_leaves_others_out() -> None:
    with shared_colours():
        first = colors_for(["full", "rag:k=4", "window:w=4"])
        second = colors_for(["window:w=4 (incomplete: 50% of tasks)", "new"])
        lines = str(line_chart([("window:w=4", [0.1, 0.2])], title="t", xlabel="x",
                               ylabel="y"))
        dots = str(scatter_front([("rag:k=4", 0.3, 0.2)], [], title="s", xlabel="x",
                                 ylabel="y"))
    assert second[0] == first[2]
    assert len({*first, second[1]}) == 4  # a new label takes a colour no label has
    assert str(first[2]).lower() in _stroke_colours(lines)
    assert str(first[1]).lower() in dots.lower()
    assert str(first[0]).lower() not in dots.lower()


def test_outside_a_report_colours_go_by_position() -> None:
    assert colors_for(["b", "a"]) == colors_for(["a", "b"])


def test_a_scatter_draws_the_diagonal_its_caption_reads_against() -> None:
    points = [("a", 0.6, 0.4), ("b", 0.9, 0.85)]
    plain = str(scatter_front(points, [], title="s", xlabel="x", ylabel="y"))
    with_line = str(scatter_front(points, [], title="s", xlabel="x", ylabel="y",
                                  diagonal=True))
    assert "y = x" in with_line and "y = x" not in plain


def _look(svg: str, colour: str) -> tuple[set[str], set[str]]:
    """The dash patterns and marker shapes (outlines of their definitions) drawn in ``colour``."""
    dashes = {m.group(1) or "solid" for m in re.finditer(
        rf'<path d="[^"]*"[^>]*style="[^"]*?(?:stroke-dasharray: ([^;"]+))?[^"]*stroke: {colour}',
        svg)}
    outline = dict(re.findall(r'<path id="([^"]+)" d="([^"]*)"', svg))
    shapes = {outline[ref] for ref in re.findall(
        rf'<use xlink:href="#([^"]+)"[^>]*style="[^"]*stroke: {colour}', svg)}
    return dashes, shapes


def test_coinciding_curves_are_drawn_apart_and_named_under_the_chart() -> None:
    series = [("first", [0.2, 0.4, 0.4]), ("second", [0.2, 0.4, 0.4]), ("other", [0.9, 0.9, 0.9])]
    svg = str(line_chart(series, title="t", xlabel="x", ylabel="y"))
    first, second, _ = (str(c).lower() for c in colors_for([s[0] for s in series]))
    first_dashes, first_shapes = _look(svg, first)
    second_dashes, second_shapes = _look(svg, second)
    assert first_shapes and second_shapes
    assert first_dashes != second_dashes or first_shapes != second_shapes
    assert first_shapes.isdisjoint(second_shapes)  # marker shapes differ, not just colours
    assert "identical curves: first, second<" in svg


def test_distinct_curves_get_no_identical_note() -> None:
    svg = str(xy_chart([("a", [1, 2], [0.1, 0.2]), ("b", [1, 2], [0.1, 0.3])], title="t",
                       xlabel="x", ylabel="y"))
    assert "identical curves" not in svg


def _marker_points(svg: str, colour: str) -> list[tuple[float, float]]:
    """Where markers in ``colour`` are drawn in the axes (a closed polygon's first vertex
    once; the legend's sample markers left out)."""
    axes = svg[: svg.index("legend_1")]
    return sorted({(float(x), float(y)) for x, y in re.findall(
        rf'<use xlink:href="#[^"]+" x="([-\d.]+)" y="([-\d.]+)"[^>]*stroke: {colour}', axes)})


def test_a_radar_measures_from_zero_at_the_centre() -> None:
    series = [("full", [1.0] * 4), ("half", [0.5] * 4), ("none", [0.0] * 4)]
    svg = str(radar_chart(["a", "b", "c", "d"], series, title="r"))
    full, half, none = (str(c).lower() for c in colors_for([s[0] for s in series]))
    rim = _marker_points(svg, full)
    assert len(rim) == 4  # a marker on each vertex
    cx, cy = (sum(p[0] for p in rim) / len(rim), sum(p[1] for p in rim) / len(rim))
    radius = math.dist(rim[0], (cx, cy))
    assert radius > 20
    for x, y in _marker_points(svg, half):  # half the score, half the way out
        assert abs(math.dist((x, y), (cx, cy)) - radius / 2) < 0.5
    centre = _marker_points(svg, none)
    assert centre and all(math.dist(p, (cx, cy)) < 0.5 for p in centre)
    fills = re.findall(rf'<path d="[^"]*z\\s*"[^>]*style="fill: {none}', svg)
    assert not fills  # no polygon for a series of zeros
    assert re.search(r">0</text>", svg)  # the centre's scale is written on the axis
