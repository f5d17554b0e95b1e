"""The SeqMem-Eval report section: metric tables, the six charts, partial runs, escaping, bad
fields, and a report drawn from a real run of the synthetic stream."""

from __future__ import annotations

import html
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from clstream.core.errors import DataError
from clstream.report import render_html, render_report

T = 16
CHART_TITLES = [
    "Online accuracy Abar(tau)",
    "Hold-out accuracy H(k)",
    "Methods on the SeqMem-Eval dimensions",
    "Backward transfer BWT(t)",
    "Forgetting F(t)",
    "Cost by stage: retrieve, generate, update",
]


def visible_text(page: str) -> str:
    text = re.sub(r"<svg.*?</svg>", " ", page, flags=re.S)
    text = re.sub(r"<style.*?</style>", " ", text, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", text)))


def svgs(page: str) -> list[str]:
    return re.findall(r"<svg\b.*?</svg>", page, flags=re.S)


def rows_of(table: str) -> dict[str, list[str]]:
    """Body rows of one table: first word of the row -> the rest of its words."""
    out = {}
    for row in re.findall(r"<tr>.*?</tr>", table, flags=re.S):
        if "<td" in row:
            words = visible_text(row).split()
            out[words[0]] = words[1:]
    return out


def chart_titles(page: str) -> list[str]:
    return [re.findall(r'aria-label="([^"]*)"', c)[0] for c in svgs(page)]


def stage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt": prompt, "cached": 0, "completion": completion, "reasoning": 0}


def seqmem_run(run_id: str, system: str, acc: float, update_tokens: int,
               done: int = T) -> dict[str, Any]:
    curve = [round(acc * min(1.0, tau / 8), 4) for tau in range(1, done + 1)]
    bwt = {"1": round(acc / 2, 4), "2": round(acc / 3, 4), "4": -0.05, "8": 0.0}
    forgetting = {"1": 0.0, "2": 0.05, "4": round(acc / 4, 4), "8": 0.1}
    metrics = {"online_acc": acc, "ped": 0.02, "mer": round(acc - 0.1, 4), "r_min": 0.0625,
               "holdout_acc": round(acc - 0.05, 4), "trend_ho": 0.31, "bwt": bwt,
               "forgetting": forgetting, "iv": bwt["1"]}
    tokens_run = {"retrieve": stage(0, 0), "generate": stage(4000, 600),
                  "update": stage(update_tokens, update_tokens // 10)}
    run_total = 4600 + update_tokens + update_tokens // 10
    return {
        "run_id": run_id, "protocol": "seqmem", "system": system, "model": "builtin",
        "model_info": {"backend": "builtin", "baseline": True},
        "tokens": {"prompt": 9000 + update_tokens, "cached": 0, "completion": 1200,
                   "reasoning": 0},
        "wall_s": 12.5, "cost_usd": None,
        "meta": {"clstream_version": "0.1.0", "prompt_template_hash": "5eed" * 16, "seed": 0},
        "dataset": {"path": "syn.json", "sha256": "ab" * 32, "source": "synthetic",
                    "n_tasks": T, "n_holdout": 4},
        "plan": {"checkpoints": [0, 8, 16], "horizons": [1, 2, 4, 8], "retro_sample": 1.0},
        "status": {"online_done": done, "holdout_done": 12, "retro_done": 30, "calls": 5,
                   "errors": 0, "online_total": T, "complete": done == T},
        "metrics": metrics,
        "online_curve": curve,
        "holdout_curve": [{"checkpoint": 0, "accuracy": 0.0, "items": 4},
                          {"checkpoint": 8, "accuracy": round(acc / 2, 4), "items": 4},
                          {"checkpoint": 16, "accuracy": metrics["holdout_acc"], "items": 4}],
        "bwt": bwt, "forgetting": forgetting,
        "efficiency": {"tokens": run_total, "tokens_per_task": run_total / max(done, 1),
                       "tokens_by_stage": tokens_run,
                       "time_s_by_stage": {"retrieve": 0.4, "generate": 6.0,
                                           "update": 0.1 + update_tokens / 1000}},
        "probe_cost": {"tokens": 5000, "tokens_by_stage": {}, "time_s_by_stage": {}},
        "radar": {"online_utility": round((acc + 0.98) / 2, 4), "holdout_generalization": 0.6,
                  "backward_transfer": 0.55, "forgetting": 0.9,
                  "efficiency": round(1000 / (1000 + run_total / max(done, 1)), 4)},
    }


@pytest.fixture
def summary() -> dict[str, Any]:
    runs = [seqmem_run("aaaa000011112222", "memory-free", 0.05, 0),
            seqmem_run("bbbb000011112222", "exp-rag", 0.55, 0),
            seqmem_run("cccc000011112222", "dc-rs", 0.6, 7000)]
    unscored = seqmem_run("dddd000011112222", "g-memory", 0.0, 0, done=0)
    unscored.update(metrics=None, online_curve=[], holdout_curve=[], bwt={}, forgetting={})
    unscored["radar"] = dict.fromkeys(unscored["radar"])
    unscored["efficiency"].update(tokens_per_task=None)
    runs.append(unscored)
    return {"dir": "results/seqmem-demo", "generated_at": "2025-06-01T12:00:00+00:00",
            "clstream_version": "0.1.0", "runs": runs}


def test_section_is_self_contained(summary: dict[str, Any], tmp_path: Path) -> None:
    page = render_report(summary, tmp_path / "report.html").read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, flags=re.I)
    for banned in ("<script", "<link", "<img", "@import", "url(http"):
        assert banned not in page.lower()
    ids = Counter(re.findall(r'\bid="([^"]+)"', page))
    assert ids and max(ids.values()) == 1
    assert render_html(summary) == page


def test_tables_show_every_metric_of_every_method(summary: dict[str, Any]) -> None:
    page = render_html(summary)
    text = visible_text(page)
    assert "SeqMem-Eval" in text and "no dedicated view" not in text
    headers = re.findall(r"<th[^>]*>([^<]*)</th>", page)
    for name in ("OnlineAcc", "PED", "MER", "r_min", "HoldOutAcc", "Trend_HO", "IV",
                 "BWT(1)", "BWT(8)", "F(1)", "F(8)", "Tokens / task"):
        assert name in headers
    scores, horizons = (rows_of(t) for t in re.findall(r"<table.*?</table>", page,
                                                          flags=re.S)[:2])
    assert scores["exp-rag"][:11] == ["baseline", "0", "0.550", "0.020", "0.450", "0.062",
                                      "0.500", "0.310", "0.275", "16", "/"]
    assert horizons["exp-rag"] == ["baseline", "0.275", "0.183", "-0.050", "0.000",
                                   "0.000", "0.050", "0.138", "0.100"]
    assert scores["g-memory"][:4] == ["baseline", "incomplete", "0", "\u2014"]
    assert "0 / 16" in " ".join(scores["g-memory"])
    assert "Not scored yet" in text and "g-memory" in text


def test_six_charts_with_every_scored_method(summary: dict[str, Any]) -> None:
    page = render_html(summary)
    assert chart_titles(page) == CHART_TITLES
    for chart in svgs(page):
        for label in ("memory-free", "exp-rag", "dc-rs"):
            assert f">{label}</text>" in chart
        assert "g-memory" not in chart
    radar = svgs(page)[2]
    for dim in ("Online utility", "Hold-out generalization", "Backward transfer",
                "Low forgetting", "Efficiency"):
        assert f">{dim}</text>" in radar
    costs = svgs(page)[5]
    for part in ("retrieve", "generate", "update", "Tokens", "Time"):
        assert f">{part}</text>" in costs


def test_numbers_behind_the_charts(summary: dict[str, Any]) -> None:
    text = visible_text(render_html(summary))
    assert "update tokens" in text and "7,700" in text  # dc-rs: 7000 prompt + 700 completion
    assert "(rank 1)" in text and "(rank 3)" in text


def test_partial_runs_and_sampled_retro_are_noted(summary: dict[str, Any]) -> None:
    partial = seqmem_run("eeee000011112222", "awm", 0.3, 0, done=10)
    partial["plan"]["retro_sample"] = 0.25
    summary["runs"].append(partial)
    page = render_html(summary)
    assert any(">awm (incomplete)</text>" in c for c in svgs(page))
    text = visible_text(page)
    assert "first tasks answered without a failure" in text and "(0.25)" in text


def test_radar_keeps_only_dimensions_every_run_has(summary: dict[str, Any]) -> None:
    summary["runs"][0]["radar"]["holdout_generalization"] = None
    page = render_html(summary)
    radar = svgs(page)[2]
    assert ">Hold-out generalization</text>" not in radar
    assert "Left out (some run has no records for it): Hold-out generalization." in (
        visible_text(page))
    for run in summary["runs"]:
        run["radar"].update(backward_transfer=None, forgetting=None)
    assert "Methods on the SeqMem-Eval dimensions" not in chart_titles(render_html(summary))


def test_hostile_labels_are_escaped(summary: dict[str, Any]) -> None:
    evil = "<script>alert(1)</script>"
    summary["runs"][1]["system"] = evil
    page = render_html(summary)
    assert "<script" not in page.lower()
    assert evil in visible_text(page)
    assert all("&lt;script&gt;alert(1)&lt;/script&gt;</text>" in c for c in svgs(page))


@pytest.mark.parametrize(("mutate", "field"), [
    (lambda r: r["metrics"].update(online_acc="high"), "metrics.online_acc"),
    (lambda r: r["metrics"]["bwt"].update(x=0.1), "metrics.bwt"),
    (lambda r: r.update(online_curve=[0.1, "x"]), "online_curve[1]"),
    (lambda r: r["holdout_curve"][1].pop("checkpoint"), "holdout_curve[1].checkpoint"),
    (lambda r: r["efficiency"]["time_s_by_stage"].update(update="slow"),
     "efficiency.time_s_by_stage.update"),
    (lambda r: r.update(radar=[1]), "radar"),
])
def test_malformed_fields_name_the_run_and_field(summary: dict[str, Any], mutate: Any,
                                                 field: str) -> None:
    mutate(summary["runs"][1])
    with pytest.raises(DataError) as err:
        render_html(summary)
    message = str(err.value)
    assert "results/seqmem-demo" in message and "run bbbb000011112222" in message
    assert field in message and "\n" not in message


def test_report_of_a_real_run(tmp_path: Path) -> None:
    from clstream.cli import main

    data, out = tmp_path / "syn.json", tmp_path / "runs"
    assert main(["generate", "seqmem-synthetic", "--seed", "3", "--tasks", "20", "--holdout",
                 "4", "--out", str(data)]) == 0
    assert main(["run", "seqmem", str(data), "--system", "memory-free", "--system", "dc-rs",
                 "--out", str(out), "--no-progress"]) == 0
    assert main(["report", str(out)]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert chart_titles(page) == CHART_TITLES
    text = visible_text(page)
    assert "memory-free" in text and "dc-rs" in text and "20 / 20" in text
    assert "Not scored yet" not in text and "(incomplete)" not in page


def test_intervals_in_the_summary_show_in_the_table_and_as_a_band(
        summary: dict[str, Any]) -> None:
    from clstream.protocols.seqmem.report import render_seqmem_section

    run = summary["runs"][1]
    run["ci"] = {"online_acc": [0.45, 0.65],
                 "online_curve": [[max(0.0, y - 0.1), y + 0.1] for y in run["online_curve"]]}
    runs = summary["runs"]
    section = render_seqmem_section(runs, [r["system"] for r in runs], "s")
    cells = {row[0].text: row for row in section.tables[0].rows}
    assert cells["exp-rag"][2].text == "0.550" and cells["exp-rag"][2].sub == "[0.450, 0.650]"
    assert cells["dc-rs"][2].sub == ""
    online = next(f for f in section.figures if f.title.startswith("Online accuracy"))
    assert "Shaded" in online.caption and online.data is not None
    assert any("[" in row[2].text for row in online.data.rows)
