"""Each setting end to end through the command line with the builtin model: generate, run the
base model and the oracle, summarize, report. The oracle beats the base model on direct recall
and temporal updates wherever the setting has them (SPECS §4), and abstains where nothing
supports an answer."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from clstream.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "models"))
from fake_openai_server import StaticWebServer  # noqa: E402


@pytest.mark.parametrize("setting", ["news", "code", "persona"])
def test_oracle_beats_base(setting: str, tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    data, out = tmp_path / "data", tmp_path / "results"
    assert main(["generate", "imprint", "--setting", setting, "--size", "small", "--seed", "1",
                 "--out", str(data)]) == 0
    assert main(["run", "imprint", str(data), "--model", "builtin", "--samples", "2", "--out",
                 str(out), "--no-progress", "--system", "base", "--system", "oracle",
                 "--system", "rag:k=3"]) == 0
    capsys.readouterr()
    assert main(["summary", str(out), "--json"]) == 0
    runs = {r["system"]: r for r in json.loads(capsys.readouterr().out)["runs"]}
    assert set(runs) == {"memory-free", "oracle", "rag:k=3"}
    base, oracle = runs["memory-free"]["metrics"], runs["oracle"]["metrics"]
    shared = [f for f in ("DirAcq", "TempUpd") if f in base["by_family"]]
    assert shared, f"{setting} has neither DirAcq nor TempUpd items"
    for family in shared:
        assert oracle["by_family"][family]["pass_at_1"] > base["by_family"][family]["pass_at_1"]
    if "BoundAbs" in base["by_family"]:
        assert base["by_family"]["BoundAbs"]["pass_at_1"] == 1.0
    for run in runs.values():
        assert run["status"]["complete"]
        assert set(run["metrics"]) == {"n_items", "n_samples", "by_family", "avg", "left_out",
                                       "chance"}
        assert set(run["metrics"]["chance"]["by_family"]) == set(run["metrics"]["by_family"])
        assert all(cell["judge"] == "deterministic" for cell in run["metrics"]["by_family"].values())
    report = tmp_path / "report.html"
    assert main(["report", str(out), "--out", str(report)]) == 0
    page = report.read_text()
    assert 'id="protocol-imprint"' in page and "Pass@1 by family" in page
    assert "the judge behind each number" in page and "deterministic" in page
    assert f"{setting}: what a constant answer scores" in page
    assert "dashed diagonal" in page and "y = x" in page  # the line the caption reads against
    sha = runs["oracle"]["meta"]["spec"]["dataset_hash"]
    assert f"imprint {setting} setting" in page and f"sha256 {sha}" in page
    assert "sha256 ?" not in page


def test_a_filter_model_endpoint_is_checked_before_anything_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "data"
    capsys.readouterr()
    with StaticWebServer(tmp_path / "site") as static:
        assert main(["generate", "imprint", "--setting", "news", "--size", "small", "--filter",
                     "--model", "openai:w", "--base-url", static.base_url,
                     "--out", str(out)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"clstream: error: flag --base-url: model openai:w at "
                           f"{static.base_url}: the server does not answer POST")
    assert not out.exists()


def test_generate_with_filters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "data"
    argv = ["generate", "imprint", "--setting", "news", "--size", "small", "--seed", "1",
            "--filter", "--model", "builtin", "--filter-samples", "2", "--out", str(out)]
    assert main(argv) == 0
    items = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    assert items and all({"blind", "ctx"} <= set(i["filters"]) for i in items
                         if i["family"] != "BoundAbs")
    report = json.loads((out / "filter_report.json").read_text())
    assert report["sent"] > 0 and report["kept"] == len(items)
    assert main(argv) == 2  # never into a directory that holds a dataset
    assert "not empty" in capsys.readouterr().err
    again_dir = tmp_path / "again"  # an interrupted attempt left only its reply cache
    again_dir.mkdir()
    shutil.copy(out / "filter_cache.jsonl", again_dir / "filter_cache.jsonl")
    assert main([*argv[:-1], str(again_dir)]) == 0  # the same filters: every reply cached
    again = json.loads((again_dir / "filter_report.json").read_text())
    assert again["sent"] == 0 and again["kept"] == report["kept"]
