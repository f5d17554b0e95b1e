"""``clstream report DIR --export OUT``: every figure and table of the report as files a paper
can include (docs/design.md §11.6).

The sections are built once, by the same code as the HTML report (:func:`build_sections`),
while :func:`~clstream.render.figures.capture_pdfs` has matplotlib save each chart as PDF too;
so a figure's SVG is the report's own markup and its PDF comes from the same drawing, and a
table's LaTeX, CSV and Markdown come from the same :class:`~clstream.render.base.Table` the
HTML shows. Files are named ``<section>--<caption>``, both made filesystem-safe, so the same
summary always gives the same names; ``index.md`` lists them section by section.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clstream.core.files import write_atomic
from clstream.render.base import Section, Table
from clstream.render.figures import capture_pdfs
from clstream.render.table_text import table_csv, table_latex, table_markdown
from clstream.report.html import build_sections

SVG_HEADER = '<?xml version="1.0" encoding="utf-8" standalone="no"?>\n'
NAME_LENGTH = 60  # characters kept of a caption in a file name
TABLE_FORMATS = ("tex", "csv", "md")
FIGURE_FORMATS = ("svg", "pdf")


@dataclass(frozen=True)
class Exported:
    """One figure or table written: its section, kind, caption and base name."""

    section: str
    kind: str  # "figure", "table" (a section's table), "figure data", "details"
    caption: str
    name: str
    formats: tuple[str, ...]

    def files(self) -> list[str]:
        folder = "figures" if self.kind == "figure" else "tables"
        return [f"{folder}/{self.name}.{ext}" for ext in self.formats]


def slug(text: str, limit: int = NAME_LENGTH) -> str:
    """``text`` as a lower-case ASCII name of letters, digits and single hyphens, cut at a
    hyphen to at most ``limit`` characters ("untitled" when nothing is left)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    name = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    if len(name) > limit:
        cut = name[:limit + 1]
        name = cut[:cut.rfind("-")] if "-" in cut else name[:limit]
    return name.strip("-") or "untitled"


def _caption_name(caption: str) -> str:
    """A caption's name: its words before any ``;`` and without asides in parentheses
    (``Scores per system (95% ...); every run uses ...`` is ``scores-per-system``)."""
    head = re.sub(r"\s\([^)]*\)", "", caption.split(";", 1)[0])
    return slug(head)


def _section_name(section: Section) -> str:
    return slug(section.protocol + (f"-{section.dataset[:8]}" if section.dataset else ""), 40)


class _Names:
    """Base names unique over one export: a repeated one gets ``-2``, ``-3`` ... in order."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def take(self, name: str) -> str:
        found, n = name, 1
        while found in self.used:
            n += 1
            found = f"{name}-{n}"
        self.used.add(found)
        return found


def export_plan(sections: list[Section]) -> list[tuple[Exported, Any]]:
    """Every figure and table with its export entry, in report order."""
    names = _Names()
    out: list[tuple[Exported, Any]] = []

    def table(section: Section, kind: str, t: Table, stem: str) -> None:
        entry = Exported(section.title, kind, t.caption, names.take(stem), TABLE_FORMATS)
        out.append((entry, t))

    for section in sections:
        base = _section_name(section)
        for t in section.tables:
            table(section, "table", t, f"{base}--{_caption_name(t.caption)}")
        for fig in section.figures:
            stem = f"{base}--{_caption_name(fig.title)}"
            entry = Exported(section.title, "figure", fig.title, names.take(stem),
                             FIGURE_FORMATS)
            out.append((entry, fig))
            if fig.data is not None:
                table(section, "figure data", fig.data, f"{stem}--data")
        for t in section.details:
            table(section, "details", t, f"{base}--{_caption_name(t.caption)}")
    return out


def _index(entries: list[Exported], directory: str) -> str:
    lines = ["# Report figures and tables", ""]
    if directory:
        lines += [f"Results: `{directory}`", ""]
    section = None
    for e in entries:
        if e.section != section:
            section = e.section
            lines += ["", f"## {section}", ""]
        links = ", ".join(f"[{f.rsplit('.', 1)[1]}]({f})" for f in e.files())
        lines.append(f"- {e.kind}: {' '.join(e.caption.split())} ({links})")
    return "\n".join(lines).replace("\n\n\n", "\n\n") + "\n"


def export_report(summary: dict[str, Any], out_dir: str | Path) -> list[Exported]:
    """Write every figure (SVG, PDF) and table (LaTeX, CSV, Markdown) of the report of
    ``summary`` under ``out_dir``, and ``index.md``; returns what was written."""
    out = Path(out_dir)
    source = (summary.get("dir") if isinstance(summary, dict) else None) or "summary"
    with capture_pdfs() as pdfs:
        sections = build_sections(summary, source)
    planned = export_plan(sections)
    for folder in ("figures", "tables"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    for entry, item in planned:
        if entry.kind == "figure":
            svg, pdf = entry.files()
            write_atomic(out / svg, SVG_HEADER + str(item.svg) + "\n")
            write_atomic(out / pdf, pdfs[str(item.svg)])
        else:
            tex, csv_file, md = entry.files()
            write_atomic(out / tex, table_latex(item, entry.name))
            write_atomic(out / csv_file, table_csv(item))
            write_atomic(out / md, table_markdown(item))
    entries = [entry for entry, _ in planned]
    write_atomic(out / "index.md", _index(entries, str(summary.get("dir") or "")))
    return entries
