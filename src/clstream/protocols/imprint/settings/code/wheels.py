"""The public API of a Python package read from a wheel, and the difference between two wheels.

ImprintBench's code setting turns new public APIs into questions (docs/imprint.md §4.3; ImprintBench
App. D.2). The paper finds them in release notes and confirms them with LLM judges; clstream
reads them from two local wheels instead (docs/imprint.md §4.3, a project reading): every ``.py`` and
``.pyi`` file of the package is parsed with :mod:`ast` -- nothing in a wheel is ever imported
or executed, so any platform tag works and a module whose top level would fail or write files
is read like any other.

Reading (:func:`read_wheel`):

* one table per module: top-level ``def``/``class`` (classes with their public methods, also
  inside top-level ``if``/``try`` blocks), ``from X import a as b`` and ``import x as y``
  bindings (relative imports resolved by ``level``), ``name = other`` aliases, star-import
  sources, and a literal ``__all__`` (``= [...]``, tuples, ``+= [...]``, ``.extend([...])``,
  sums of literals; anything else means "no literal ``__all__``");
* a ``.py`` and a ``.pyi`` of the same module are merged: the ``.py`` wins where both define a
  name, the stub fills the gaps (compiled functions exist only in stubs);
* exports = the literal ``__all__`` if any, else the public bindings plus the star-imported
  exports (recursive and cycle-safe); each exported name is resolved through alias chains (at
  most :data:`MAX_ALIAS_DEPTH` hops) to the ``def``/``class`` that defines it;
* the *canonical path* of an object is the shortest of its public paths (no ``_``-prefixed or
  denied segment), preferring a path whose leaf is the defined name, then the shorter string,
  then the alphabetical first: ``numpy.cumulative_sum``, not ``numpy._core.fromnumeric.…``.

Diffing (:func:`diff_surfaces`, :func:`diff_wheels`) applies the deterministic stand-ins for the
paper's judges (docs/imprint.md §4.3): public-namespace rule with a deny list, callable filter
(SCREAMING_CASE functions and parameters dropped), docstring required, *leaf novelty* (the
defined name -- ``Class.name`` for methods -- is defined nowhere in the old wheel, private
modules included, so moves, re-exports and aliases of old code are rejected) and version
evidence from ``.. versionadded::``. Removed paths and renamed parameters are kept as
deprecations.
"""

from __future__ import annotations

import ast
import re
import textwrap
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from clstream.core.errors import DataError

MAX_ALIAS_DEPTH = 10
DEFAULT_DENY: tuple[str, ...] = (
    "core", "compat", "tests", "testing", "typing", "internals", "f2py", "distutils", "_libs",
)
TEST_SEGMENTS = frozenset({"tests", "test", "testing"})
_SCREAMING = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{2,}[0-9]*")
_VERSION_NOTE = re.compile(r"\.\.\s+version(?:added|changed)::\s*([0-9][0-9A-Za-z.\-+]*)")
_SECTION_RULE = re.compile(r"^\s*-{3,}\s*$")


# --------------------------------------------------------------------------- module tables


@dataclass
class Definition:
    """A ``def`` or ``class`` at a module's top level (methods hang off their class)."""

    name: str
    kind: str  # "function" | "class" | "method"
    params: list[str]
    signature: str
    doc: str
    file: str
    line: int
    source: str
    methods: dict[str, Definition] = field(default_factory=dict)
    decorators: tuple[str, ...] = ()  # dotted names (the called name for ``@f(...)``)
    origin: str = "def"  # "def" | "ufunc" (declared in a stub) | "instance" (``x = x_gen()``)


@dataclass
class ModuleTable:
    """What one module binds, as read from its source (and its stub)."""

    name: str
    file: str
    doc: str = ""
    defs: dict[str, Definition] = field(default_factory=dict)
    # local name -> (module, attribute); attribute None for a module binding (import x as y)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    # local name -> dotted expression it was assigned from (``trapz = trapezoid``)
    assigned: dict[str, str] = field(default_factory=dict)
    others: set[str] = field(default_factory=set)  # other top-level names (constants, ...)
    star_sources: list[str] = field(default_factory=list)
    all_names: list[str] | None = None
    all_from: str | None = None  # ``__all__ = other.__all__``: the dotted name of ``other``
    # class name -> the public instance bound from it (``irwinhall = irwinhall_gen(...)``)
    instance_of: dict[str, str] = field(default_factory=dict)
    # docstrings given to compiled objects (``add_newdoc``): name or ``Class.method`` -> doc
    added_docs: dict[str, str] = field(default_factory=dict)


