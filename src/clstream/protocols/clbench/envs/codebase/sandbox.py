"""Running repository code for the codebase task, always in the OS sandbox (docs/clbench.md §4.6).

Every program the agent starts (``python -m unittest ...``, ``python FILE``, ``python -c``)
and every evaluation runs through :func:`clstream.judges.sandbox.run_python`: bubblewrap
namespaces, no network, an empty environment, a read-only system and a size-capped tmpfs as
the only writable place. The repository is *copied in*: the program text carries the
workspace's files, which the runner writes into the tmpfs before it starts the command. What
a program writes stays in the tmpfs and is dropped with it, so nothing it does reaches the
workspace (only the harness edits the workspace, in Python) or the host.

Evaluation (:func:`run_checks`) runs each held-out check snippet in one sandbox holding the
candidate repository and records what the snippet printed, or the name of the exception it
raised. The verdict is not taken from the sandbox: the harness compares those outcomes with
the outcomes of the same snippets against the clean repository (run in a sandbox of their
own). Whatever the candidate's code prints or patches is only its answer; matching the clean
outcomes needs the clean behaviour.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clstream.judges.isolation import Isolation, IsolationUnavailable, PackageSet, resolve
from clstream.judges.sandbox import run_python, steady_paths

RESULT_MARKER = "clstream-codebase-checks:"
MAX_OUTPUT_CHARS = 10_000
REFUSAL = ("the codebase task runs repository code only inside the bubblewrap sandbox, and "
           "none can be started here ({why}); install it with `bash scripts/system-packages.sh`")

_UNPACK = r'''
import os, sys
_files = __FILES__
_path = _text = _dir = _fh = None
for _path, _text in _files.items():
    _dir = os.path.dirname(_path)
    if _dir:
        os.makedirs(_dir, exist_ok=True)
    with open(_path, "w", encoding="utf-8") as _fh:
        _fh.write(_text)
del _files, _path, _text, _dir, _fh
'''

# A real repository (:mod:`.real`): its clean tree (binary fixtures included) is
# copied from the read-only testbed bind first, then the files given are written over it.
_BASE = r'''
import os, shutil, sys
_base = __BASE__
if _base:
    shutil.copytree(_base, ".", dirs_exist_ok=True)
'''

_PROGRAM = _BASE + _UNPACK + r'''
import runpy, traceback
_argv = __ARGV__
_status = 0
sys.path.insert(0, "" if _argv[0] == "-c" else os.getcwd())
for _entry in __PATHS__:
    sys.path.insert(1, os.path.abspath(_entry))
if _argv[:2] == ["-m", "pytest"]:
    _argv[2:2] = ["-p", "no:cacheprovider", "-o", "addopts="]
try:
    if _argv[0] == "-m":
        sys.argv = ["python -m " + _argv[1], *_argv[2:]]
        runpy.run_module(_argv[1], run_name="__main__", alter_sys=True)
    elif _argv[0] == "-c":
        sys.argv = ["-c", *_argv[2:]]
        exec(compile(_argv[1], "<string>", "exec"), {"__name__": "__main__"})
    else:
        sys.path[0] = os.path.dirname(os.path.abspath(_argv[0]))
        sys.argv = list(_argv)
        runpy.run_path(_argv[0], run_name="__main__")
except SystemExit as _exc:
    _code = _exc.code
    if _code is not None and not isinstance(_code, int):
        print(_code, file=sys.stderr)
    _status = 0 if _code is None else (_code if isinstance(_code, int) else 1)
except BaseException:
    traceback.print_exc()
    _status = 1
sys.stdout.flush()
sys.stderr.flush()
print("\n__EXIT__%d" % _status)
'''

_CHECKS = _UNPACK + r'''
import contextlib, io, json
sys.path.insert(0, "")
_outcomes = []
for _snippet in __CHECKS__:
    _buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(_buffer):
            exec(compile(_snippet, "<check>", "exec"), {"__name__": "__check__"})
        _outcomes.append(_buffer.getvalue().strip())
    except BaseException as _exc:
        _outcomes.append("raised " + type(_exc).__name__)
print(__MARKER__ + json.dumps(_outcomes))
'''


_TESTS = _BASE + _UNPACK + r'''
import json, random
for _entry in __PATHS__:
    sys.path.insert(0, os.path.abspath(_entry))
import pytest
_results = {}
class _Collect:
    def pytest_runtest_setup(self, item):
        random.seed(0)  # tests that draw random inputs see the same ones in every run
    def pytest_runtest_logreport(self, report):
        ok = report.outcome == "passed" or (report.outcome == "skipped" and report.when != "call")
        if report.when == "call" or not ok:
            _results[report.nodeid] = _results.get(report.nodeid, True) and (
                report.outcome == "passed")
pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:faulthandler", "-o", "addopts=",
             *__TESTS__], plugins=[_Collect()])
print(__MARKER__ + json.dumps(_results))
'''


def isolation(allow_unisolated: bool = False) -> Isolation:
    """The sandbox to run repository code under; refuses (one line naming the installer)
    without bubblewrap unless ``allow_unisolated``."""
    try:
        return resolve(allow_unisolated)
    except IsolationUnavailable as exc:
        why = str(exc).split(": ", 1)[-1].split(";", 1)[0]
        raise IsolationUnavailable(REFUSAL.format(why=why)) from None


@dataclass(frozen=True)
class RealBase:
    """A real repository's sandbox: the testbed binds (``packages``), where its clean tree is
    bound (``root``) and its ``sys.path`` entries relative to the root."""

    packages: PackageSet
    root: str
    paths: tuple[str, ...]


@dataclass(frozen=True)
class ProgramRun:
    """How one agent command that runs Python ended, as the agent is shown it."""

    returncode: int
    output: str
    status: str


def _program(template: str, files: Mapping[str, str], **values: object) -> str:
    for key, value in values.items():
        template = template.replace(f"__{key}__", repr(value))
    return template.replace("__FILES__", repr(dict(files)))


_TIMING = re.compile(r"^(Ran \d+ tests?) in \d+(?:\.\d+)?s$", re.MULTILINE)


def _steady(text: str) -> str:
    """Output with unittest's wall time taken out ("Ran 8 tests in 0.001s" -> "Ran 8
    tests"), and the sandbox's random working directory as ``/sandbox``: the agent's observation, and so every later prompt and the stored records, must
    be the same on every run of the same spec and seed."""
    return steady_paths(_TIMING.sub(r"\1", text))


def _cut(text: str) -> str:
    return text if len(text) <= MAX_OUTPUT_CHARS else text[:MAX_OUTPUT_CHARS] + "\n(output cut)"


def run_program(files: Mapping[str, str], argv: Sequence[str], iso: Isolation,
                timeout_s: float = 20.0, real: RealBase | None = None) -> ProgramRun:
    """Run ``python <argv>`` over a copy of ``files`` in the sandbox (over the clean tree of a
    real repository, with its testbed importable, when ``real`` is given)."""
    code = _program(_PROGRAM, files, ARGV=list(argv), BASE=real.root if real else "",
                    PATHS=list(real.paths) if real else [])
    result = run_python(code, timeout_s=timeout_s, memory_mb=1024 if real else 512,
                        isolation=iso, max_output_bytes=64_000, tmpfs_mb=64,
                        package_set=real.packages if real else None)
    stdout, returncode = result.stdout, 1
    head, sep, tail = stdout.rpartition("\n__EXIT__")
    if sep and tail.strip().isdigit():
        stdout, returncode = head, int(tail.strip())
    stderr = "\n".join(line for line in result.stderr.splitlines()
                       if not line.startswith("clstream-sandbox:"))
    if result.status in ("timeout", "memory", "forbidden", "error"):
        stderr += f"\n[{result.status}: {result.reason}]"
        returncode = returncode or 1
    return ProgramRun(returncode, _cut(_steady((stdout + stderr).strip("\n"))), result.status)


def run_checks(files: Mapping[str, str], checks: Sequence[str], iso: Isolation,
               timeout_s: float = 30.0) -> list[str] | None:
    """The outcome of every check snippet over ``files`` (one sandbox), or None when the run
    gave no readable outcomes (a crash, a timeout)."""
    code = _program(_CHECKS, files, CHECKS=list(checks), MARKER=RESULT_MARKER)
    result = run_python(code, timeout_s=timeout_s, memory_mb=512, isolation=iso,
                        max_output_bytes=256_000)
    outcomes = _reported(result.stdout)
    if isinstance(outcomes, list) and all(isinstance(o, str) for o in outcomes):
        return outcomes if len(outcomes) == len(checks) else None
    return None


def _reported(stdout: str) -> Any:
    """The JSON value of the program's last result line (None when there is none or it does
    not parse: a crash or a timeout cut it)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_MARKER):
            try:
                return json.loads(line[len(RESULT_MARKER):])
            except json.JSONDecodeError:
                return None
    return None


def run_tests(files: Mapping[str, str], tests: Sequence[str], real: RealBase, iso: Isolation,
              timeout_s: float = 120.0) -> dict[str, bool] | None:
    """Whether each test of the repository's own suite passed (pytest node id -> bool) over
    the clean tree with ``files`` written over it; ``tests`` are pytest arguments (files or
    node ids). None when the run gave no readable results (a crash, a timeout)."""
    code = _program(_TESTS, files, TESTS=list(tests), MARKER=RESULT_MARKER, BASE=real.root,
                    PATHS=list(real.paths))
    result = run_python(code, timeout_s=timeout_s, memory_mb=1024, isolation=iso,
                        max_output_bytes=4_000_000, tmpfs_mb=64, package_set=real.packages)
    outcomes = _reported(result.stdout)
    if isinstance(outcomes, dict) and outcomes:
        return {str(k): v is True for k, v in outcomes.items()}
    return None
