"""OS isolation: what the sandbox sees, what it cannot do, refusal without bubblewrap, the
explicit unisolated opt-in, and the two-sandbox verdict."""

from __future__ import annotations

import dataclasses
import os
import struct
import time

import pytest

import clstream.judges.isolation as isolation
from clstream.core.errors import ClstreamError
from clstream.judges.codecheck import check_solution
from clstream.judges.evaluators import CodeEvaluator, IsolationUnavailable
from clstream.judges.isolation import Isolation, detect, seccomp_program, unisolated
from clstream.judges.sandbox import run_python
from clstream.protocols.seqmem.tasks import SeqTask

FOUND = detect()
needs_bwrap = pytest.mark.skipif(
    isinstance(FOUND, str), reason=f"needs bubblewrap (bwrap): {FOUND}")

PROMPT = 'def add(a, b):\n    """Sum."""\n'
TEST = "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(0, 0) == 0\n"
TASK = SeqTask("t", PROMPT, "    return a + b\n", "code", {"test": TEST, "entry_point": "add"})
# reaches the loader's frame and switches its audit hook off (see tests/judges/redteam)
NEUTER = (
    "import sys\nf = sys._getframe()\nwhile 'hook' not in f.f_locals:\n    f = f.f_back\n"
    "for cell in f.f_locals['hook'].__closure__:\n"
    "    if cell.cell_contents is f.f_locals['check']:\n"
    "        cell.cell_contents = lambda e, a: None\n"
)


def _bwrap() -> Isolation:
    assert isinstance(FOUND, Isolation)
    return FOUND


