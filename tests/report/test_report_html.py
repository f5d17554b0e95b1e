"""The HTML report: self-contained, complete, escaped, and robust to partial or odd input."""

from __future__ import annotations

import html
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from clstream.core.errors import DataError
from clstream.render.base import Section, display_labels
from clstream.render.fmt import fmt_cost, fmt_int, fmt_rate, fmt_seconds
from clstream.report import register_section, render_html, render_report
from clstream.report.html import _SECTIONS

LABELS = ["full", "window:w=4", "rag:k=8", "rag+window:k=8,w=4"]
METRIC_NAMES = [
    "Accuracy",
    "AL",
    "DS",
    "PM",
    "acquisition latency",
    "distraction susceptibility",
    "phase miss",
    "Adaptability",
    "Maladaptation",
    "Prescience",
    "Stubbornness",
    "Lag",
    "Volatility",
    "Stability",
    "Obstinacy",
]


def visible_text(page: str) -> str:
    """The page's text without markup, entities decoded, whitespace collapsed."""
    text = re.sub(r"<svg.*?</svg>", " ", page, flags=re.S)
    text = re.sub(r"<style.*?</style>", " ", text, flags=re.S)
    text = html.unescape(re.sub(r"<[^>]+>", " ", text))
    return re.sub(r"\s+", " ", text)


def svgs(page: str) -> list[str]:
    return re.findall(r"<svg\b.*?</svg>", page, flags=re.S)


def test_report_is_one_self_contained_file(summary: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "nested").mkdir()  # render_report never creates directories
    out = render_report(summary, tmp_path / "nested" / "report.html")
    assert out == tmp_path / "nested" / "report.html"
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, flags=re.I)
    assert "<script" not in page.lower()
    assert "<link" not in page.lower()
    assert "@import" not in page and "url(http" not in page
    assert "<img" not in page.lower()


def test_report_shows_every_system_metric_and_figure(summary: dict[str, Any]) -> None:
    page = render_html(summary)
    text = visible_text(page)
    for label in LABELS:
        assert label in text
    for name in METRIC_NAMES:
        assert name in text
    for value in ["0.412 [0.380, 0.444]", "0.527 [0.496, 0.558]", "0.261 [0.230, 0.292]"]:
        assert value in text
    assert "18,734,112" in text and "13 min 32 s" in text and "2,880 / 2,880" in text
    assert "9f2c4e1ab07d3c55e8a1f0b2c6d4e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8" in text
    assert "a41c9d02e7b5f318" in text  # prompt template hash in the run details
    assert "Offline baseline" in text
    assert "Cost" not in re.findall(r"<th[^>]*>([^<]*)</th>", page)  # no cost given by any run
    charts = svgs(page)
    assert len(charts) == 5
    titles = [re.findall(r'aria-label="([^"]*)"', c)[0] for c in charts]
    assert titles == [
        "Accuracy, AL, DS and PM per system",
        "Accuracy by interval",
        "Transition behaviours",
        "Accuracy by question type",
        "Accuracy by change frequency",
    ]
    for chart in charts:
        for label in LABELS[:3]:
            assert f">{label}</text>" in chart
        assert "rag+window" not in chart  # unscored run is left out of the charts


def test_incomplete_run_keeps_its_row(summary: dict[str, Any]) -> None:
    page = render_html(summary)
    row = next(r for r in re.findall(r"<tr>.*?</tr>", page, flags=re.S) if "rag+window" in r)
    cells = [visible_text(c).strip() for c in re.findall(r"<td[^>]*>.*?</td>", row, flags=re.S)]
    assert cells[0] == "rag+window:k=8,w=4 baseline incomplete"
    assert cells[1] == "0"  # its seed
    assert cells[2:7] == ["\u2014"] * 5
    assert "0 / 2,880" in cells
    assert "Not scored yet" in visible_text(page)


def test_partially_scored_run_is_charted_and_marked(summary: dict[str, Any]) -> None:
    run = summary["runs"][1]
    run["status"].update(probes_done=1500, complete=False)
    page = render_html(summary)
    assert any(">window:w=4 (incomplete)</text>" in c for c in svgs(page))
    assert "scored only over the questions answered at every interval" in visible_text(page)


