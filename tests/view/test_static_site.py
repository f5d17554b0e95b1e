"""``clstream view --static OUT`` (docs/viewer.md §5): the same page and the API's documents
as files, items in shards of a fixed size, the marker written last, OUT guarded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from served import get_json

from clstream.cli import main
from clstream.view.items import natural_key
from clstream.view.server import ViewServer, load_assets


@pytest.fixture(scope="module")
def site(results: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("static") / "site"
    assert main(["view", str(results), "--static", str(out), "--shard-rows", "64"]) == 0
    return out


def _load(site: Path, name: str) -> Any:
    return json.loads((site / name).read_text(encoding="utf-8"))


def test_the_assets_and_marker_are_written(site: Path) -> None:
    for name, data in load_assets().items():
        assert (site / name).read_bytes() == data
    marker = _load(site, "static.json")
    assert marker["mode"] == "static" and marker["shard_rows"] == 64 and marker["calls"]
    assert len(marker["runs"]) == 8


def test_static_documents_hold_the_same_numbers(site: Path, server: ViewServer) -> None:
    assert _load(site, "data/runs.json") == get_json(server, "/api/runs")
    assert _load(site, "data/figures.json") == get_json(server, "/api/figures")
    summary = _load(site, "data/summary.json")
    live = get_json(server, "/api/summary")
    assert summary["cross_protocol"] == live["cross_protocol"]
    assert summary["headlines"] == live["headlines"]
    assert [r.get("metrics") for s in summary["summaries"] for r in s["runs"]] == \
        [r.get("metrics") for s in live["summaries"] for r in s["runs"]]


def test_item_shards_hold_every_row_once_and_their_documents(site: Path,
                                                              server: ViewServer) -> None:
    marker = _load(site, "static.json")
    for ref, info in marker["runs"].items():
        rows: list[dict[str, Any]] = []
        for n in range(info["shards"]):
            shard = _load(site, f"data/items/{info['file']}/{n}.json")["rows"]
            assert len(shard) == 64 or n == info["shards"] - 1
            rows += shard
            details = _load(site, f"data/detail/{info['file']}/{n}.json")
            assert list(details) == [r["key"] for r in shard]
        live = get_json(server, f"/api/runs/{ref}/items?limit=1000")
        assert info["total"] == live["total"] == len(rows)
        assert sorted(rows, key=lambda r: natural_key(r["key"])) == live["rows"]
        key = rows[-1]["key"]
        last = _load(site, f"data/detail/{info['file']}/{info['shards'] - 1}.json")[key]
        assert last == get_json(server, f"/api/runs/{ref}/items/{quote(key, safe='')}")


def test_comparisons_of_runs_of_one_protocol_are_written_whole(site: Path,
                                                               server: ViewServer) -> None:
    marker = _load(site, "static.json")
    assert len(marker["compare"]) == 4  # two systems on each of four protocols
    for a, b in marker["compare"]:
        doc = _load(site, f"data/compare/{a.replace(':', '_')}__{b.replace(':', '_')}.json")
        live = get_json(server, f"/api/compare?a={a}&b={b}&limit=1000")
        assert doc["rows"] == live["rows"] and doc["total"] == len(doc["rows"])
        assert doc["paired"] == live["paired"]


def test_static_output_never_lands_in_a_results_directory(
        results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = sorted(p.name for p in results.iterdir())
    assert main(["view", str(results), "--static", str(results)]) == 2
    assert main(["view", str(results), "--static", str(results / "site")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("clstream: error: ") for line in err)
    assert sorted(p.name for p in results.iterdir()) == before
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    assert main(["view", str(results), "--static", str(taken)]) == 2
    assert (taken / "notes.txt").read_text() == "mine"


def test_a_static_copy_may_be_written_again(site: Path, results: Path) -> None:
    marker = _load(site, "static.json")
    assert main(["view", str(results), "--static", str(site), "--shard-rows", "64"]) == 0
    assert _load(site, "static.json") == marker


def test_a_copy_without_calls_leaves_only_the_calls_out(site: Path, results: Path,
                                                        tmp_path: Path) -> None:
    lean = tmp_path / "lean"
    assert main(["view", str(results), "--static", str(lean), "--shard-rows", "64",
                 "--no-calls"]) == 0
    marker, whole = _load(lean, "static.json"), _load(site, "static.json")
    assert marker["calls"] is False and marker["runs"] == whole["runs"]
    called = 0
    for info in marker["runs"].values():
        for n in range(info["shards"]):
            name = f"data/detail/{info['file']}/{n}.json"
            mine, theirs = _load(lean, name), _load(site, name)
            assert list(mine) == list(theirs)
            for key, document in mine.items():
                called += bool(theirs[key]["calls"])
                assert document["calls"] == []
                assert {k: v for k, v in document.items() if k != "calls"} == \
                    {k: v for k, v in theirs[key].items() if k != "calls"}
    assert called  # the whole copy has calls to leave out
    size = sum(f.stat().st_size for f in (lean / "data").rglob("*.json"))
    assert size < sum(f.stat().st_size for f in (site / "data").rglob("*.json"))


def test_no_calls_without_static_is_refused(results: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", str(results), "--no-calls", "--no-browser"]) == 2
    assert "--no-calls" in capsys.readouterr().err
