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

The reading lives in :mod:`.wheel_modules` (one module's table) and :mod:`.wheel_reader` (the
surface); this module diffs two surfaces and re-exports the reading's public names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from clstream.protocols.imprint.settings.code.wheel_modules import (
    DEFAULT_DENY,
    MAX_ALIAS_DEPTH,
    TEST_SEGMENTS,
    Definition,
    ModuleTable,
    dotted_name,
    inspect_clean,
    merge_stub,
    parse_module,
)
from clstream.protocols.imprint.settings.code.wheel_reader import (
    ApiRecord,
    WheelSurface,
    read_wheel,
)

__all__ = [
    "ApiRecord",
    "DEFAULT_DENY",
    "Definition",
    "Deprecation",
    "diff_surfaces",
    "diff_wheels",
    "dotted_name",
    "Feature",
    "inspect_clean",
    "MAX_ALIAS_DEPTH",
    "merge_stub",
    "ModuleTable",
    "parameter_description",
    "parse_module",
    "read_wheel",
    "Rejection",
    "TEST_SEGMENTS",
    "version_key",
    "versionadded",
    "WheelDiff",
    "WheelSurface",
]

_SCREAMING = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{2,}[0-9]*")
_VERSION_NOTE = re.compile(r"\.\.\s+version(?:added|changed)::\s*([0-9][0-9A-Za-z.\-+]*)")
_SECTION_RULE = re.compile(r"^\s*-{3,}\s*$")


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
