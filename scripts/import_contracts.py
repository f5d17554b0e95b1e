"""Import contracts that ``lint-imports`` cannot state by hand (DESIGN.md, layers; the
``[tool.importlinter]`` table of pyproject.toml names them by type).

* :class:`RegisteredProtocolsIndependent` -- no protocol imports another. The protocols are the
  packages the registry names (kind ``"protocol"``, :mod:`clstream.core.registry`), read when
  the contract is checked, so a protocol added to the registry is held to the rule without
  editing pyproject.toml.
* :class:`AcyclicProtocolPackages` -- no import cycle inside a protocol's package, counting
  what the graph leaves out: ``from package import name`` reads the package's ``__init__``
  even when ``name`` is a submodule, so a submodule that takes a sibling through its package
  while that ``__init__`` imports the submodule is a cycle (a partly initialised module at
  import time).

``lint-imports`` puts the working directory on ``sys.path``, so run it from the repository
root, as ``make test`` does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from grimp import ImportGraph
from importlinter.application import output
from importlinter.contracts.independence import IndependenceContract
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck

_FROM_IMPORT = re.compile(r"^\s*from\s+(\.*)([\w.]*)\s+import\b")


def registered_protocol_packages(graph: ImportGraph, root: str) -> list[str]:
    """The package of every protocol the registry names whose module is in ``graph`` under
    ``root`` (protocols registered from other distributions are not this project's to check)."""
    from clstream.core.registry import entries

    packages = set()
    for entry in entries("protocol"):
        module = entry.target.partition(":")[0]
        if module.startswith(root + ".") and module in graph.modules:
            packages.add(".".join(module.split(".")[: root.count(".") + 2]))
    return sorted(packages)


class RegisteredProtocolsIndependent(IndependenceContract):
    """The independence contract over the registered protocols' packages.

    Option ``root``: the package holding the protocols (``clstream.protocols``).
    """

    type_name = "registered_protocols_independent"

    root = fields.StringField()
    modules = fields.SetField(subfield=fields.ModuleExpressionField(), required=False)

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        packages = registered_protocol_packages(graph, str(self.root))
        if len(packages) < 2:
            raise ValueError(f"the registry names {len(packages)} protocol package(s) under "
                             f"{self.root}; independence needs two or more")
        output.verbose_print(verbose, f"Protocols from the registry: {', '.join(packages)}")
        self.modules = {fields.ModuleExpressionField().parse(p) for p in packages}
        return super().check(graph, verbose)


def _package_read(importer: str, line: str, is_package: bool) -> str | None:
    """The module whose namespace a ``from ... import`` line reads, absolute."""
    m = _FROM_IMPORT.match(line)
    if m is None:
        return None
    dots, name = m.groups()
    if not dots:
        return name
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (len(dots) - 1)]
    return ".".join([*base, name] if name else base)


def package_edges(graph: ImportGraph, package: str) -> dict[str, set[str]]:
    """The imports among ``package`` and its descendants: the graph's, plus importer ->
    package ``P`` for each ``from P import submodule`` line."""
    members = {package, *graph.find_descendants(package)}
    edges: dict[str, set[str]] = {m: set() for m in members}
    for importer in members:
        for imported in graph.find_modules_directly_imported_by(importer) & members:
            edges[importer].add(imported)
            details = graph.get_import_details(importer=importer, imported=imported)
            for detail in details:
                read = _package_read(importer, str(detail["line_contents"]),
                                     bool(graph.find_children(importer)))
                if read is not None and read not in (imported, importer) and read in members:
                    edges[importer].add(read)
    return edges


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a list of modules, the first repeated at the end) through each strongly
    connected component of ``edges`` that has one, in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(start: str) -> None:  # Tarjan's algorithm, iterative
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    components.append(component)

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted((_cycle_in(edges, c) for c in components), key=lambda c: c[0])


def _cycle_in(edges: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle through the first module of ``component``, by breadth-first search."""
    start = min(component)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(edges[node] & component):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if child not in parents:
                    parents[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # a component always has one


class AcyclicProtocolPackages(Contract):
    """No import cycle inside any registered protocol's package (counting imports of a
    package's namespace, :func:`package_edges`).

    Option ``root``: the package holding the protocols (``clstream.protocols``).
    """

    type_name = "acyclic_protocol_packages"

    root = fields.StringField()

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        cycles: list[list[str]] = []
        for package in registered_protocol_packages(graph, str(self.root)):
            found = find_cycles(package_edges(graph, package))
            output.verbose_print(verbose, f"{package}: {len(found)} cycle(s)")
            cycles += found
        return ContractCheck(kept=not cycles, warnings=[], metadata={"cycles": cycles})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for cycle in check.metadata["cycles"]:
            output.print_error(" -> ".join(cycle))
            output.new_line()


class AcyclicPackage(Contract):
    """No import cycle anywhere under one package, the package itself included (counting
    imports of a package's namespace, :func:`package_edges`; imports made inside functions
    count as well: a cycle broken only by importing late is still a cycle).

    Option ``root``: the package (``clstream``: the whole project).
    """

    type_name = "acyclic_package"

    root = fields.StringField()

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        cycles = find_cycles(package_edges(graph, str(self.root)))
        output.verbose_print(verbose, f"{self.root}: {len(cycles)} cycle(s)")
        return ContractCheck(kept=not cycles, warnings=[], metadata={"cycles": cycles})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for cycle in check.metadata["cycles"]:
            output.print_error(" -> ".join(cycle))
            output.new_line()
