"""The import contracts of scripts/import_contracts.py on a small package of two protocols:
the protocols come from the registry, and a cycle through a package's ``__init__`` (which the
import graph alone does not show) breaks the acyclic contract."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import grimp
import pytest
from importlinter.domain.contract import ContractCheck

from clstream.core.registry import register, unregister

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "cycletree"


@pytest.fixture
def contracts(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(ROOT))
    return importlib.import_module("scripts.import_contracts")


def _write(base: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``cycletree.protocols.alpha`` and ``.beta``, registered as protocols; alpha's scoring
    takes its metrics through the package that imports its commands, which import scoring."""
    _write(tmp_path, {
        f"{PACKAGE}/__init__.py": "",
        f"{PACKAGE}/protocols/__init__.py": "",
        f"{PACKAGE}/protocols/alpha/__init__.py":
            f"from {PACKAGE}.protocols.alpha import commands\nPROTOCOL = commands\n",
        f"{PACKAGE}/protocols/alpha/commands.py":
            (f"def run():\n    import {PACKAGE}.protocols.alpha.scoring as scoring\n"
             "    return scoring\n"),
        f"{PACKAGE}/protocols/alpha/scoring.py": f"from {PACKAGE}.protocols.alpha import metrics\n",
        f"{PACKAGE}/protocols/alpha/metrics.py": "VALUE = 1\n",
        f"{PACKAGE}/protocols/beta/__init__.py": "PROTOCOL = None\n",
    })
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("alpha", "beta"):
        register("protocol", f"cycle-{name}", f"{PACKAGE}.protocols.{name}:PROTOCOL")
    yield tmp_path
    for name in ("alpha", "beta"):
        unregister("protocol", f"cycle-{name}")
    for module in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[module]


def _check(contracts: ModuleType, kind: str, graph: grimp.ImportGraph,
           root: str = f"{PACKAGE}.protocols") -> ContractCheck:
    contract = getattr(contracts, kind)(name=kind, session_options={},
                                        contract_options={"root": root})
    check: ContractCheck = contract.check(graph, verbose=False)
    return check


def test_protocols_come_from_the_registry(contracts: ModuleType, tree: Path) -> None:
    graph = grimp.build_graph(PACKAGE, cache_dir=None)
    assert contracts.registered_protocol_packages(graph, f"{PACKAGE}.protocols") == [
        f"{PACKAGE}.protocols.alpha", f"{PACKAGE}.protocols.beta"]
    assert _check(contracts, "RegisteredProtocolsIndependent", graph).kept
    _write(tree, {f"{PACKAGE}/protocols/beta/__init__.py":
                  f"from {PACKAGE}.protocols.alpha.metrics import VALUE\nPROTOCOL = VALUE\n"})
    graph = grimp.build_graph(PACKAGE, cache_dir=None)
    assert not _check(contracts, "RegisteredProtocolsIndependent", graph).kept


def test_a_cycle_through_the_package_init_is_found(contracts: ModuleType, tree: Path) -> None:
    graph = grimp.build_graph(PACKAGE, cache_dir=None)
    alpha = f"{PACKAGE}.protocols.alpha"
    check = _check(contracts, "AcyclicProtocolPackages", graph)
    assert not check.kept
    assert check.metadata["cycles"] == [[alpha, f"{alpha}.commands", f"{alpha}.scoring", alpha]]


@pytest.mark.parametrize("line", [f"import {PACKAGE}.protocols.alpha.metrics as metrics\n",
                                  f"from {PACKAGE}.protocols.alpha.metrics import VALUE\n"])
def test_importing_the_submodule_itself_is_no_cycle(contracts: ModuleType, tree: Path,
                                                     line: str) -> None:
    _write(tree, {f"{PACKAGE}/protocols/alpha/scoring.py": line})
    graph = grimp.build_graph(PACKAGE, cache_dir=None)
    assert _check(contracts, "AcyclicProtocolPackages", graph).kept


def test_a_relative_import_of_the_package_counts(contracts: ModuleType, tree: Path) -> None:
    _write(tree, {f"{PACKAGE}/protocols/alpha/scoring.py": "from . import metrics\n"})
    graph = grimp.build_graph(PACKAGE, cache_dir=None)
    assert not _check(contracts, "AcyclicProtocolPackages", graph).kept


def test_find_cycles_reports_one_cycle_per_component(contracts: ModuleType) -> None:
    edges = {"a": {"b"}, "b": {"a", "c"}, "c": set(), "d": {"d"}}
    assert contracts.find_cycles(edges) == [["a", "b", "a"], ["d", "d"]]


def test_a_cycle_between_two_packages_breaks_the_whole_package_contract(
        contracts: ModuleType, tree: Path) -> None:
    """A cycle that crosses packages (driver -> executor -> driver, imported late inside a
    function) is outside every protocol's package, and still a cycle of the whole."""
    _write(tree, {f"{PACKAGE}/protocols/alpha/scoring.py": "VALUE = 2\n",
                  f"{PACKAGE}/driver/__init__.py": "",
                  f"{PACKAGE}/driver/execute.py": f"def drive():\n    import {PACKAGE}.run\n",
                  f"{PACKAGE}/run.py": f"from {PACKAGE}.driver.execute import drive\n"})
    graph = grimp.build_graph(PACKAGE, cache_dir=None)
    assert _check(contracts, "AcyclicProtocolPackages", graph).kept
    check = _check(contracts, "AcyclicPackage", graph, root=PACKAGE)
    assert not check.kept
    assert check.metadata["cycles"] == [[f"{PACKAGE}.driver.execute", f"{PACKAGE}.run",
                                         f"{PACKAGE}.driver.execute"]]
    _write(tree, {f"{PACKAGE}/run.py": "VALUE = 3\n"})
    assert _check(contracts, "AcyclicPackage", grimp.build_graph(PACKAGE, cache_dir=None),
                  root=PACKAGE).kept
