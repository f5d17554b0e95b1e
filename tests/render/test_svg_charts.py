"""Charts written as SVG without matplotlib: well-formed, every label as text, missing values
left out, bands where given, and matplotlib neither imported for them nor for a report's
module; inside a PDF capture the same calls are drawn with matplotlib."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET

from clstream.render.figures import Panel, capture_pdfs, grouped_bars, line_chart, stacked_hbars
from clstream.render.svg_charts import _int_ticks

SVG = "{http://www.w3.org/2000/svg}"


def _texts(svg: str) -> list[str]:
    return [t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text")]


def test_a_line_chart_is_well_formed_with_its_labels_and_gaps() -> None:
    svg = str(line_chart([("a<b", [0.1, None, 0.3]), ("c", [0.5, 0.6, 0.7])], title="T & t",
                         xlabel="interval", ylabel="accuracy",
                         bands={"c": [[0.4, 0.6], None, [0.6, 0.8]]}))
    root = ET.fromstring(svg)
    assert root.get("aria-label") == "T & t"
    assert {"a<b", "c", "interval", "accuracy", "0.0", "1.0"} <= set(_texts(svg))
    # the gap splits a's line in two paths of one point each; c's band, where known, is
    # two separate polygons of one point: none drawn across the unknown interval
    lines = re.findall(r'<path d="(M [^"]*)" style="fill: none; [^"]*stroke-width: 1.8', svg)
    assert any(d.count("L") == 0 for d in lines)
    assert svg.count("fill-opacity: 0.15") == 2
    ids = re.findall(r'\bid="([^"]+)"', svg)
    assert len(ids) == len(set(ids))
    assert all(ref in ids for ref in re.findall(r'href="#([^"]+)"', svg))
    assert svg == str(line_chart([("a<b", [0.1, None, 0.3]), ("c", [0.5, 0.6, 0.7])],
                                 title="T & t", xlabel="interval", ylabel="accuracy",
                                 bands={"c": [[0.4, 0.6], None, [0.6, 0.8]]}))


def test_bars_show_every_category_series_and_value() -> None:
    bars = str(grouped_bars([Panel("left", ["x", "y"], [[0.2, None], [1.0, 0.5]]),
                             Panel("right", ["z"], [[0.3], [0.4]])], ["s1", "s2"],
                            title="bars", ylabel="share"))
    assert {"left", "right", "x", "y", "z", "s1", "s2", "share"} <= set(_texts(bars))
    stacked = str(stacked_hbars(["r1", "r2"], [("A", [0.5, 0.05], "#0072B2"),
                                               ("B", [0.5, None], "#E69F00")],
                                title="stack", xlabel="share of intervals"))
    texts = _texts(stacked)
    assert {"r1", "r2", "A", "B", "share of intervals"} <= set(texts)
    assert texts.count("0.50") == 2 and "0.05" not in texts  # too narrow to carry its value


def test_integer_ticks_are_few_and_round() -> None:
    assert _int_ticks(1) == [1]
    assert _int_ticks(10) == list(range(1, 11))
    assert _int_ticks(40) == [5, 10, 15, 20, 25, 30, 35, 40]
    assert _int_ticks(1234) == [200, 400, 600, 800, 1000, 1200]


def test_inside_a_pdf_capture_the_chart_is_drawn_with_matplotlib() -> None:
    with capture_pdfs() as pdfs:
        svg = str(line_chart([("a", [0.1, 0.2])], title="t", xlabel="x", ylabel="y"))
    assert pdfs[svg].startswith(b"%PDF-")
    assert svg != str(line_chart([("a", [0.1, 0.2])], title="t", xlabel="x", ylabel="y"))


def test_a_report_of_these_charts_imports_no_matplotlib() -> None:
    code = ("import sys\n"
            "from clstream.report.html import render_html\n"
            "from clstream.render.figures import line_chart\n"
            "line_chart([('a', [0.5])], title='t', xlabel='x', ylabel='y')\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_bar_labels_wider_than_their_slot_stand_upright_and_the_chart_grows_to_hold_them() -> None:
    short = str(grouped_bars([Panel("", ["a", "b"], [[0.5, 0.5]])], ["s"], title="t",
                             ylabel="y"))
    names = [f"mem0:retriever=bm25,variant={i}" for i in range(8)]
    long = str(grouped_bars([Panel("", names, [[0.5] * 8])], ["s"], title="t", ylabel="y"))
    upright = r'text-anchor="end" transform="rotate\(-90 [^"]+\)"[^>]*>([^<]+)<'
    assert not re.findall(upright, short)
    assert re.findall(upright, long) == names

    def height(svg: str) -> float:
        return float(ET.fromstring(svg).get("viewBox", "").split()[3])

    assert height(long) >= height(short) + len(names[0]) * 6
