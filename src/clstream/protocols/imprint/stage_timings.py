"""CPU seconds and item counts per stage of ``generate imprint`` (docs/imprint.md §4.8).

Every stage that builds, writes or audits items (the template build, each writer stage, each
audit, the filters) runs inside :func:`timed`, which does nothing unless ``generate`` has
started a :class:`StageTimings` with :func:`recording`: the stages take no extra argument and a
library call of a stage costs nothing. A stage's figures exclude the stages timed inside it
(the golden subset's filter passes are rows of their own), so the rows add up to the whole.

The figures go to ``stage_timings.json`` beside the dataset card, not into the card
(``manifest.json``): the card is byte-identical for a seed and CPU seconds are not. The
generator benchmark (``benchmarks/bench_imprint_stages.py``) reads items per second from it.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, Protocol, TypeVar

from clstream.core.files import write_atomic

TIMINGS_NAME = "stage_timings.json"
TIMINGS_VERSION = "imprint-stage-timings-v1"


@dataclass
class StageRow:
    """One stage's figures: ``items`` it was given, ``kept`` of them (the stage sets it once
    known; None where a stage keeps what it is given), CPU and wall seconds of its own."""

    stage: str
    items: int
    kept: int | None = None
    cpu_s: float = 0.0
    wall_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "items": self.items, "kept": self.kept,
                "cpu_s": round(self.cpu_s, 4), "wall_s": round(self.wall_s, 4)}


@dataclass
class StageTimings:
    """The rows of one ``generate`` process, in the order the stages started."""

    rows: list[StageRow] = field(default_factory=list)
    _open: list[StageRow] = field(default_factory=list)
    _grouping: list[StageRow] = field(default_factory=list)

    def document(self, setting: str, model: str | None) -> dict[str, Any]:
        return {"version": TIMINGS_VERSION, "setting": setting, "model": model,
                "stages": [r.as_dict() for r in self.rows]}

    def write(self, directory: str | Path, setting: str, model: str | None) -> Path:
        path = Path(directory) / TIMINGS_NAME
        write_atomic(path, json.dumps(self.document(setting, model), indent=1) + "\n")
        return path


_CURRENT: ContextVar[StageTimings | None] = ContextVar("imprint_stage_timings", default=None)


@contextmanager
def recording() -> Iterator[StageTimings]:
    """Time every :func:`timed` stage run inside the block (asyncio tasks started inside see
    it too: they copy the context)."""
    timings = StageTimings()
    token = _CURRENT.set(timings)
    try:
        yield timings
    finally:
        _CURRENT.reset(token)


@contextmanager
def timed(stage: str, items: int, *, group: bool = False) -> Iterator[StageRow]:
    """Time the block as ``stage`` over ``items`` items. The seconds of a stage timed inside it
    are left out of its own; with ``group`` such a stage is named ``<stage>/<inner>`` (the
    golden subset's filter passes), else by its own name (the writer inside a build)."""
    timings = _CURRENT.get()
    if timings is None:
        yield StageRow(stage, items)
        return
    outer = timings._open[-1] if timings._open else None
    name = f"{outer.stage}/{stage}" if outer is not None and outer in timings._grouping else stage
    row = StageRow(name, items)
    if group:
        timings._grouping.append(row)
    timings.rows.append(row)
    timings._open.append(row)
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        yield row
    finally:
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        timings._open.pop()
        row.cpu_s += cpu
        row.wall_s += wall
        if outer is not None:
            outer.cpu_s -= cpu
            outer.wall_s -= wall


class _WithItems(Protocol):
    @property
    def items(self) -> Any: ...


P = ParamSpec("P")
D = TypeVar("D", bound=_WithItems)


def timed_build(stage: str) -> Callable[[Callable[P, D]], Callable[P, D]]:
    """Time a function that builds a dataset as ``stage``; its item counts are the items it
    returns (a template build is given none and keeps what it makes)."""
    def wrap(build: Callable[P, D]) -> Callable[P, D]:
        @functools.wraps(build)
        def timed_call(*args: P.args, **kwargs: P.kwargs) -> D:
            with timed(stage, 0) as row:
                data = build(*args, **kwargs)
                row.items = row.kept = len(data.items)
            return data
        return timed_call
    return wrap
