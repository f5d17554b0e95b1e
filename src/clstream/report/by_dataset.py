"""One report section per dataset: runs over different datasets never share a chart or a table.

Scores over two datasets are not comparable (docs/design.md §4.3: a result is tied to the hash
of the data it was measured on), yet a results directory, or several read as one, may hold
runs of one protocol over several datasets. Such a protocol's runs are drawn as one section per
dataset, each headed by the dataset's name and hash; a protocol whose runs all share one
dataset keeps its single section unchanged.

ImprintBench compares its settings (persona, news, code) in one section, a table and a chart
per setting, so there the rule is applied per setting: a section holds at most one dataset of
each setting.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import PurePath
from typing import Any

from clstream.render.base import Section, display_labels

SEPARATED_BY = {"imprint": "setting"}
"""Protocols whose section already draws each value of this ``dataset`` field apart."""


def dataset_hash(run: dict[str, Any]) -> str:
    """The hash of the dataset a run was measured on ("" when the summary names none)."""
    spec = (run.get("meta") or {}).get("spec") or {}
    found = spec.get("dataset_hash") if isinstance(spec, dict) else None
    if not found and isinstance(run.get("dataset"), dict):
        found = run["dataset"].get("sha256")
    return str(found or "")


def dataset_name(run: dict[str, Any]) -> str:
    """The dataset's file name (or what the protocol calls it) and the first 8 hex digits of
    its hash: ``oaks_small.jsonl (dataset 1a2b3c4d)``."""
    found = run.get("dataset")
    data: dict[str, Any] = found if isinstance(found, dict) else {}
    name = data.get("path") or data.get("setting")
    if isinstance(name, str) and "/" in name and not name.startswith("clbench:"):
        name = PurePath(name).name
    digest = dataset_hash(run)[:8]
    return f"{name} (dataset {digest})" if name else f"dataset {digest}"


def _separator(protocol: str, run: dict[str, Any]) -> str:
    field = SEPARATED_BY.get(protocol)
    data = run.get("dataset")
    return str(data.get(field) or "") if field and isinstance(data, dict) else ""


def dataset_groups(protocol: str, runs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The runs split so that no group holds two datasets of one setting (of the protocol as a
    whole, for a protocol without settings); the n-th group takes the n-th dataset of each
    setting, in the order the runs list them."""
    hashes: dict[str, list[str]] = {}
    for run in runs:
        seen = hashes.setdefault(_separator(protocol, run), [])
        if dataset_hash(run) not in seen:
            seen.append(dataset_hash(run))
    depth = max((len(h) for h in hashes.values()), default=0)
    groups: list[list[dict[str, Any]]] = [[] for _ in range(depth)]
    for run in runs:
        groups[hashes[_separator(protocol, run)].index(dataset_hash(run))].append(run)
    return groups


def render_by_dataset(protocol: str, runs: list[dict[str, Any]],
                      renderer: Callable[[list[dict[str, Any]], list[str], object], Section],
                      source: object) -> list[Section]:
    """The sections of one protocol's runs: one, or one per dataset group with the dataset
    named in its heading and its anchor."""
    groups = dataset_groups(protocol, runs)
    if len(groups) <= 1:
        return [renderer(runs, display_labels(runs), source)]
    sections = []
    for group in groups:
        section = renderer(group, display_labels(group), source)
        names = list(dict.fromkeys(dataset_name(run) for run in group))
        sections.append(dataclasses.replace(
            section, title=f"{section.title} \u2014 {', '.join(names)}",
            dataset=dataset_hash(group[0])))
    return sections
