"""Timing the command line as users run it, and writing the tables of ``benchmarks/README.md``.

Every figure here comes from a ``clstream`` process started the way a user starts it
(``python -m clstream ...``): its CPU seconds (user + system, the operating system's own
accounting of the finished child, from ``wait4``), its wall seconds and its peak resident set.
Start-up (interpreter, imports, argument parsing) is measured on its own, with the same
process doing nothing (``clstream --version``), so a figure can be quoted with or without it.
Medians over repeats; nothing here judges a figure.

Tables are written between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->`` lines in the
README, so ``make bench`` regenerates them and leaves the prose around them alone.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = Path(__file__).resolve().parent / "README.md"
CLI = (sys.executable, "-m", "clstream")


@dataclass(frozen=True)
class ProcessTime:
    """One finished process: CPU seconds (user + system), wall seconds, peak RSS in MiB."""

    cpu_s: float
    wall_s: float
    peak_mib: float
    status: int


def run_process(argv: Sequence[str], env: Mapping[str, str] | None = None,
                stdout: int | None = subprocess.DEVNULL, timeout_s: float = 3600.0
                ) -> ProcessTime:
    """Start ``argv``, wait for it, and read its own resource usage (not this process's)."""
    start = time.perf_counter()
    proc = subprocess.Popen(list(argv), env=None if env is None else {**os.environ, **env},
                            stdout=stdout, stderr=subprocess.DEVNULL, cwd=ROOT)
    deadline = start + timeout_s
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.005)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return ProcessTime(usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024,
                       proc.returncode)


def median_time(runs: Sequence[ProcessTime]) -> ProcessTime:
    """The median CPU and wall seconds of ``runs`` (each figure on its own) and their peak."""
    return ProcessTime(statistics.median(r.cpu_s for r in runs),
                       statistics.median(r.wall_s for r in runs),
                       max(r.peak_mib for r in runs), 0)


def run_cli(args: Sequence[str], repeats: int = 1, **options: object) -> ProcessTime:
    """``clstream ARGS`` as a process, ``repeats`` times: the median of each figure. Raises
    when a run fails (a benchmark of a failing command measures nothing)."""
    runs = [run_process([*CLI, *args], **options) for _ in range(repeats)]  # type: ignore[arg-type]
    for r in runs:
        if r.status != 0:
            raise SystemExit(f"clstream {' '.join(args)} exited with status {r.status}")
    return median_time(runs)


def startup(repeats: int = 5) -> ProcessTime:
    """The command line doing nothing: interpreter start, imports, parser (``--version``)."""
    return run_cli(["--version"], repeats=repeats)


def python_startup(repeats: int = 5) -> ProcessTime:
    """A bare interpreter (the start-up inside any Python floor)."""
    runs = [run_process([sys.executable, "-c", "pass"]) for _ in range(repeats)]
    return ProcessTime(statistics.median(r.cpu_s for r in runs),
                       statistics.median(r.wall_s for r in runs), 0.0, 0)


def machine() -> str:
    """One line naming the machine the figures come from."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory = f", {pages / 2**30:.0f} GiB"
    except (ValueError, OSError):
        memory = ""
    return (f"{os.cpu_count()} cores ({cpu}){memory}, Python {platform.python_version()}, "
            f"{platform.system()} {platform.release()}")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]],
                   align: str | None = None) -> str:
    """A Markdown table; ``align`` has one letter per column (l or r, default right but the
    first)."""
    align = align or "l" + "r" * (len(header) - 1)
    if len(align) != len(header) or any(len(row) != len(header) for row in rows):
        raise ValueError("a table needs one alignment and one cell per column in every row")
    rule = ["---" if a == "l" else "---:" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def write_section(name: str, text: str, readme: Path = README) -> None:
    """Replace what lies between the ``bench:NAME`` markers of the README with ``text``."""
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    content = readme.read_text(encoding="utf-8")
    if start not in content or end not in content:
        raise SystemExit(f"{readme}: no {start} ... {end} section to rewrite")
    head, rest = content.split(start, 1)
    _, tail = rest.split(end, 1)
    readme.write_text(f"{head}{start}\n{text.strip()}\n{end}{tail}", encoding="utf-8")
