"""Runs over different datasets never share a chart or a table: one section per dataset, its
heading naming the dataset; and curves drawn with the intervals their summary carries."""

from __future__ import annotations

import copy
from typing import Any

from tests.report.conftest import make_summary

from clstream.render.base import Figure
from clstream.report.by_dataset import dataset_groups
from clstream.report.html import build_sections, render_html

OTHER_SHA = "11" * 32


def _two_datasets() -> dict[str, Any]:
    summary = make_summary()
    moved = summary["runs"][1]
    moved["dataset"] = {**moved["dataset"], "path": "data/oaks-other.json", "sha256": OTHER_SHA}
    return summary


def test_one_protocol_over_two_datasets_gives_a_section_per_dataset() -> None:
    summary = _two_datasets()
    sections = build_sections(summary, "s")
    assert [s.protocol for s in sections] == ["oaks", "oaks"]
    first, second = sections
    assert "oaks-babi-small.json (dataset 9f2c4e1a)" in first.title
    assert "oaks-other.json (dataset 11111111)" in second.title
    assert first.anchor != second.anchor
    moved = summary["runs"][1]["system"]
    for section in sections:
        tables = [*section.tables, *(f.data for f in section.figures if f.data is not None)]
        systems = {cell.text for t in tables for row in t.rows for cell in row} | {
            c.header for t in tables for c in t.columns}
        assert (moved in systems) == (section is second)
    page = render_html(summary)
    assert page.count('<section class="card" id="protocol-oaks') == 2


def test_one_dataset_keeps_one_section_as_before() -> None:
    sections = build_sections(make_summary(), "s")
    assert len(sections) == 1 and sections[0].anchor == "protocol-oaks"
    assert sections[0].title == "OAKS \u2014 streaming knowledge"


def test_settings_drawn_apart_are_not_split_until_one_setting_has_two_datasets() -> None:
    def run(setting: str, sha: str) -> dict[str, Any]:
        return {"protocol": "imprint", "system": "s", "dataset": {"setting": setting,
                                                                  "sha256": sha}}
    runs = [run("news", "a"), run("code", "b"), run("news", "a")]
    assert dataset_groups("imprint", runs) == [runs]
    runs.append(run("news", "c"))
    assert dataset_groups("imprint", runs) == [runs[:3], runs[3:]]
    assert dataset_groups("oaks", runs[:2]) == [runs[:1], runs[1:2]]


def _interval_figure(summary: dict[str, Any]) -> Figure:
    (section,) = build_sections(summary, "s")
    return next(f for f in section.figures if f.title == "Accuracy by interval")


def test_accuracy_by_interval_has_a_band_where_the_summary_has_intervals() -> None:
    plain = _interval_figure(make_summary())
    summary = make_summary()
    for run in summary["runs"]:
        if run["metrics"] is not None:
            curve = run["metrics"]["accuracy_by_interval"]
            run["ci"]["accuracy_by_interval"] = [[max(0.0, y - 0.05), min(1.0, y + 0.05)]
                                                 for y in curve]
    banded = _interval_figure(copy.deepcopy(summary))
    assert "Shaded" in banded.caption and "Shaded" not in plain.caption
    assert banded.svg.count("<g id=") > plain.svg.count("<g id=")  # one fill per series
    assert banded.data is not None and "[" in banded.data.rows[0][1].text