def test_hostile_text_is_escaped(summary: dict[str, Any]) -> None:
    evil = "<script>alert(1)</script>"
    summary["runs"][0]["system"] = evil
    summary["runs"][3]["system"] = evil + "\"'&"
    summary["runs"][0]["dataset"]["path"] = "<img src=x onerror=alert(2)>"
    summary["dir"] = "</title><script>alert(3)</script>"
    page = render_html(summary)
    assert "<script" not in page.lower()
    assert "<img" not in page.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert evil in visible_text(page)
    assert any("&lt;script&gt;alert(1)&lt;/script&gt;</text>" in c for c in svgs(page))


def test_labels_matplotlib_would_misread_stay_verbatim(summary: dict[str, Any]) -> None:
    summary["runs"][0]["system"] = "_hidden"
    summary["runs"][1]["system"] = "cost $5 $x$"
    page = render_html(summary)
    chart = svgs(page)[1]
    assert "_hidden</text>" in chart
    assert "cost $5 $x$</text>" in chart


def test_svg_ids_are_unique_and_output_is_deterministic(summary: dict[str, Any]) -> None:
    page = render_html(summary)
    ids = Counter(re.findall(r'\bid="([^"]+)"', page))
    assert ids and max(ids.values()) == 1
    for ref in re.findall(r'(?:url\(#|href="#)([^)"]+)', page):
        assert ref in ids
    assert render_html(summary) == page


def test_duplicate_system_labels_are_told_apart() -> None:
    runs = [
        {"system": "rag:k=8", "model": "builtin", "run_id": "aaaa1111"},
        {"system": "rag:k=8", "model": "openai:gpt", "run_id": "bbbb2222"},
        {"system": "rag:k=8", "model": "openai:gpt", "run_id": "cccc3333"},
        {"system": "full", "model": "builtin", "run_id": "dddd4444"},
    ]
    assert display_labels(runs) == [
        "rag:k=8 \u00b7 builtin",
        "rag:k=8 \u00b7 openai:gpt \u00b7 bbbb2222",
        "rag:k=8 \u00b7 openai:gpt \u00b7 cccc3333",
        "full",
    ]


def test_missing_optional_parts_do_not_break_the_report(summary: dict[str, Any]) -> None:
    run = summary["runs"][0]
    run["ci"] = None
    run["metrics"]["transitions"]["prescience"] = None
    run["metrics"]["transitions"]["lag"] = float("nan")
    del run["metrics"]["by_type"]
    run["cost_usd"] = 0.0421
    run["tokens"]["reasoning"] = 5000
    run["model"] = "openai:gpt-x"
    page = render_html(summary)
    text = visible_text(page)
    headers = re.findall(r"<th[^>]*>([^<]*)</th>", page)
    assert "Cost" in headers and "Reasoning tokens" in headers and "Model" in headers
    assert "$0.0421" in text and "openai:gpt-x" in text
    assert "0.412 [" not in text  # no interval shown without one
    assert "Accuracy by question type" in text  # other runs still have types


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda s: s["runs"][0]["metrics"].update(accuracy="high"), "metrics.accuracy"),
        (lambda s: s["runs"][0]["ci"].update(accuracy=[0.1]), "ci.accuracy"),
        (lambda s: s["runs"][0]["status"].update(probes_done=2.5), "status.probes_done"),
        (lambda s: s["runs"][0].update(metrics=[1, 2]), "metrics"),
        (
            lambda s: s["runs"][0]["metrics"].update(accuracy_by_interval=[0.5, "x"]),
            "metrics.accuracy_by_interval[1]",
        ),
        (lambda s: s["runs"][0].update(protocol=None), "protocol"),
    ],
)
def test_malformed_run_names_run_and_field(
    summary: dict[str, Any], mutate: Any, field: str
) -> None:
    mutate(summary)
    with pytest.raises(DataError) as err:
        render_html(summary)
    message = str(err.value)
    assert "results/oaks-demo" in message and "run 3fa9c1d2e4b5a601" in message
    assert f"field '{field}'" in message and "\n" not in message


def test_malformed_summary_is_a_data_error() -> None:
    with pytest.raises(DataError, match="field 'runs'"):
        render_html({"dir": "d", "runs": {"a": 1}})
    with pytest.raises(DataError, match=r"runs\[0\]"):
        render_html({"dir": "d", "runs": ["not a run"]})


