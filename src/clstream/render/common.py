"""Columns every protocol's run table shares: status, probes, errors, tokens, wall time, cost.

Kept apart from the protocol sections so each of them reports effort the same way (token usage
and time are part of every result, docs/design.md §10; docs/seqmem.md §5.11 and docs/clbench.md §5.8 ask for cost).
"""

from __future__ import annotations

from typing import Any

from clstream.render.base import Cell, Column, Fields, Table
from clstream.render.fmt import MISSING, fmt_cost, fmt_int, fmt_seconds

TOKEN_KINDS = [
    ("prompt", "Prompt tokens"),
    ("cached", "Cached tokens"),
    ("completion", "Completion tokens"),
    ("reasoning", "Reasoning tokens"),
]
ALWAYS_SHOWN = {"prompt", "completion"}


def is_complete(f: Fields, raw: dict[str, Any]) -> bool:
    """``status.complete`` when given, else all probes done; a run without metrics never is."""
    if f.get(raw, "metrics") is None:
        return False
    flag = f.get(raw, "status.complete")
    if flag is not None:
        return bool(flag)
    done, total = f.integer(raw, "status.probes_done"), f.integer(raw, "status.probes_total")
    return done is not None and done == total


def system_cell(f: Fields, raw: dict[str, Any], label: str) -> Cell:
    """The system label with pills for an offline baseline model and an unfinished run."""
    tags: tuple[str, ...] = ("baseline",) if f.get(raw, "model_info.baseline") is True else ()
    if not is_complete(f, raw):
        tags += ("incomplete",)
    return Cell(label, tags=tags)


def seed_column() -> Column:
    """The seed of each run, beside its system: runs that differ only by seed share a system
    label, and the text tables (:func:`clstream.render.text_columns.seed_text`) show it too."""
    return Column("Seed", True, "the seed the run's spec names")


def seed_cell(f: Fields, raw: dict[str, Any]) -> Cell:
    return Cell(fmt_int(f.integer(raw, "meta.seed")), True)


def status_columns() -> list[Column]:
    return [Column("Probes", True, "done / total"), Column("Errors", True)]


def status_cells(f: Fields, raw: dict[str, Any]) -> list[Cell]:
    done, total = f.integer(raw, "status.probes_done"), f.integer(raw, "status.probes_total")
    return [
        Cell(f"{fmt_int(done)} / {fmt_int(total)}", True),
        Cell(fmt_int(f.integer(raw, "status.errors")), True),
    ]


class UsageColumns:
    """Token, wall-time and cost columns; optional ones appear only when some run has them."""

    def __init__(self, runs: list[tuple[Fields, dict[str, Any]]]) -> None:
        self.tokens = [
            (k, h)
            for k, h in TOKEN_KINDS
            if k in ALWAYS_SHOWN or any(f.number(raw, f"tokens.{k}") for f, raw in runs)
        ]
        self.cost = any(f.number(raw, "cost_usd") is not None for f, raw in runs)
        # Parametric methods' training cost beside the in-context methods' tokens.
        self.training = any(isinstance(raw.get("training"), dict) for _, raw in runs)

    @property
    def columns(self) -> list[Column]:
        cols = [Column(h, True) for _, h in self.tokens] + [Column("Wall time", True)]
        if self.training:
            cols += [Column("Training tokens", True), Column("Training time", True)]
        return cols + ([Column("Cost", True)] if self.cost else [])

    def cells(self, f: Fields, raw: dict[str, Any]) -> list[Cell]:
        row = [Cell(fmt_int(f.integer(raw, f"tokens.{k}")), True) for k, _ in self.tokens]
        row.append(Cell(fmt_seconds(f.number(raw, "wall_s")), True))
        if self.training:
            trained = isinstance(raw.get("training"), dict)
            row += [Cell(fmt_int(f.integer(raw, "training.tokens")) if trained else MISSING,
                         True),
                    Cell(fmt_seconds(f.number(raw, "training.seconds")) if trained else MISSING,
                         True)]
        if self.cost:
            row.append(Cell(fmt_cost(f.number(raw, "cost_usd")), True))
        return row


def details_table(runs: list[tuple[Fields, dict[str, Any], str]]) -> Table:
    """Provenance of each run: id, backend, seed, prompt template hash, package version."""
    columns = (
        Column("System"),
        Column("Run id"),
        Column("Backend"),
        Column("Seed", True),
        Column("Prompt template"),
        Column("clstream"),
    )
    rows: list[tuple[Cell, ...]] = []
    for f, raw, label in runs:
        template = f.text(raw, "meta.prompt_template_hash")
        rows.append(
            (
                Cell(label),
                Cell(f.text(raw, "run_id"), mono=True),
                Cell(f.text(raw, "model_info.backend", MISSING)),
                Cell(fmt_int(f.integer(raw, "meta.seed")), True),
                Cell(template[:16] or MISSING, mono=True, title=template or None),
                Cell(f.text(raw, "meta.clstream_version", MISSING)),
            )
        )
    return Table("Run details", columns, rows)
