"""The sandbox stops hostile programs, scores them failed with the right status, and survives."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from clstream.judges.isolation import detect
from clstream.judges.sandbox import run_python

FOUND = detect()
pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="the sandbox relies on Linux"),
    pytest.mark.skipif(isinstance(FOUND, str), reason=f"the sandbox needs bubblewrap: {FOUND}"),
]


def test_correct_program_passes_and_its_directory_is_removed() -> None:
    result = run_python("import os\nprint(os.getcwd())\nassert sum(range(4)) == 6\n")
    assert result.passed and result.status == "ok" and result.returncode == 0
    workdir = Path(result.stdout.strip())
    assert workdir.name.startswith("clstream-sandbox-")
    assert not workdir.exists()


def test_failing_assertion_is_a_fail_with_traceback() -> None:
    result = run_python("def f():\n    return 1\nassert f() == 2, 'wrong'\n")
    assert not result.passed and result.status == "fail"
    assert "AssertionError: wrong" in result.stderr


def test_syntax_error_is_a_fail() -> None:
    result = run_python("def f(:\n    pass\n")
    assert result.status == "fail" and "SyntaxError" in result.stderr


def test_infinite_loop_is_stopped_as_timeout() -> None:
    result = run_python("while True:\n    pass\n", timeout_s=1.0)
    assert not result.passed and result.status == "timeout"


def test_sleeping_program_is_stopped_by_the_wall_clock() -> None:
    result = run_python("import time\ntime.sleep(60)\n", timeout_s=0.5)
    assert result.status == "timeout" and result.duration > 0


def test_program_that_closes_its_output_and_spins_is_stopped() -> None:
    code = "import os\nos.close(1)\nos.close(2)\nwhile True:\n    pass\n"
    assert run_python(code, timeout_s=1.0).status == "timeout"


@pytest.mark.parametrize(
    "code",
    [
        "blocks = []\nwhile True:\n    blocks.append(bytearray(10 ** 7))\n",
        "text = 'x' * (10 ** 11)\n",
    ],
)
def test_unbounded_allocation_is_stopped_as_memory(code: str) -> None:
    result = run_python(code, memory_mb=256, timeout_s=5.0)
    assert not result.passed and result.status == "memory"


def test_writing_outside_its_directory_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "victim.txt"
    target.write_text("original")
    for code in (
        f"open({str(target)!r}, 'w').write('owned')\n",
        f"import os\nos.remove({str(target)!r})\n",
        f"import os\nos.rename({str(target)!r}, 'stolen.txt')\n",
        f"import shutil\nshutil.rmtree({str(tmp_path)!r})\n",
        f"import os\nos.symlink({str(tmp_path)!r}, 'door')\n"
        "open('door/victim.txt', 'a').write('x')\n",
        # the harness's files are not even visible inside; system files are, read-only
        "import os\nfd = os.open('/usr/bin', os.O_RDONLY)\nos.chmod(fd, 0o777)\n",
        "import os\nd = os.open('/usr', os.O_RDONLY)\nos.mkdir('new', dir_fd=d)\n",
        "import os\nos.open('relative.txt', os.O_WRONLY | os.O_CREAT)\n",
    ):
        result = run_python(code)
        assert result.status == "forbidden", (code, result)
        assert not result.passed
    assert target.read_text() == "original"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["victim.txt"]
    assert oct(target.stat().st_mode & 0o777) != oct(0o777)


def test_writing_inside_its_directory_is_allowed() -> None:
    code = (
        "import os, tempfile\nopen('a.txt', 'w').write('hello')\nos.makedirs('d/e')\n"
        "os.rename('a.txt', 'd/e/b.txt')\nfd, name = tempfile.mkstemp()\nos.close(fd)\n"
        "print(open('d/e/b.txt').read())\n"
    )
    result = run_python(code)
    assert result.status == "ok", result.stderr
    assert result.stdout.strip() == "hello"


@pytest.mark.parametrize(
    "code",
    [
        "import subprocess\nsubprocess.run(['true'])\n",
        "import os\nos.system('true')\n",
        "import os\npid = os.fork()\n",
        "import os\nos.execv('/bin/true', ['true'])\n",
        "import os\nos.posix_spawn('/bin/true', ['true'], {})\n",
        "import pty\npty.spawn('true')\n",
        "import multiprocessing\np = multiprocessing.Process(target=print)\np.start()\n",
        "import _posixsubprocess\n_posixsubprocess.fork_exec()\n",
        "import ctypes\nctypes.CDLL(None).system(b'true')\n",
    ],
)
def test_spawning_a_process_is_refused(code: str) -> None:
    result = run_python(code)
    assert not result.passed and result.status == "forbidden", result


@pytest.mark.parametrize(
    "code",
    [
        "import socket\ns = socket.socket()\n",
        "import socket\nsocket.create_connection(('127.0.0.1', 9))\n",
        "import socket\nsocket.getaddrinfo('localhost', 80)\n",
        "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:9/')\n",
        "import socket\ntry:\n    socket.socket()\nexcept BaseException:\n    pass\n"
        "print('went on')\n",
    ],
)
def test_opening_a_socket_is_refused(code: str) -> None:
    result = run_python(code)
    assert result.status == "forbidden", result
    assert "went on" not in result.stdout


def test_killing_the_harness_is_refused() -> None:
    result = run_python("import os\nos.kill(os.getppid(), 9)\n")
    assert result.status == "forbidden"


def test_early_exit_cannot_skip_the_rest_of_the_program() -> None:
    for code in (
        "import sys\nsys.exit(0)\nassert False\n",
        "import os\nos._exit(0)\nassert False\n",
        "exit()\nassert False\n",
    ):
        result = run_python(code)
        assert result.status == "fail" and not result.passed


def test_output_is_truncated_but_the_run_completes() -> None:
    result = run_python(
        "import sys\nsys.stdout.write('y' * 500000)\nprint('done', file=sys.stderr)\n",
        max_output_bytes=1000,
    )
    assert result.status == "ok"
    assert result.stdout.startswith("y" * 1000) and "more bytes not kept" in result.stdout
    assert "done" in result.stderr


def test_run_as_main_false_skips_main_guard() -> None:
    code = "if __name__ == '__main__':\n    raise SystemExit(3)\nprint('ran')\n"
    assert run_python(code, run_as_main=False).status == "ok"
    assert run_python(code).status == "fail"


def test_no_sandbox_directories_are_left_behind() -> None:
    show = "import os\nprint(os.getcwd(), flush=True)\n"
    used = []
    for code in (
        show + "while True:\n    pass\n",
        show + "os.makedirs('x/y')\nos.chmod('x', 0)\nos.chmod('.', 0o500)\n",
        show + "import socket\nsocket.socket()\n",
    ):
        result = run_python(code, timeout_s=0.5)
        used.append(Path(result.stdout.split()[0]))
    assert all(p.name.startswith("clstream-sandbox-") for p in used)
    assert not any(p.exists() for p in used)


def test_file_size_limit_stops_a_huge_write() -> None:
    code = "with open('big.bin', 'wb') as fh:\n    fh.write(b'0' * (3 << 20))\n"
    result = run_python(code, file_size_mb=1)
    assert result.status == "fail" and "File too large" in result.stderr
    assert run_python(code, file_size_mb=8).status == "ok"


def test_crash_by_signal_is_an_error_not_a_pass() -> None:
    result = run_python("import faulthandler\nfaulthandler._sigsegv()\n")
    assert result.status == "error" and "SIGSEGV" in result.reason