def _params(args: ast.arguments, *, drop_first: bool) -> list[str]:
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    if drop_first and positional:
        positional = positional[1:]
    out = positional
    if args.vararg is not None:
        out.append("*" + args.vararg.arg)
    out.extend(a.arg for a in args.kwonlyargs)
    if args.kwarg is not None:
        out.append("**" + args.kwarg.arg)
    return out


def _signature(args: ast.arguments, *, drop_first: bool) -> str:
    if drop_first:
        args = ast.arguments(
            posonlyargs=list(args.posonlyargs), args=list(args.args), vararg=args.vararg,
            kwonlyargs=list(args.kwonlyargs), kw_defaults=list(args.kw_defaults),
            kwarg=args.kwarg, defaults=list(args.defaults),
        )
        if args.posonlyargs:
            args.posonlyargs = args.posonlyargs[1:]
        elif args.args:
            args.args = args.args[1:]
    return ast.unparse(args)


def _is_static(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)


def _segment(lines: Sequence[str], node: ast.stmt) -> str:
    """The lines a definition spans, dedented (``ast.get_source_segment`` re-splits the whole
    file on every call, which is quadratic over a large module)."""
    end = node.end_lineno or node.lineno
    return textwrap.dedent("".join(lines[node.lineno - 1:end])).rstrip("\n")


