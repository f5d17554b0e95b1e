"""``clstream report --export``: every figure as SVG and PDF and every table as LaTeX, CSV and
Markdown, made from the same sections as the HTML report, under stable names."""

from __future__ import annotations

import csv
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from tests.report.conftest import make_summary

from clstream.render.base import Cell, Figure, Table
from clstream.render.figures import capture_pdfs
from clstream.render.table_text import latex_escape
from clstream.report.export import export_plan, export_report, slug
from clstream.report.html import build_sections

ODD_SYSTEM = "rag_k&2 %#1"


@pytest.fixture(scope="module")
def odd_summary() -> dict[str, Any]:
    """The report fixture with a system label holding every character LaTeX treats apart."""
    summary = make_summary()
    summary["runs"][2]["system"] = ODD_SYSTEM
    return summary


@pytest.fixture(scope="module")
def exports(odd_summary: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
            ) -> tuple[Path, Path]:
    first, second = tmp_path_factory.mktemp("first"), tmp_path_factory.mktemp("second")
    export_report(odd_summary, first)
    export_report(odd_summary, second)
    return first, second


def _plan(summary: dict[str, Any]) -> list[tuple[Any, Any]]:
    return export_plan(build_sections(summary, "summary"))


def _expected_cell(cell: Cell) -> str:
    parts = [cell.text] + ([cell.sub] if cell.sub else [])
    tags = f" ({', '.join(cell.tags)})" if cell.tags else ""
    return " ".join(parts) + tags


def test_every_figure_has_an_svg_and_a_pdf(odd_summary: dict[str, Any],
                                           exports: tuple[Path, Path]) -> None:
    out = exports[0]
    with capture_pdfs():  # an export draws its charts as the PDFs are drawn, with matplotlib
        figures = [(e, f) for e, f in _plan(odd_summary) if isinstance(f, Figure)]
    assert len(figures) >= 4
    for entry, figure in figures:
        svg, pdf = (out / name for name in entry.files())
        assert svg.read_text(encoding="utf-8").endswith(str(figure.svg) + "\n")
        assert ET.parse(svg).getroot().tag == "{http://www.w3.org/2000/svg}svg"
        assert pdf.read_bytes().startswith(b"%PDF-")
    assert len(list((out / "figures").glob("*.svg"))) == len(figures)
    assert len(list((out / "figures").glob("*.pdf"))) == len(figures)


def test_every_table_has_latex_csv_and_markdown_and_the_csv_is_its_cells(
        odd_summary: dict[str, Any], exports: tuple[Path, Path]) -> None:
    out = exports[0]
    tables = [(e, t) for e, t in _plan(odd_summary) if isinstance(t, Table)]
    sections = build_sections(odd_summary, "summary")
    assert len(tables) == sum(len(s.tables) + len(s.details)
                              + sum(f.data is not None for f in s.figures) for s in sections)
    for entry, table in tables:
        tex, csv_file, md = (out / name for name in entry.files())
        assert tex.exists() and md.exists()
        with csv_file.open(encoding="utf-8", newline="") as fh:
            rows = list(csv.reader(fh))
        assert rows[0] == [c.header for c in table.columns]
        assert rows[1:] == [[_expected_cell(c) for c in row] for row in table.rows]
        assert len(md.read_text(encoding="utf-8").splitlines()) == 4 + len(table.rows)
    assert len(list((out / "tables").glob("*.tex"))) == len(tables)


def test_latex_escapes_special_characters(exports: tuple[Path, Path]) -> None:
    assert latex_escape("a & b % c _ d # e $ {f} ~ ^ \\") == (
        r"a \& b \% c \_ d \# e \$ \{f\} \textasciitilde{} \textasciicircum{} "
        r"\textbackslash{}")
    texts = {p.name: p.read_text(encoding="utf-8") for p in (exports[0] / "tables").glob("*.tex")}
    assert any(r"rag\_k\&2 \%\#1" in text for text in texts.values())
    for name, text in texts.items():
        body = text.split(r"\midrule", 1)[1].split(r"\bottomrule", 1)[0]
        columns = len(re.search(r"\\begin\{tabular\}\{(\w+)\}", text).group(1))  # type: ignore[union-attr]
        for line in body.strip().splitlines():
            assert line.count(" & ") == columns - 1, (name, line)
        assert not re.search(r"(?<!\\)[%#_$]", text), name


def test_names_are_stable_and_filesystem_safe(exports: tuple[Path, Path]) -> None:
    first, second = exports
    files = sorted(p.relative_to(first).as_posix() for p in first.rglob("*") if p.is_file())
    again = sorted(p.relative_to(second).as_posix() for p in second.rglob("*") if p.is_file())
    assert files == again and "index.md" in files
    for name in files:
        assert re.fullmatch(r"(figures|tables)/[a-z0-9-]+\.(svg|pdf|tex|csv|md)|index\.md", name)
        if not name.endswith(".pdf"):
            assert (first / name).read_bytes() == (second / name).read_bytes(), name
    index = (first / "index.md").read_text(encoding="utf-8")
    assert all(name in index for name in files if name != "index.md")
    assert "tables/oaks--scores-per-system.csv" in files


def test_slugs() -> None:
    assert slug("Accuracy by interval") == "accuracy-by-interval"
    assert slug("Où — ça?/..\\x") == "ou-ca-x"
    assert slug("***") == "untitled"
    assert len(slug("word " * 40)) <= 60 and not slug("word " * 40).endswith("-")
