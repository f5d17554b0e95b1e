"""The label each run is shown under in a report: its system, and what sets it apart.

Runs of one protocol that share a system label are told apart by the parts of their specs that
differ (docs/design.md §4: the spec is everything that determines a run's results): the model,
the seed, a protocol parameter (``prompt=coached``, ``supervision=C``), a sampling value
(``temperature=0.2``), the dataset. Only when two specs differ in nothing a reader can name
(or are the same spec) does a label fall back to the run id, which a reader can look up in
the run details table. Labels are always unique.
"""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import Any

SEPARATOR = " \u00b7 "
MAX_VALUE_CHARS = 32
"""A value longer than this (a list of tasks) is shortened; uniqueness is checked after."""


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), item, out)
    else:
        out[prefix] = value


def _spec(run: dict[str, Any]) -> dict[str, Any]:
    meta = run.get("meta")
    spec = meta.get("spec") if isinstance(meta, dict) else None
    return spec if isinstance(spec, dict) else {}


def _dataset_name(run: dict[str, Any]) -> str | None:
    """The run's dataset by file name (or its setting), else by hash; None when unknown."""
    data = run.get("dataset")
    if isinstance(data, dict):
        path = data.get("path")
        if isinstance(path, str) and path:
            return PurePath(path).name or path
        setting = data.get("setting")
        if isinstance(setting, str) and setting:
            return setting
    sha = _spec(run).get("dataset_hash")
    return str(sha)[:8] if sha else None


def nameable_fields(run: dict[str, Any]) -> dict[str, Any]:
    """The spec choices a reader can name, by dotted key: the model (as the summary labels
    it), the seed, system arguments, protocol parameters, sampling values and the dataset."""
    spec = _spec(run)
    out: dict[str, Any] = {"model": run.get("model") or _flatten_model(spec.get("model"))}
    if "seed" in spec:
        out["seed"] = spec["seed"]
    system = spec.get("system")
    if isinstance(system, dict):
        _flatten("system", system.get("args"), out)
        out.pop("system", None)  # a system without arguments
    for group in ("params", "sampling"):
        inner: dict[str, Any] = {}
        _flatten("", spec.get(group), inner)
        out.update({f"{group}.{k}": v for k, v in inner.items() if k})
    out["dataset"] = _dataset_name(run)
    return out


def _flatten_model(model: Any) -> str | None:
    if not isinstance(model, dict):
        return None
    name, args = model.get("name"), model.get("args")
    target = args.get("target") if isinstance(args, dict) else None
    return f"{name}:{target}" if target else (str(name) if name else None)


def _text(value: Any) -> str:
    if isinstance(value, str):
        text = value
    elif isinstance(value, list | tuple):
        text = ",".join(_text(v) for v in value) or "none"
    else:
        text = json.dumps(value) if value is None or isinstance(value, bool) else str(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "\u2026"


def _short_names(keys: list[str]) -> dict[str, str]:
    """``params.prompt`` -> ``prompt``; the full key where two keys would read alike."""
    last = [k.rsplit(".", 1)[-1] for k in keys]
    return {k: (s if last.count(s) == 1 else k) for k, s in zip(keys, last, strict=True)}


def _partition(values: list[str]) -> list[int]:
    """Each value replaced by the position it first appears at: equal for fields that split
    the runs the same way."""
    return [values.index(v) for v in values]


def _tags(group: list[dict[str, Any]]) -> list[list[str]]:
    """For runs sharing one label: each run's ``key=value`` for every field that differs."""
    fields = [nameable_fields(run) for run in group]
    keys: list[str] = []
    for f in fields:
        keys += [k for k in f if k not in keys]
    missing = object()
    differing: list[str] = []
    seen: list[list[int]] = []
    for key in keys:
        values = [json.dumps(f.get(key, missing), sort_keys=True, default=id) for f in fields]
        partition = _partition(values)
        # a field that varies exactly as an earlier one does (the sampling seed with the run
        # seed, the dataset with the setting) adds words but tells no runs apart
        if len(set(values)) > 1 and partition not in seen:
            differing.append(key)
            seen.append(partition)
    short = _short_names(differing)
    tags = []
    for f in fields:
        row = []
        for key in differing:
            value = f.get(key, missing)
            if value is missing:
                continue
            # the model and the dataset are recognisable by their names alone
            row.append(_text(value) if key in ("model", "dataset") else
                       f"{short[key]}={_text(value)}")
        tags.append(row)
    return tags


def display_labels(runs: list[dict[str, Any]]) -> list[str]:
    """One unique label per run: the system label, with what differs from the runs that share
    it (``oracle \u00b7 prompt=coached``), and the run id only where nothing nameable does."""
    labels = [str(r.get("system") or r.get("run_id") or "?") for r in runs]
    groups: dict[str, list[int]] = {}
    for i, label in enumerate(labels):
        groups.setdefault(label, []).append(i)
    for members in groups.values():
        if len(members) < 2:
            continue
        for i, tags in zip(members, _tags([runs[i] for i in members]), strict=True):
            labels[i] = SEPARATOR.join([labels[i], *tags])
    counts = {label: labels.count(label) for label in labels}
    for i, label in enumerate(list(labels)):
        if counts[label] > 1:
            labels[i] = f"{label}{SEPARATOR}{str(runs[i].get('run_id') or i)[:8]}"
    return _unique(labels)


def _unique(labels: list[str]) -> list[str]:
    """Number any label still shared (two runs with the same id in a merged summary)."""
    out: list[str] = []
    for label in labels:
        candidate, n = label, 1
        while candidate in out:
            n += 1
            candidate = f"{label} ({n})"
        out.append(candidate)
    return out
