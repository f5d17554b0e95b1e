"""`clstream run oaks` when the server is gone, end to end through the command line.

* a rerun into a new results directory whose every request is in the ``--cache`` needs no
  server: the failed endpoint check is one warning line and the run completes; requests the
  cache lacks fail as usual, and the run exits 3 with the command that resumes it;
* a server killed in the middle of a run stops the run through the transport's circuit
  breaker (its error ends the run), not after every remaining probe has spent its retries;
  the printed command resumes it once the server is back;
* answers holding a lone surrogate, as a server sends them, are stored, cached and exported.
"""

from __future__ import annotations

import json
import shlex
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main as cli
from clstream.store.db import ResultsStore

MODELS = Path(__file__).resolve().parents[2] / "models"
sys.path.insert(0, str(MODELS))
from fake_openai_server import FakeOpenAIServer  # noqa: E402
from test_breaker import closed_port  # noqa: E402


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "stream.json"
    assert cli(["generate", "oaks-babi", "--seed", "5", "--docs", "2", "--chunks", "6",
                "--chunk-tokens", "250", "--max-questions", "5", "--out", str(path)]) == 0
    return path


def exported(out: Path) -> list[dict[str, Any]]:
    dest = out.with_suffix(".jsonl")
    assert cli(["export", str(out), "--system", "window", "--out", str(dest)]) == 0
    return [json.loads(line) for line in dest.read_text().splitlines()]


def run_args(data: Path, base_url: str, out: Path, *extra: str) -> list[str]:
    return ["run", "oaks", str(data), "--system", "window", "--model", "openai:m",
            "--base-url", base_url, "--no-progress", "--out", str(out), *extra]


def test_a_rerun_from_a_complete_cache_needs_no_server(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "responses.sqlite"
    with FakeOpenAIServer(model="m") as server:
        assert cli(run_args(data, server.base_url, tmp_path / "first", "--cache", str(cache)))\
            == 0
        sent = len(server.requests)
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    capsys.readouterr()
    assert cli(run_args(data, dead, tmp_path / "again", "--cache", str(cache))) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert err == [f"clstream: warning: model openai:m at {dead}: cannot connect (Connection "
                   f"refused); going on with the response cache {cache} (requests it does not "
                   "hold will fail)"]
    assert exported(tmp_path / "again") == exported(tmp_path / "first") and sent > 0

    with sqlite3.connect(cache) as conn:
        conn.execute("DELETE FROM responses WHERE rowid IN "
                     "(SELECT rowid FROM responses ORDER BY rowid LIMIT 3)")
    assert cli(run_args(data, dead, tmp_path / "partial", "--cache", str(cache))) == 3
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "ended with 3 failed probes" in last and "resume with: clstream run oaks" in last
    assert "connection" in last.lower()


def start_engine(port: int = 0, service_s: float = 0.2) -> tuple[subprocess.Popen[str], int]:
    engine = subprocess.Popen(
        [sys.executable, str(MODELS / "loopback_engine.py"), "--slots", "1", "--service",
         str(service_s), "--port", str(port), "--context", "1000000"],
        stdout=subprocess.PIPE, text=True)
    assert engine.stdout is not None
    return engine, int(engine.stdout.readline())


def test_a_server_killed_mid_run_stops_the_run_by_the_breaker(data: Path, tmp_path: Path
                                                              ) -> None:
    engine, port = start_engine()
    out = tmp_path / "out"
    argv = ["run", "oaks", str(data), "--system", "window", "--model", "openai:loop",
            "--base-url", f"http://127.0.0.1:{port}/v1", "--no-progress", "--out", str(out)]
    try:
        run = subprocess.Popen([sys.executable, "-m", "clstream", *argv],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while _answered(out) < 5:  # some probes answered: the run is under way
            assert run.poll() is None
            time.sleep(0.1)
    finally:
        engine.send_signal(signal.SIGKILL)
        engine.wait()
    _, err = run.communicate(timeout=240)
    assert run.returncode == 3, err
    last = err.strip().splitlines()[-1]
    # The breaker's error ends the run, not "failed after 7 attempts" of every probe.
    assert "stopped answering: connection refused (" in last
    resume = last.split("resume with: ", 1)[1]
    assert shlex.split(resume)[1:] == argv

    engine, _ = start_engine(port, service_s=0.01)
    try:
        again = subprocess.run([sys.executable, "-m", "clstream", *shlex.split(resume)[1:]],
                               capture_output=True, text=True, timeout=300)
    finally:
        engine.send_signal(signal.SIGKILL)
        engine.wait()
    assert again.returncode == 0, again.stderr
    with ResultsStore(out) as store:
        (stored,) = store.runs()
        assert list(store.read_records(stored.run_id, errors=True)) == []


def _answered(out: Path) -> int:
    if not (out / "results.sqlite").exists():
        return 0
    try:
        with sqlite3.connect(f"file:{out / 'results.sqlite'}?mode=ro", uri=True) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM records").fetchone()[0])
    except sqlite3.Error:
        return 0


class SurrogateServer(FakeOpenAIServer):
    """Ends every answer with a lone surrogate (sent as its JSON escape)."""

    def completion(self, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
        payload = super().completion(body, fault)
        for choice in payload["choices"]:
            choice["message"]["content"] += " \ud800"
        return payload


def test_answers_with_a_lone_surrogate_are_stored_cached_and_exported(
    data: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "responses.sqlite"
    with SurrogateServer(model="m") as server:
        assert cli(run_args(data, server.base_url, tmp_path / "first", "--cache", str(cache),
                            "--max-retries", "0")) == 0
        assert cli(run_args(data, server.base_url, tmp_path / "again", "--cache",
                            str(cache))) == 0
        sent = len(server.requests)
    rows = exported(tmp_path / "first")
    assert rows and all(r["output"].endswith(" \\ud800") for r in rows)
    assert exported(tmp_path / "again") == rows and sent == len(rows)
