"""Assembling a run from its parts: canonical component specs from the command line, the model
and fresh system instances built from them, what every run records about itself, and
registering a run (adopting one stored under a pre-canonical id).

Run ids are hashes of canonical specs (every declared parameter filled in, see
:func:`clstream.core.registry.canonical_component`). Runs written before specs were canonical
have ids hashed from the specs as typed; :func:`register_run` finds such a run when its spec
canonicalises to the new run's spec and renames it to the new id, so resume finds its work.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

from pydantic import ValidationError

import clstream
from clstream.core.contracts import Model, Preflight, System, give_artifact_folder
from clstream.core.errors import SpecError
from clstream.core.registry import canonical_component, canonical_run_spec, resolve
from clstream.core.specs import ComponentSpec, RunSpec, parse_model_spec
from clstream.models.middleware import wrap
from clstream.store.db import ResultsStore


def parse_components(
    model: str, model_args: str | None, systems: Sequence[str]
) -> tuple[ComponentSpec, list[ComponentSpec]]:
    """The canonical model spec and system specs of a ``run`` command line (``--model``,
    ``--model-args``, each ``--system``). Unknown names, arguments or values are a
    :class:`SpecError` here, before anything is opened or written."""
    model_spec = canonical_component("model", parse_model_spec(model, model_args))
    return model_spec, [canonical_component("system", ComponentSpec.parse(s, "system"))
                        for s in systems]


def _canonical_json(spec_json: Mapping[str, Any] | str) -> str | None:
    """The canonical JSON of a stored spec, or None when it no longer describes a valid run
    (a component since removed, an argument since renamed, a field RunSpec no longer has)."""
    try:
        raw = json.loads(spec_json) if isinstance(spec_json, str) else dict(spec_json)
        return canonical_run_spec(RunSpec.model_validate(raw)).canonical_json()
    except (SpecError, ValidationError, ValueError, TypeError):
        return None


@dataclass
class _StoredSpecs:
    """The canonical spec of every stored run of one protocol, read once: registering each of
    many runs (a spec file of thousands) then costs a lookup, not a pass over every run."""

    after: int = 0  # the last row read
    ids_by_canonical: dict[str, list[str]] = field(default_factory=dict)


_STORED_SPECS: dict[tuple[str, int, int], dict[str, _StoredSpecs]] = {}
_MOST_INDEXED_STORES = 16


def _stored_specs(store: ResultsStore, protocol: str) -> _StoredSpecs:
    """The index of ``protocol``'s runs in ``store``, brought up to date with the runs stored
    since it was last read (rows only grow; a renamed run keeps its row).

    Kept per database file (its path and inode), not per open store: the driver opens the
    directory once per job, and a spec file's jobs are thousands. An index that missed a change
    made elsewhere can only miss an adoption, never make a wrong one (the candidate's stored
    spec is read again before it is renamed)."""
    stat = os.stat(store.path)
    key = (str(store.path.resolve()), stat.st_dev, stat.st_ino)
    if key not in _STORED_SPECS and len(_STORED_SPECS) >= _MOST_INDEXED_STORES:
        _STORED_SPECS.pop(next(iter(_STORED_SPECS)))
    index = _STORED_SPECS.setdefault(key, {}).setdefault(protocol, _StoredSpecs())
    for row, stored_id, text in store.run_specs_after(protocol, index.after):
        index.after = row
        canonical = _canonical_json(text)
        if canonical is not None:
            index.ids_by_canonical.setdefault(canonical, []).append(stored_id)
    return index


def adopt_legacy_run(store: ResultsStore, run_id: str, spec_json: Mapping[str, Any] | str
                     ) -> str | None:
    """Rename to ``run_id`` a stored run whose spec canonicalises to ``spec_json`` under another
    id (a run written when ids were hashed from specs as typed); returns its old id, or None.

    ``spec_json`` is the new run's spec (``RunSpec.model_dump(mode="json")``). Nothing happens
    when ``run_id`` is already stored. Among several matches the earliest created is adopted;
    the others stay as they are. The adopted run's stored spec becomes ``spec_json``.
    """
    if store.has_run(run_id):
        return None
    want = _canonical_json(spec_json)
    if want is None:
        return None
    protocol = json.loads(want)["protocol"]
    candidates = _stored_specs(store, protocol).ids_by_canonical.get(want, [])
    stored = [store.get_run(old) for old in candidates if store.has_run(old)]
    for run in sorted(stored, key=lambda r: r.created_at):
        if _canonical_json(run.spec) == want:  # still the spec it was indexed with
            spec = json.loads(spec_json) if isinstance(spec_json, str) else dict(spec_json)
            store.rename_run(run.run_id, run_id, spec=spec)
            candidates.remove(run.run_id)
            return run.run_id
    return None


def register_run(store: ResultsStore, spec: RunSpec, dataset_sha256: str,
                 info: dict[str, Any]) -> bool:
    """Record the run of ``spec`` (idempotent), first adopting a stored run of the same
    canonical spec under an older id; returns True when this is a resume."""
    spec_json = spec.model_dump(mode="json")
    if store.has_run(spec.run_id):
        store.get_run(spec.run_id)  # a row damaged outside clstream is one line, not resumed
    adopt_legacy_run(store, spec.run_id, spec_json)
    return store.ensure_run(spec.run_id, spec.protocol, spec.system.label, spec.model.label,
                            dataset_sha256, spec_json, info)


class BuildHooks(Protocol):
    """What a dry run (``clstream plan``, docs/plan.md §2) puts in place of the real parts: the
    model built for a model spec, and a change to each system built (no training)."""

    def model(self, spec: ComponentSpec) -> Model: ...

    def system(self, system: System) -> System: ...


_BUILD_HOOKS: ContextVar[BuildHooks | None] = ContextVar("clstream_build_hooks", default=None)


@contextmanager
def built_with(hooks: BuildHooks) -> Iterator[None]:
    """Inside this block, :func:`build_model` and :func:`system_factory` build through
    ``hooks``: every model of a run (its ``--model``, a judge) and every system instance."""
    token = _BUILD_HOOKS.set(hooks)
    try:
        yield
    finally:
        _BUILD_HOOKS.reset(token)


BACKEND_FLAGS: Mapping[str, str] = {
    "base_url": "--base-url", "api_key_env": "--api-key-env",
    "max_concurrency": "--max-concurrency", "request_timeout": "--request-timeout",
    "max_retries": "--max-retries",
}
"""The flag that gives each endpoint setting of a model backend, as errors name it."""


def takes_endpoint(spec: ComponentSpec) -> bool:
    """Whether the backend of ``spec`` is served by an endpoint (its class names ``base_url``,
    as ``openai`` does; the builtin reader and the in-process ``hf:``/``vllm:`` do not)."""
    return "base_url" in inspect.signature(resolve("model", spec.name)).parameters


def build_model(spec: ComponentSpec, flags: Mapping[str, str] = BACKEND_FLAGS,
                **options: Any) -> Model:
    """Instantiate a model backend; ``options`` are backend settings from CLI flags, and
    ``cache_path`` the response cache every backend answers through
    (:func:`clstream.models.middleware.wrap`). An endpoint setting (``flags``: each one's flag)
    given to a backend without an endpoint is one line naming the flag, not the backend's
    complaint about an argument the user never typed."""
    hooks = _BUILD_HOOKS.get()
    if hooks is not None:
        return hooks.model(spec)
    cls = resolve("model", spec.name)
    cache_path = options.pop("cache_path", None)
    kwargs = dict(spec.args)
    accepted = inspect.signature(cls).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())
    for key, value in options.items():
        if value is None:
            continue
        if key in accepted:
            kwargs[key] = value
        elif key in flags:
            raise SpecError(f"flag {flags[key]}: model {spec.label!r} is not served by an "
                            f"endpoint; {flags[key]} applies to models served over HTTP "
                            "(openai:NAME)")
        elif takes_any:
            kwargs[key] = value
    try:
        return wrap(cls(**kwargs), cache_path=cache_path)
    except TypeError as exc:
        raise SpecError(f"model {spec.label!r}: {exc}") from None


def recorded_system(system: ComponentSpec) -> ComponentSpec:
    """``system`` with the arguments its class resolves on this machine (a system's
    ``spec_args`` classmethod, when it has one: mem0's ``retriever=auto``), so the run spec and
    its run id name what actually runs."""
    hook = getattr(resolve("system", system.name), "spec_args", None)
    if not callable(hook):
        return system
    resolved = hook(dict(system.args))
    return system if resolved == system.args else system.model_copy(
        update={"args": dict(sorted(resolved.items()))})


ARTIFACTS = "artifacts"
"""The folder of a results directory where systems keep trained weights (docs/parametric.md §4)."""


def system_factory(run: RunSpec, model: Model, artifacts: str | Path | None = None
                   ) -> Callable[[], System]:
    """A zero-argument constructor of fresh system instances for one run; a system that
    keeps artifacts keeps them in ``artifacts`` (the results folder's ``artifacts``)."""
    cls = resolve("system", run.system.name)

    hooks = _BUILD_HOOKS.get()

    def make() -> System:
        system = cls(model=model, sampling=run.sampling, seed=run.seed, **run.system.args)
        if hooks is not None:
            system = hooks.system(system)
        return give_artifact_folder(system, artifacts) if artifacts is not None else system

    make()  # fail early on bad system arguments, before anything is stored
    return make


def helper_endpoints(run: RunSpec, make: Callable[[], System], model: Model
                     ) -> list[tuple[str, Model]]:
    """The models a system of ``run`` calls besides the run's own ``model`` (a summarizer or an
    updater named by a model spec, its backend in ``<name>_options``), each with the setting
    that gives its endpoint, so that the run checks them before it registers anything."""
    params = getattr(resolve("system", run.system.name), "params", {}) or {}
    helpers = [name for name in params if f"{name}_options" in params]
    if not helpers:
        return []
    system = make()
    found: list[tuple[str, Model]] = []
    for name in helpers:
        helper = getattr(system, name, None)
        if helper is not None and helper is not model and isinstance(helper, Preflight):
            found.append((f"--system {run.system.label} (its {name}_options)",
                          cast(Model, helper)))
    return found


def run_info(model: Model, system: System, extra: dict[str, Any]) -> dict[str, Any]:
    """What every run records so numbers can be compared later (docs/design.md §4.3)."""
    tok = model.tokenizer
    return {
        "clstream_version": clstream.__version__,
        "python": sys.version.split()[0],
        "model_info": model.describe(),
        "system_info": system.describe(),
        "tokenizer": {"name": tok.name, "exact": tok.exact},
        **extra,
    }
