"""SIGINT and SIGTERM stop a run with its committed work kept, the resume command printed and
exit status 128 + the signal (:mod:`clstream.driver.signals`): in this process for the two
ways a run stops (at an await, or forced out of work that never awaits), and through the
command line for every protocol, a CL-Bench run resumed to the same export as one never
interrupted."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from clstream.core.errors import Interrupted
from clstream.driver.execute import run_interruptible

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.parametrize("awaits", [True, False])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_a_run_whether_or_not_it_awaits(awaits: bool, signum: int) -> None:
    events: list[str] = []
    # Sent from another thread once the run is under way (its handlers are in place), however
    # long the run took to start.
    sender = threading.Thread(target=os.kill, args=(os.getpid(), signum))

    async def run() -> None:
        try:
            sender.start()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # without awaiting, the loop never runs
                if awaits:
                    await asyncio.sleep(0.01)
            events.append("ran to its end")
        finally:
            events.append("cleaned up")

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with pytest.raises(Interrupted) as stopped:
        run_interruptible(run())
    sender.join()
    assert stopped.value.signum == signum and events == ["cleaned up"]
    assert {s: signal.getsignal(s) for s in before} == before  # handlers given back


def _clstream(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clstream", *args], cwd=cwd, text=True,
                          capture_output=True, env={**os.environ, "PYTHONPATH": str(SRC)},
                          timeout=300)


def _records(out: Path, kind: str) -> int:
    """Records of ``kind`` committed so far (0 before the database exists)."""
    if not (out / "results.sqlite").exists():
        return 0
    try:
        with sqlite3.connect(f"file:{out / 'results.sqlite'}?mode=ro", uri=True) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM records WHERE kind=? AND error IS"
                                    " NULL", (kind,)).fetchone()[0])
    except sqlite3.Error:  # the tables are not created yet
        return 0


def _terminated(args: list[str], cwd: Path, out: Path, kind: str
                ) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run ``clstream ARGS``, SIGTERM it once its first ``kind`` record is committed; its
    completed process and the records it had committed."""
    proc = subprocess.Popen([sys.executable, "-m", "clstream", *args], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(SRC)})
    deadline = time.monotonic() + 120
    while proc.poll() is None and not _records(out, kind) and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    return (subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr),
            _records(out, kind))


def _generated(tmp_path: Path, args: list[str]) -> None:
    assert _clstream(["generate", *args], tmp_path).returncode == 0


@pytest.mark.parametrize("protocol", ["oaks", "seqmem"])
def test_sigterm_stops_a_run_with_exit_143_and_the_resume_command(tmp_path: Path,
                                                                  protocol: str) -> None:
    if protocol == "oaks":
        _generated(tmp_path, ["oaks-babi", "--seed", "0", "--docs", "4", "--chunks", "40",
                              "--chunk-tokens", "400", "--out", "data.json"])
        kind, total = "probe", None
    else:
        _generated(tmp_path, ["seqmem-synthetic", "--seed", "0", "--tasks", "400",
                              "--holdout", "40", "--out", "data.json"])
        kind, total = "online", 400
    args = ["run", protocol, "data.json", "--system", "rag:k=4" if protocol == "oaks"
            else "exp-rag:k=4", "--out", "res", "--no-progress"]
    done, stored = _terminated(args, tmp_path, tmp_path / "res", kind)
    assert done.returncode == 143, done.stderr
    assert done.stderr.splitlines()[-1] == ("clstream: interrupted; resume with: clstream "
                                            + " ".join(args))
    resumed = _clstream(args, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed" in resumed.stderr
    # stopped with work committed (on a busy machine the last record may be in before the
    # signal lands: the exit status and the resume line are what must hold)
    assert 0 < stored <= (total or _records(tmp_path / "res", kind))


def test_sigterm_stops_clbench_in_parallel_and_the_resume_exports_what_a_whole_run_does(
        tmp_path: Path) -> None:
    args = ["run", "clbench", "--task", "cohort_studies", "--rollouts", "2", "--parallel", "2",
            "--system", "memory-free", "--no-progress"]
    done, stored = _terminated([*args, "--out", "cut"], tmp_path, tmp_path / "cut", "instance")
    assert done.returncode == 143, done.stderr
    assert "clstream: interrupted; resume with: clstream run clbench" in done.stderr
    assert "Traceback" not in done.stderr
    assert _clstream([*args, "--out", "cut"], tmp_path).returncode == 0
    assert _clstream([*args, "--out", "whole"], tmp_path).returncode == 0
    assert 0 < stored <= _records(tmp_path / "whole", "instance")
    for out in ("cut", "whole"):
        exported = _clstream(["export", out, "--system", "memory-free", "--out",
                              f"{out}.jsonl"], tmp_path)
        assert exported.returncode == 0, exported.stderr
    assert (tmp_path / "cut.jsonl").read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
