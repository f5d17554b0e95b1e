"""Every benchmark script loads: the names it imports from clstream and from the test helpers
still exist. ``make bench`` runs them one after another and stops at the first that fails, so
a script left behind by a rename would otherwise be found only there."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_script_imports(script: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    monkeypatch.setattr(sys, "path", list(sys.path))  # whatever the script adds is undone
    spec = importlib.util.spec_from_file_location(f"benchmark_{script.stem}", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)  # runs the imports; ``main`` is behind __name__
    assert callable(getattr(module, "main", None)) or script.name == "cli_timing.py"
