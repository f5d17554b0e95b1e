"""Usage snippets of a new API and the gates they pass before they become a CompRel item
(docs/imprint.md §4.3; ImprintBench App. D.2): the paper's masking regexes, the check that every
masked reference resolves to the feature through the snippet's own imports, and the sources in
order of preference (doctest ``Examples``, shipped tests, a usage directory). Nothing is executed;
:mod:`.dataset` describes the rules.
"""

from __future__ import annotations

import ast
import functools
import re
import textwrap
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from clstream.core.errors import DataError
from clstream.protocols.imprint.settings.code.giveaways import (
    code_giveaway,
    without_comments,
)
from clstream.protocols.imprint.settings.code.wheels import (
    Feature,
    WheelSurface,
    dotted_name,
)

MASK = "<MASK>"
MAX_SNIPPET_LINES = 30
MIN_TRIMMED_LINES = 5
# Import aliases a library's own examples take for granted (``np.`` in numpy doctests).
CONVENTIONAL_ALIASES: dict[str, str] = {
    "numpy": "np", "pandas": "pd", "polars": "pl", "scipy": "sp", "quillkit": "qk",
    "matplotlib": "mpl", "tensorflow": "tf", "seaborn": "sns",
}
_DOCTEST = re.compile(r"^\s*(>>>|\.\.\.)( |$)")


# --------------------------------------------------------------------------- masking and gates


def mask_snippet(code: str, leaf: str, *, parameter: bool) -> tuple[str, int]:
    """The paper's mask: ``\\b<leaf>\\b`` for callables, ``\\b<param>\\s*`` for parameters;
    returns (masked code, number of substitutions)."""
    pattern = rf"\b{re.escape(leaf)}\s*" if parameter else rf"\b{re.escape(leaf)}\b"
    return re.subn(pattern, MASK, code)


def _leaf_forms(leaf: str) -> set[str]:
    words = leaf_words(leaf)
    forms = {leaf.lower(), "_".join(words), "".join(words)}
    return {f for f in forms if f}


