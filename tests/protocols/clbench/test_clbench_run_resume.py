"""Resume after SIGKILL: a `clstream run clbench` killed part-way and run again ends with
exactly the records of an uninterrupted run (compared through their exports, and record by
record), whether the kill lands between instances or in the middle of one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main
from clstream.store.db import ResultsStore

SYSTEMS = ("full", "icl")
# Three tasks whose steps are model calls of the builtin reader in-process (the kill points
# below fall inside their runs); every task resumes the same way (the driver's snapshots).
TASKS = ("blind_spectrum_monitoring", "database_exploration", "sales_prediction")
ARGS = [*(a for t in TASKS for a in ("--task", t)),
        "--schedule", "short", "--rollouts", "2", "--seed", "5", "--no-progress",
        "--system", "full", "--system", "icl"]

# The CLI in a child process whose builtin model kills the process at its N-th request.
SCRIPT = r'''
import os, signal, sys
from clstream.cli import main
from clstream.models.builtin import BuiltinReader

kill_after, argv = int(sys.argv[1]), sys.argv[2:]
original = BuiltinReader.generate
count = 0

async def generate(self, requests):
    global count
    count += len(requests)
    if count >= kill_after:
        os.kill(os.getpid(), signal.SIGKILL)
    return await original(self, requests)

BuiltinReader.generate = generate
sys.exit(main(argv))
'''


def child_env() -> dict[str, str]:
    src = str(Path(__file__).resolve().parents[3] / "src")
    return {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}


def records(out: Path) -> dict[tuple[str, str, str], Any]:
    with ResultsStore(out) as store:
        got: dict[tuple[str, str, str], Any] = {}
        for run in store.runs():
            for rec in store.read_records(run.run_id):
                got[(run.system, rec.kind, rec.key)] = (rec.score, rec.payload, rec.error,
                                                        rec.usage.prompt_tokens)
            for task in ("blind_spectrum_monitoring", "sales_prediction"):
                for r in range(2):
                    stream = f"{task}/stateful/{r}"
                    got[(run.system, "states", stream)] = store.state_steps(run.run_id, stream)
        return got


def exports(out: Path, tmp_path: Path) -> dict[str, str]:
    texts = {}
    for system in SYSTEMS:
        dest = tmp_path / f"{out.name}-{system}.jsonl"
        assert main(["export", str(out), "--system", system, "--out", str(dest)]) == 0
        texts[system] = dest.read_text()
    return texts


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("whole") / "results"
    assert main(["run", "clbench", "--out", str(out), *ARGS]) == 0
    return out


@pytest.mark.parametrize("kill_after", [7, 40, 131])
def test_a_run_killed_in_a_model_call_resumes_to_the_same_records(
        whole: Path, tmp_path: Path, kill_after: int) -> None:
    out = tmp_path / f"killed-{kill_after}"
    argv = ["run", "clbench", "--out", str(out), *ARGS]
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(kill_after), *argv],
                          env=child_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    partial = records(out)
    assert len(partial) < len(records(whole))
    assert main(argv) == 0
    assert records(out) == records(whole)
    assert exports(out, tmp_path) == exports(whole, tmp_path)


def _instances(out: Path) -> int:
    try:
        with ResultsStore(out) as store:
            return sum(store.count(r.run_id, "instance", errors=False) for r in store.runs())
    except Exception:  # noqa: BLE001 - the database may not exist yet
        return 0


def test_python_m_clstream_killed_after_some_records_resumes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "killed"
    argv = ["run", "clbench", "--task", "blind_spectrum_monitoring", "--task",
            "sales_prediction", "--schedule", "default", "--rollouts", "2", "--seed", "2",
            "--system", "icl", "--parallel", "1", "--no-progress", "--out", str(out)]
    proc = subprocess.Popen([sys.executable, "-m", "clstream", *argv], env=child_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while _instances(out) < 40 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    done = _instances(out)
    assert proc.returncode == -signal.SIGKILL and 40 <= done < 2 * (90 + 12) + 90 + 12
    assert main(argv) == 0
    whole = tmp_path / "whole"
    assert main([*argv[:-1], str(whole)]) == 0
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for src, dest in ((out, first), (whole, second)):
        assert main(["export", str(src), "--system", "icl", "--out", str(dest)]) == 0
    assert first.read_text() == second.read_text()
    rows = [json.loads(line) for line in first.read_text().splitlines()]
    assert len([r for r in rows if r["kind"] == "instance"]) == 3 * (90 + 12)