def _decorators(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> tuple[str, ...]:
    names = (dotted_name(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list)
    return tuple(n for n in names if n)


def _function(node: ast.FunctionDef | ast.AsyncFunctionDef, text: Sequence[str], file: str,
              *, method: bool) -> Definition:
    drop = method and not _is_static(node)
    return Definition(
        name=node.name, kind="method" if method else "function",
        params=_params(node.args, drop_first=drop), signature=_signature(node.args, drop_first=drop),
        doc=ast.get_docstring(node) or "", file=file, line=node.lineno,
        source=_segment(text, node), decorators=_decorators(node),
    )


def _dataclass_fields(node: ast.ClassDef, inherited: Sequence[str]) -> list[str]:
    """The ``__init__`` parameters a ``@dataclass`` generates: the fields of its bases defined
    earlier in the module, then its own annotated fields (``ClassVar`` and
    ``field(init=False)`` left out)."""
    fields = list(inherited)
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        if "ClassVar" in ast.unparse(stmt.annotation):
            continue
        value = stmt.value
        if (isinstance(value, ast.Call) and dotted_name(value.func) in ("field", "dataclasses.field")
                and any(k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False
                        for k in value.keywords)):
            continue
        if stmt.target.id in fields:
            fields.remove(stmt.target.id)
        fields.append(stmt.target.id)
    return fields


def _class(node: ast.ClassDef, text: Sequence[str], file: str,
           dataclass_fields: dict[str, list[str]]) -> Definition:
    methods: dict[str, Definition] = {}
    init: Definition | None = None
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            if stmt.name == "__init__" and init is None:
                init = _function(stmt, text, file, method=True)
            elif not stmt.name.startswith("_") and stmt.name not in methods:
                methods[stmt.name] = _function(stmt, text, file, method=True)
    decorators = _decorators(node)
    params = init.params if init else []
    signature = init.signature if init else ""
    if any(d.rsplit(".", 1)[-1] == "dataclass" for d in decorators):
        inherited = [f for base in node.bases for f in dataclass_fields.get(dotted_name(base) or "", [])]
        fields = _dataclass_fields(node, list(dict.fromkeys(inherited)))
        dataclass_fields[node.name] = fields
        if init is None:
            params, signature = fields, ", ".join(fields)
    return Definition(
        name=node.name, kind="class", params=params, signature=signature,
        doc=ast.get_docstring(node) or "", file=file, line=node.lineno,
        source=_segment(text, node), methods=methods, decorators=decorators,
    )


_UFUNC_TYPE = re.compile(r"\b_?G?UFunc|\bufunc\b")
_UFUNC_ARITY = re.compile(r"Nin(\d+)")


def _stub_ufunc(stmt: ast.AnnAssign, name: str, text: Sequence[str], file: str) -> Definition | None:
    """A ufunc a stub declares by annotation only (``matvec: _GUFunc_Nin2_Nout1[...]``):
    numpy's ufuncs are compiled, so the stub is their only definition in the wheel."""
    annotation = ast.unparse(stmt.annotation)
    if stmt.value is not None or not _UFUNC_TYPE.search(annotation):
        return None
    arity = _UFUNC_ARITY.search(annotation)
    inputs = [f"x{i + 1}" for i in range(int(arity.group(1)))] if arity else ["x"]
    return Definition(
        name=name, kind="function", params=[*inputs, "*args", "**kwargs"],
        signature=", ".join([*inputs, "/", "*args", "**kwargs"]), doc="", file=file,
        line=stmt.lineno, source=_segment(text, stmt), origin="ufunc",
    )


def _instance(stmt: ast.Assign, name: str, table: ModuleTable) -> Definition | None:
    """A public instance bound from a class of the same module named ``<name>_gen`` (scipy's
    distributions: ``irwinhall = irwinhall_gen(name="irwinhall")``); users know the instance,
    and the paper's golds name it, so it stands for the class (kind ``class``)."""
    value = stmt.value
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Name):
        return None
    cls = table.defs.get(value.func.id)
    if cls is None or cls.kind != "class" or value.func.id != f"{name}_gen":
        return None
    table.instance_of[cls.name] = name
    return Definition(
        name=name, kind="class", params=[], signature="", doc=cls.doc, file=cls.file,
        line=stmt.lineno, source=cls.source, origin="instance",
    )


def _literal_names(node: ast.expr) -> list[str] | None:
    """The strings of a literal list/tuple (or a sum of them); None when not literal."""
    if isinstance(node, ast.List | ast.Tuple):
        out: list[str] = []
        for elt in node.elts:
            if not (isinstance(elt, ast.Constant) and isinstance(elt.value, str)):
                return None
            out.append(elt.value)
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal_names(node.left), _literal_names(node.right)
        return None if left is None or right is None else left + right
    return None


def dotted_name(node: ast.expr) -> str | None:
    """``a.b.c`` for a name or attribute chain, None for any other expression."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted_name(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def _top_level(body: Sequence[ast.stmt]) -> Iterable[ast.stmt]:
    """Module statements, descending into ``if``/``try``/``with`` blocks (not functions)."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            yield from _top_level(stmt.body)
            yield from _top_level(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            yield from _top_level(stmt.body)
            for handler in stmt.handlers:
                yield from _top_level(handler.body)
            yield from _top_level(stmt.orelse)
            yield from _top_level(stmt.finalbody)
        elif isinstance(stmt, ast.With):
            yield from _top_level(stmt.body)
        else:
            yield stmt


def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, target] if target else base)


