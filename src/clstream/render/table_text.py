"""A report table as LaTeX, CSV and Markdown, from the same :class:`~clstream.render.base.Table`
the HTML report draws (docs/design.md §11.6).

Every format shows a cell as the report does: its text, then its interval (``sub``), then its
tags in parentheses. LaTeX is a booktabs ``table`` whose text is escaped (``& % $ # _ { } ~ ^
\\`` and the few typographic characters the report uses that plain pdfLaTeX lacks), so a
caption or a system label can never break a paper's build.
"""

from __future__ import annotations

import csv
import io

from clstream.render.base import Cell, Table

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
    "\u2014": "---", "\u2013": "--", "\u201c": "``", "\u201d": "''", "\u2018": "`",
    "\u2019": "'", "\u00b7": r"\textperiodcentered{}", "\u00b1": r"\ensuremath{\pm}",
    "\u00d7": r"\ensuremath{\times}", "\u2264": r"\ensuremath{\le}", "\u2265": r"\ensuremath{\ge}",
    "\u2212": "-", "\u2026": r"\ldots{}", "\u00a7": r"\S{}", "\u00a0": "~",
}


def cell_text(cell: Cell) -> str:
    """The cell as one line of text: ``0.412 [0.380, 0.445]``, ``rag (baseline)``."""
    text = cell.text + (f" {cell.sub}" if cell.sub else "")
    return text + (f" ({', '.join(cell.tags)})" if cell.tags else "")


def latex_escape(text: str) -> str:
    """``text`` safe inside LaTeX body text."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def _latex_cell(cell: Cell) -> str:
    text = latex_escape(cell.text)
    if cell.sub:
        text += r" {\footnotesize " + latex_escape(cell.sub) + "}"
    if cell.tags:
        text += r" {\footnotesize (" + latex_escape(", ".join(cell.tags)) + ")}"
    return text


def table_latex(table: Table, label: str) -> str:
    """A booktabs table (``\\usepackage{booktabs}``) labelled ``tab:<label>``."""
    spec = "".join("r" if c.numeric else "l" for c in table.columns)
    lines = [r"\begin{table}[htbp]", r"\centering", rf"\caption{{{latex_escape(table.caption)}}}",
             rf"\label{{tab:{label}}}", rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
             " & ".join(latex_escape(c.header) for c in table.columns) + r" \\", r"\midrule"]
    lines += [" & ".join(_latex_cell(cell) for cell in row) + r" \\" for row in table.rows]
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def table_csv(table: Table) -> str:
    """The header row, then one row per table row, each cell as :func:`cell_text`."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([c.header for c in table.columns])
    writer.writerows([cell_text(cell) for cell in row] for row in table.rows)
    return buf.getvalue()


def _md(text: str) -> str:
    return " ".join(text.replace("\\", "\\\\").replace("|", "\\|").split())


def table_markdown(table: Table) -> str:
    """A pipe table under its caption in bold; numeric columns aligned right."""
    lines = [f"**{_md(table.caption)}**", "",
             "| " + " | ".join(_md(c.header) for c in table.columns) + " |",
             "|" + "|".join("---:" if c.numeric else "---" for c in table.columns) + "|"]
    lines += ["| " + " | ".join(_md(cell_text(cell)) for cell in row) + " |"
              for row in table.rows]
    return "\n".join(lines) + "\n"
