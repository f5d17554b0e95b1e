"""A wheel's public API (:func:`read_wheel`): the module tables of :mod:`.wheel_modules`
resolved into exports, alias chains and canonical paths, one :class:`ApiRecord` per public
callable (docs/imprint.md §4.3; ImprintBench App. D.2). :mod:`.wheels` describes the rules and
diffs two surfaces.
"""

from __future__ import annotations

import ast
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from clstream.core.errors import DataError
from clstream.protocols.imprint.settings.code.wheel_modules import (
    DEFAULT_DENY,
    MAX_ALIAS_DEPTH,
    TEST_SEGMENTS,
    Definition,
    ModuleTable,
    merge_stub,
    parse_module,
)


@dataclass(frozen=True)
class ApiRecord:
    """One public callable: ``{kind, params, signature, doc, defined_at, source}`` plus where
    it is defined and its other public paths."""

    path: str
    kind: str
    params: tuple[str, ...]
    signature: str
    doc: str
    defined_at: str  # "<file in the wheel>:<line>"
    source: str
    module: str  # defining module
    name: str  # defined name (``Class.method`` for methods)
    aliases: tuple[str, ...] = ()  # other public paths of the same object
    origin: str = "def"  # see Definition.origin
    # strings the callable's decorators spell (parameters a decorator adds, such as ``axis``)
    decorated_with: frozenset[str] = frozenset()

    @property
    def leaf(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def parent(self) -> str:
        return self.path.rsplit(".", 1)[0]


@dataclass
class WheelSurface:
    """Everything read from one wheel."""

    wheel: Path
    package: str
    version: str
    build_date: str  # YYYY-MM-DD of the newest dist-info entry ("" when implausible)
    modules: dict[str, ModuleTable]
    records: dict[str, ApiRecord]
    defined_names: set[str]  # every def/class name and Class.method, private modules included
    test_files: dict[str, str]  # path in the wheel -> text, for usage snippets
    unparsed: list[str]  # files that did not parse
    deny: tuple[str, ...] = DEFAULT_DENY
    # every public ``module.name`` an export binds, resolved to a definition or not (compiled
    # functions, constants): a path bound here was public in this wheel
    exported: set[str] = field(default_factory=set)

    @property
    def public_paths(self) -> set[str]:
        return {p for r in self.records.values() for p in (r.path, *r.aliases)}

    @property
    def method_names(self) -> set[str]:
        """The method names defined on any class of the wheel."""
        return {n.rsplit(".", 1)[1] for n in self.defined_names if "." in n}

    def module_doc(self, module: str) -> str:
        table = self.modules.get(module)
        return table.doc if table else ""

    def class_doc(self, path: str) -> str:
        record = self.records.get(path)
        return record.doc if record else ""


def _module_name(relpath: str) -> tuple[str, bool]:
    stem = relpath.rsplit(".", 1)[0]
    parts = stem.split("/")
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _version_from(archive: zipfile.ZipFile, wheel: Path) -> tuple[str, str]:
    version, date = "", ""
    for info in archive.infolist():
        if info.filename.count("/") == 1 and info.filename.split("/")[0].endswith(".dist-info"):
            year, month, day = info.date_time[:3]
            if year >= 1990:
                stamp = f"{year:04d}-{month:02d}-{day:02d}"
                date = max(date, stamp)
            if info.filename.endswith("/METADATA"):
                text = archive.read(info).decode("utf-8", "replace")
                match = re.search(r"^Version:\s*(\S+)", text, re.MULTILINE)
                if match:
                    version = match.group(1)
    if not version:
        pieces = wheel.name.split("-")
        version = pieces[1] if len(pieces) > 2 else ""
    return version, date


def read_wheel(path: str | Path, package: str, *, deny: Sequence[str] = DEFAULT_DENY
               ) -> WheelSurface:
    """Read ``package`` from the wheel at ``path`` without importing anything.

    A file that is not a zip, or a wheel without ``package``, is a :class:`DataError` naming
    the file."""
    wheel = Path(path)
    if not wheel.is_file():
        raise DataError(wheel, None, None, "wheel file not found")
    if not zipfile.is_zipfile(wheel):
        raise DataError(wheel, None, None, "not a wheel (the file is not a zip archive)")
    sources: dict[str, tuple[str, str, bool]] = {}  # module -> (file, text, is_package)
    stubs: dict[str, tuple[str, str, bool]] = {}
    test_files: dict[str, str] = {}
    try:
        with zipfile.ZipFile(wheel) as archive:
            version, build_date = _version_from(archive, wheel)
            for info in archive.infolist():
                name = info.filename
                if not name.startswith(package + "/") or not name.endswith((".py", ".pyi")):
                    continue
                text = archive.read(info).decode("utf-8", "replace")
                segments = name.split("/")[:-1]
                if any(s in TEST_SEGMENTS for s in segments) or name.endswith("/conftest.py"):
                    if name.endswith(".py"):
                        test_files[name] = text
                    continue
                module, is_package = _module_name(name)
                (stubs if name.endswith(".pyi") else sources)[module] = (name, text, is_package)
    except (zipfile.BadZipFile, OSError) as exc:
        raise DataError(wheel, None, None, f"cannot read the wheel: {exc}") from None
    if not sources and not stubs:
        raise DataError(wheel, None, "package", f"no package {package!r} in the wheel")
    modules: dict[str, ModuleTable] = {}
    unparsed: list[str] = []
    for module in sorted(set(sources) | set(stubs)):
        tables: list[ModuleTable] = []
        for kind in (sources, stubs):
            if module in kind:
                file, text, is_package = kind[module]
                try:
                    tables.append(parse_module(module, file, text, is_package=is_package))
                except (SyntaxError, ValueError):
                    unparsed.append(file)
        if len(tables) == 2:
            modules[module] = merge_stub(tables[0], tables[1])
        elif tables:
            modules[module] = tables[0]
    _document_compiled(modules)
    surface = WheelSurface(
        wheel=wheel, package=package, version=version, build_date=build_date, modules=modules,
        records={}, defined_names=set(), test_files=test_files, unparsed=unparsed,
        deny=tuple(deny),
    )
    _Resolver(surface).fill()
    return surface


def _document_compiled(modules: dict[str, ModuleTable]) -> None:
    """Give a definition without a docstring (a stub's, for a compiled object) the one an
    ``add_newdoc`` call gives an object of that name."""
    added: dict[str, str] = {}
    for table in modules.values():
        for key, doc in table.added_docs.items():
            added.setdefault(key, doc)
    for table in modules.values():
        for name, definition in table.defs.items():
            if not definition.doc and name in added:
                definition.doc = added[name]
            for method_name, method in definition.methods.items():
                if not method.doc and f"{name}.{method_name}" in added:
                    method.doc = added[f"{name}.{method_name}"]


class _Resolver:
    """Exports, alias resolution and canonical paths over a surface's module tables."""

    def __init__(self, surface: WheelSurface):
        self.surface = surface
        self.modules = surface.modules
        self._exports: dict[str, list[str]] = {}
        self._strings: dict[str, frozenset[str]] = {}

    def exports(self, module: str, visiting: frozenset[str] = frozenset()) -> list[str]:
        """Names ``from module import *`` binds (recursive over star imports, cycle-safe)."""
        if module in self._exports:
            return self._exports[module]
        table = self.modules.get(module)
        if table is None or module in visiting:
            return []
        if table.all_names is not None:
            names = list(dict.fromkeys(table.all_names))
        elif table.all_from is not None and (
                source := self._module_of(module, table.all_from)) is not None:
            names = self.exports(source, visiting | {module})
        else:
            local = [*table.defs, *table.imports, *table.assigned, *sorted(table.others)]
            names = [n for n in dict.fromkeys(local) if not n.startswith("_")]
            seen = set(names)
            for src in table.star_sources:
                for n in self.exports(src, visiting | {module}):
                    if n not in seen and not n.startswith("_"):
                        seen.add(n)
                        names.append(n)
        if not visiting:
            self._exports[module] = names
        return names

    def resolve(self, module: str, name: str, depth: int = 0) -> tuple[str, str] | None:
        """(defining module, defined name) of ``module.name``, or ``(module, "")`` for a
        module; None when it leaves the package, is not a callable or goes too deep."""
        if depth > MAX_ALIAS_DEPTH:
            return None
        table = self.modules.get(module)
        if table is None:
            return None
        if name in table.defs:
            return module, name
        if name in table.imports:
            source, attr = table.imports[name]
            if attr is None:
                return (source, "") if source in self.modules else None
            if f"{source}.{attr}" in self.modules and (
                    source == module or attr not in self._bound(source)):
                return f"{source}.{attr}", ""
            return self.resolve(source, attr, depth + 1)
        if name in table.assigned:
            head, _, rest = table.assigned[name].partition(".")
            if not rest:
                return None if head == name else self.resolve(module, head, depth + 1)
            target = self.resolve(module, head, depth + 1)
            if target is None or target[1]:
                return None
            return self._resolve_dotted(target[0], rest, depth + 1)
        if name in table.others:
            return None
        for src in table.star_sources:
            if name in self.exports(src):
                return self.resolve(src, name, depth + 1)
        if f"{module}.{name}" in self.modules:
            return f"{module}.{name}", ""
        return None

    def _module_of(self, module: str, dotted: str) -> str | None:
        """The module a dotted name in ``module`` refers to (``__all__ = other.__all__``)."""
        head, _, rest = dotted.partition(".")
        found = self.resolve(module, head)
        if found is not None and not found[1] and rest:
            found = self._resolve_dotted(found[0], rest, 1)
        return found[0] if found is not None and not found[1] else None

    def _resolve_dotted(self, module: str, rest: str, depth: int) -> tuple[str, str] | None:
        head, _, tail = rest.partition(".")
        found = self.resolve(module, head, depth)
        if found is None or not tail:
            return found
        if found[1]:
            return None
        return self._resolve_dotted(found[0], tail, depth + 1)

    def _bound(self, module: str) -> set[str]:
        table = self.modules.get(module)
        if table is None:
            return set()
        return set(table.defs) | set(table.assigned) | set(table.imports)

    def public(self, path: str) -> bool:
        return not any(s.startswith("_") or s in self.surface.deny for s in path.split("."))

    def fill(self) -> None:
        surface = self.surface
        for table in self.modules.values():
            surface.defined_names.update(table.added_docs)  # compiled objects exist too
            for name, definition in table.defs.items():
                surface.defined_names.add(name)
                for method in definition.methods:
                    surface.defined_names.add(f"{name}.{method}")
        paths: dict[tuple[str, str], list[str]] = {}
        for module in self.modules:
            if not self.public(module):
                continue
            for name in self.exports(module):
                if name.startswith("_"):
                    continue
                if self._bound_inside(module, name):
                    surface.exported.add(f"{module}.{name}")
                target = self.resolve(module, name)
                if target is None or not target[1]:
                    continue
                paths.setdefault(target, []).append(f"{module}.{name}")
        for (module, name), found in sorted(paths.items()):
            candidates = sorted(set(found), key=lambda p: (
                p.count("."), p.rsplit(".", 1)[-1] != name, len(p), p))
            canonical = candidates[0]
            definition = self.modules[module].defs[name]
            surface.records[canonical] = _record(canonical, definition, module, name,
                                                 tuple(candidates[1:]), self._spelled(module, definition))
            if definition.kind == "class":
                for method_name, method_def in definition.methods.items():
                    path = f"{canonical}.{method_name}"
                    surface.records[path] = _record(
                        path, method_def, module, f"{name}.{method_name}",
                        tuple(f"{alias}.{method_name}" for alias in candidates[1:]),
                        self._spelled(module, method_def))

    def _bound_inside(self, module: str, name: str, depth: int = 0) -> bool:
        """Whether ``module.name`` is bound to something of the package itself (a compiled
        module of the package counts), not to a module or another package's object leaking
        through an import (``from numpy import exp`` star-exported by a scipy module)."""
        if depth > MAX_ALIAS_DEPTH:
            return False
        table = self.modules.get(module)
        if table is None:
            return module.split(".")[0] == self.surface.package
        if name in table.defs or name in table.others:
            return True
        if name in table.imports:
            source, attr = table.imports[name]
            return attr is not None and self._bound_inside(source, attr, depth + 1)
        if name in table.assigned:
            head = table.assigned[name].split(".")[0]
            return head != name and self._bound_inside(module, head, depth + 1)
        for src in table.star_sources:
            if name in self.exports(src):
                return self._bound_inside(src, name, depth + 1)
        return False

    def _spelled(self, module: str, definition: Definition) -> frozenset[str]:
        """The string constants in the source of the decorators of ``definition`` that resolve
        to a definition in the wheel (``_axis_nan_policy_factory`` spells ``'axis'``)."""
        out: set[str] = set()
        for decorator in definition.decorators:
            head, _, rest = decorator.partition(".")
            target = self.resolve(module, head)
            if target is not None and rest:
                target = None if target[1] else self._resolve_dotted(target[0], rest, 1)
            if target is None or not target[1]:
                continue
            key = f"{target[0]}:{target[1]}"
            if key not in self._strings:
                found = self.modules[target[0]].defs[target[1]]
                try:
                    tree = ast.parse(found.source)
                except SyntaxError:
                    tree = ast.Module(body=[], type_ignores=[])
                self._strings[key] = frozenset(
                    n.value for n in ast.walk(tree)
                    if isinstance(n, ast.Constant) and isinstance(n.value, str)
                    and n.value.isidentifier())
            out |= self._strings[key]
        return frozenset(out)


def _record(path: str, d: Definition, module: str, name: str,
            aliases: tuple[str, ...], decorated_with: frozenset[str] = frozenset()) -> ApiRecord:
    return ApiRecord(path=path, kind=d.kind, params=tuple(d.params), signature=d.signature,
                     doc=d.doc, defined_at=f"{d.file}:{d.line}", source=d.source, module=module,
                     name=name, aliases=aliases, origin=d.origin, decorated_with=decorated_with)


# --------------------------------------------------------------------------- the diff