def parse_module(name: str, file: str, text: str, *, is_package: bool) -> ModuleTable:
    """The table of one module's source; raises :class:`SyntaxError` on unparsable text."""
    tree = ast.parse(text, filename=file)
    lines = text.splitlines(keepends=True)
    table = ModuleTable(name=name, file=file, doc=ast.get_docstring(tree) or "")
    all_known = True
    handled: set[int] = set()  # the __all__ statements read as literal
    dataclass_fields: dict[str, list[str]] = {}
    stub = file.endswith(".pyi")
    for stmt in _top_level(tree.body):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            table.defs.setdefault(stmt.name, _function(stmt, lines, file, method=False))
        elif isinstance(stmt, ast.ClassDef):
            table.defs.setdefault(stmt.name, _class(stmt, lines, file, dataclass_fields))
        elif (stub and isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
              and (ufunc := _stub_ufunc(stmt, stmt.target.id, lines, file)) is not None):
            table.defs.setdefault(stmt.target.id, ufunc)
        elif isinstance(stmt, ast.ImportFrom):
            source = _resolve_relative(name, is_package, stmt.level, stmt.module)
            for alias in stmt.names:
                if alias.name == "*":
                    if source not in table.star_sources:
                        table.star_sources.append(source)
                else:
                    table.imports.setdefault(alias.asname or alias.name, (source, alias.name))
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    table.imports.setdefault(alias.asname, (alias.name, None))
                else:
                    head = alias.name.split(".")[0]
                    table.imports.setdefault(head, (head, None))
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            value = stmt.value
            for target in targets:
                if not isinstance(target, ast.Name):
                    continue
                if target.id == "__all__":
                    handled.add(id(stmt))
                    names = _literal_names(value) if value is not None else None
                    source_all = dotted_name(value) if value is not None else None
                    if (isinstance(stmt, ast.Assign) and source_all
                            and source_all.endswith(".__all__")):
                        table.all_from = source_all.removesuffix(".__all__")
                        table.all_names = None
                        continue
                    if isinstance(stmt, ast.AugAssign):
                        if names is None or table.all_names is None:
                            all_known = False
                        else:
                            table.all_names = table.all_names + names
                    elif names is None:
                        all_known = False
                    else:
                        table.all_names = names
                    continue
                dotted = dotted_name(value) if value is not None else None
                if dotted is not None and isinstance(stmt, ast.Assign):
                    table.assigned.setdefault(target.id, dotted)
                elif (isinstance(stmt, ast.Assign) and target.id not in table.defs
                      and (instance := _instance(stmt, target.id, table)) is not None):
                    table.defs[target.id] = instance
                else:
                    table.others.add(target.id)
        elif (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
              and (dotted_name(stmt.value.func) or "").rsplit(".", 1)[-1] == "add_newdoc"):
            table.added_docs.update(_added_docs(stmt.value))
        elif (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
              and dotted_name(stmt.value.func) == "__all__.extend" and stmt.value.args):
            handled.add(id(stmt.value))
            names = _literal_names(stmt.value.args[0])
            if names is None or table.all_names is None:
                all_known = False
            else:
                table.all_names = table.all_names + names
    if table.all_names is not None and len(_ALL_WRITES.findall(text)) > len(handled) and any(
            id(node) not in handled and _changes_all(node) for node in ast.walk(tree)):
        all_known = False  # __all__ is also changed in a loop, a function, by .append, ...
    if not all_known:
        table.all_names = None
        table.all_from = None
    return table


