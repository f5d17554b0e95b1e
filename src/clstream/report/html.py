"""One self-contained HTML file comparing the systems of a results directory.

Input is the dict ``clstream summary DIR --json`` prints. Runs are grouped by protocol and each
group is drawn by that protocol's ``report_section`` (or a renderer given to
``register_section``); a protocol this release does not know gets a plain table, so a report
never fails on it. Everything the
page needs (CSS, SVG figures) is inline: it opens offline, and all text is escaped by jinja2's
autoescaping (figures are SVG written by matplotlib, which escapes its own text).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2

from clstream.core.errors import DataError
from clstream.core.files import write_atomic
from clstream.core.registry import names, resolve
from clstream.render.base import Fields, Section, run_fields
from clstream.render.figures import shared_colours
from clstream.report.by_dataset import render_by_dataset
from clstream.report.cross_protocol import cross_protocol
from clstream.report.cross_section import render_cross_section
from clstream.report.generic import render_broken_section, render_generic_section
from clstream.report.paired_section import render_paired_section

SectionRenderer = Callable[[list[dict[str, Any]], list[str], object], Section]
"""``(runs of one protocol, their display labels, summary source) -> Section``."""

_SECTIONS: dict[str, SectionRenderer] = {}
_TEMPLATES = Path(__file__).parent / "templates"

BASELINE_NOTE = (
    "Runs tagged \u201cbaseline\u201d use the builtin model: an offline reader shipped with "
    "clstream that needs no GPU and no network. It is not a language model; its scores are a "
    "reference point for checking the harness and comparing memory methods, not a measurement "
    "of an LLM."
)


def register_section(protocol: str, renderer: SectionRenderer) -> None:
    """Use ``renderer`` for the runs whose ``protocol`` is ``protocol``, in place of the
    registered protocol's own section (a report made from another tool's summary)."""
    _SECTIONS[protocol] = renderer


def _renderer(protocol: str) -> SectionRenderer:
    if protocol in _SECTIONS:
        return _SECTIONS[protocol]
    if protocol in names("protocol"):
        return resolve("protocol", protocol).report_section

    def fallback(runs: list[dict[str, Any]], labels: list[str], source: object) -> Section:
        return render_generic_section(runs, labels, source, protocol)

    return fallback


def _runs(summary: Any, source: object) -> list[dict[str, Any]]:
    if not isinstance(summary, dict):
        raise DataError(source, None, None, "a summary must be a JSON object")
    runs = summary.get("runs")
    if not isinstance(runs, list):
        raise DataError(source, None, "runs", "expected a list of runs")
    for i, run in enumerate(runs):
        f = run_fields(source, i, run)
        for key in ("protocol", "system"):
            if not isinstance(run.get(key), str) or not run[key]:
                raise f.error(key, "expected a non-empty string")
    return runs


COUNT_KEYS = {"items": "items", "instances": "instances"}
"""Dataset counts not spelled ``n_...`` (ImprintBench's ``items`` and ``instances``)."""


def _count(n: int, noun: str) -> str:
    """``1 instance``, ``3 instances``: a count with its (plural) noun made singular for one."""
    return f"{n:,} {noun[:-1] if n == 1 and noun.endswith('s') else noun}"


def _datasets(runs: list[dict[str, Any]], fields: list[Fields]) -> list[dict[str, str]]:
    """Distinct datasets over all runs, with their hash and counts (``n_documents`` ...).

    A protocol whose summary names its dataset by setting rather than by file (ImprintBench,
    docs/summary-json.md) is shown by protocol and setting, with the hash its spec holds."""
    seen: dict[tuple[str, str], dict[str, str]] = {}
    for f, run in zip(fields, runs, strict=True):
        data = f.mapping(run, "dataset")
        if not data:
            continue
        setting = f.text(data, "setting")
        named = f"{run.get('protocol')} {setting} setting" if setting else "?"
        path = f.text(data, "path", named)
        sha = f.text(data, "sha256") or f.text(run, "meta.spec.dataset_hash", "?")
        counts = [
            _count(f.integer(data, k) or 0, COUNT_KEYS.get(k) or k[2:].replace("_", " "))
            for k in data
            if (k.startswith("n_") or k in COUNT_KEYS) and f.integer(data, k) is not None
        ]
        seen.setdefault(
            (path, sha), {"path": path, "sha256": sha, "counts": " \u00b7 ".join(counts)}
        )
    return list(seen.values())


def build_sections(summary: dict[str, Any], source: object) -> list[Section]:
    """One section per protocol present, known protocols first in a fixed order; first of
    all the cross-protocol table when runs of two or more protocols are present."""
    runs = _runs(summary, source)
    groups: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        if "broken" not in run:
            groups.setdefault(run["protocol"], []).append(run)
    known = names("protocol")
    order = [p for p in known if p in groups] + sorted(set(groups) - set(known))
    # Labels tell runs apart within a section; the same system on two protocols needs no tag.
    # Runs over different datasets are drawn in different sections (report.by_dataset).
    # One colour per series label over the whole report, whichever charts leave a system out.
    with shared_colours():
        sections = [s for p in order for s in render_by_dataset(p, groups[p], _renderer(p), source)]
    broken = [run for run in runs if "broken" in run]
    view = cross_protocol(runs)
    first = [render_cross_section(view)] if len(view["protocols"]) >= 2 else []
    statistics = render_paired_section(summary)
    return (first + sections + ([statistics] if statistics is not None else [])
            + ([render_broken_section(broken, source)] if broken else []))


def render_html(summary: dict[str, Any]) -> str:
    """The report as one HTML string."""
    source = summary.get("dir") if isinstance(summary, dict) else None
    source = source or "summary"
    sections = build_sections(summary, source)
    runs = summary["runs"]
    fields = [run_fields(source, i, r) for i, r in enumerate(runs)]
    version = str(summary.get("clstream_version") or "")
    run_versions = sorted(
        {f.text(r, "meta.clstream_version") for f, r in zip(fields, runs, strict=True)}
        - {"", version}
    )
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("report.html").render(
        directory=str(summary.get("dir") or ""),
        generated_at=str(summary.get("generated_at") or ""),
        version=version,
        run_versions=run_versions,
        n_runs=len(runs),
        datasets=_datasets(runs, fields),
        baseline_note=BASELINE_NOTE
        if any(f.get(r, "model_info.baseline") is True for f, r in zip(fields, runs, strict=True))
        else "",
        sections=sections,
    )


def render_report(summary: dict[str, Any], out_path: str | Path) -> Path:
    """Write the self-contained HTML report for ``summary`` to ``out_path``; returns the path.

    The page is rendered first and written atomically: a failure (a missing directory, which
    is never created, a full or read-only disk) raises a one-line
    :class:`~clstream.core.files.WriteError` and leaves no partial or empty file."""
    out = Path(out_path)
    html = render_html(summary)
    write_atomic(out, html)
    return out
