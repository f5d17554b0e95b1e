"""Choosing the runs a reading verb means (``export``, ``summary``, ``report``, ``view``) by
protocol, dataset and system as typed; each protocol writes its own export format
(docs/formats.md §3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clstream.core.errors import ClstreamError, StoreError
from clstream.core.reader import ResultsReader
from clstream.core.registry import canonical_component
from clstream.core.specs import ComponentSpec, parse_model_spec, sha256_file
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


def _as_typed(kind: str, text: str, spec: Any) -> bool:
    """Whether the stored run spec ``spec`` is what ``text``, as given to ``run``, ran as: the
    same name, and every argument typed there stored with that value. A run is labelled with
    its resolved parameters (``mem0`` runs as ``mem0:retriever=dense`` where an embedder is
    installed), so the name the user gave finds it too."""
    try:
        typed = ComponentSpec.parse(text, kind)
        stored = ComponentSpec.model_validate(spec)
    except (ClstreamError, ValueError):
        return False
    return typed.name == stored.name and all(
        key in stored.args and str(stored.args[key]) == str(value)
        for key, value in typed.args.items())


def dataset_file_sha256(dataset: str) -> str | None:
    """The SHA-256 of the file ``dataset`` names, where it names one (else None)."""
    try:
        return sha256_file(dataset) if Path(dataset).is_file() else None
    except OSError:
        return None


def dataset_matches(store: ResultsReader, run: RunRow, dataset: str,
                    file_sha256: str | None = None) -> bool:
    """Whether ``dataset`` names the run's dataset: its SHA-256 or a prefix of at least 6
    hex digits, the path it was read from (as stored, resolved, or its file name), or, with
    ``file_sha256`` (:func:`dataset_file_sha256` of ``dataset``), a file of the same content
    read from another path (the dataset's hash is that of its file, or the stored view keeps
    the file's hash as ``file_sha256``)."""
    text = dataset.strip()
    if len(text) >= 6 and run.dataset_sha256.startswith(text.lower()):
        return True
    if file_sha256 is not None and file_sha256 == run.dataset_sha256:
        return True
    try:
        stored, content = store.get_dataset(run.dataset_sha256)
    except ClstreamError:
        return False
    if file_sha256 is not None and isinstance(content, dict) \
            and content.get("file_sha256") == file_sha256:
        return True
    if not stored:
        return False
    candidates = {stored, Path(stored).name}
    try:
        candidates.add(str(Path(stored).resolve()))
        return bool(candidates & {text, str(Path(text).resolve())})
    except OSError:
        return text in candidates


def runs_of_system(store: ResultsReader, runs: list[RunRow], system: str, *,
                   where: str | None = None) -> list[RunRow]:
    """The runs of ``runs`` that ``system``, as the user typed it, means: the run whose id it
    is, or those labelled as it, typed or canonically (``rag:k=8`` finds the run labelled
    ``rag`` when 8 is the declared default; a run stored under a pre-canonical label is found
    by either). Failing that, the runs the system as given to ``run`` resolved to
    (:func:`_as_typed`: ``mem0`` finds ``mem0:retriever=bm25``); when those are runs of two
    resolved systems, the one-line refusal names both (``where``, default the store's
    directory, opens it)."""
    systems = _typed_labels("system", system)
    found = [r for r in runs if r.run_id == system
             or systems & _stored_labels("system", r.system, r.spec.get("system"))]
    if found:
        return found
    found = [r for r in runs if _as_typed("system", system, r.spec.get("system"))]
    resolved = sorted({r.system for r in found})
    if len(resolved) > 1:
        raise StoreError(f"{where or store.dir}: system {system!r} ran as "
                         f"{' and '.join(resolved)}; give one of them")
    return found


def no_run_error(store: ResultsReader, candidates: list[RunRow], system: str,
                 protocol: str | None = None, dataset: str | None = None, *,
                 where: str | None = None) -> StoreError:
    """The one line saying no run of ``candidates`` (the runs of ``protocol`` over
    ``dataset``) is of ``system``, listing the systems there are."""
    known = ", ".join(sorted({r.system for r in candidates})) or "none"
    scope = "".join([f" of {protocol}" if protocol else "", f" over {dataset}" if dataset else ""])
    return StoreError(f"{where or store.dir}: no run{scope} of system {system!r} (runs here: "
                      f"{known})")


def select_runs(store: ResultsReader, protocol: str | None = None,
                dataset: str | None = None, system: str | None = None, *,
                where: str | None = None) -> list[RunRow]:
    """The runs of ``store`` of ``protocol`` over ``dataset`` of ``system`` (as typed:
    :func:`runs_of_system`, whose refusal ``where`` opens); any may be None: any."""
    file_sha256 = dataset_file_sha256(dataset) if dataset is not None else None
    runs = [r for r in store.runs()
            if (protocol is None or r.protocol == protocol)
            and (dataset is None or dataset_matches(store, r, dataset, file_sha256))]
    return runs if system is None else runs_of_system(store, runs, system, where=where)


def _describe(store: ResultsReader, run: RunRow, with_seed: bool = False) -> str:
    try:
        path = store.get_dataset(run.dataset_sha256)[0]
    except ClstreamError:
        path = ""
    where = Path(path).name if path else run.dataset_sha256[:8]
    seed = run.spec.get("seed")
    return f"{run.run_id} ({run.protocol}, {where}, {run.model}" + (
        f", seed {seed})" if with_seed and seed is not None else ")")


def select_run(store: ResultsReader, system: str, model: str | None = None, *,
               protocol: str | None = None, dataset: str | None = None) -> RunRow:
    """The one run ``system`` (as typed: :func:`runs_of_system`) means, optionally for
    ``model``, ``protocol`` and ``dataset`` (:func:`dataset_matches`); two such runs are the
    usual one-line refusal naming both."""
    models = None if model is None else _typed_labels("model", model)
    candidates = select_runs(store, protocol, dataset)
    runs = runs_of_system(store, candidates, system)
    if models is not None:
        runs = [r for r in runs if models & _stored_labels("model", r.model, r.spec.get("model"))]
    if not runs:
        raise no_run_error(store, candidates, system, protocol, dataset)
    if len(runs) > 1:
        seeds = len({r.spec.get("seed") for r in runs}) > 1  # what tells them apart
        ids = ", ".join(_describe(store, r, seeds) for r in runs)
        wanted = [flag for flag, value, values in (
            ("--protocol", protocol, {r.protocol for r in runs}),
            ("--dataset", dataset, {r.dataset_sha256 for r in runs}),
            ("--model", model, {r.model for r in runs})) if value is None and len(values) > 1]
        raise StoreError(f"{store.dir}: system {system!r} has several runs ({ids}); pass "
                         f"{', '.join(wanted)}{' or ' if wanted else ''}a run id")
    return runs[0]