def leaf_words(leaf: str) -> list[str]:
    """The words of an identifier: ``cumulative_sum`` -> cumulative, sum; ``CubicSpline`` ->
    cubic, spline."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", leaf)
    return [w.lower() for w in spaced.split("_") if w]


def no_residue(masked: str, leaf: str) -> bool:
    """Gate (c): no case-insensitive trace of the leaf (nor its ``_``-joined or run-together
    form) is left anywhere, identifiers, comments and strings included."""
    text = masked.lower()
    return not any(form in text for form in _leaf_forms(leaf) if len(form) > 2)


def _imported_names(code: str) -> set[str]:
    """Names bound by the single-line import statements of ``code`` (``np`` for
    ``import numpy as np``)."""
    names: set[str] = set()
    for match in re.finditer(r"^\s*(?:from\s+\S+\s+)?import\s+([^(\n]+)$", code, re.MULTILINE):
        for part in match.group(1).split(","):
            bound = part.split(" as ")[-1].strip().split(".")[0]
            if bound.isidentifier():
                names.add(bound)
    return names


def no_import_variant(masked: str) -> str:
    """The twin without namespaces: ``alias.path.<MASK>`` -> ``<MASK>`` where ``alias`` is
    bound by an import (an instance's ``obj.<MASK>`` stays: it is no namespace), and import
    lines that bind the masked name or nothing still used are dropped."""
    imported = _imported_names(masked)
    stripped = re.sub(r"\b([A-Za-z_]\w*)(?:\.[A-Za-z_]\w*)*\." + re.escape(MASK),
                      lambda m: MASK if m.group(1) in imported else m.group(0), masked)
    lines = stripped.splitlines()
    kept: list[str] = []
    for i, line in enumerate(lines):
        match = re.match(r"^\s*(?:from\s+\S+\s+)?import\s+(.+)$", line)
        if match and "(" not in line:
            if MASK in line:
                continue
            rest = "\n".join(lines[:i] + lines[i + 1:])
            bound = [part.split(" as ")[-1].strip().split(".")[0]
                     for part in match.group(1).split(",")]
            if not any(re.search(rf"\b{re.escape(b)}\b", rest) for b in bound if b):
                continue
        kept.append(line)
    return re.sub(r"\n{4,}", "\n\n\n", "\n".join(kept)).strip("\n")


def _bindings(tree: ast.AST) -> dict[str, str]:
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    out[head] = head
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                if alias.name != "*":
                    out[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return out


def _expand(dotted: str, bindings: dict[str, str]) -> str | None:
    head, _, rest = dotted.partition(".")
    if head not in bindings:
        return None
    return bindings[head] + ("." + rest if rest else "")


@dataclass(frozen=True)
class _Target:
    """What a snippet must refer to: the feature and the package's public names."""

    feature: Feature
    package: str
    accepted: frozenset[str]  # public paths of the callable (the parent, for a parameter)
    unique_leaf: bool  # the callable's leaf names one public object in the package

    @property
    def call_names(self) -> frozenset[str]:
        """Names that are part of the masked reference itself: the segments of the public
        paths it goes through, the conventional alias (``np``)."""
        paths = (*self.accepted, self.feature.parent)
        alias = CONVENTIONAL_ALIASES.get(self.package, self.package)
        return frozenset({alias, *(s for p in paths for s in p.split("."))})


def imports_library(code: str, package: str) -> bool:
    """Gate (a)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    return any(v == package or v.startswith(package + ".") for v in _bindings(tree).values())


def resolves(code: str, target: _Target) -> bool:
    """Gate (b): every reference to the masked identifier goes, through the snippet's own
    imports, to the canonical path or a public alias (``obj.leaf`` only for a unique method
    leaf); a parameter must be a keyword of a call to its callable."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    bindings = _bindings(tree)
    feature = target.feature
    callable_leaf = feature.parent.rsplit(".", 1)[-1] if feature.is_parameter else feature.leaf
    method_like = feature.kind == "method" or (
        feature.is_parameter and target.unique_leaf)

    def callee_ok(node: ast.expr) -> bool:
        dotted = dotted_name(node)
        if dotted is None:
            return False
        full = _expand(dotted, bindings)
        if full is not None and full in target.accepted:
            return True
        return (isinstance(node, ast.Attribute) and node.attr == callable_leaf
                and method_like and target.unique_leaf)

    uses = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                if alias.name == callable_leaf and f"{node.module}.{alias.name}" not in target.accepted:
                    return False
        if feature.is_parameter:
            if isinstance(node, ast.Name) and node.id == feature.leaf:
                return False
            if isinstance(node, ast.Attribute) and node.attr == feature.leaf:
                return False
            if isinstance(node, ast.Call) and any(k.arg == feature.leaf for k in node.keywords):
                if not callee_ok(node.func):
                    return False
                uses += 1
        elif isinstance(node, ast.Name) and node.id == feature.leaf:
            if bindings.get(node.id) not in target.accepted:
                return False
            uses += 1
        elif isinstance(node, ast.Attribute) and node.attr == feature.leaf:
            if not callee_ok(node):
                return False
            uses += 1
        elif isinstance(node, ast.arg | ast.FunctionDef | ast.ClassDef) and getattr(
                node, "name", getattr(node, "arg", None)) == feature.leaf:
            return False
    return uses > 0


@dataclass(frozen=True)
class Snippet:
    """A usage snippet that passed the gates, masked, with where it came from."""

    source: str  # "doctest" | "tests" | "usage"
    origin: str
    code: str
    masked: str
    no_import: str


def gate_snippet(code: str, target: _Target, source: str, origin: str) -> Snippet | None:
    """Gates (a)-(c) and the mask; None when the snippet is rejected. Gate (c) holds the
    paper's third property whole: beyond the leaf itself, none of its distinctive words is
    spelled in a comment, string or name of the snippet (:mod:`giveaways`)."""
    feature = target.feature
    if not imports_library(code, target.package) or not resolves(code, target):
        return None
    masked, count = mask_snippet(code, feature.leaf, parameter=feature.is_parameter)
    if count == 0:
        return None
    leak = code_giveaway(masked, MASK, feature.leaf, allowed=target.call_names,
                         parameter=feature.is_parameter)
    if leak is not None and leak.startswith("comment"):  # rewritten: comments cut
        code = without_comments(code)
        masked, count = mask_snippet(code, feature.leaf, parameter=feature.is_parameter)
        leak = code_giveaway(masked, MASK, feature.leaf, allowed=target.call_names,
                             parameter=feature.is_parameter)
    if count == 0 or leak is not None or not no_residue(masked, feature.leaf):
        return None
    return Snippet(source, origin, code, masked, no_import_variant(masked))


# --------------------------------------------------------------------------- snippet sources


def doctest_code(doc: str, package: str) -> str:
    """The code of a docstring's examples: prompts stripped, output dropped, the library's
    conventional import prepended when the examples take it for granted."""
    lines = [m.string[m.end():] for m in map(_DOCTEST.match, doc.splitlines()) if m]
    if not lines:
        return ""
    raw = [line for line in doc.splitlines() if _DOCTEST.match(line)]
    body = textwrap.dedent("\n".join(re.sub(r"^\s*(>>>|\.\.\.) ?", "", r) for r in raw))
    alias = CONVENTIONAL_ALIASES.get(package)
    if not imports_library(body, package):
        if alias and re.search(rf"\b{alias}\.", body):
            body = f"import {package} as {alias}\n{body}"
        elif re.search(rf"\b{package}\.", body):
            body = f"import {package}\n{body}"
    return body


def _statements_window(code: str, uses: re.Pattern[str]) -> str | None:
    """At most :data:`MAX_SNIPPET_LINES` lines of whole statements around the first use,
    import statements kept."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    lines = code.splitlines()
    if len(lines) <= MAX_SNIPPET_LINES:
        return code
    spans = [(s.lineno, s.end_lineno or s.lineno, isinstance(s, ast.Import | ast.ImportFrom))
             for s in tree.body]
    first = next((i for i, (a, b, _) in enumerate(spans)
                  if uses.search("\n".join(lines[a - 1:b]))), None)
    if first is None:
        return None
    chosen = {i for i, (_, _, imp) in enumerate(spans) if imp}
    chosen.add(first)
    size = sum(spans[i][1] - spans[i][0] + 1 for i in chosen)
    for step in range(1, len(spans)):
        for i in (first + step, first - step):
            if 0 <= i < len(spans) and i not in chosen:
                extra = spans[i][1] - spans[i][0] + 1
                if size + extra <= MAX_SNIPPET_LINES:
                    chosen.add(i)
                    size += extra
    if size > MAX_SNIPPET_LINES:
        return None
    return "\n".join("\n".join(lines[spans[i][0] - 1:spans[i][1]]) for i in sorted(chosen))


@functools.lru_cache(maxsize=64)
def _parsed(text: str) -> tuple[ast.Module, tuple[str, ...]] | None:
    """A file's tree and lines, kept while the features of one wheel look for usage."""
    try:
        return ast.parse(text), tuple(text.splitlines())
    except (SyntaxError, ValueError):
        return None


def enclosing_function(text: str, uses: re.Pattern[str]) -> str | None:
    """The smallest function of ``text`` that uses the identifier, with the file's imports
    that bind names it uses, trimmed to at most 30 lines; the whole file when it is short."""
    parsed = _parsed(text)
    if parsed is None:
        return None
    tree, all_lines = parsed
    lines = list(all_lines)
    if len(lines) <= MAX_SNIPPET_LINES:
        return text.strip("\n") if uses.search(text) else None
    best: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            segment = "\n".join(lines[node.lineno - 1:node.end_lineno])
            if uses.search(segment) and (best is None or (node.end_lineno or 0) - node.lineno
                                         < (best.end_lineno or 0) - best.lineno):
                best = node
    if best is None:
        return None
    body = textwrap.dedent("\n".join(lines[best.lineno - 1:best.end_lineno]))
    if len(body.splitlines()) > MAX_SNIPPET_LINES - 3:
        inner = textwrap.dedent("\n".join(lines[best.body[0].lineno - 1:best.end_lineno]))
        window = _statements_window(inner, uses)
        if window is None or len(window.splitlines()) < MIN_TRIMMED_LINES:
            return None
        body = window
    used = [line for s in tree.body if (line := _used_import(s, lines, body))]
    return "\n".join([*used, "", body]).strip("\n") if used else body


def _used_import(statement: ast.stmt, lines: list[str], body: str) -> str | None:
    """``statement`` if it is an import binding a name ``body`` uses, a ``from`` import cut
    down to the names used (a test file's long import lists would bury the snippet)."""
    if not isinstance(statement, ast.Import | ast.ImportFrom):
        return None
    names = [a for a in statement.names if a.name != "*" and re.search(
        rf"\b{re.escape((a.asname or a.name).split('.')[0])}\b", body)]
    if not names:
        return None
    if isinstance(statement, ast.ImportFrom) and len(names) < len(statement.names):
        return ast.unparse(ast.ImportFrom(module=statement.module, names=names,
                                          level=statement.level))
    return "\n".join(lines[statement.lineno - 1:statement.end_lineno])


def _use_pattern(feature: Feature) -> re.Pattern[str]:
    if feature.is_parameter:  # a keyword of a call to the callable, within one call's reach
        parent = re.escape(feature.parent.rsplit(".", 1)[-1])
        return re.compile(rf"\b{parent}\s*\((?:[^()]|\([^()]*\))*?\b{re.escape(feature.leaf)}\s*=")
    return re.compile(rf"\b{re.escape(feature.leaf)}\b")


def _candidates(feature: Feature, surface: WheelSurface, usage_dir: Path | None
                ) -> Iterable[tuple[str, str, str]]:
    uses = _use_pattern(feature)
    for origin, doc in _examples(surface):
        if ">>>" in doc and uses.search(doc):
            code = doctest_code(doc, surface.package)
            window = _statements_window(code, uses) if code else None
            if window:
                yield "doctest", origin, window
    for origin, text in sorted(surface.test_files.items()):
        if uses.search(text):
            snippet = enclosing_function(text, uses)
            if snippet:
                yield "tests", origin, snippet
    if usage_dir is not None:
        for path in sorted(usage_dir.rglob("*.py")):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise DataError(path, None, None, f"cannot read usage file: {exc}") from None
            if not uses.search(text) or _defines(text, feature.leaf):
                continue
            snippet = enclosing_function(text, uses)
            if snippet:
                yield "usage", path.relative_to(usage_dir).as_posix(), snippet


_EXAMPLES: dict[int, tuple[WheelSurface, list[tuple[str, str]]]] = {}


def _examples(surface: WheelSurface) -> list[tuple[str, str]]:
    """(origin, docstring) of every docstring with doctest examples, computed once a wheel."""
    cached = _EXAMPLES.get(id(surface))
    if cached is not None and cached[0] is surface:
        return cached[1]
    docs = {(r.defined_at, r.doc) for r in surface.records.values() if ">>>" in r.doc}
    docs |= {(t.file, t.doc) for t in surface.modules.values() if ">>>" in t.doc}
    _EXAMPLES.clear()
    _EXAMPLES[id(surface)] = (surface, sorted(docs))
    return _EXAMPLES[id(surface)][1]


def _defines(text: str, leaf: str) -> bool:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == leaf:
            return True
        if isinstance(node, ast.Name) and node.id == leaf and isinstance(node.ctx, ast.Store):
            return True
    return False


def usage_snippets(feature: Feature, surface: WheelSurface, usage_dir: Path | None = None,
                   *, limit: int | None = None,
                   rejected: Counter[str] | None = None) -> list[Snippet]:
    """The gated snippets for ``feature`` (doctests, then tests, then the usage directory),
    distinct by masked text; at most ``limit`` when given. ``rejected`` counts the candidates
    the gates (a)-(c) turned down and the repeats, for the dataset card."""
    leaf_counts = Counter(r.leaf for r in surface.records.values())
    if feature.is_parameter:
        parent = surface.records.get(feature.parent)
        accepted = frozenset({feature.parent, *(parent.aliases if parent else ())})
        unique = leaf_counts[feature.parent.rsplit(".", 1)[-1]] == 1
    else:
        accepted = frozenset({feature.path, *feature.aliases})
        unique = leaf_counts[feature.leaf] == 1
    target = _Target(feature, surface.package, accepted, unique)
    out: list[Snippet] = []
    seen: set[str] = set()
    for source, origin, code in _candidates(feature, surface, usage_dir):
        snippet = gate_snippet(code, target, source, origin)
        if rejected is not None and (snippet is None or snippet.masked in seen):
            rejected["snippet_gates" if snippet is None else "snippet_repeated"] += 1
        if snippet is not None and snippet.masked not in seen:
            seen.add(snippet.masked)
            out.append(snippet)
            if limit is not None and len(out) >= limit:
                break
    return out


