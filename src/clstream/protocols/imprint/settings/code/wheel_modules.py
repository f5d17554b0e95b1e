"""One module of a wheel read into a table with :mod:`ast` (nothing is imported or executed):
its definitions, bindings, star-import sources and literal ``__all__``, and a ``.py`` merged with
its ``.pyi`` stub. The first step of reading a wheel's public API (docs/imprint.md §4.3;
ImprintBench App. D.2); :mod:`.wheels` describes the whole reading.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

MAX_ALIAS_DEPTH = 10
DEFAULT_DENY: tuple[str, ...] = (
    "core", "compat", "tests", "testing", "typing", "internals", "f2py", "distutils", "_libs",
)
TEST_SEGMENTS = frozenset({"tests", "test", "testing"})


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
