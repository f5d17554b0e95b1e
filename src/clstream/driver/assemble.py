"""From a ``run`` command's flags to a :class:`~clstream.driver.plan.RunJob`: the parts every
protocol's run shares, so a protocol's command holds only what is its own (its data, params,
cell runner and flags).

:func:`run_basics` reads the flags every ``run`` verb has (:func:`~clstream.driver.flags.
add_run_arguments`, :func:`~clstream.driver.flags.add_driver_arguments`): the sampling, the
canonical model and system specs, and the model backend. :func:`plan_job` then makes one
:class:`~clstream.driver.plan.PlannedRun` per system, each spec hashed from the protocol's
name, its dataset, the system, the model, the sampling, the seed and the protocol's params,
and checks every system's arguments before anything is written.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clstream.core.contracts import Model, System
from clstream.core.secrets import redacted_url
from clstream.core.specs import ComponentSpec, RunSpec
from clstream.core.types import SamplingParams
from clstream.driver.components import (
    ARTIFACTS,
    build_model,
    helper_endpoints,
    parse_components,
    recorded_system,
    system_factory,
)
from clstream.driver.failures import resume_command
from clstream.driver.flags import (
    EXECUTOR_FLAGS,
    backend_options,
    executor_from_args,
    parser_actions,
    sampling_from_args,
    transcripts_on,
)
from clstream.driver.plan import CellRunner, PlannedRun, RunJob, RunRecipe, StoredDataset
from clstream.driver.routing import routed_cells
from clstream.store.db import ResultsStore

BUILTIN_NOTE = ("clstream: no --model given: using the builtin reader (offline; for demos and "
                "tests, not a language model); give --model openai:<name>, hf:<path> or "
                "vllm:<path> for a real one")

OpenRunner = Callable[[RunSpec, Callable[[], System]], Callable[[ResultsStore], CellRunner]]
"""Given a run's spec and its system constructor, how to open its cell runner on a store."""


@dataclass
class RunBasics:
    """What every ``run`` verb's shared flags give: sampling, model and systems."""

    sampling: SamplingParams
    model_spec: ComponentSpec
    systems: list[ComponentSpec]
    model: Model
    notes: list[str]


_SHARED_MODELS: ContextVar[dict[str, Model] | None] = ContextVar("shared_models", default=None)


@contextlib.contextmanager
def shared_models() -> Iterator[None]:
    """While open, :func:`run_basics` builds each distinct model (spec and backend settings)
    once and hands the same backend to every later plan: several seeds' runs of one model
    load it once (docs/design.md §11.6)."""
    token = _SHARED_MODELS.set({})
    try:
        yield
    finally:
        _SHARED_MODELS.reset(token)


def _model(spec: ComponentSpec, options: dict[str, Any]) -> Model:
    shared = _SHARED_MODELS.get()
    if shared is None:
        return build_model(spec, **options)
    key = json.dumps([spec.model_dump(mode="json"), options], sort_keys=True, default=str)
    if key not in shared:
        shared[key] = build_model(spec, **options)
    return shared[key]


def run_basics(args: argparse.Namespace) -> RunBasics:
    """Sampling, canonical specs and the model backend from the flags (one-line errors)."""
    sampling = sampling_from_args(args)
    typed = getattr(args, "model", None)
    model_spec, systems = parse_components(typed or "builtin", args.model_args, args.system)
    model = _model(model_spec, backend_options(args))
    return RunBasics(sampling, model_spec, systems, model, [] if typed else [BUILTIN_NOTE])


# Flags a results directory's spec file does not repeat: per run (--system), where results go,
# how progress shows, where cells are carried out.
_UNRECORDED = frozenset({"help", "system", "out", "no_progress"}) | EXECUTOR_FLAGS


def run_flags(args: argparse.Namespace, add_arguments: Callable[[argparse.ArgumentParser], None]
              ) -> dict[str, Any]:
    """The run's flags that differ from their defaults, by destination name, plus every
    positional argument (a path that exists made absolute): recorded with the run, so that
    ``clstream runs DIR --spec`` writes a spec file that reruns it."""
    out: dict[str, Any] = {}
    for action in parser_actions(add_arguments):
        if action.dest in _UNRECORDED or not hasattr(args, action.dest):
            continue
        value = getattr(args, action.dest)
        if isinstance(value, str) and "://" in value:
            value = redacted_url(value)  # never a user:password of an endpoint
        elif isinstance(value, list):
            value = [redacted_url(v) if isinstance(v, str) and "://" in v else v
                     for v in value]
        if not action.option_strings:
            out[action.dest] = (str(Path(value).resolve())
                                if isinstance(value, str) and Path(value).exists() else value)
        elif value is not None and value != action.default:
            out[action.dest] = value
    return out


def plan_job(args: argparse.Namespace, basics: RunBasics, *, protocol: str, unit: str,
             add_arguments: Callable[[argparse.ArgumentParser], None],
             dataset: StoredDataset, info: dict[str, Any], units: Mapping[str, str],
             open_runner: OpenRunner, error_kinds: tuple[str, ...],
             params: dict[str, Any] | None = None,
             cells_at_once: int | Callable[[RunSpec, Callable[[], System]], int] = 1,
             before_register: Callable[[RunSpec], Callable[[ResultsStore], None]] | None = None,
             check_system: Callable[[RunSpec, System], None] | None = None,
             endpoints: list[tuple[str, Model, SamplingParams]] | None = None) -> RunJob:
    """One planned run per ``--system`` of ``protocol`` over ``dataset`` (see the module
    docstring). ``cells_at_once`` may depend on the system (OAKS's cache budget);
    ``check_system`` refuses a system the protocol cannot run, before anything is written;
    ``endpoints`` are the run's other models (:attr:`~clstream.driver.plan.RunJob.endpoints`)."""
    executor = executor_from_args(args)
    transcripts = transcripts_on(args)
    info = {**info, "run_flags": run_flags(args, add_arguments),
            "transcripts": "all" if transcripts else "none"}
    recipe = RunRecipe(protocol, argparse.Namespace(**vars(args)), os.getcwd())
    runs = []
    for system in basics.systems:
        spec = RunSpec(protocol=protocol, dataset_hash=dataset.sha256,
                       system=recorded_system(system),
                       model=basics.model_spec, sampling=basics.sampling, seed=args.seed,
                       params=params or {})
        make = system_factory(spec, basics.model, Path(args.out) / ARTIFACTS)  # checks the arguments
        endpoints = [*(endpoints or ()), *((flag, helper, basics.sampling) for flag, helper
                                           in helper_endpoints(spec, make, basics.model))]
        if check_system is not None:
            check_system(spec, make())
        runs.append(PlannedRun(
            spec, make, dataset, info, units, routed_cells(spec.run_id, open_runner(spec, make)),
            error_kinds=error_kinds,
            cells_at_once=cells_at_once(spec, make) if callable(cells_at_once)
            else cells_at_once,
            before_register=before_register(spec) if before_register is not None else None,
            recipe=recipe, transcripts=transcripts))
    return RunJob(protocol, unit, args.out, basics.model, basics.sampling, basics.systems, runs,
                  resume_command(protocol, add_arguments, args),
                  show_progress=not args.no_progress, notes=list(basics.notes),
                  executor=executor, endpoints=list(endpoints or ()))
