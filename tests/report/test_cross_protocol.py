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