def test_empty_summary_renders() -> None:
    page = render_html(
        {"dir": "empty", "generated_at": "now", "clstream_version": "0.1.0", "runs": []}
    )
    assert "holds no runs yet" in visible_text(page)


def test_other_protocols_get_a_section(summary: dict[str, Any]) -> None:
    summary["runs"].append(
        {
            "run_id": "5e5e5e5e5e5e5e5e",
            "protocol": "futurebench",
            "system": "exp-recent:k=4",
            "model": "builtin",
            "model_info": {"baseline": True},
            "status": {"probes_done": 50, "probes_total": 50, "errors": 0, "complete": True},
            "metrics": {"online_acc": 0.62, "ped": 0.05, "n_tasks": 50, "bwt": {"1": 0.01}},
            "ci": {"online_acc": [0.5, 0.74]},
            "tokens": {"prompt": 1000, "completion": 200},
            "wall_s": 4000.0,
            "meta": {"seed": 3},
        }
    )
    page = render_html(summary)
    text = visible_text(page)
    assert page.index('id="protocol-oaks"') < page.index('id="protocol-futurebench"')
    assert 'href="#protocol-futurebench"' in page
    assert "exp-recent:k=4" in text and "0.620 [0.500, 0.740]" in text
    assert "1 h 06 min" in text and "online acc" in text and "n tasks" in text
    assert "no dedicated view" in text


def test_registered_section_renderer_is_used(summary: dict[str, Any]) -> None:
    def renderer(runs: list[dict[str, Any]], labels: list[str], source: object) -> Section:
        return Section("oaks", "Custom OAKS view", intro=[f"{len(runs)} runs from {source}"])

    register_section("oaks", renderer)
    try:
        text = visible_text(render_html(summary))
    finally:
        del _SECTIONS["oaks"]
    assert "Custom OAKS view" in text and "4 runs from results/oaks-demo" in text


def test_formatting() -> None:
    assert fmt_rate(0.41234, (0.38, 0.4449)) == "0.412 [0.380, 0.445]"
    assert fmt_rate(0.5, (None, 0.6)) == "0.500"
    assert fmt_rate(None, (0.1, 0.2)) == "\u2014"
    assert fmt_int(1234567) == "1,234,567"
    assert fmt_seconds(8.24) == "8.2 s"
    assert fmt_seconds(245) == "4 min 05 s"
    assert fmt_seconds(7630) == "2 h 07 min"
    assert fmt_cost(12.345) == "$12.35" and fmt_cost(0.00421) == "$0.0042"
    assert fmt_cost(None) == "\u2014"


def test_dataset_named_by_setting_shows_its_spec_hash(summary: dict[str, Any]) -> None:
    sha = "ab" * 32
    summary["runs"].append({
        "run_id": "imprint00000000", "protocol": "imprint", "system": "oracle",
        "model": "builtin", "meta": {"spec": {"dataset_hash": sha}},
        "dataset": {"setting": "news", "items": 117, "instances": 1},
    })
    text = visible_text(render_html(summary))
    assert f"Dataset imprint news setting \u00b7 117 items \u00b7 1 instance sha256 {sha}" in text
    assert "Dataset ?" not in text and "sha256 ?" not in text


def test_runs_that_differ_only_by_seed_show_it_in_a_seed_column(
        summary: dict[str, Any]) -> None:
    import copy

    again = copy.deepcopy(summary["runs"][0])
    again["run_id"], again["meta"]["seed"] = "9e8d7c6b5a403122", 7
    again["meta"]["spec"]["seed"] = 7
    summary["runs"].insert(1, again)
    page = render_html(summary)
    table = next(t for t in re.findall(r"<table.*?</table>", page, flags=re.S)
                 if "Scores per system" in t)
    header = [visible_text(h).strip() for h in re.findall(r"<th[^>]*>.*?</th>", table,
                                                           flags=re.S)]
    column = header.index("Seed")
    rows = [[visible_text(c).strip() for c in re.findall(r"<td[^>]*>.*?</td>", row, flags=re.S)]
            for row in re.findall(r"<tr>.*?</tr>", table, flags=re.S)]
    seeds = [(cells[0].split()[0], cells[column]) for cells in rows if cells]
    assert seeds[:3] == [("full", "0"), ("full", "7"), ("window:w=4", "0")]