def _added_docs(call: ast.Call) -> dict[str, str]:
    """The docstrings an ``add_newdoc`` call gives compiled objects: numpy's
    ``add_newdoc(module, name, doc | (method, doc) | [(method, doc), ...])`` and scipy.special's
    ``add_newdoc(name, doc)``; keyed by name or ``Class.method``."""
    texts = [a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None
             for a in call.args]
    if len(call.args) == 2 and texts[0] and texts[1]:
        return {texts[0]: texts[1]}
    if len(call.args) != 3 or not texts[1]:
        return {}
    name, value = texts[1], call.args[2]
    if texts[2]:
        return {name: inspect_clean(texts[2])}
    pairs = value.elts if isinstance(value, ast.List) else [value]
    out: dict[str, str] = {}
    for pair in pairs:
        elements = pair.elts if isinstance(pair, ast.Tuple) else []
        strings = [e.value for e in elements
                   if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if len(strings) == len(elements) == 2:
            out[f"{name}.{strings[0]}"] = inspect_clean(strings[1])
    return out


def inspect_clean(doc: str) -> str:
    """A docstring as :func:`ast.get_docstring` would give it (indentation removed)."""
    lines = doc.expandtabs().splitlines()
    head, rest = (lines[0].strip(), lines[1:]) if lines else ("", [])
    return "\n".join([head, *textwrap.dedent("\n".join(rest)).splitlines()]).strip()


_ALL_WRITES = re.compile(r"\b__all__\s*(?:[-+*|]?=(?!=)|:|\.\s*\w+\s*\()")
"""Where a source can assign or change ``__all__`` (``=``, ``+=``, ``: list =``, a method
call): when there are no more of them than the statements read as literal, no other statement
changes it, and the module's tree need not be walked to find one (the walk is most of a large
wheel's reading time)."""


def _changes_all(node: ast.AST) -> bool:
    if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return isinstance(node.func.value, ast.Name) and node.func.value.id == "__all__"
    return False


def merge_stub(source: ModuleTable, stub: ModuleTable) -> ModuleTable:
    """A module's ``.py`` table with its ``.pyi`` filling the gaps (the ``.py`` wins).

    A stub definition replaces a ``.py`` binding that is not a definition (a compiled
    function assigned at import time); a ``.py`` definition without a docstring takes the
    stub's docstring."""
    merged = ModuleTable(
        name=source.name, file=source.file, doc=source.doc or stub.doc,
        defs=dict(source.defs), imports=dict(source.imports), assigned=dict(source.assigned),
        others=set(source.others), star_sources=list(source.star_sources),
        all_names=source.all_names,  # a stub's __all__ may list less than the module binds
        all_from=source.all_from, instance_of=dict(source.instance_of),
        added_docs={**stub.added_docs, **source.added_docs},
    )
    for name, definition in stub.defs.items():
        current = merged.defs.get(name)
        if current is None:
            merged.defs[name] = definition
            merged.imports.pop(name, None)
            merged.assigned.pop(name, None)
            merged.others.discard(name)
        elif not current.doc and definition.doc:
            current.doc = definition.doc
    for name, binding in stub.imports.items():
        if name not in merged.defs and name not in merged.assigned:
            merged.imports.setdefault(name, binding)
    for src in stub.star_sources:
        if src not in merged.star_sources:
            merged.star_sources.append(src)
    return merged


# --------------------------------------------------------------------------- the surface


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


@dataclass(frozen=True)
class Feature:
    """One new public API found by the diff (the release-note bullet analog).

    ``path`` is the canonical path; for a parameter it is ``<callable path>.<parameter>`` and
    ``parent`` is the callable. ``leaf`` is the new identifier. ``version`` is the release that
    brought it (the ``versionadded`` one when the docstring names one, else the new wheel's)."""

    path: str
    kind: str  # "function" | "class" | "method" | "parameter"
    leaf: str
    parent: str
    signature: str
    doc: str
    defined_at: str
    source: str
    version: str
    evidence: str  # "diff" | "diff+versionadded"
    aliases: tuple[str, ...] = ()

    @property
    def is_parameter(self) -> bool:
        return self.kind == "parameter"


@dataclass(frozen=True)
class Deprecation:
    """A public path that went away, or a parameter renamed in place."""

    path: str
    kind: str  # "removed" | "renamed_parameter"
    old: str
    new: str = ""  # the replacement: new parameter name, or the object's new path if it moved


@dataclass(frozen=True)
class Rejection:
    path: str
    reason: str


@dataclass
class WheelDiff:
    features: list[Feature]
    deprecations: list[Deprecation]
    rejected: list[Rejection]
    old_version: str
    new_version: str


def version_key(text: str) -> tuple[int, ...]:
    """Release numbers of a version string (``2.2.6`` -> (2, 2, 6)); pre-release tags ignored."""
    match = re.match(r"\d+(?:\.\d+)*", text.strip())
    if not match:
        return ()
    numbers = [int(x) for x in match.group(0).split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers)


def parameter_description(doc: str, name: str) -> str:
    """The lines describing ``name`` in a numpydoc ``Parameters`` section (or a Sphinx
    ``:param name:`` field); empty when the docstring does not describe it."""
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        head = re.match(r"^\**([A-Za-z_]\w*)(?:\s*,\s*\**[A-Za-z_]\w*)*\s*(?::|$)", stripped)
        names = re.findall(r"\**([A-Za-z_]\w*)", stripped.split(":")[0]) if head else []
        if head and name in names and (i + 1 >= len(lines) or not _SECTION_RULE.match(lines[i + 1])):
            indent = len(line) - len(line.lstrip())
            out = [line]
            for follow in lines[i + 1:]:
                if follow.strip() and len(follow) - len(follow.lstrip()) <= indent:
                    break
                out.append(follow)
            return "\n".join(out)
        field_match = re.match(rf"^:param\s+(?:\S+\s+)?{re.escape(name)}:", stripped)
        if field_match:
            return stripped
    return ""


def _without_parameters(doc: str) -> str:
    """The docstring minus its ``Parameters`` section (whose notes are about parameters)."""
    lines = doc.splitlines()
    out: list[str] = []
    skipping = False
    for i, line in enumerate(lines):
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if _SECTION_RULE.match(following) and line.strip():
            skipping = line.strip().lower() in ("parameters", "other parameters")
        if not skipping:
            out.append(line)
    return "\n".join(out)


def versionadded(text: str) -> str | None:
    match = _VERSION_NOTE.search(text)
    return match.group(1).rstrip(".") if match else None


def _evidence(note: str | None, old: str, new: str) -> tuple[str, str]:
    if note and version_key(old) < version_key(note) <= version_key(new):
        return note, "diff+versionadded"
    return new, "diff"


def _callable_rejection(record: ApiRecord, old: WheelSurface, new: WheelSurface) -> str | None:
    """Why a new public callable is not a new feature (docs/imprint.md §4.3), or None."""
    if record.kind != "class" and _SCREAMING.fullmatch(record.leaf):
        return "not a callable name (SCREAMING_CASE)"
    instance = new.modules[record.module].instance_of.get(record.name)
    if record.kind == "class" and instance:
        return f"the class behind the public instance {instance}"
    if not record.doc.strip() and record.origin != "ufunc":
        return "no docstring"
    earlier = [p for p in (record.path, *record.aliases) if p in old.exported]
    if earlier:
        return f"not novel: {earlier[0]} is public in the old wheel (compiled or bound at run time)"
    if record.name in old.defined_names:
        return f"not novel: {record.name} is defined in the old wheel"
    leaf = record.name.rsplit(".", 1)[-1]
    if (record.kind == "method" and f"super().{leaf}(" in record.source
            and leaf in old.method_names):
        return f"not novel: an override of the existing method {leaf}"
    return None


def _from_stub(record: ApiRecord) -> bool:
    return record.defined_at.rsplit(":", 1)[0].endswith(".pyi")


def _parameter_rejection(param: str, before: ApiRecord, after: ApiRecord) -> str | None:
    if _from_stub(before) != _from_stub(after):
        return "not comparable: the signature is read from a stub in one wheel only"
    if _SCREAMING.fullmatch(param):
        return "not a parameter name (SCREAMING_CASE)"
    if param.startswith("_"):
        return "a private parameter"
    if param in before.decorated_with:
        return "not novel: a decorator of the old callable already provided it"
    if not after.doc.strip():
        return "no docstring"
    first_line = after.doc.strip().splitlines()[0]
    if (_from_stub(after) and not parameter_description(after.doc, param)
            and not re.search(rf"\b{re.escape(param)}\b", first_line)):
        return "declared only in a stub and not documented"
    return None


def _first_with(feature_path: str, parameter: str | None,
                surfaces: Sequence[WheelSurface]) -> int:
    """Index of the first surface that has the feature (the callable's path, or the
    parameter on it); the last one when none does."""
    for index, surface in enumerate(surfaces):
        paths = surface.public_paths
        if parameter is None:
            if feature_path in paths:
                return index
            continue
        for record in surface.records.values():
            if feature_path in (record.path, *record.aliases) and parameter in record.params:
                return index
    return len(surfaces) - 1


def _dated(note: str | None, path: str, parameter: str | None, old: WheelSurface,
           later: Sequence[WheelSurface]) -> tuple[str, str]:
    """(version, evidence) of a feature: the first of the ``later`` wheels (in release
    order) that has it; a ``versionadded`` note between that wheel and the one before it
    names the release more precisely (``1.14.0`` for a feature first seen in ``1.14.1``)."""
    if len(later) == 1:
        return _evidence(note, old.version, later[0].version)
    index = _first_with(path, parameter, later)
    before = old if index == 0 else later[index - 1]
    version, evidence = _evidence(note, before.version, later[index].version)
    return version, evidence


def diff_surfaces(old: WheelSurface, new: WheelSurface, *,
                  allow: Sequence[str] | None = None,
                  between: Sequence[WheelSurface] = ()) -> WheelDiff:
    """New public callables and parameters of ``new`` relative to ``old`` (docs/imprint.md §4.3
    steps 5-6). ``allow`` (dotted prefixes), when given, keeps only paths under one of them.
    ``between``: wheels of the releases in between, in release order; each feature is dated
    by the first of them (or ``new``) that has it."""
    features: list[Feature] = []
    rejected: list[Rejection] = []
    deprecations: list[Deprecation] = []
    denied = set(new.deny)
    later = [*between, new]

    def allowed(path: str) -> bool:
        if any(s.startswith("_") or s in denied for s in path.split(".")):
            return False
        return allow is None or any(path == a or path.startswith(a + ".") for a in allow)

    old_public = old.public_paths
    new_public = new.public_paths
    new_paths = set(new.records) - old_public
    for path in sorted(new_paths):
        record = new.records[path]
        if record.kind == "method" and record.parent in new_paths:
            continue  # folded into the new class's feature
        reason = ("outside the public namespace" if not allowed(path)
                  else _callable_rejection(record, old, new))
        if reason:
            rejected.append(Rejection(path, reason))
            continue
        version, evidence = _dated(versionadded(_without_parameters(record.doc)), path, None,
                                   old, later)
        features.append(Feature(
            path=path, kind=record.kind, leaf=record.leaf, parent=record.parent,
            signature=record.signature, doc=record.doc, defined_at=record.defined_at,
            source=record.source, version=version, evidence=evidence, aliases=record.aliases,
        ))
    for path in sorted(set(old.records) & set(new.records)):
        before, after = old.records[path], new.records[path]
        old_named = [p for p in before.params if not p.startswith("*")]
        new_named = [p for p in after.params if not p.startswith("*")]
        for position, param in enumerate(new_named):
            if param in old_named:
                continue
            replaced = old_named[position] if position < len(old_named) else None
            if replaced is not None and replaced not in new_named:
                deprecations.append(Deprecation(path, "renamed_parameter", replaced, param))
                continue
            feature_path = f"{path}.{param}"
            reason = ("outside the public namespace" if not allowed(path)
                      else _parameter_rejection(param, before, after))
            if reason:
                rejected.append(Rejection(feature_path, reason))
                continue
            version, evidence = _dated(versionadded(parameter_description(after.doc, param)),
                                       path, param, old, later)
            features.append(Feature(
                path=feature_path, kind="parameter", leaf=param, parent=path,
                signature=after.signature, doc=after.doc, defined_at=after.defined_at,
                source=after.source, version=version, evidence=evidence,
            ))
    by_name = {(r.module, r.name): p for p, r in new.records.items()}
    by_leaf_name = {r.name: p for p, r in new.records.items()}
    for path in sorted(set(old.records) - new_public):
        record = old.records[path]
        if record.kind == "method" and record.parent not in new.records:
            if record.parent in old.records:
                continue  # reported with its class
        moved = by_name.get((record.module, record.name)) or by_leaf_name.get(record.name, "")
        deprecations.append(Deprecation(path, "removed", path, moved))
    features.sort(key=lambda f: (version_key(f.version), f.path))
    return WheelDiff(features=features, deprecations=deprecations, rejected=rejected,
                     old_version=old.version, new_version=new.version)


def diff_wheels(old: str | Path, new: str | Path, package: str, *,
                deny: Sequence[str] = DEFAULT_DENY, allow: Sequence[str] | None = None,
                between: Sequence[str | Path] = ()) -> list[Feature]:
    """The new public API features of ``package`` from wheel ``old`` to wheel ``new``;
    ``between``: the wheels of the releases in between, in release order, to date each
    feature by the first release that has it."""
    return diff_surfaces(
        read_wheel(old, package, deny=deny), read_wheel(new, package, deny=deny), allow=allow,
        between=[read_wheel(w, package, deny=deny) for w in between]).features