def _sandbox_pids(workdir: str) -> list[str]:
    """Processes of the sandbox working in ``workdir`` (its config, in argv, names it)."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if workdir.encode() in fh.read():
                    found.append(pid)
        except OSError:
            continue
    return found


def test_seccomp_program_is_whole_instructions() -> None:
    program = seccomp_program()
    if program is None:
        pytest.skip("no system-call table for this architecture")
    assert len(program) % 8 == 0 and len(program) // 8 < 4096
    last = struct.unpack("=HBBI", program[-8:])
    assert last == (0x06, 0, 0, 0x7FFF0000)  # default: allow


@needs_bwrap
def test_the_sandbox_sees_nothing_of_the_harness(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLSTREAM_TEST_SECRET", "hunter2-canary")
    code = (
        "import os\nprint(sorted(os.environ))\nprint(os.getuid(), os.getpid())\n"
        "print(open('/proc/1/environ', 'rb').read())\n"
        "print(sorted(p for p in os.listdir('/proc') if p.isdigit()))\n"
        f"print(os.path.exists({os.getcwd()!r}), os.path.exists('/etc/passwd'))\n"
    )
    result = run_python(code)
    assert result.status == "ok", result.stderr
    lines = result.stdout.splitlines()
    assert "CLSTREAM_TEST_SECRET" not in lines[0] and "hunter2" not in result.stdout
    assert lines[2] == "b''"
    assert lines[3] == "['1', '2']"  # bwrap's init and the program: a PID namespace of two
    assert lines[4] == "False False"
    assert result.isolation.startswith("bubblewrap")


@needs_bwrap
def test_no_process_can_be_started_even_with_the_hook_off() -> None:
    code = NEUTER + "import os\ntry:\n    os.fork()\nexcept OSError as e:\n    print(e.errno)\n"
    result = run_python(code)
    assert result.status == "ok" and result.stdout.strip() == "1", result


@needs_bwrap
@pytest.mark.parametrize("then", ["print('parent done', flush=True)\n",
                                  "print('parent done', flush=True)\nwhile True:\n    pass\n"])
def test_a_detached_child_dies_with_its_sandbox(then: str) -> None:
    iso = dataclasses.replace(_bwrap(), seccomp=False)  # let it fork, to see the teardown
    code = NEUTER + (
        "import os, time\nprint(os.getcwd(), flush=True)\nif os.fork() == 0:\n"
        "    os.setsid()\n    time.sleep(60)\n    os._exit(0)\n" + then
    )
    result = run_python(code, timeout_s=1.0, isolation=iso)
    workdir = result.stdout.split()[0]
    assert workdir.startswith("/tmp/clstream-sandbox-") and "parent done" in result.stdout
    assert result.status == ("ok" if "while" not in then else "timeout"), result
    waited = 0  # the child sleeps 60 s: still there after 30 s of waiting, it escaped
    while _sandbox_pids(workdir) and waited < 300:
        time.sleep(0.1)
        waited += 1
    assert _sandbox_pids(workdir) == []


@needs_bwrap
def test_the_writable_tmpfs_is_capped() -> None:
    code = (
        "written = 0\ntry:\n    for i in range(200):\n"
        "        with open(f'f{i}', 'wb') as fh:\n            fh.write(b'0' * (1 << 20))\n"
        "        written += 1\nexcept OSError as e:\n    print(written, e.errno)\n"
    )
    result = run_python(code, tmpfs_mb=8)
    assert result.status == "ok", result.stderr
    written, errno = result.stdout.split()
    assert int(written) <= 8 and errno == "28"  # ENOSPC


@needs_bwrap
def test_without_a_size_option_the_tmpfs_is_measured_and_the_writer_killed() -> None:
    iso = dataclasses.replace(_bwrap(), size_option=False)
    code = (
        "import time\nfor i in range(400):\n    with open(f'f{i}', 'wb') as fh:\n"
        "        fh.write(b'0' * (1 << 20))\n    time.sleep(0.005)\nprint('all written')\n"
    )
    result = run_python(code, tmpfs_mb=4, timeout_s=10, isolation=iso)
    assert result.status == "forbidden" and "more than 4 MB" in result.reason
    assert "all written" not in result.stdout


def test_lone_surrogates_never_crash() -> None:
    iso = FOUND if isinstance(FOUND, Isolation) else unisolated()
    result = run_python("x = '\ud800'\n", isolation=iso)
    assert result.status == "fail"
    result = run_python("import sys\nsys.stdout.buffer.write(b'\\xed\\xa0\\x80')\n"
                        "raise ValueError('\\udcff')\n", isolation=iso)
    assert result.status == "fail"
    result.stdout.encode("utf-8")
    result.stderr.encode("utf-8")
    bad = SeqTask("t", PROMPT + "\ud800", "", "code", {"test": TEST, "entry_point": "add"})
    verdict = CodeEvaluator(timeout_s=5, allow_unisolated=True).evaluate(
        bad, "\udcff```python\ndef add(a, b):\n    raise ValueError(chr(0xD800))\n```")
    assert verdict.score == 0.0
    verdict.feedback.encode("utf-8")


def test_without_bubblewrap_code_is_refused_unless_allowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(isolation, "detect", lambda python=None: "bwrap is not installed")
    evaluator = CodeEvaluator(timeout_s=5)
    with pytest.raises(IsolationUnavailable) as err:
        evaluator.evaluate(TASK, "    return a + b\n")
    assert isinstance(err.value, ClstreamError)
    message = str(err.value)
    assert "\n" not in message and "bubblewrap" in message
    assert "--unsafe-unisolated-code" in message
    with pytest.raises(IsolationUnavailable):
        evaluator.preflight()
    with pytest.raises(IsolationUnavailable):
        run_python("pass")
    allowed = CodeEvaluator(timeout_s=5, allow_unisolated=True)
    assert allowed.preflight().startswith("none")
    verdict = allowed.evaluate(TASK, "    return a + b\n")
    assert verdict.score == 1.0
    assert verdict.detail["unisolated"] is True
    assert verdict.detail["isolation"].startswith("none: ran unisolated")
    wrong = allowed.evaluate(TASK, "    return a - b\nimport sys\nsys.exit(0)\n")
    assert wrong.score == 0.0


@needs_bwrap
def test_isolation_is_recorded_in_the_verdict() -> None:
    verdict = CodeEvaluator(timeout_s=5).evaluate(TASK, "    return a + b\n")
    assert verdict.score == 1.0
    assert verdict.detail["isolation"].startswith("bubblewrap")
    assert verdict.detail["unisolated"] is False and verdict.detail["calls"] == 2


def _check(program: str, test: str = TEST, **kw: object) -> tuple[bool, str, str]:
    iso = FOUND if isinstance(FOUND, Isolation) else unisolated()
    result = check_solution(PROMPT + program, "add", test, PROMPT, timeout_s=5, isolation=iso,
                            **kw)  # type: ignore[arg-type]
    return result.passed, result.status, result.reason


def test_answers_cross_the_boundary_as_plain_data() -> None:
    assert _check("    return a + b\n")[0]
    assert _check("    return float(a + b)\n")[0]  # 5.0 == 5 in the tests, as in Python
    passed, status, reason = _check(
        "    class Any:\n        __eq__ = lambda s, o: True\n    return Any()\n")
    assert not passed and status == "fail" and "not plain data" in reason
    passed, status, _ = _check("    class I(int):\n        __eq__ = lambda s, o: True\n"
                               "    return I(a * b)\n")
    assert not passed and status == "fail"


def test_values_and_exceptions_keep_their_types() -> None:
    test = (
        "def check(candidate):\n"
        "    assert candidate((1, 2), {'k': {3}}) == ((1, 2), {'k': {3}})\n"
        "    assert type(candidate((1,), {})[0]) is tuple\n"
        "    assert candidate(b'x', frozenset()) == (b'x', frozenset())\n"
        "    assert candidate(1j, float('inf')) == (1j, float('inf'))\n"
        "    try:\n        candidate('boom', None)\n    except KeyError as e:\n"
        "        assert e.args == ('boom',)\n    else:\n        assert False\n"
    )
    program = "    if a == 'boom':\n        raise KeyError('boom')\n    return a, b\n"
    passed, status, reason = _check(program, test)
    assert passed, (status, reason)


def test_a_test_that_passes_a_function_is_an_error_not_a_wrong_answer() -> None:
    test = "def check(candidate):\n    assert candidate(lambda: 1, 2) == 3\n"
    passed, status, reason = _check("    return a() + b\n", test)
    assert not passed and status == "error" and "cannot cross" in reason


def test_a_swallowed_early_exit_still_fails() -> None:
    test = ("def check(candidate):\n    try:\n        candidate(1, 2)\n"
            "    except BaseException:\n        pass\n")
    passed, status, reason = _check("    import os\n    os._exit(0)\n", test)
    assert not passed and status == "fail" and "end the interpreter" in reason


def test_tests_that_do_not_compile_are_an_error() -> None:
    passed, status, reason = _check("    return a + b\n", "def check(candidate:\n")
    assert not passed and status == "error" and "do not compile" in reason
