"""A run killed with SIGKILL part-way and resumed, beside the same run left alone: the shape
of every "resumes exactly after a kill" test (a run's records must not depend on where it was
stopped)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

CLI = (sys.executable, "-m", "clstream")


def stored_records(db: Path) -> int:
    """Records in a results database another process is writing (0 while it cannot be read)."""
    if not db.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return int(conn.execute("SELECT COUNT(*) FROM records").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return 0


def kill_after(argv: Sequence[str], out: Path, records: int, timeout_s: float = 120.0) -> None:
    """Start ``clstream ARGV --out OUT`` and SIGKILL it once ``records`` records are stored;
    fails when the run ends before that."""
    proc = subprocess.Popen([*CLI, *argv, "--out", str(out)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + timeout_s
    while time.time() < deadline and proc.poll() is None:
        if stored_records(out / "results.sqlite") >= records:
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def whole_and_resumed(argv: Sequence[str], whole: Path, killed: Path, records: int) -> None:
    """``clstream ARGV`` run to its end into ``whole``, and into ``killed`` killed after
    ``records`` records then run again to its end."""
    subprocess.run([*CLI, *argv, "--out", str(whole)], check=True, capture_output=True)
    kill_after(argv, killed, records)
    subprocess.run([*CLI, *argv, "--out", str(killed)], check=True, capture_output=True)
