"""The fictional library's vocabulary, sizes and changelog, its two releases as plain objects,
and their rendering into Python source (docs/imprint.md §4.4). :mod:`.synthetic` plans the
changes, writes the wheels and describes what the releases exercise.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from clstream.core.errors import SpecError

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
class Param:
    name: str
    default: str
    doc: str
    added: bool = False


@dataclass
class Function:
    name: str
    summary: str
    topic: str
    params: list[Param]
    added: bool = False
    method_of: str | None = None

    @property
    def leaf(self) -> str:
        return self.name


@dataclass
class Class:
    name: str
    doc: str
    methods: list[Function]
    added: bool = False


@dataclass
class Module:
    topic: str
    mode: str
    functions: list[Function] = field(default_factory=list)
    classes: list[Class] = field(default_factory=list)
    reexports: list[tuple[str, str, str]] = field(default_factory=list)  # (module, name, as)


def _summary(verb: str, noun: str, qualifier: str) -> str:
    return f"{VERBS[verb][0].upper()}{VERBS[verb][1:]} {NOUNS[noun]} {qualifier}."


def _base_params(rng: random.Random) -> list[Param]:
    return [
        Param("source", "", "The material to work on."),
        Param("width", "80", "Column budget of the result."),
        Param("strict", "False", "Raise instead of guessing when the input is odd."),
    ]


class World:
    def __init__(self, config: CodeWorldConfig):
        config.check()
        self.config = config
        self.rng = random.Random(config.seed)
        names = [f"{v}_{n}" for v in VERBS for n in NOUNS]
        self.rng.shuffle(names)
        self.pool = names
        self.topics = list(TOPICS)[: config.n_modules]
        self.package = config.package

    def draw(self, topic: str, *, method_of: str | None = None, added: bool = False) -> Function:
        name = self.pool.pop()
        verb, noun = name.split("_", 1)
        return Function(name=name, summary=_summary(verb, noun, TOPICS.get(topic, "in a studio")),
                         topic=topic, params=_base_params(self.rng), added=added,
                         method_of=method_of)


def module_path(package: str, topic: str, top_level: bool) -> str:
    return package if top_level else f"{package}.{topic}"


# --------------------------------------------------------------------------- rendering


def _indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "\n".join(pad + line if line else line for line in text.splitlines())


def _docstring(fn: Function, *, version: str, call: list[str]) -> str:
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


def _signature(fn: Function) -> str:
    positional = [p for p in fn.params if not p.default]
    keywords = [p for p in fn.params if p.default]
    parts = (["self"] if fn.method_of else []) + [p.name for p in positional]
    parts += [f"{p.name}={p.default}" for p in keywords[:1]]
    if len(keywords) > 1:
        parts.append("*")
        parts += [f"{p.name}={p.default}" for p in keywords[1:]]
    return ", ".join(parts)


SAMPLE_PAGE = "The ferry leaves at dawn."


def _doctest(fn: Function, access: str, import_line: str, *, with_added: bool) -> list[str]:
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


class Renderer:
    def __init__(self, world: World, version: str, canonical: dict[str, str]):
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

    def function(self, fn: Function, *, stub: bool = False, indent: int = 0) -> str:
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

    def klass(self, cls: Class) -> str:
        doc = cls.doc + ("\n\n.. versionadded:: " + self.version if cls.added else "")
        out = [f"class {cls.name}:", '    """' + _indent(doc, 4).lstrip() + '\n    """', "",
               "    def __init__(self, width=80):", "        self.width = width", ""]
        for method in cls.methods:
            out.append(self.function(method, indent=4))
        return "\n".join(out) + "\n"


def module_names(module: Module) -> list[str]:
    return ([f.name for f in module.functions] + [c.name for c in module.classes]
            + [alias for _, _, alias in module.reexports])


def _imports(module: Module) -> list[str]:
    return [f"from {src} import {name}" + (f" as {alias}" if alias != name else "")
            for src, name, alias in module.reexports]


def render_module(r: Renderer, module: Module, files: dict[str, str]) -> None:
    pkg, topic = r.package, module.topic
    head = f'"""{topic.capitalize()} tools of {pkg}."""\n\nfrom __future__ import annotations\n\n'
    names = module_names(module)
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


