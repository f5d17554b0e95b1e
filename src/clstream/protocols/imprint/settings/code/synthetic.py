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
byte-identical wheels (fixed zip timestamps, sorted entries). The vocabulary, the releases as
objects and their rendering into source are in :mod:`.library_model`, whose public names this
module re-exports.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import zipfile
from dataclasses import dataclass
from pathlib import Path

from clstream.core.files import write_atomic
from clstream.protocols.imprint.settings.code.library_model import (
    CLASSES,
    CONVENTIONAL_ALIAS,
    EXTRA_PARAMS,
    MODES,
    NEW_CLASS,
    NEW_CLASS_DOC,
    NEW_TOPIC,
    NOUNS,
    SAMPLE_PAGE,
    TOPICS,
    VERBS,
    ChangeEntry,
    Class,
    CodeWorldConfig,
    Function,
    Module,
    Param,
    Renderer,
    SyntheticChangelog,
    World,
    module_names,
    module_path,
    render_module,
)

__all__ = [
    "build_wheel",
    "ChangeEntry",
    "CLASSES",
    "CodeWorldConfig",
    "CONVENTIONAL_ALIAS",
    "EXTRA_PARAMS",
    "MODES",
    "NEW_CLASS",
    "NEW_CLASS_DOC",
    "NEW_TOPIC",
    "NOUNS",
    "SAMPLE_PAGE",
    "SyntheticChangelog",
    "TOPICS",
    "VERBS",
    "write_library_wheels",
]

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

    private: list[Function]
    legacy: list[Function]
    init_aliases: list[tuple[str, str]]


@dataclass
class _Plan:
    old: list[Module]
    new: list[Module]
    changelog: SyntheticChangelog
    canonical_old: dict[str, str]
    canonical_new: dict[str, str]
    top_level: list[str]
    extras_old: _Extras
    extras_new: _Extras


def _plan(world: World) -> _Plan:
    """Both releases as module lists, the changelog, canonical paths and usage scripts."""
    cfg, pkg, rng = world.config, world.package, world.rng
    topics = world.topics
    old = {t: Module(t, MODES[i % len(MODES)]) for i, t in enumerate(topics)}
    top_level = set(topics[:2])  # the package __init__ star-imports these two
    for i in range(cfg.n_functions):
        topic = topics[i % len(topics)]
        old[topic].functions.append(world.draw(topic))
    class_names = list(CLASSES)[: cfg.n_classes]
    direct = [t for t in topics if old[t].mode == "direct"]
    for i, name in enumerate(class_names):
        topic = direct[i % len(direct)]
        methods = [world.draw(topic, method_of=name) for _ in range(2)]
        old[topic].classes.append(Class(name, CLASSES[name], methods))
    private = [world.draw("proof") for _ in range(cfg.n_moved)]  # _support.py, unexported

    def path_of(topic: str, name: str) -> str:
        return f"{module_path(pkg, topic, topic in top_level)}.{name}"

    canonical_old: dict[str, str] = {}
    for topic, module in old.items():
        for fn in module.functions:
            canonical_old[fn.name] = path_of(topic, fn.name)
        for cls in module.classes:
            canonical_old[cls.name] = path_of(topic, cls.name)
    for fn in private:
        canonical_old[fn.name] = f"{pkg}._support.{fn.name}"

    # Release 2 starts as a copy of release 1.
    def copy(fn: Function) -> Function:
        return dataclasses.replace(fn, params=list(fn.params))

    new = {t: Module(t, m.mode, [copy(f) for f in m.functions],
                      [Class(c.name, c.doc, [copy(f) for f in c.methods]) for c in m.classes])
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

    def take(n: int) -> list[Function]:
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
    legacy: list[Function] = []
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
            fn.params = [p if p.name != "width" else Param("span", p.default, p.doc)
                         for p in fn.params]
            renamed.append((canonical_new[fn.name], "width", "span"))
            continue
        used = {e.leaf for e in added if e.kind == "parameter"}
        choices = [p for p in EXTRA_PARAMS if p not in used]
        name = choices[0]
        fn.params = [*fn.params, Param(name, "None", EXTRA_PARAMS[name], added=True)]
        added.append(ChangeEntry(f"{canonical_new[fn.name]}.{name}", "parameter", name,
                                 canonical_new[fn.name]))
    # New functions: spread over the existing modules, some in a new subpackage.
    studio = Module(NEW_TOPIC, "star")
    n_functions = cfg.n_added - (1 if cfg.n_added >= 3 else 0)
    for i in range(n_functions):
        if i % 4 == 3:
            module = studio
            path_parent = f"{pkg}.{NEW_TOPIC}"
        else:
            module = new[topics[i % len(topics)]]
            path_parent = module_path(pkg, module.topic, module.topic in top_level)
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
            names = module_names(module)
            if names.index(fn.name) >= len(names) // 2:
                through_all.append(path)
    if cfg.n_added >= 3:
        topic = direct[0]
        methods = [world.draw(topic, method_of=NEW_CLASS) for _ in range(2)]
        new[topic].classes.append(Class(NEW_CLASS, NEW_CLASS_DOC, methods, added=True))
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


def _files(world: World, modules: list[Module], canonical: dict[str, str], version: str,
           top_level: list[str], extras: _Extras) -> dict[str, str]:
    pkg = world.package
    r = Renderer(world, version, canonical)
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
        render_module(r, module, files)
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


def _tests_and_usage(world: World, changelog: SyntheticChangelog, usage: Path
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
    world = World(config)
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
