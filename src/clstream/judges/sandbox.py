"""Run untrusted Python (model-written code) in an OS-level sandbox (docs/seqmem.md §4.6; docs/design.md §7).

Two layers, the outer one being the security boundary:

1. **Isolation** (:mod:`clstream.judges.isolation`): each interpreter starts inside bubblewrap
   with new user, PID, network, mount, IPC and UTS namespaces, a read-only system, a private
   size-capped tmpfs as its only writable place (its working directory, HOME and TMPDIR), an
   environment built from nothing, no descriptors but the ones given on purpose, and a seccomp
   filter that refuses new processes. At the deadline the sandbox's process group is killed;
   killing the namespace's PID 1 takes every process in it along. Without bubblewrap, code is
   refused unless the caller opts in to running it unisolated.
2. **Guards inside the interpreter** (:mod:`clstream.judges.loader`, which runs before any user
   code): resource limits and an audit hook that end the program with precise failure statuses
   ("forbidden", "memory"); they are not relied on for safety, since code in the same
   interpreter can reach and disable them.

:func:`run_python` runs a whole program and reports how it ended; :func:`classify` reads the
status and reason off the exit and the loader's marker line. Its ``status == "ok"`` means
the loader saw the program run to its end (``sys.exit``/``os._exit`` before the end count as
failures), which a program written against this loader can fake for itself: it is a report,
not a verdict. Scoring model-written code against tests goes through
:func:`clstream.judges.codecheck.check_solution`, whose verdict is decided outside the
candidate's sandbox. The process plumbing (:func:`launch`, :func:`pump`, in
:mod:`clstream.judges.processes`) serves both.

Text crossing the boundary is never trusted to be valid Unicode: program text is encoded
with ``surrogatepass`` (and decoded the same way by the loader), output is decoded with
``replace``. The sandboxed interpreter sees the standard library only (no site-packages),
unless the caller names ``packages``: an explicit read-only allow-list of installed packages
(:func:`clstream.judges.isolation.allowed_packages`), bound whole and put first on
``sys.path``; the guard still refuses loading native libraries through ``ctypes``, while the
extension modules of an allowed package load as part of its import.
"""

from __future__ import annotations

import math
import re
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from clstream.judges.isolation import Isolation, PackageSet, allowed_packages, resolve
from clstream.judges.loader import EXIT_EARLY, EXIT_FORBIDDEN, EXIT_MEMORY, MARKER, loader_source
from clstream.judges.processes import Capture, Launched, launch, pump

__all__ = [
    "EXIT_EARLY", "EXIT_FORBIDDEN", "EXIT_MEMORY", "MARKER", "Capture", "Launched",
    "SandboxResult", "Status", "classify", "clean_text", "ended", "launch", "loader_source",
    "marker_note", "pump", "run_python", "steady_paths",
]

Status = Literal["ok", "fail", "timeout", "memory", "forbidden", "error"]


@dataclass(frozen=True)
class SandboxResult:
    """How a sandboxed program ended. ``passed`` iff ``status == "ok"``."""

    passed: bool
    status: Status
    stdout: str
    stderr: str
    duration: float
    returncode: int | None = None
    reason: str = ""
    cpu_s: float = 0.0
    max_rss_kb: int = 0
    isolation: str = ""


_WORKDIR = re.compile(r"/tmp/clstream-sandbox-[0-9a-f]{12}")


def steady_paths(text: str) -> str:
    """``text`` (a program's output) with the sandbox's working directory, random per run,
    written as ``/sandbox``: what an agent is shown of its program's run -- a traceback's file
    names -- must be the same on every run of the same spec and seed."""
    return _WORKDIR.sub("/sandbox", text)


def clean_text(text: str) -> str:
    """``text`` with anything not encodable as UTF-8 (lone surrogates) replaced."""
    return text.encode("utf-8", "replace").decode("utf-8")


