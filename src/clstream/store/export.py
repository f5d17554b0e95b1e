"""Choosing the run an ``export`` means; each protocol writes its own format (docs/formats.md §3)."""

from __future__ import annotations

from typing import Any

from clstream.core.errors import ClstreamError, StoreError
from clstream.core.reader import ResultsReader
from clstream.core.registry import canonical_component
from clstream.core.specs import ComponentSpec, parse_model_spec
from clstream.store.db import RunRow


def _canonical_label(kind: str, spec: ComponentSpec) -> str | None:
    try:
        return canonical_component(kind, spec).label
    except ClstreamError:
        return None


def _typed_labels(kind: str, text: str) -> set[str]:
    """What ``text``, typed on the command line, may be stored as: itself, its arguments in
    canonical order, and its canonical label (``rag:k=8`` -> ``rag`` when 8 is the default)."""
    labels = {text}
    try:
        spec = parse_model_spec(text) if kind == "model" else ComponentSpec.parse(text, kind)
    except ClstreamError:
        return labels
    labels.add(spec.label)
    labels.add(_canonical_label(kind, spec) or spec.label)
    return labels


def _stored_labels(kind: str, label: str, spec: Any) -> set[str]:
    """A stored run's label and the canonical label of its stored spec (which differ for a run
    written before specs were canonical)."""
    labels = {label}
    try:
        component = ComponentSpec.model_validate(spec)
    except ValueError:
        return labels
    labels.add(_canonical_label(kind, component) or label)
    return labels


def select_run(store: ResultsReader, system: str, model: str | None = None) -> RunRow:
    """The one run whose system label (or run id) is ``system``, optionally for ``model``.

    Labels match as typed or canonically: ``rag:k=8`` finds the run labelled ``rag`` when 8 is
    the declared default, and a run stored under a pre-canonical label is found by either."""
    systems = _typed_labels("system", system)
    models = None if model is None else _typed_labels("model", model)
    runs = [r for r in store.runs()
            if r.run_id == system
            or systems & _stored_labels("system", r.system, r.spec.get("system"))]
    if models is not None:
        runs = [r for r in runs if models & _stored_labels("model", r.model, r.spec.get("model"))]
    if not runs:
        known = ", ".join(sorted({r.system for r in store.runs()})) or "none"
        raise StoreError(f"{store.dir}: no run of system {system!r} (runs here: {known})")
    if len(runs) > 1:
        ids = ", ".join(f"{r.run_id} ({r.model})" for r in runs)
        raise StoreError(
            f"{store.dir}: system {system!r} has several runs ({ids}); pass --model or a run id"
        )
    return runs[0]
