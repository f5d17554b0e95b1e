"""End-to-end tests of the OAKS protocol through the CLI: systems, determinism, resume."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main as cli

SYSTEMS = ["full", "window:w=3", "rag:k=3", "rag+window:k=2,w=2"]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "stream.json"
    assert cli(["generate", "oaks-babi", "--seed", "3", "--docs", "2", "--chunks", "14",
                "--chunk-tokens", "400", "--out", str(path)]) == 0
    return path


@pytest.fixture(scope="module")
def results(data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("res")
    args = ["run", "oaks", str(data), "--model", "builtin", "--out", str(out), "--no-progress"]
    for s in SYSTEMS:
        args += ["--system", s]
    assert cli(args) == 0
    return out


def _export(results: Path, system: str, dest: Path) -> list[dict[str, Any]]:
    assert cli(["export", str(results), "--system", system, "--out", str(dest)]) == 0
    return [json.loads(line) for line in dest.read_text().splitlines()]


def test_four_systems_run_and_score_differently(
    data: Path, results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    accuracies = {}
    for system in SYSTEMS:
        rows = _export(results, system, tmp_path / "p.jsonl")
        assert rows and set(rows[0]) == {"question_id", "t", "output"}
        assert len({(r["question_id"], r["t"]) for r in rows}) == len(rows)
        capsys.readouterr()
        assert cli(["score", "oaks", str(data), str(tmp_path / "p.jsonl"), "--json"]) == 0
        accuracies[system] = json.loads(capsys.readouterr().out)["accuracy"]
    assert len(set(accuracies.values())) == len(SYSTEMS), accuracies
    # summary agrees with score on the exported file
    capsys.readouterr()
    assert cli(["summary", str(results), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    by_system = {r["system"]: r for r in summary["runs"]}
    for system in SYSTEMS:
        run = by_system[system]
        assert run["status"]["complete"] and run["status"]["errors"] == 0
        assert run["metrics"]["accuracy"] == pytest.approx(accuracies[system], abs=1e-12)
        lo, hi = run["ci"]["accuracy"]
        assert lo <= run["metrics"]["accuracy"] <= hi
        assert run["tokens"]["prompt"] > 0 and run["meta"]["prompt_template_hash"]


def test_rerun_is_a_noop_and_deterministic(data: Path, results: Path, tmp_path: Path) -> None:
    before = _export(results, "rag:k=3", tmp_path / "a.jsonl")
    assert cli(["run", "oaks", str(data), "--system", "rag:k=3", "--out", str(results),
                "--no-progress"]) == 0
    conn = sqlite3.connect(results / "results.sqlite")
    n = conn.execute("SELECT COUNT(*) FROM records WHERE kind='probe'").fetchone()[0]
    assert n == len(before) * len(SYSTEMS)
    fresh = tmp_path / "fresh"
    assert cli(["run", "oaks", str(data), "--system", "rag:k=3", "--out", str(fresh),
                "--no-progress", "--docs-in-flight", "2"]) == 0
    assert _export(fresh, "rag:k=3", tmp_path / "b.jsonl") == before


def test_report_is_written(results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.html"
    assert cli(["report", str(results), "--out", str(out)]) == 0
    assert Path(capsys.readouterr().out.strip()) == out.resolve()
    html = out.read_text()
    for system in SYSTEMS:
        assert system in html


def test_sigkill_resume_matches_uninterrupted(tmp_path: Path) -> None:
    data = tmp_path / "big.json"
    assert cli(["generate", "oaks-babi", "--seed", "11", "--docs", "2", "--chunks", "40",
                "--chunk-tokens", "1500", "--out", str(data)]) == 0
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    cmd = [sys.executable, "-m", "clstream", "run", "oaks", str(data), "--system", "full",
           "--no-progress", "--out"]
    subprocess.run([*cmd, str(whole)], check=True, capture_output=True)
    proc = subprocess.Popen([*cmd, str(killed)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    db = killed / "results.sqlite"
    deadline = time.time() + 120
    count = 0
    while time.time() < deadline and proc.poll() is None:
        if db.exists():
            try:
                conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
                count = conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
                conn.close()
            except sqlite3.OperationalError:
                count = 0
            if count >= 40:
                break
        time.sleep(0.005)
    assert proc.poll() is None, "run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    subprocess.run([*cmd, str(killed)], check=True, capture_output=True)
    a = _export(whole, "full", tmp_path / "whole.jsonl")
    b = _export(killed, "full", tmp_path / "killed.jsonl")
    assert a == b
    conn = sqlite3.connect(db)
    total = conn.execute("SELECT COUNT(*) FROM records WHERE kind='probe'").fetchone()[0]
    assert total == len(a)
