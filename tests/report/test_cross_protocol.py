"""The cross-protocol view (docs/summary-json.md, "Cross-protocol view") from summary runs
made by hand: ranks with ties in each metric's direction, intervals, "not run", datasets kept
apart, cost, the CSV agreeing with the JSON, and the report's section first."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest

from clstream.report.cross_protocol import cross_protocol, csv_text, text_lines
from clstream.report.html import build_sections
from clstream.report.seed_groups import seed_groups
from clstream.report.seed_groups import text_lines as seed_lines


def _run(protocol: str, system: str, metrics: dict[str, Any], *, sha: str = "a" * 64,
         run_id: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"run_id": run_id or f"{protocol}-{system}", "protocol": protocol, "system": system,
            "model": "builtin", "tokens": {"prompt": 100, "completion": 10},
            "training": None, "wall_s": 1.5, "cost_usd": None,
            "meta": {"spec": {"system": {"name": system.split(":")[0], "args": {}},
                              "dataset_hash": sha}},
            "dataset": {"path": f"/d/{protocol}-{sha[:2]}.json", "sha256": sha},
            "metrics": metrics, **extra}


def _oaks(system: str, accuracy: float, ds: float, **extra: Any) -> dict[str, Any]:
    return _run("oaks", system, {"accuracy": accuracy, "distraction_susceptibility": ds},
                ci={"accuracy": [accuracy - 0.1, accuracy + 0.05],
                    "distraction_susceptibility": [ds, ds]}, **extra)


def _seqmem(system: str, online: float, bwt: dict[str, float],
            forgetting: dict[str, float]) -> dict[str, Any]:
    return _run("seqmem", system, {"online_acc": online, "bwt": bwt, "forgetting": forgetting})


RUNS = [
    _oaks("full", 0.9, 0.2), _oaks("rag", 0.9, 0.1), _oaks("window", 0.5, 0.3),
    _seqmem("full", 0.4, {"1": 0.2, "2": 0.4}, {"1": 0.5, "2": 0.1}),
    _seqmem("rag", 0.6, {"1": -0.2}, {"1": 0.3}),
]


def test_ranks_share_ties_and_follow_each_metric_direction() -> None:
    view = cross_protocol(RUNS)
    assert view["protocols"] == ["oaks", "seqmem"]
    columns = {c["key"]: c for c in view["columns"]}
    assert columns["oaks.distraction_susceptibility"]["better"] == "lower"
    assert columns["seqmem.bwt"]["better"] == "higher"
    assert columns["seqmem.forgetting"]["better"] == "lower"
    cells = {m["label"]: m["cells"] for m in view["methods"]}
    assert [cells[s]["oaks.accuracy"]["rank"] for s in ("full", "rag", "window")] == [1, 1, 3]
    assert [cells[s]["oaks.distraction_susceptibility"]["rank"]
            for s in ("full", "rag", "window")] == [2, 1, 3]
    assert cells["full"]["seqmem.bwt"]["value"] == pytest.approx(0.3)  # mean over horizons
    assert cells["full"]["seqmem.bwt"]["rank"] == 1
    assert cells["rag"]["seqmem.forgetting"]["rank"] == 1  # 0.3 < mean(0.5, 0.1)
    assert cells["rag"]["oaks.accuracy"]["interval"] == [0.9 - 0.1, 0.9 + 0.05]
    assert cells["full"]["seqmem.online_acc"]["interval"] is None  # SeqMem gives none
    # window never ran SeqMem: "not run", and no rank among those that did.
    assert cells["window"]["seqmem.online_acc"] is None
    lines = text_lines(view)
    assert any("window" in line and "not run" in line for line in lines)
    assert "OAKS DS, SeqMem forgetting (mean over horizons) (lower is better)" in lines[0]
    cost = {m["label"]: m["cost"] for m in view["methods"]}
    assert cost["full"] == {"runs": 2, "tokens": 220, "training_tokens": None,
                            "training_s": None, "wall_s": 3.0, "cost_usd": None}


def test_runs_of_other_datasets_are_other_columns_and_a_note_names_them() -> None:
    other = _oaks("rag", 0.2, 0.0, sha="b" * 64, run_id="oaks-rag-b")
    again = _oaks("rag", 0.7, 0.0, run_id="oaks-rag-again")
    view = cross_protocol([*RUNS, other, again])
    keys = [c["key"] for c in view["columns"]]
    assert "oaks@aaaaaaaa.accuracy" in keys and "oaks@bbbbbbbb.accuracy" in keys
    rag = next(m for m in view["methods"] if m["label"] == "rag")
    assert rag["cells"]["oaks@bbbbbbbb.accuracy"]["value"] == 0.2
    assert rag["cells"]["oaks@aaaaaaaa.accuracy"]["run_id"] == "oaks-rag-again"  # the latest
    full = next(m for m in view["methods"] if m["label"] == "full")
    assert full["cells"]["oaks@bbbbbbbb.accuracy"] is None
    assert any("oaks runs read 2 datasets" in n for n in view["notes"])
    assert any("2 runs of the same dataset" in n and "oaks-rag-again" in n
               for n in view["notes"])


def test_the_csv_holds_the_json() -> None:
    view = cross_protocol(RUNS)
    rows = list(csv.DictReader(io.StringIO(csv_text(view))))
    assert [r["method"] for r in rows] == [m["label"] for m in view["methods"]]
    for row, method in zip(rows, view["methods"], strict=True):
        for column in view["columns"]:
            cell, key = method["cells"][column["key"]], column["key"]
            if cell is None:
                assert row[key] == "not run" and row[f"{key}.rank"] == ""
                continue
            assert float(row[key]) == cell["value"]
            assert int(row[f"{key}.rank"]) == cell["rank"]
            if cell["interval"] is not None:
                assert [float(row[f"{key}.low"]), float(row[f"{key}.high"])] == \
                    cell["interval"]
        assert int(row["cost.tokens"]) == method["cost"]["tokens"]


def test_the_report_opens_with_the_table_only_for_two_protocols() -> None:
    sections = build_sections({"runs": RUNS}, "summary")
    assert sections[0].title == "Across protocols"
    table = sections[0].tables[0]
    window = next(row for row in table.rows if row[0].text == "window")
    assert "not run" in [cell.text for cell in window]
    headers = [c.header for c in table.columns]
    assert "OAKS DS \u2193" in headers and "OAKS accuracy \u2191" in headers
    one = build_sections({"runs": RUNS[:3]}, "summary")
    assert all(s.title != "Across protocols" for s in one)
    assert cross_protocol(RUNS[:3])["protocols"] == ["oaks"]


def _seeded(run: dict[str, Any], seed: int) -> dict[str, Any]:
    return {**run, "run_id": f"{run['run_id']}-s{seed}",
            "meta": {**run["meta"], "seed": seed, "spec": {**run["meta"]["spec"], "seed": seed}}}


def test_runs_that_differ_only_in_their_seed_are_rows_of_their_own() -> None:
    runs = [_seeded(_oaks("full", 0.9, 0.2), 0), _seeded(_oaks("full", 0.7, 0.2), 1),
            _seeded(_oaks("rag", 0.8, 0.1), 0), _seeded(_seqmem("full", 0.4, {}, {}), 0)]
    view = cross_protocol(runs)
    rows = [(m["label"], m["seeds"]) for m in view["methods"]]
    assert rows == [("full", [0]), ("full", [1]), ("rag", [0])]  # a method's seeds together
    accuracy = [m["cells"]["oaks.accuracy"]["value"] for m in view["methods"]]
    assert accuracy == [0.9, 0.7, 0.8]
    assert view["methods"][1]["cells"]["seqmem.online_acc"] is None  # seed 1: no seqmem run
    assert view["methods"][0]["cost"]["runs"] == 2
    assert not any("runs of the same dataset" in n for n in view["notes"])
    text = text_lines(view)
    header = next(line for line in text if "OAKS accuracy" in line)
    assert header.split()[:2] == ["method", "seed"]
    body = [line.split()[:3] for line in text if line.startswith("full ")]
    assert ["full", "0", "0.900"] in body and ["full", "1", "0.700"] in body
    csv_rows = list(csv.DictReader(io.StringIO(csv_text(view))))
    assert [(r["method"], r["seeds"]) for r in csv_rows] == [("full", "0"), ("full", "1"),
                                                              ("rag", "0")]
    table = build_sections({"runs": runs}, "summary")[0].tables[0]
    assert [c.header for c in table.columns][:2] == ["Method", "Seed"]
    assert [(row[0].text, row[1].text) for row in table.rows] == [
        ("full", "0"), ("full", "1"), ("rag", "0")]


def test_seeds_that_differ_only_across_protocols_keep_one_row_and_show_both() -> None:
    runs = [_seeded(_oaks("full", 0.9, 0.2), 0), _seeded(_seqmem("full", 0.4, {}, {}), 3)]
    view = cross_protocol(runs)
    assert [(m["label"], m["seeds"]) for m in view["methods"]] == [("full", [0, 3])]
    assert [line.split()[:2] for line in text_lines(view) if line.startswith("full ")][0] == \
        ["full", "0,3"]


def test_one_seed_for_every_run_keeps_one_row_per_method_and_no_seed_column() -> None:
    runs = [_seeded(run, 3) for run in RUNS]
    view = cross_protocol(runs)
    assert [(m["label"], m["seeds"]) for m in view["methods"]] == [
        ("full", [3]), ("rag", [3]), ("window", [3])]
    assert all("seed" not in line.split()[:2] for line in text_lines(view))
    assert [c.header for c in build_sections({"runs": runs}, "summary")[0].tables[0].columns
            ][1] != "Seed"
    assert {r["seeds"] for r in csv.DictReader(io.StringIO(csv_text(view)))} == {"3"}


def test_the_seeds_text_fits_its_longest_metric_label() -> None:
    runs = [_seeded(_seqmem("full", acc, {"1": 0.1}, {"1": 0.2}), seed)
            for seed, acc in ((0, 0.4), (1, 0.6))]
    lines = seed_lines(seed_groups(runs))
    metrics = [line for line in lines if line.startswith("  ")]
    assert len(metrics) == 3 and any("(mean over horizons)" in line for line in metrics)
    starts = {line.index(" 0.") for line in metrics}  # every mean in one column
    assert len(starts) == 1
    (start,) = starts
    assert all(line[start - 1:start + 1] == "  " for line in metrics)  # after a gap
