"""One damaged run never hides the others: ``summary`` (text and JSON) and ``report`` show it
as broken, with its reason, and every other run as usual; ``export`` of it is one line."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from clstream.cli import main


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("broken")
    data, out = root / "data", root / "results"
    assert main(["generate", "imprint", "--setting", "news", "--size", "small", "--seed", "1",
                 "--out", str(data)]) == 0
    assert main(["run", "imprint", str(data), "--model", "builtin", "--samples", "1",
                 "--no-progress", "--out", str(out), "--system", "memory-free",
                 "--system", "oracle"]) == 0
    with sqlite3.connect(out / "results.sqlite") as db:
        (run_id,) = db.execute("SELECT run_id FROM runs WHERE system='oracle'").fetchone()
        db.execute("UPDATE records SET payload='[1, 2]' WHERE run_id=? AND kind='item'",
                   (run_id,))
    return out


def test_summary_shows_the_broken_run_apart_and_the_others_as_usual(
        results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(results), "--json"]) == 0
    runs = {r["system"]: r for r in json.loads(capsys.readouterr().out)["runs"]}
    assert "broken" not in runs["memory-free"] and "metrics" in runs["memory-free"]
    assert set(runs["oracle"]) == {"run_id", "protocol", "system", "model", "meta", "broken"}
    assert "\n" not in runs["oracle"]["broken"]
    assert main(["summary", str(results)]) == 0
    text = capsys.readouterr().out
    assert "memory-free" in text.split("[runs that could not be summarized]")[0]
    assert f"imprint oracle ({runs['oracle']['run_id']}): " in text


def test_report_has_a_section_for_the_broken_run(results: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(results), "--out", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Runs that could not be summarized" in html and "memory-free" in html


def test_export_of_the_broken_run_is_one_line(results: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(results), "--system", "oracle", "--out",
                 str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot be exported" in err and "Traceback" not in err