def run_python(
    code: str,
    timeout_s: float = 10.0,
    memory_mb: int = 512,
    *,
    max_output_bytes: int = 64_000,
    file_size_mb: int = 16,
    max_open_files: int = 64,
    tmpfs_mb: int = 64,
    run_as_main: bool = True,
    python: str | None = None,
    allow_unisolated: bool = False,
    isolation: Isolation | None = None,
    packages: Sequence[str] = (),
    package_set: PackageSet | None = None,
) -> SandboxResult:
    """Run ``code`` as a Python program under the guards of the module docstring.

    ``timeout_s`` is wall-clock; the CPU limit is the same number of seconds rounded up.
    ``run_as_main=False`` runs the program with ``__name__ != "__main__"`` so that
    ``if __name__ == "__main__":`` demo blocks in model output are skipped.
    Output beyond ``max_output_bytes`` per stream is read and dropped (counted, not kept).
    ``tmpfs_mb`` caps everything the program writes. Without bubblewrap this raises
    :class:`~clstream.judges.isolation.IsolationUnavailable` unless ``allow_unisolated``;
    ``isolation`` forces a variant. ``packages`` names installed packages the program may
    import (read-only; none by default: the standard library only); ``package_set`` gives
    the binds directly instead (a prepared tree such as CL-Bench's repository testbed).
    """
    if timeout_s <= 0 or memory_mb <= 0:
        raise ValueError("timeout_s and memory_mb must be positive")
    iso = isolation or resolve(allow_unisolated, python)
    start = time.monotonic()
    cpu_limit = max(1, math.ceil(timeout_s))
    config = {"as_main": run_as_main, "mem": memory_mb << 20, "cpu": cpu_limit,
              "fsize": file_size_mb << 20, "nofile": max_open_files}
    program = code.encode("utf-8", "surrogatepass")
    try:
        child = launch(iso, loader_source(), config, {"main.py": program},
                       max_output_bytes=max_output_bytes, tmpfs_bytes=tmpfs_mb << 20,
                       packages=package_set or (allowed_packages(tuple(packages)) if packages
                                                else None))
    except OSError as exc:
        return SandboxResult(False, "error", "", "", time.monotonic() - start,
                             reason=f"could not start the interpreter: {exc}",
                             isolation=iso.label())
    try:
        deadline = start + timeout_s
        timed_out = pump([child], {}, deadline, lambda: False)
        if not timed_out and not child.reap(deadline):
            timed_out = True
    finally:
        child.finish()
    return ended(child, timed_out, cpu_limit, tmpfs_mb, start, iso)


def ended(child: Launched, timed_out: bool, cpu_limit: int, tmpfs_mb: int, start: float,
          iso: Isolation) -> SandboxResult:
    """How a finished (reaped) sandboxed program ended: its status and reason from the exit,
    the CPU time and the disk cap, and what it printed."""
    assert child.reaped is not None
    _, cpu_s, rss = child.reaped
    returncode = child.returncode()
    stderr = child.stderr.text()
    status, reason = classify(returncode, timed_out, cpu_s, cpu_limit, stderr)
    if child.disk_exceeded:
        status, reason = "forbidden", f"wrote more than {tmpfs_mb} MB"
    return SandboxResult(status == "ok", status, child.stdout.text(), stderr,
                         time.monotonic() - start, returncode, reason, cpu_s, rss, iso.label())


def marker_note(stderr: str) -> str:
    marked = [
        line[len(MARKER) :].strip() for line in stderr.splitlines() if line.startswith(MARKER)
    ]
    return marked[-1] if marked else ""


def classify(
    returncode: int | None, timed_out: bool, cpu_s: float, cpu_limit: int, stderr: str
) -> tuple[Status, str]:
    """Status and reason of a finished run from its exit code and the loader's marker."""
    note = marker_note(stderr)
    if timed_out:
        return "timeout", "wall-clock limit reached; the sandbox was killed"
    if returncode == 0:
        return "ok", ""
    if returncode is None:
        return "error", "the process could not be waited for"
    if returncode == EXIT_FORBIDDEN:
        return "forbidden", note or "forbidden operation"
    if returncode == EXIT_MEMORY:
        return "memory", note or "memory limit reached"
    if returncode == -signal.SIGXCPU or (
        returncode == -signal.SIGKILL and cpu_s >= cpu_limit - 0.5
    ):
        return "timeout", f"CPU limit of {cpu_limit} s reached"
    if returncode == -signal.SIGKILL:
        return "memory", "killed by SIGKILL (out of memory)"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = str(-returncode)
        return "error", f"killed by signal {name}"
    return "fail", note or f"exit status {returncode}"
