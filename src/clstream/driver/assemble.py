"""From a ``run`` command's request to a :class:`~clstream.driver.plan.RunJob`: the parts every
protocol's run shares, so a protocol's command holds only what is its own (its data, params,
cell runner and options).

:func:`run_basics` reads what every ``run`` verb's request has
(:class:`~clstream.driver.request.RunRequest`): the sampling, the canonical model and system
specs, and the model backend. :func:`plan_job` then makes one
:class:`~clstream.driver.plan.PlannedRun` per system, each spec hashed from the protocol's
name, its dataset, the system, the model, the sampling, the seed and the protocol's params,
and checks every system's arguments before anything is written.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clstream.core.contracts import Model, System
from clstream.core.outputs import is_file_dataset, refuse_datasets
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
from clstream.driver.plan import (
    CellRunner,
    PlannedRun,
    PromptWalk,
    RunJob,
    RunRecipe,
    StoredDataset,
)
from clstream.driver.request import RunRequest, executor_choice, sampling_params
from clstream.driver.routing import routed_cells
from clstream.store.db import ResultsStore

BUILTIN_NOTE = ("clstream: no --model given: using the builtin reader (offline; for demos and "
                "tests, not a language model); give --model openai:<name>, hf:<path> or "
                "vllm:<path> for a real one")

OpenRunner = Callable[[RunSpec, Callable[[], System]], Callable[[ResultsStore], CellRunner]]
"""Given a run's spec and its system constructor, how to open its cell runner on a store."""


@dataclass
class RunBasics:
    """What every ``run`` verb's request gives: sampling, model and systems."""

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


def run_basics(request: RunRequest[Any]) -> RunBasics:
    """Sampling, canonical specs and the model backend of the request (one-line errors)."""
    sampling = sampling_params(request.sampling, request.seed)
    data, cache = getattr(request.options, "data", None), request.backend.cache
    if cache is not None and isinstance(data, str) and is_file_dataset(data):
        # A response cache, created as the model is built, never lies in the data read.
        refuse_datasets(cache, Path(cache).resolve(), [data], "this run reads")
    model_spec, systems = parse_components(request.model or "builtin", request.model_args,
                                           request.systems)
    model = _model(model_spec, request.backend.options())
    notes = [] if request.model else [BUILTIN_NOTE]
    return RunBasics(sampling, model_spec, systems, model, notes)


def plan_job(request: RunRequest[Any], basics: RunBasics, *, protocol: str, unit: str,
             dataset: StoredDataset, info: dict[str, Any], units: Mapping[str, str],
             open_runner: OpenRunner, error_kinds: tuple[str, ...],
             params: dict[str, Any] | None = None,
             cells_at_once: int | Callable[[RunSpec, Callable[[], System]], int] = 1,
             before_register: Callable[[RunSpec], Callable[[ResultsStore], None]] | None = None,
             check_system: Callable[[RunSpec, System], None] | None = None,
             endpoints: list[tuple[str, Model, SamplingParams]] | None = None,
             walk: Callable[[Callable[[], System]], PromptWalk] | None = None) -> RunJob:
    """One planned run per system of ``request`` for ``protocol`` over ``dataset`` (see the
    module docstring). ``cells_at_once`` may depend on the system (OAKS's cache budget);
    ``check_system`` refuses a system the protocol cannot run, before anything is written;
    ``endpoints`` are the run's other models (:attr:`~clstream.driver.plan.RunJob.endpoints`);
    ``walk`` gives a run's requests without running it, from its system factory
    (:attr:`~clstream.driver.plan.PlannedRun.walk`)."""
    executor = executor_choice(request.executor)
    transcripts = request.keeps_transcripts
    info = {**info, "run_flags": dict(request.recorded),
            "transcripts": "all" if transcripts else "none"}
    recipe = RunRecipe(protocol, request, os.getcwd())
    runs = []
    for system in basics.systems:
        spec = RunSpec(protocol=protocol, dataset_hash=dataset.sha256,
                       system=recorded_system(system),
                       model=basics.model_spec, sampling=basics.sampling, seed=request.seed,
                       params=params or {})
        # Checks the system's arguments.
        make = system_factory(spec, basics.model, Path(request.out) / ARTIFACTS)
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
            recipe=recipe, transcripts=transcripts,
            walk=walk(make) if walk is not None else None))
    return RunJob(protocol, unit, request.out, basics.model, basics.sampling, basics.systems,
                  runs, request.resume, show_progress=request.show_progress,
                  notes=list(basics.notes), executor=executor, endpoints=list(endpoints or ()))
