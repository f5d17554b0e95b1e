"""``clstream view`` on the command line: the URL printed, errors in one line with exit 2, and
Ctrl-C stopping the server cleanly."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

import clstream
from clstream.cli import main
from clstream.store.db import ResultsStore


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("view") / "results"
    with ResultsStore(out, writer=True) as store:
        store.ensure_run("r1", "seqmem", "memory-free", "builtin", "sha", {"seed": 0}, {})
    return out


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("clstream: error: "), captured.err
    assert "Traceback" not in captured.err
    return lines[0]


def test_a_directory_without_results_is_one_line(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", str(tmp_path), "--no-browser"]) == 2
    assert str(tmp_path) in _one_error_line(capsys)
    assert list(tmp_path.iterdir()) == []


def test_a_port_in_use_is_one_line(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["view", str(results), "--no-browser", "--port", str(port)]) == 2
    assert f"--port {port}" in _one_error_line(capsys)
    assert main(["view", str(results), "--no-browser", "--port", "70000"]) == 2
    assert "--port" in _one_error_line(capsys)


def test_the_server_prints_its_url_and_stops_on_ctrl_c(results: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(clstream.__file__).parents[1])}
    proc = subprocess.Popen([sys.executable, "-m", "clstream", "view", str(results),
                             "--no-browser"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("clstream view: http://127.0.0.1:"), line
        url = line.split()[2]
        with urllib.request.urlopen(url + "api/runs", timeout=60) as response:
            doc = json.load(response)
        assert [r["run_id"] for g in doc["datasets"] for r in g["runs"]] == ["r1"]
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode in (0, 130)
    assert "Traceback" not in err
