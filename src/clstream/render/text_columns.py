"""Plain-text tables for the terminal (``clstream summary``, ``plan``): every column as wide as
its widest cell, header included, so a long system label (``mem0:retriever=bm25``) is shown
whole and never pushes the columns after it out of line."""

from __future__ import annotations

from collections.abc import Sequence

GAP = "  "
"""Between two columns."""


def aligned_lines(header: Sequence[str], rows: Sequence[Sequence[str]],
                  numeric: Sequence[bool]) -> list[str]:
    """The header and the rows as lines: numeric columns right-aligned, the others left;
    trailing spaces dropped. Every row has one cell per header."""
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"a row of {len(row)} cells under {len(header)} columns")
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    return [GAP.join(cell.rjust(width) if right else cell.ljust(width)
                     for cell, width, right in zip(row, widths, numeric, strict=True)).rstrip()
            for row in (header, *rows)]


def seed_text(run: dict[str, object]) -> str:
    """The run's seed as its spec names it (``-`` where the spec has none)."""
    meta = run.get("meta")
    seed = meta.get("seed") if isinstance(meta, dict) else None
    return "-" if seed is None else str(seed)
