"""Pieces every protocol runner shares: building systems and models from specs, run metadata,
progress display."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any

from tqdm import tqdm

import clstream
from clstream.core.contracts import Model, System
from clstream.core.errors import SpecError
from clstream.core.registry import resolve
from clstream.core.specs import ComponentSpec, RunSpec
from clstream.core.types import GenerationResult
from clstream.store.db import Record


def build_model(spec: ComponentSpec, **options: Any) -> Model:
    """Instantiate a model backend; ``options`` are backend settings from CLI flags."""
    cls = resolve("model", spec.name)
    kwargs = dict(spec.args)
    accepted = inspect.signature(cls).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())
    for key, value in options.items():
        if value is not None and (takes_any or key in accepted):
            kwargs[key] = value
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise SpecError(f"model {spec.label!r}: {exc}") from None


def system_factory(run: RunSpec, model: Model) -> Callable[[], System]:
    """A zero-argument constructor of fresh system instances for one run."""
    cls = resolve("system", run.system.name)

    def make() -> System:
        return cls(model=model, sampling=run.sampling, seed=run.seed, **run.system.args)

    make()  # fail early on bad system arguments, before anything is stored
    return make


def run_info(model: Model, system: System, extra: dict[str, Any]) -> dict[str, Any]:
    """What every run records so numbers can be compared later (DESIGN.md, "Lessons")."""
    tok = model.tokenizer
    return {
        "clstream_version": clstream.__version__,
        "python": sys.version.split()[0],
        "model_info": model.describe(),
        "system_info": system.describe(),
        "tokenizer": {"name": tok.name, "exact": tok.exact},
        **extra,
    }


def call_records(results: list[GenerationResult], stream: str, t: int, prefix: str) -> list[Record]:
    """Records for model calls made while updating memory (their usage counts toward cost)."""
    return [
        Record(
            kind="call", key=f"{prefix}#{i}", stream=stream, t=t,
            payload={"texts": [s.text for s in r.samples]}, error=r.error, stage=r.stage,
            usage=r.usage, cache_hit=r.cache_hit,
        )
        for i, r in enumerate(results)
    ]


def progress_bar(total: int, initial: int, desc: str) -> tqdm:
    """A progress bar with ETA on a terminal; silent when stderr is not a terminal."""
    return tqdm(
        total=total, initial=initial, desc=desc, unit="probe", dynamic_ncols=True,
        disable=not sys.stderr.isatty(), leave=False,
    )
