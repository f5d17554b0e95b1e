"""A fictional Python library written as two real wheels with a known changelog (docs/imprint.md §4.4).

The code setting's pipeline (:mod:`clstream.protocols.imprint.settings.code.wheels`, then
:mod:`clstream.protocols.imprint.settings.code.dataset`) must find exactly the new public API between two
releases. To test that offline, this module invents a library (``quillkit`` by default), writes
release 1 and release 2 as wheel files (a zip with the package, ``*.dist-info/METADATA``,
``WHEEL`` and ``RECORD``) and returns the ground truth: what release 2 really adds, and the
negative controls the diff must reject.

What the two releases exercise:

* module shapes: functions defined in the public module with a literal ``__all__`` extended
  by ``+=``; a public module that star-imports a private implementation module; a public module
  that re-exports a compiled-looking module known only through its ``.pyi`` stub; a module whose
  ``.py`` binds some names at run time while its ``.pyi`` declares them (stub merging); the
  package ``__init__`` star-imports two modules (recursive star imports);
* additions: functions (some in a brand-new subpackage), a class (its methods fold into it),
  methods on existing classes, keyword parameters on existing functions -- each with a docstring
  whose summary avoids the identifier's own words, a ``.. versionadded::`` note and an Examples
  doctest that calls the new API; test files in release 2 and client scripts in a usage
  directory that call them, some with a comment or a variable that spells the new name's
  words (a masked snippet must not keep them);
* negative controls: functions moved to another public module, private functions newly
  re-exported, new public aliases of old functions, removed functions and a renamed parameter.

Names come from verb x noun vocabularies drawn with ``random.Random(seed)``; the same seed gives
byte-identical wheels (fixed zip timestamps, sorted entries).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import random
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from clstream.core.errors import SpecError
from clstream.core.files import write_atomic

# Verb -> what it does (third person, never containing the verb itself).
VERBS: dict[str, str] = {
    "fold": "bends over", "trim": "cuts back", "blend": "mixes together", "stack": "piles up",
    "scatter": "spreads out", "measure": "reports the size of", "align": "lines up",
    "shade": "darkens", "split": "divides", "merge": "joins", "rotate": "turns",
    "pad": "adds filler around", "wrap": "encloses", "tally": "counts", "sort": "orders",
    "stretch": "widens", "snap": "rounds to fixed steps", "trace": "follows the outline of",
    "clip": "cuts off the overflow of", "mirror": "flips",
}
# Noun -> what it is (never containing the noun itself).
NOUNS: dict[str, str] = {
    "margins": "the blank edges of a page", "glyphs": "the drawn letter shapes",
    "columns": "the vertical text bands", "tones": "the colour shades",
    "ribbons": "the long decorative strips", "borders": "the frame lines",
    "inks": "the pigment coats", "panels": "the boxed regions",
    "rows": "the horizontal cell strips", "kerning": "the gaps between letter pairs",
    "stencils": "the cut-out templates", "swatches": "the sample colour patches",
    "layers": "the stacked drawing sheets", "lattices": "the guide meshes",
    "cursors": "the insertion markers", "spines": "the bound edges of a book",
}
# Module topic -> the qualifier its summaries end with.
TOPICS: dict[str, str] = {
    "text": "in running prose", "layout": "on a page plan", "color": "in a palette",
    "frame": "around a picture", "press": "before printing", "sheet": "on a paper sheet",
    "bind": "in a bound volume", "proof": "in a draft copy",
}
NEW_TOPIC = "studio"
# Class names are two words, a material or stage then a tool, so that names invented in the
# library's own naming (DirAcq's absent items) recombine them: ``InkCanvas``, ``PrintPalette``.
CLASSES: dict[str, str] = {
    "PageCanvas": "A drawing surface that keeps pending strokes.",
    "InkPalette": "A named set of colours with a default pick.",
    "TypeBlock": "A run of letters with its chosen face and size.",
    "PageGutter": "The strip between two facing leaves.",
    "FrameEasel": "A stand that holds one surface at a time.",
    "SheetFolio": "A leaf of paper folded once into two halves.",
    "SheetQuire": "A gathering of folded leaves.",
    "InkPlate": "A printing surface for one colour.",
    "StripLoom": "A device that weaves ribbons into a pattern.",
    "StripSpindle": "A rod that winds a long band.",
}
NEW_CLASS = "PrintAtelier"
NEW_CLASS_DOC = "A workroom that groups surfaces, tools and pending jobs."
EXTRA_PARAMS: dict[str, str] = {
    "keep_order": "Keep the input order instead of sorting by size.",
    "fill_value": "What to put where nothing is left.",
    "max_depth": "How many nested levels to visit at most.",
    "tolerance": "How far a value may drift before it counts as changed.",
    "on_error": "What to do with a bad entry: skip it or stop.",
    "precision": "Number of decimals kept in reported sizes.",
    "dry_run": "Describe the change without making it.",
    "reverse": "Walk the input from its end.",
    "label": "A name attached to the result.",
    "density": "How tightly to pack the output.",
}
MODES = ("direct", "star", "stub", "direct", "merged", "star", "stub", "direct")
CONVENTIONAL_ALIAS = "qk"


@dataclass(frozen=True)
class CodeWorldConfig:
    """Sizes of the fictional library (docs/imprint.md §4.4); every count is what release 2 changes."""

    seed: int = 0
    package: str = "quillkit"
    n_modules: int = 6
    n_functions: int = 40
    n_classes: int = 8
    n_added: int = 12
    n_added_methods: int = 6
    n_added_params: int = 8
    n_moved: int = 3
    n_aliased: int = 2
    n_removed: int = 3
    old_version: str = "1.4.0"
    new_version: str = "2.0.0"
    old_date: str = "2024-03-01"
    new_date: str = "2025-02-01"

    def check(self) -> None:
        if not self.package.isidentifier() or self.package.startswith("_"):
            raise SpecError(f"package {self.package!r} is not a public Python identifier")
        # Two top-level modules, a stub-only one, and room for moves between two others.
        if not 5 <= self.n_modules <= len(TOPICS):
            raise SpecError(f"n_modules must be 5..{len(TOPICS)}, got {self.n_modules}")
        if not 1 <= self.n_classes <= len(CLASSES):
            raise SpecError(f"n_classes must be 1..{len(CLASSES)}, got {self.n_classes}")
        if self.n_added_params > len(EXTRA_PARAMS):
            raise SpecError(f"n_added_params must be at most {len(EXTRA_PARAMS)}")
        counts = (self.n_functions, self.n_added, self.n_added_methods, self.n_added_params,
                  self.n_moved, self.n_aliased, self.n_removed)
        if any(c < 0 for c in counts):
            raise SpecError("library sizes must not be negative")
        if self.n_functions < self.n_moved + self.n_aliased + self.n_removed + self.n_added_params + 1:
            raise SpecError("n_functions is too small for the moves, aliases, removals and "
                            "parameter additions asked for")
        names = len(VERBS) * len(NOUNS)
        if self.n_functions + self.n_added + 2 * self.n_classes + self.n_added_methods + 8 > names:
            raise SpecError(f"at most about {names} names can be drawn")


@dataclass(frozen=True)
class ChangeEntry:
    """One true addition of release 2: its canonical path, kind and new identifier."""

    path: str
    kind: str  # function | class | method | parameter
    leaf: str
    parent: str


@dataclass(frozen=True)
class SyntheticChangelog:
    """Ground truth of the two releases."""

    package: str
    old_version: str
    new_version: str
    added: tuple[ChangeEntry, ...]
    moved: tuple[str, ...]  # new public paths of moved / newly re-exported old code
    aliased: tuple[str, ...]  # new public alias paths of old functions
    removed: tuple[str, ...]  # public paths of release 1 gone in release 2
    renamed: tuple[tuple[str, str, str], ...]  # (callable path, old name, new name)
    usage_dir: Path
    through_stub: tuple[str, ...] = ()  # added paths known only from a .pyi
    through_star: tuple[str, ...] = ()  # added paths exported through star imports
    through_all_extension: tuple[str, ...] = ()  # added paths listed by ``__all__ += [...]``

    @property
    def added_paths(self) -> set[str]:
        return {e.path for e in self.added}


# --------------------------------------------------------------------------- the model


@dataclass
class _Param:
    name: str
    default: str
    doc: str
    added: bool = False


@dataclass
class _Function:
    name: str
    summary: str
    topic: str
    params: list[_Param]
    added: bool = False
    method_of: str | None = None

    @property
    def leaf(self) -> str:
        return self.name


@dataclass
class _Class:
    name: str
    doc: str
    methods: list[_Function]
    added: bool = False


@dataclass
class _Module:
    topic: str
    mode: str
    functions: list[_Function] = field(default_factory=list)
    classes: list[_Class] = field(default_factory=list)
    reexports: list[tuple[str, str, str]] = field(default_factory=list)  # (module, name, as)


def _summary(verb: str, noun: str, qualifier: str) -> str:
    return f"{VERBS[verb][0].upper()}{VERBS[verb][1:]} {NOUNS[noun]} {qualifier}."


def _base_params(rng: random.Random) -> list[_Param]:
    return [
        _Param("source", "", "The material to work on."),
        _Param("width", "80", "Column budget of the result."),
        _Param("strict", "False", "Raise instead of guessing when the input is odd."),
    ]


class _World:
    def __init__(self, config: CodeWorldConfig):
        config.check()
        self.config = config
        self.rng = random.Random(config.seed)
        names = [f"{v}_{n}" for v in VERBS for n in NOUNS]
        self.rng.shuffle(names)
        self.pool = names
        self.topics = list(TOPICS)[: config.n_modules]
        self.package = config.package

    def draw(self, topic: str, *, method_of: str | None = None, added: bool = False) -> _Function:
        name = self.pool.pop()
        verb, noun = name.split("_", 1)
        return _Function(name=name, summary=_summary(verb, noun, TOPICS.get(topic, "in a studio")),
                         topic=topic, params=_base_params(self.rng), added=added,
                         method_of=method_of)


def _module_path(package: str, topic: str, top_level: bool) -> str:
    return package if top_level else f"{package}.{topic}"


# --------------------------------------------------------------------------- rendering


def _indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "\n".join(pad + line if line else line for line in text.splitlines())


def _docstring(fn: _Function, *, version: str, call: list[str]) -> str:
    lines = [fn.summary, "",
             "The input is left untouched; a new value is returned.", "",
             "Parameters", "----------"]
    for p in fn.params:
        lines.append(f"{p.name} : object" + (", optional" if p.default else ""))
        lines.append(f"    {p.doc}")
        if p.added:
            lines += ["", f"    .. versionadded:: {version}"]
    lines += ["", "Returns", "-------", "object", "    The processed material."]
    if fn.added:
        lines += ["", f".. versionadded:: {version}"]
    lines += ["", "Examples", "--------", *call]
    return "\n".join(lines)


def _signature(fn: _Function) -> str:
    positional = [p for p in fn.params if not p.default]
    keywords = [p for p in fn.params if p.default]
    parts = (["self"] if fn.method_of else []) + [p.name for p in positional]
    parts += [f"{p.name}={p.default}" for p in keywords[:1]]
    if len(keywords) > 1:
        parts.append("*")
        parts += [f"{p.name}={p.default}" for p in keywords[1:]]
    return ", ".join(parts)


SAMPLE_PAGE = "The ferry leaves at dawn."


def _doctest(fn: _Function, access: str, import_line: str, *, with_added: bool) -> list[str]:
    """An Examples block that does what a user would: a page of text, a comment saying what
    the call is for (the summary: it spells none of the identifier's words), a call with the
    width the page is set to, the page that comes back."""
    lines = [f">>> {import_line}", f'>>> page = "{SAMPLE_PAGE}"']
    if fn.method_of:
        lines.append(f">>> tool = {access}(width=60)")  # named for no class: a new one hides
        target = f"tool.{fn.name}"
    else:
        target = access
    lines.append(f">>> # {fn.summary}")
    lines.append(f">>> {target}(page, width=40)")
    lines.append(repr(SAMPLE_PAGE))
    if with_added:
        for p in fn.params:
            if p.added:
                lines.append(f">>> # {p.doc}")
                lines.append(f">>> {target}(page, {p.name}=None)")
                lines.append(repr(SAMPLE_PAGE))
    return lines


class _Renderer:
    def __init__(self, world: _World, version: str, canonical: dict[str, str]):
        self.world = world
        self.version = version
        self.canonical = canonical  # function/class name -> canonical path
        self.package = world.package

    def access(self, name: str) -> tuple[str, str]:
        """(expression reaching ``name``, the import line it needs) for a doctest."""
        path = self.canonical[name]
        parent, leaf = path.rsplit(".", 1)
        if sum(map(ord, name)) % 2 == 0:
            rest = path[len(self.package) + 1:]
            return f"{CONVENTIONAL_ALIAS}.{rest}", f"import {self.package} as {CONVENTIONAL_ALIAS}"
        return leaf, f"from {parent} import {leaf}"

    def function(self, fn: _Function, *, stub: bool = False, indent: int = 0) -> str:
        if fn.method_of:
            expression, import_line = self.access(fn.method_of)
        else:
            expression, import_line = self.access(fn.name)
        call = _doctest(fn, expression, import_line, with_added=True)
        doc = _docstring(fn, version=self.version, call=call)
        body = '    """' + _indent(doc, 4).lstrip() + '\n    """\n'
        body += "    ...\n" if stub else "    return source\n"
        text = f"def {fn.name}({_signature(fn)}):\n{body}"
        return _indent(text, indent) + "\n" if indent else text

    def klass(self, cls: _Class) -> str:
        doc = cls.doc + ("\n\n.. versionadded:: " + self.version if cls.added else "")
        out = [f"class {cls.name}:", '    """' + _indent(doc, 4).lstrip() + '\n    """', "",
               "    def __init__(self, width=80):", "        self.width = width", ""]
        for method in cls.methods:
            out.append(self.function(method, indent=4))
        return "\n".join(out) + "\n"


def _names(module: _Module) -> list[str]:
    return ([f.name for f in module.functions] + [c.name for c in module.classes]
            + [alias for _, _, alias in module.reexports])


def _imports(module: _Module) -> list[str]:
    return [f"from {src} import {name}" + (f" as {alias}" if alias != name else "")
            for src, name, alias in module.reexports]


def _render_module(r: _Renderer, module: _Module, files: dict[str, str]) -> None:
    pkg, topic = r.package, module.topic
    head = f'"""{topic.capitalize()} tools of {pkg}."""\n\nfrom __future__ import annotations\n\n'
    names = _names(module)
    defs = "\n\n".join([r.function(f) for f in module.functions]
                       + [r.klass(c) for c in module.classes])
    imports = "\n".join(_imports(module))
    if module.mode == "direct":
        half = len(names) // 2
        files[f"{pkg}/{topic}.py"] = (
            head + "import os\n" + (imports + "\n" if imports else "") + "\n"
            + f"__all__ = {names[:half]!r}\n__all__ += {names[half:]!r}\n\n\n" + defs)
    elif module.mode == "star":
        files[f"{pkg}/_{topic}_impl.py"] = (
            head + f"__all__ = {names[: len(names) - len(module.reexports)]!r}\n\n\n" + defs
            + "\n\ndef _scratch(value):\n    return value\n")
        files[f"{pkg}/{topic}.py"] = (
            head + f"from ._{topic}_impl import *  # noqa: F403\n"
            + (imports + "\n" if imports else ""))
    elif module.mode == "stub":
        own = [f.name for f in module.functions] + [c.name for c in module.classes]
        stub_defs = "\n\n".join([r.function(f, stub=True) for f in module.functions]
                                + [r.klass(c) for c in module.classes])
        files[f"{pkg}/_{topic}_native.pyi"] = head + stub_defs
        files[f"{pkg}/{topic}.py"] = (
            head + f"from ._{topic}_native import (\n"
            + "".join(f"    {n},\n" for n in own) + ")\n" + (imports + "\n" if imports else "")
            + f"\n__all__ = {tuple(names)!r}\n")
    else:  # merged: the .py binds half its functions at run time, the .pyi declares them
        real = module.functions[::2]
        loaded = module.functions[1::2]
        py = (head + "from ._loader import load as _load\n" + (imports + "\n" if imports else "")
              + f"\n__all__ = {names!r}\n\n"
              + "".join(f'{f.name} = _load("{f.name}")\n' for f in loaded) + "\n\n"
              + "\n\n".join([r.function(f) for f in real] + [r.klass(c) for c in module.classes]))
        files[f"{pkg}/{topic}.py"] = py
        files[f"{pkg}/{topic}.pyi"] = head + "\n\n".join(r.function(f, stub=True) for f in loaded)
        files[f"{pkg}/_loader.py"] = (
            '"""Binds compiled functions at import time."""\n\n\n'
            "def load(name):\n    raise ImportError(f\"compiled part {name} is missing\")\n")


# --------------------------------------------------------------------------- wheels


def build_wheel(directory: str | Path, package: str, version: str, files: dict[str, str],
                *, date: str = "2024-01-01") -> Path:
    """Write ``files`` (path in the wheel -> text) as ``<package>-<version>-py3-none-any.whl``
    with ``METADATA``, ``WHEEL`` and ``RECORD``; entries sorted, timestamps fixed at ``date``."""
    dist = f"{package}-{version}.dist-info"
    entries = dict(sorted(files.items()))
    entries[f"{dist}/METADATA"] = (f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n"
                                   f"Summary: {package} (generated library)\n")
    entries[f"{dist}/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: clstream\n"
                                "Root-Is-Purelib: true\nTag: py3-none-any\n")
    record_lines = []
    for name, text in entries.items():
        data = text.encode("utf-8")
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record_lines.append(f"{name},sha256={digest},{len(data)}")
    record_lines.append(f"{dist}/RECORD,,")
    entries[f"{dist}/RECORD"] = "\n".join(record_lines) + "\n"
    year, month, day = (int(x) for x in date.split("-"))
    path = Path(directory) / f"{package}-{version}-py3-none-any.whl"
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, text in entries.items():
            info = zipfile.ZipInfo(name, date_time=(year, month, day, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, text)
    tmp.replace(path)
    return path


@dataclass
class _Extras:
    """Modules outside the topic modules: private helpers, moved code, ``__init__`` aliases."""

    private: list[_Function]
    legacy: list[_Function]
    init_aliases: list[tuple[str, str]]


@dataclass
class _Plan:
    old: list[_Module]
    new: list[_Module]
    changelog: SyntheticChangelog
    canonical_old: dict[str, str]
    canonical_new: dict[str, str]
    top_level: list[str]
    extras_old: _Extras
    extras_new: _Extras


def _plan(world: _World) -> _Plan:
    """Both releases as module lists, the changelog, canonical paths and usage scripts."""
    cfg, pkg, rng = world.config, world.package, world.rng
    topics = world.topics
    old = {t: _Module(t, MODES[i % len(MODES)]) for i, t in enumerate(topics)}
    top_level = set(topics[:2])  # the package __init__ star-imports these two
    for i in range(cfg.n_functions):
        topic = topics[i % len(topics)]
        old[topic].functions.append(world.draw(topic))
    class_names = list(CLASSES)[: cfg.n_classes]
    direct = [t for t in topics if old[t].mode == "direct"]
    for i, name in enumerate(class_names):
        topic = direct[i % len(direct)]
        methods = [world.draw(topic, method_of=name) for _ in range(2)]
        old[topic].classes.append(_Class(name, CLASSES[name], methods))
    private = [world.draw("proof") for _ in range(cfg.n_moved)]  # _support.py, unexported

    def path_of(topic: str, name: str) -> str:
        return f"{_module_path(pkg, topic, topic in top_level)}.{name}"

    canonical_old: dict[str, str] = {}
    for topic, module in old.items():
        for fn in module.functions:
            canonical_old[fn.name] = path_of(topic, fn.name)
        for cls in module.classes:
            canonical_old[cls.name] = path_of(topic, cls.name)
    for fn in private:
        canonical_old[fn.name] = f"{pkg}._support.{fn.name}"

    # Release 2 starts as a copy of release 1.
    def copy(fn: _Function) -> _Function:
        return dataclasses.replace(fn, params=list(fn.params))

    new = {t: _Module(t, m.mode, [copy(f) for f in m.functions],
                      [_Class(c.name, c.doc, [copy(f) for f in c.methods]) for c in m.classes])
           for t, m in old.items()}
    canonical_new = dict(canonical_old)
    added: list[ChangeEntry] = []
    through_stub: list[str] = []
    through_star: list[str] = []
    through_all: list[str] = []
    # Candidates for moves, aliases, removals, parameters: functions outside the top level.
    movable = [f for t in topics if t not in top_level for f in new[t].functions]
    rng.shuffle(movable)
    taken = 0

    def take(n: int) -> list[_Function]:
        nonlocal taken
        out = movable[taken: taken + n]
        taken += n
        return out

    removed = take(cfg.n_removed)
    for fn in removed:
        new[fn.topic].functions.remove(fn)
        del canonical_new[fn.name]
    moved_paths: list[str] = []
    n_moves = (cfg.n_moved + 1) // 2
    legacy: list[_Function] = []
    for fn in take(n_moves):
        new[fn.topic].functions.remove(fn)
        target = next(t for t in topics if t not in top_level and t != fn.topic
                      and new[t].mode != "stub")
        legacy.append(fn)
        new[target].reexports.append((f"{pkg}._legacy", fn.name, fn.name))
        canonical_new[fn.name] = path_of(target, fn.name)
        moved_paths.append(canonical_new[fn.name])
    for fn in private[: cfg.n_moved - n_moves]:
        target = topics[-1] if topics[-1] not in top_level else topics[0]
        new[target].reexports.append((f"{pkg}._support", fn.name, fn.name))
        canonical_new[fn.name] = path_of(target, fn.name)
        moved_paths.append(canonical_new[fn.name])
    aliased_paths: list[str] = []
    init_aliases: list[tuple[str, str]] = []
    for fn in take(cfg.n_aliased):
        alias = world.pool.pop()
        init_aliases.append((canonical_new[fn.name].rsplit(".", 1)[0], fn.name + " as " + alias))
        aliased_paths.append(f"{pkg}.{alias}")
        canonical_new[fn.name] = f"{pkg}.{alias}"
    renamed: list[tuple[str, str, str]] = []
    for fn in take(cfg.n_added_params + 1):
        if not renamed:
            fn.params = [p if p.name != "width" else _Param("span", p.default, p.doc)
                         for p in fn.params]
            renamed.append((canonical_new[fn.name], "width", "span"))
            continue
        used = {e.leaf for e in added if e.kind == "parameter"}
        choices = [p for p in EXTRA_PARAMS if p not in used]
        name = choices[0]
        fn.params = [*fn.params, _Param(name, "None", EXTRA_PARAMS[name], added=True)]
        added.append(ChangeEntry(f"{canonical_new[fn.name]}.{name}", "parameter", name,
                                 canonical_new[fn.name]))
    # New functions: spread over the existing modules, some in a new subpackage.
    studio = _Module(NEW_TOPIC, "star")
    n_functions = cfg.n_added - (1 if cfg.n_added >= 3 else 0)
    for i in range(n_functions):
        if i % 4 == 3:
            module = studio
            path_parent = f"{pkg}.{NEW_TOPIC}"
        else:
            module = new[topics[i % len(topics)]]
            path_parent = _module_path(pkg, module.topic, module.topic in top_level)
        fn = world.draw(module.topic, added=True)
        module.functions.append(fn)
        path = f"{path_parent}.{fn.name}"
        canonical_new[fn.name] = path
        added.append(ChangeEntry(path, "function", fn.name, path_parent))
        if module.mode in ("stub",) or (module.mode == "merged"
                                        and module.functions.index(fn) % 2 == 1):
            through_stub.append(path)
        if module.mode == "star" or module.topic in top_level:
            through_star.append(path)
        if module.mode == "direct":
            names = _names(module)
            if names.index(fn.name) >= len(names) // 2:
                through_all.append(path)
    if cfg.n_added >= 3:
        topic = direct[0]
        methods = [world.draw(topic, method_of=NEW_CLASS) for _ in range(2)]
        new[topic].classes.append(_Class(NEW_CLASS, NEW_CLASS_DOC, methods, added=True))
        path = path_of(topic, NEW_CLASS)
        canonical_new[NEW_CLASS] = path
        added.append(ChangeEntry(path, "class", NEW_CLASS, path.rsplit(".", 1)[0]))
    classes = [(t, c) for t in topics for c in new[t].classes if not c.added]
    for i in range(cfg.n_added_methods):
        topic, cls = classes[i % len(classes)]
        method = world.draw(topic, method_of=cls.name, added=True)
        cls.methods.append(method)
        path = f"{canonical_new[cls.name]}.{method.name}"
        added.append(ChangeEntry(path, "method", method.name, canonical_new[cls.name]))
    changelog = SyntheticChangelog(
        package=pkg, old_version=cfg.old_version, new_version=cfg.new_version,
        added=tuple(sorted(added, key=lambda e: e.path)), moved=tuple(moved_paths),
        aliased=tuple(aliased_paths),
        removed=tuple(sorted(canonical_old[f.name] for f in removed)),
        renamed=tuple(renamed), usage_dir=Path("."), through_stub=tuple(through_stub),
        through_star=tuple(through_star), through_all_extension=tuple(through_all),
    )
    return _Plan(
        old=list(old.values()), new=[*new.values(), studio], changelog=changelog,
        canonical_old=canonical_old, canonical_new=canonical_new,
        top_level=[t for t in topics if t in top_level],
        extras_old=_Extras(private, [], []), extras_new=_Extras(private, legacy, init_aliases),
    )


def _files(world: _World, modules: list[_Module], canonical: dict[str, str], version: str,
           top_level: list[str], extras: _Extras) -> dict[str, str]:
    pkg = world.package
    r = _Renderer(world, version, canonical)
    files: dict[str, str] = {}
    for module in modules:
        if module.topic == NEW_TOPIC:
            if not module.functions:
                continue
            names = [f.name for f in module.functions]
            files[f"{pkg}/{NEW_TOPIC}/__init__.py"] = (
                f'"""Studio tools of {pkg}."""\n\nfrom ._ops import *  # noqa: F403\n')
            files[f"{pkg}/{NEW_TOPIC}/_ops.py"] = (
                f'"""Implementation of the studio tools."""\n\n__all__ = {names!r}\n\n\n'
                + "\n\n".join(r.function(f) for f in module.functions))
            continue
        _render_module(r, module, files)
    files[f"{pkg}/_support.py"] = ('"""Helpers shared by the modules."""\n\n\n'
                                   + "\n\n".join(r.function(f) for f in extras.private))
    if extras.legacy:
        files[f"{pkg}/_legacy.py"] = ('"""Functions kept for older callers."""\n\n\n'
                                      + "\n\n".join(r.function(f) for f in extras.legacy))
    init = [f'"""{pkg}: a small library for laying out printed pages."""', "",
            *[f"from .{t} import *  # noqa: F403" for t in top_level],
            f"from . import {', '.join(m.topic for m in modules if m.topic not in top_level and (m.topic != NEW_TOPIC or m.functions))}",
            *[f"from {src} import {what}" for src, what in extras.init_aliases],
            "", f'__version__ = "{version}"', ""]
    files[f"{pkg}/__init__.py"] = "\n".join(init)
    return files


def _tests_and_usage(world: _World, changelog: SyntheticChangelog, usage: Path
                     ) -> dict[str, str]:
    """Test files shipped in release 2 and client scripts written to ``usage``."""
    pkg = world.package
    tests: list[str] = [f'"""Tests of the release {world.config.new_version} additions."""', "",
                        f"import {pkg} as {CONVENTIONAL_ALIAS}", ""]
    scripts: dict[str, str] = {}
    for i, entry in enumerate(changelog.added):
        rest = entry.path[len(pkg) + 1:]
        if entry.kind == "function" and i % 2 == 0:
            # The first test is named after the identifier: gate (c) must reject it.
            name = entry.leaf if len(tests) == 4 else f"addition_{i:02d}"
            tests += ["", f"def test_{name}_keeps_input():",
                      f'    value = "{SAMPLE_PAGE}"',
                      f"    result = {CONVENTIONAL_ALIAS}.{rest}(value)",
                      "    assert result == value", ""]
        if entry.kind in ("function", "class") and i % 3 == 0:
            parent, leaf = entry.path.rsplit(".", 1)
            purpose = _purpose(entry.leaf)
            scripts[f"client_{i:02d}.py"] = (
                f'"""{purpose}."""\n\nfrom {parent} import {leaf}\n\n\n'
                f"def prepare(pages):\n    out = []\n    for page in pages:\n"
                f"        out.append({leaf}(page))\n    return out\n")
        if entry.kind == "function" and i % 3 == 1:
            # Give-aways a reader could answer from (gate (c)): a comment that spells the
            # leaf's words (the snippet is kept with its comments cut) and a variable named
            # after its noun (the snippet is rejected).
            verb, noun = entry.leaf.split("_", 1)
            scripts[f"client_{i:02d}_note.py"] = (
                f'"""Gets a page ready for the press."""\n\nimport {pkg} as {CONVENTIONAL_ALIAS}\n\n\n'
                f"def ready(page):\n    # {verb} the {noun} first\n"
                f"    return {CONVENTIONAL_ALIAS}.{rest}(page)\n")
            scripts[f"client_{i:02d}_named.py"] = (
                f'"""Keeps the result under a telling name."""\n\nimport {pkg} as '
                f"{CONVENTIONAL_ALIAS}\n\n\ndef keep(page):\n"
                f"    {noun} = {CONVENTIONAL_ALIAS}.{rest}(page)\n    return {noun}\n")
        if entry.kind == "parameter" and i % 2 == 1:
            callable_rest = entry.parent[len(pkg) + 1:]
            scripts[f"client_{i:02d}.py"] = (
                f'"""Prepares one page."""\n\nimport {pkg}\n\n\n'
                f"def prepare(page):\n    return {pkg}.{callable_rest}(\n"
                f"        page,\n        {entry.leaf}=None,\n    )\n")
    functions = [e for e in changelog.added if e.kind == "function"]
    if functions:
        first = functions[0].leaf
        scripts["defines_its_own.py"] = (
            f'"""Defines its own helper of the same name."""\n\nimport {pkg}\n\n\n'
            f"def {first}(value):\n    return value\n\n\nprint({first}('x'), {pkg}.__version__)\n")
        scripts["homograph.py"] = (
            f'"""Calls a local helper that happens to share the name."""\n\nimport {pkg}\n'
            f"import helpers\n\n\ndef run(value):\n    {pkg}.__version__\n"
            f"    return helpers.{first}(value)\n")
        scripts["no_library.py"] = (f'"""Never imports the library."""\n\n\n'
                                    f"def run(value):\n    return {first}(value)\n")
    usage.mkdir(parents=True, exist_ok=True)
    for name, text in sorted(scripts.items()):
        write_atomic(usage / name, text)
    return {f"{pkg}/tests/__init__.py": "", f"{pkg}/tests/test_additions.py": "\n".join(tests)}


def _purpose(leaf: str) -> str:
    """What a client script calling ``leaf`` is for, in the words of its docstring summary
    (none of the leaf's own words); a class reads as the place the work is done in."""
    verb, _, noun = leaf.partition("_")
    if verb in VERBS and noun in NOUNS:
        gloss = VERBS[verb]
        return f"{gloss[:1].upper()}{gloss[1:]} {NOUNS[noun]} on every page of a draft"
    doc = (CLASSES.get(leaf) or NEW_CLASS_DOC).rstrip(".")
    return f"Prepares the work in {doc[:1].lower()}{doc[1:]}"


def write_library_wheels(config: CodeWorldConfig, directory: str | Path
                         ) -> tuple[Path, Path, SyntheticChangelog]:
    """Write release 1 and release 2 of the fictional library as wheels into ``directory``
    (and client scripts into ``directory/usage``); returns (old wheel, new wheel, changelog)."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    world = _World(config)
    plan = _plan(world)
    changelog = plan.changelog
    old_files = _files(world, plan.old, plan.canonical_old, config.old_version, plan.top_level,
                       plan.extras_old)
    new_files = _files(world, plan.new, plan.canonical_new, config.new_version, plan.top_level,
                       plan.extras_new)
    usage = root / "usage"
    new_files.update(_tests_and_usage(world, changelog, usage))
    old_whl = build_wheel(root, config.package, config.old_version, old_files, date=config.old_date)
    new_whl = build_wheel(root, config.package, config.new_version, new_files, date=config.new_date)
    return old_whl, new_whl, dataclasses.replace(changelog, usage_dir=usage)
