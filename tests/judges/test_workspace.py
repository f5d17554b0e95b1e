"""Allowed packages in the sandbox and the workspace runner: numpy, scipy and scikit-learn
import read-only, nothing else of site-packages does, the network stays shut, and a
program's files come back unless it was stopped."""

from __future__ import annotations

import sys

import pytest

from clstream.judges.isolation import allowed_packages, detect
from clstream.judges.sandbox import run_python
from clstream.judges.workspace import WorkspaceError, check_path, run_in_workspace

FOUND = detect()
pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="the sandbox relies on Linux"),
    pytest.mark.skipif(isinstance(FOUND, str), reason=f"the sandbox needs bubblewrap: {FOUND}"),
]
SCIENCE = ("numpy", "scipy", "sklearn")


def test_allowed_packages_follow_required_dependencies_only() -> None:
    found = allowed_packages(("numpy", "no_such_package_here"))
    assert found.names == ("numpy",) and found.missing == ("no_such_package_here",)
    assert {entry for _, entry in found.binds} >= {"numpy"}
    with pytest.raises(ValueError, match="import name"):
        allowed_packages(("not-a-name",))


def test_numpy_imports_in_the_sandbox_only_when_allowed() -> None:
    code = "import numpy as np\nprint(float(np.linalg.lstsq(np.eye(2), np.ones(2))[0].sum()))"
    allowed = run_python(code, timeout_s=30, memory_mb=1024, packages=("numpy",))
    assert allowed.status == "ok", allowed.stderr
    assert allowed.stdout.strip() == "2.0"
    refused = run_python(code, timeout_s=30, memory_mb=1024)
    assert refused.status == "fail" and "No module named 'numpy'" in refused.stderr


def test_scipy_and_sklearn_import_and_fit() -> None:
    pytest.importorskip("sklearn", reason="needs the clbench extra: pip install 'clstream[clbench]'")
    code = ("import numpy as np, scipy.optimize\n"
            "from sklearn.linear_model import PoissonRegressor\n"
            "x = np.arange(8.0).reshape(-1, 1)\n"
            "m = PoissonRegressor(alpha=0).fit(x, np.exp(0.1 * x[:, 0]) * 50)\n"
            "print(round(float(m.coef_[0]), 2), scipy.optimize.brentq(lambda v: v - 1, 0, 2))")
    done = run_python(code, timeout_s=60, memory_mb=1024, packages=SCIENCE)
    assert done.status == "ok", done.stderr
    assert done.stdout.split() == ["0.1", "1.0"]
    assert "joblib will operate in serial mode" not in done.stderr


@pytest.mark.parametrize("name", ["pandas", "pytest", "clstream"])
def test_other_packages_stay_out(name: str) -> None:
    done = run_python(f"import {name}", timeout_s=30, memory_mb=1024, packages=SCIENCE)
    assert done.status == "fail" and f"No module named '{name}'" in done.stderr


def test_the_network_stays_shut_with_packages_allowed() -> None:
    code = "import numpy, socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)"
    done = run_python(code, timeout_s=30, memory_mb=1024, packages=("numpy",))
    assert done.status == "forbidden" and "socket" in done.reason


def test_allowed_packages_are_read_only() -> None:
    code = ("import numpy, os\n"
            "open(os.path.join(os.path.dirname(numpy.__file__), 'x.py'), 'w')")
    done = run_python(code, timeout_s=30, memory_mb=1024, packages=("numpy",))
    assert done.status == "forbidden" and "outside the sandbox" in done.reason


def test_a_program_reads_writes_and_deletes_workspace_files() -> None:
    files = {"data/in.csv": b"1\n2\n", "old.txt": b"gone soon"}
    code = ("import os\n"
            "total = sum(int(v) for v in open('data/in.csv'))\n"
            "os.makedirs('models', exist_ok=True)\n"
            "open('models/total.bin', 'wb').write(bytes([total]))\n"
            "os.remove('old.txt')\nprint('total', total)")
    done = run_in_workspace(code, files)
    assert done.result.status == "ok" and done.result.stdout.strip() == "total 3"
    assert done.files == {"data/in.csv": b"1\n2\n", "models/total.bin": b"\x03"}


def test_files_come_back_after_an_exception_but_not_after_a_timeout() -> None:
    failed = run_in_workspace("open('kept.txt', 'w').write('x')\nraise ValueError('late')", {})
    assert failed.result.status == "fail" and failed.files == {"kept.txt": b"x"}
    stopped = run_in_workspace("open('lost.txt', 'w').write('x')\nwhile True: pass", {},
                               timeout_s=2)
    assert stopped.result.status == "timeout" and stopped.files is None
    assert "discarded" in stopped.note


def test_too_many_bytes_are_discarded() -> None:
    done = run_in_workspace("open('big', 'wb').write(b'x' * 5000)", {}, max_bytes=4000)
    assert done.files is None and "4000 bytes" in done.note


@pytest.mark.parametrize("path", ["/etc/passwd", "../up", "a//b", "a/./b", ""])
def test_bad_paths_are_refused(path: str) -> None:
    with pytest.raises(WorkspaceError):
        check_path(path)
