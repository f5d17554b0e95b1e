"""The viewer's JSON API (docs/viewer.md §2) against a results directory of all four
protocols: the report's numbers, paging with true totals, filters, items in full and
comparisons."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from served import HOSTILE, PROTOCOLS, SYSTEMS, fetch, get_json

from clstream.report.cross_protocol import cross_protocol
from clstream.report.store_summary import summarize
from clstream.store.db import ResultsStore
from clstream.view.items import natural_key
from clstream.view.server import ViewServer

ITEM_KINDS = {"oaks": ("probe",), "seqmem": ("online", "retro", "holdout"),
              "clbench": ("instance",), "imprint": ("item",)}


def _runs(server: ViewServer) -> list[dict[str, Any]]:
    doc = get_json(server, "/api/runs")
    return [run for group in doc["datasets"] for run in group["runs"]]


def _ref(server: ViewServer, protocol: str, system: str) -> str:
    found = [r["ref"] for r in _runs(server) if (r["protocol"], r["system"]) == (protocol, system)]
    assert len(found) == 1
    return str(found[0])


def test_runs_are_grouped_by_dataset_and_filtered(server: ViewServer) -> None:
    doc = get_json(server, "/api/runs")
    assert doc["total"] == len(PROTOCOLS) * len(SYSTEMS)
    assert sorted(g["protocol"] for g in doc["datasets"]) == sorted(PROTOCOLS)
    for group in doc["datasets"]:
        assert {r["dataset_sha256"] for r in group["runs"]} == {group["dataset_sha256"]}
        assert sorted(r["system"] for r in group["runs"]) == sorted(SYSTEMS)
    for run in _runs(server):
        assert run["ref"] == f"0:{run['run_id']}" and run["seed"] == 0
        assert run["status"]["errors"] == 0 and run["status"]["ok"] > 0
    only = get_json(server, "/api/runs?protocol=oaks&system=rag:k%3D2")
    assert only["total"] == 1 and only["datasets"][0]["runs"][0]["system"] == "rag:k=2"
    assert get_json(server, "/api/runs?seed=7")["total"] == 0


def test_summary_holds_the_report_numbers(server: ViewServer, results: Path) -> None:
    doc = get_json(server, "/api/summary")
    with ResultsStore(results) as store:
        expected = json.loads(json.dumps(summarize(store)))
    (summary,) = doc["summaries"]
    for got, want in zip(summary["runs"], expected["runs"], strict=True):
        assert got["ref"] == f"0:{want['run_id']}"
        assert got["metrics"] == want["metrics"] and got.get("ci") == want.get("ci")
    assert summary["paired"]["pairs"] == expected["paired"]["pairs"]
    assert doc["cross_protocol"] == json.loads(json.dumps(cross_protocol(expected["runs"])))
    oaks = doc["headlines"][_ref(server, "oaks", "rag:k=2")]
    accuracy = next(h for h in oaks if h["key"] == "accuracy")
    run = next(r for r in expected["runs"] if r["protocol"] == "oaks" and r["system"] == "rag:k=2")
    assert accuracy["value"] == run["metrics"]["accuracy"]
    assert accuracy["interval"] == run["ci"]["accuracy"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_items_page_through_every_item_once_with_the_total(
        server: ViewServer, results: Path, protocol: str) -> None:
    ref = _ref(server, protocol, "rag:k=2")
    with ResultsStore(results) as store:
        run_id = ref.split(":", 1)[1]
        stored = {row["key"] for kind in ITEM_KINDS[protocol]
                  for row in store.iter_records(run_id, kind)}
    seen: list[str] = []
    offset = 0
    while True:
        page = get_json(server, f"/api/runs/{ref}/items?offset={offset}&limit=37")
        assert page["total"] == len(stored) and page["offset"] == offset
        seen += [r["key"] for r in page["rows"]]
        if len(page["rows"]) < 37:
            break
        offset += 37
    assert len(seen) == len(set(seen)) == len(stored) and set(seen) == stored
    assert seen == sorted(seen, key=natural_key)  # sorted by key by default, numbers as numbers


def test_oaks_verdicts_agree_with_the_accuracy_by_interval(server: ViewServer) -> None:
    ref = _ref(server, "oaks", "rag:k=2")
    rows = get_json(server, f"/api/runs/{ref}/items?limit=1000")["rows"]
    summary = get_json(server, "/api/summary")["summaries"][0]
    run = next(r for r in summary["runs"] if r["ref"] == ref)
    curve = run["metrics"]["accuracy_by_interval"]
    for t, accuracy in enumerate(curve, 1):
        at = [r["correct"] for r in rows if r["interval"] == t]
        assert sum(at) / len(at) == pytest.approx(accuracy)


def test_filters_sort_and_search_narrow_the_total(server: ViewServer) -> None:
    ref = _ref(server, "oaks", "rag:k=2")
    whole = get_json(server, f"/api/runs/{ref}/items?limit=1000")
    right = get_json(server, f"/api/runs/{ref}/items?correct=true&limit=1000")
    wrong = get_json(server, f"/api/runs/{ref}/items?correct=false&limit=1")
    assert right["total"] + wrong["total"] == whole["total"] and 0 < right["total"] < whole["total"]
    assert all(r["correct"] is True for r in right["rows"])
    family = whole["families"][0]
    narrowed = get_json(server, f"/api/runs/{ref}/items?family={family}&limit=1000")
    assert narrowed["total"] == sum(r["family"] == family for r in whole["rows"])
    by_tokens = get_json(server, f"/api/runs/{ref}/items?sort=tokens&order=desc&limit=1000")
    tokens = [r["cost"]["prompt_tokens"] + r["cost"]["completion_tokens"]
              for r in by_tokens["rows"]]
    assert tokens == sorted(tokens, reverse=True) and tokens[0] > tokens[-1]
    text = whole["rows"][3]["key"]
    found = get_json(server, f"/api/runs/{ref}/items?q={quote(text.upper())}")
    assert text in [r["key"] for r in found["rows"]]
    other = _ref(server, "oaks", "memory-free")
    changed = get_json(server, f"/api/runs/{ref}/items?changed_vs={other}&limit=1000")
    compared = get_json(server, f"/api/compare?a={ref}&b={other}")
    assert changed["total"] == compared["changed"] > 0


@pytest.mark.parametrize("query, parameter", [
    ("limit=0", "limit"), ("limit=x", "limit"), ("offset=-1", "offset"),
    ("sort=nope", "sort"), ("order=up", "order"), ("correct=yes", "correct"),
])
def test_a_bad_query_parameter_is_named_with_status_400(server: ViewServer, query: str,
                                                         parameter: str) -> None:
    ref = _ref(server, "oaks", "rag:k=2")
    status, _, body = fetch(server, f"/api/runs/{ref}/items?{query}")
    assert status == 400 and parameter in json.loads(body)["error"]


def test_unknown_runs_items_and_paths_are_404(server: ViewServer) -> None:
    ref = _ref(server, "oaks", "rag:k=2")
    for path in ("/api/runs/0:nope/items", f"/api/runs/{ref}/items/nope", "/api/nope",
                 "/api/compare?a=0:x&b=0:y", f"/api/runs/{ref}/items?changed_vs=9:x"):
        assert fetch(server, path)[0] == 404, path


def test_an_oaks_item_has_its_calls_memory_and_timeline(server: ViewServer) -> None:
    ref = _ref(server, "oaks", "memory-free")
    first = get_json(server, f"/api/runs/{ref}/items?limit=1")["rows"][0]
    doc = get_json(server, f"/api/runs/{ref}/items/{quote(first['key'], safe='')}")
    assert doc["row"] == first and doc["record"]["key"] == first["key"]
    (call,) = doc["calls"]
    assert [m["role"] for m in call["messages"]] == ["system", "user"]
    assert call["samples"][0]["text"] and call["params"] and call["prompt_tokens"] > 0
    assert doc["memory"]["stream"] == first["stream"]
    assert doc["memory"]["step"] <= first["interval"] and doc["memory"]["state"] is not None
    timeline = doc["timeline"]
    assert [t["interval"] for t in timeline] == list(range(1, len(timeline) + 1))
    assert first["key"] in [t["key"] for t in timeline]


def test_items_of_the_other_protocols_in_full(server: ViewServer) -> None:
    seqmem = _ref(server, "seqmem", "rag:k=2")
    online = get_json(server, f"/api/runs/{seqmem}/items?family=online&limit=1&offset=5")
    row = online["rows"][0]
    doc = get_json(server, f"/api/runs/{seqmem}/items/{quote(row['key'], safe='')}")
    assert doc["memory"]["stream"] == "memory" and doc["memory"]["step"] <= row["interval"]
    kinds = {t["kind"] for t in doc["timeline"]}
    assert "online" in kinds and kinds <= {"online", "retro", "holdout"}
    assert row["gold"] and row["correct"] in (True, False)
    clbench = _ref(server, "clbench", "rag:k=2")
    instance = get_json(server, f"/api/runs/{clbench}/items?limit=1")["rows"][0]
    doc = get_json(server, f"/api/runs/{clbench}/items/{quote(instance['key'], safe='')}")
    assert doc["calls"] and all(c["record_key"].startswith(instance["key"] + "/")
                                for c in doc["calls"])
    assert doc["timeline"] is None and isinstance(instance["score"], float)
    imprint = _ref(server, "imprint", "rag:k=2")
    item = get_json(server, f"/api/runs/{imprint}/items?limit=1")["rows"][0]
    assert item["family"] in ("BoundAbs", "CompRel", "DirAcq", "ImpRel", "TempUpd")
    assert item["gold"] and "judged correct" in item["verdict"]


def test_compare_pairs_items_and_reports_the_summary_paired_difference(
        server: ViewServer) -> None:
    a, b = _ref(server, "seqmem", "memory-free"), _ref(server, "seqmem", "rag:k=2")
    doc = get_json(server, f"/api/compare?a={a}&b={b}&limit=1000")
    items = get_json(server, f"/api/runs/{a}/items?limit=1000")
    assert doc["total"] == items["total"] and doc["only_a"] == doc["only_b"] == 0
    assert all(r["a"]["family"] == r["b"]["family"] for r in doc["rows"])
    changed = get_json(server, f"/api/compare?a={a}&b={b}&changed=true&limit=1000")
    assert changed["total"] == doc["changed"] == sum(
        r["a"]["correct"] != r["b"]["correct"] for r in doc["rows"])
    pairs = get_json(server, "/api/summary")["summaries"][0]["paired"]["pairs"]
    expected = [p for p in pairs if p["protocol"] == "seqmem"]
    assert doc["paired"] == expected and expected[0]["p_holm"] is not None


def test_figures_draw_the_summary_numbers(server: ViewServer) -> None:
    figures = get_json(server, "/api/figures")["figures"]
    view = get_json(server, "/api/summary")["cross_protocol"]
    bars = {f["id"]: f for f in figures if f["kind"] == "bars"}
    assert set(bars) == {f"bars:{c['key']}" for c in view["columns"]}
    for method in view["methods"]:
        for key, cell in method["cells"].items():
            if cell is None or cell["value"] is None:
                continue
            point = next(s["points"][0] for s in bars[f"bars:{key}"]["series"]
                         if s["label"] == method["label"])
            assert point["y"] == cell["value"]
            assert [point["low"], point["high"]] == (cell["interval"] or [None, None])
    runs = get_json(server, "/api/summary")["summaries"][0]["runs"]
    oaks = next(f for f in figures if f["id"].startswith("lines:oaks:accuracy_by_interval"))
    for series in oaks["series"]:
        run = next(r for r in runs if r["ref"] == series["ref"])
        assert [p["y"] for p in series["points"]] == run["metrics"]["accuracy_by_interval"]


def test_a_hostile_reply_comes_back_as_json_text(server: ViewServer) -> None:
    found = []
    for system in SYSTEMS:
        ref = _ref(server, "oaks", system)
        page = get_json(server, f"/api/runs/{ref}/items?q={quote('<script>')}")
        found += [(ref, r) for r in page["rows"]]
    ((ref, row),) = found
    assert row["answer"] == HOSTILE
    status, headers, body = fetch(server, f"/api/runs/{ref}/items/{quote(row['key'], safe='')}")
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    assert json.loads(body)["calls"][0]["samples"][0]["text"] == HOSTILE


def test_a_run_whose_dataset_is_damaged_still_lists_its_records(matrix_dir: Path,
                                                                 tmp_path: Path) -> None:
    import shutil
    import sqlite3

    from served import serve_in_thread

    from clstream.view.catalog import Catalog

    damaged = tmp_path / "results"
    shutil.copytree(matrix_dir, damaged)
    with sqlite3.connect(damaged / "results.sqlite") as conn:
        conn.execute("UPDATE datasets SET content='{\"documents\": 3}' WHERE sha256 IN"
                     " (SELECT dataset_sha256 FROM runs WHERE protocol='oaks')")
    for server in serve_in_thread(Catalog([damaged])):
        ref = _ref(server, "oaks", "rag:k=2")
        summary = get_json(server, "/api/summary")["summaries"][0]
        assert "broken" in next(r for r in summary["runs"] if r["ref"] == ref)
        page = get_json(server, f"/api/runs/{ref}/items?limit=5")
        assert page["total"] == 800 and all(r["correct"] is None for r in page["rows"])
        key = quote(page["rows"][0]["key"], safe="")
        assert get_json(server, f"/api/runs/{ref}/items/{key}")["calls"]
        assert get_json(server, "/api/figures")["figures"]


def test_several_directories_are_told_apart_and_compared(matrix_dir: Path,
                                                         results: Path) -> None:
    from served import serve_in_thread

    from clstream.view.catalog import Catalog

    for server in serve_in_thread(Catalog([matrix_dir, results])):
        runs = _runs(server)
        assert len(runs) == 16 and len({r["ref"] for r in runs}) == 16
        assert {r["ref"].split(":")[0] for r in runs} == {"0", "1"}
        run_id = next(r["run_id"] for r in runs
                      if (r["protocol"], r["system"]) == ("oaks", "memory-free"))
        doc = get_json(server, f"/api/compare?a=0:{run_id}&b=1:{run_id}&changed=true")
        (pair,) = doc["paired"]
        assert pair["metric"] == "accuracy" and pair["confidence"] == 0.95
        assert pair["items"] == 80 and doc["only_a"] == doc["only_b"] == 0
        assert len(get_json(server, "/api/summary")["summaries"]) == 2


def test_each_protocol_table_is_the_one_summary_prints(
        server: ViewServer, results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from clstream.cli import main

    (tables,) = get_json(server, "/api/summary")["text"]
    assert sorted(t["protocol"] for t in tables) == sorted(PROTOCOLS)
    assert main(["summary", str(results)]) == 0
    printed = capsys.readouterr().out
    for table in tables:
        assert "\n".join(table["lines"]) in printed


def test_an_item_judged_by_a_model_shows_the_judge_calls(matrix_dir: Path,
                                                         tmp_path: Path) -> None:
    from served import serve_in_thread

    from clstream.cli import main
    from clstream.view.catalog import Catalog

    out = tmp_path / "judged"
    data = matrix_dir / "data" / "imprint" / "news-small-seed0"
    # The builtin reader as judge replies to the LLM judge's prompts without a verdict word:
    # the items an LLM judges fail (exit 3) with the judge's reply stored.
    assert main(["run", "imprint", str(data), "--system", "memory-free", "--model", "builtin",
                 "--judge", "builtin", "--out", str(out), "--no-progress"]) in (0, 3)
    for server in serve_in_thread(Catalog([out])):
        (ref,) = [r["ref"] for r in _runs(server)]
        rows = get_json(server, f"/api/runs/{ref}/items?limit=1000")["rows"]
        failed = [r for r in rows if (r["error"] or "").startswith("judge: ")]
        judged = [r for r in rows if r["verdict"]]  # by the deterministic judges
        assert failed and judged and not {r["key"] for r in failed} & {r["key"] for r in judged}
        doc = get_json(server, f"/api/runs/{ref}/items/{quote(failed[0]['key'], safe='')}")
        judges = [c for c in doc["calls"] if c["judge"]]
        answers = [c for c in doc["calls"] if not c["judge"]]
        assert judges and answers and all(c["record_kind"] == "judgment" for c in judges)
        assert all(c["samples"][0]["text"] for c in judges)
        assert "verdict word" in failed[0]["error"]
