"""`clstream run matrix`: every system on every protocol's default data into one results
directory (docs/design.md §11.5): all cells stored, a rerun does nothing new, the data is
reused, and a matrix killed with SIGKILL resumes to the records of an uninterrupted one."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clstream.cli import main
from clstream.commands.matrix import split_systems

PROTOCOLS = ("clbench", "imprint", "oaks", "seqmem")
SYSTEMS = ("memory-free", "rag:k=2")


def _argv(out: Path) -> list[str]:
    return ["run", "matrix", "--protocols", ",".join(PROTOCOLS), "--systems",
            ",".join(SYSTEMS), "--model", "builtin", "--out", str(out), "--no-progress"]


def _runs(out: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(out / "results.sqlite") as conn:
        return sorted(conn.execute("SELECT protocol, system, run_id FROM runs").fetchall())


def _exports(out: Path, tmp: Path) -> dict[tuple[str, str], bytes]:
    found = {}
    for protocol in PROTOCOLS:
        for system in SYSTEMS:
            path = tmp / f"{out.name}-{protocol}-{system.replace(':', '_')}.jsonl"
            assert main(["export", str(out), "--protocol", protocol, "--system", system,
                         "--out", str(path)]) == 0
            found[(protocol, system)] = path.read_bytes()
    return found


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("matrix") / "whole"
    assert main(_argv(out)) == 0
    return out


def test_every_cell_is_stored_and_a_rerun_adds_nothing(
        matrix: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = _runs(matrix)
    assert sorted((p, s) for p, s, _ in runs) == sorted(
        (p, s) for p in PROTOCOLS for s in SYSTEMS)
    data = sorted(p.relative_to(matrix).as_posix() for p in (matrix / "data").glob("*/*"))
    assert data == ["data/clbench/short-seed0", "data/imprint/news-small-seed0",
                    "data/oaks/oaks-babi-seed0.json", "data/seqmem/seqmem-synthetic-seed0.json"]
    stamps = {p: p.stat().st_mtime_ns for p in (matrix / "data").glob("*/*")}
    with sqlite3.connect(matrix / "results.sqlite") as conn:
        before = conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    capsys.readouterr()
    assert main(_argv(matrix)) == 0
    err = capsys.readouterr().err
    assert "$ clstream generate" not in err  # the data is reused as it is
    assert err.count("resumed ") == len(PROTOCOLS) * len(SYSTEMS)
    assert {p: p.stat().st_mtime_ns for p in (matrix / "data").glob("*/*")} == stamps
    with sqlite3.connect(matrix / "results.sqlite") as conn:
        assert conn.execute("SELECT COUNT(*) FROM records").fetchone()[0] == before
    assert _runs(matrix) == runs


def test_a_killed_matrix_resumes_to_the_same_records(matrix: Path, tmp_path: Path) -> None:
    killed = tmp_path / "killed"
    cmd = [sys.executable, "-m", "clstream", *_argv(killed)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    db = killed / "results.sqlite"
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        if db.exists():
            try:
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                    if conn.execute("SELECT COUNT(*) FROM records").fetchone()[0] >= 5:
                        break
            except sqlite3.OperationalError:
                pass
        time.sleep(0.005)
    assert proc.poll() is None, "the matrix finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert main(_argv(killed)) == 0
    assert _runs(killed) == _runs(matrix)
    assert _exports(killed, tmp_path) == _exports(matrix, tmp_path)


def test_systems_split_on_commas_that_start_a_system() -> None:
    assert split_systems(["rag:k=4,w=2,mem0", "full,rag+window:k=2,w=2"]) == [
        "rag:k=4,w=2", "mem0", "full", "rag+window:k=2,w=2"]


def test_a_typo_in_a_system_writes_nothing(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m"
    assert main(["run", "matrix", "--systems", "memory-free,no-such-system", "--out",
                 str(out)]) == 2
    assert "no-such-system" in capsys.readouterr().err
    assert not out.exists()


def test_a_run_that_raises_leaves_the_others_and_exits_3(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from clstream.systems import experience

    def broken(self: object, event: object) -> list[object]:
        raise RuntimeError("memory went away")

    monkeypatch.setattr(experience.MemoryFree, "observe", broken)
    out = tmp_path / "m"
    code = main(["run", "matrix", "--protocols", "oaks,seqmem", "--systems",
                 "memory-free,full", "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 3
    assert "failed memory-free" in err and "memory went away" in err
    assert "resume with: clstream run matrix --protocols oaks,seqmem" in err
    assert {(p, s) for p, s, _ in _runs(out)} >= {("oaks", "full"), ("seqmem", "full")}
