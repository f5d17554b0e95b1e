"""The pieces every report section is built from, and checked access to the summary dict.

A protocol's section renderer turns its runs into a :class:`Section` of plain data (tables,
figures, a legend); one template lays every section out the same way. A protocol therefore adds
its report by writing a function, never HTML. The input is the dict ``clstream summary --json``
prints; a malformed field raises :class:`DataError` naming the summary, the run and the field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from clstream.core.errors import DataError
from clstream.render.labels import display_labels

__all__ = ["Cell", "Column", "DataError", "Fields", "Figure", "Section", "Table",
           "display_labels", "run_fields"]


@dataclass(frozen=True)
class Cell:
    """One table cell. ``sub`` is quieter text after the value (an interval); ``tags`` are
    short labels shown as pills after the text."""

    text: str
    numeric: bool = False
    tags: tuple[str, ...] = ()
    title: str | None = None
    mono: bool = False
    sub: str = ""


@dataclass(frozen=True)
class Column:
    header: str
    numeric: bool = False
    title: str | None = None


@dataclass(frozen=True)
class Table:
    caption: str
    columns: tuple[Column, ...]
    rows: list[tuple[Cell, ...]]


@dataclass(frozen=True)
class Figure:
    """An inline SVG chart with the numbers behind it (shown on demand under the chart)."""

    title: str
    svg: Markup
    caption: str = ""
    data: Table | None = None
    wide: bool = True


@dataclass(frozen=True)
class Section:
    protocol: str
    title: str
    intro: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    legend: list[tuple[str, str]] = field(default_factory=list)
    citation: str = ""
    details: list[Table] = field(default_factory=list)
    dataset: str = ""
    """The dataset hash of this section's runs when a protocol's runs span several datasets
    and are drawn as one section per dataset (:mod:`clstream.report.by_dataset`)."""

    @property
    def anchor(self) -> str:
        key = self.protocol + (f"-{self.dataset[:8]}" if self.dataset else "")
        return "protocol-" + "".join(ch if ch.isalnum() else "-" for ch in key.lower())


class Fields:
    """Typed reads from one run of the summary; bad values raise :class:`DataError`."""

    def __init__(self, source: object, record: str) -> None:
        self.source = source
        self.record = record

    def error(self, name: str, problem: str) -> DataError:
        return DataError(self.source, self.record, name, problem)

    def get(self, obj: Any, path: str) -> Any:
        """Follow a dotted path; a missing key or a null on the way gives None."""
        value = obj
        for key in path.split("."):
            if value is None:
                return None
            if not isinstance(value, dict):
                raise self.error(path, f"expected an object at {key!r}, got {type(value).__name__}")
            value = value.get(key)
        return value

    def number(self, obj: Any, path: str) -> float | None:
        """A finite number; None when absent, null or not finite (a rate with nothing to count)."""
        return self._as_number(self.get(obj, path), path)

    def _as_number(self, value: Any, path: str) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(path, f"expected a number, got {value!r}")
        return float(value) if math.isfinite(value) else None

    def integer(self, obj: Any, path: str) -> int | None:
        value = self.number(obj, path)
        if value is None:
            return None
        if value != int(value):
            raise self.error(path, f"expected a whole number, got {value!r}")
        return int(value)

    def text(self, obj: Any, path: str, default: str = "") -> str:
        value = self.get(obj, path)
        if value is None:
            return default
        if not isinstance(value, str | int | float):
            raise self.error(path, f"expected text, got {type(value).__name__}")
        return str(value)

    def mapping(self, obj: Any, path: str) -> dict[str, Any]:
        value = self.get(obj, path)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(path, f"expected an object, got {type(value).__name__}")
        return value

    def numbers(self, obj: Any, path: str) -> list[float | None]:
        value = self.get(obj, path)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(path, f"expected a list of numbers, got {type(value).__name__}")
        return [self._as_number(item, f"{path}[{i}]") for i, item in enumerate(value)]

    def interval(self, obj: Any, path: str) -> tuple[float | None, float | None] | None:
        value = self.get(obj, path)
        if value is None:
            return None
        if not isinstance(value, list | tuple) or len(value) != 2:
            raise self.error(path, f"expected [low, high], got {value!r}")
        return self._as_number(value[0], f"{path}[0]"), self._as_number(value[1], f"{path}[1]")

    def intervals(self, obj: Any, path: str) -> list[tuple[float | None, float | None] | None]:
        """A list of ``[low, high]`` (or null), one per point of a curve; [] when absent."""
        value = self.get(obj, path)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(path, f"expected a list of intervals, got {type(value).__name__}")
        out: list[tuple[float | None, float | None] | None] = []
        for i, item in enumerate(value):
            if item is not None and (not isinstance(item, list) or len(item) != 2):
                raise self.error(f"{path}[{i}]", f"expected [low, high], got {item!r}")
            out.append(None if item is None else (self._as_number(item[0], f"{path}[{i}][0]"),
                                                  self._as_number(item[1], f"{path}[{i}][1]")))
        return out


def run_fields(summary_source: object, index: int, run: Any) -> Fields:
    """A :class:`Fields` reader whose errors name the run by id (or position)."""
    if not isinstance(run, dict):
        raise DataError(summary_source, f"runs[{index}]", None, "expected an object")
    run_id = run.get("run_id")
    record = f"run {run_id}" if isinstance(run_id, str) and run_id else f"runs[{index}]"
    return Fields(summary_source, record)
