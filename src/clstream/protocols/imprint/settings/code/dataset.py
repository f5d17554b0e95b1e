"""The ImprintBench code-changelog dataset built from two local wheels (docs/imprint.md §4.3).

The paper (ImprintBench App. D.2) turns release-note bullets into features with LLM judges and
finds usage on GitHub; clstream takes the features from :func:`wheels.diff_surfaces` and the
usage from what is on disk, with deterministic gates in place of the paper's snippet judges.

Corpus: one ``feature`` document per new API (canonical path, kind, signature, full docstring,
parent summary, a one-line change note), in release order. Items (setting ``code``, instance
``all``):

* DirAcq -- "does <library> have a <kind> at <path>?", gold ``Yes`` (non-parameter features);
* RefRes -- the docstring summary with the leaf's words masked, gold the leaf (``meta.leaky``
  when the raw summary already holds every leaf word);
* CompRel -- a real usage snippet with the identifier masked, gold the canonical path (the
  parameter name for parameter features), plus a ``no_import`` twin (``axis``) whose namespace
  prefixes and revealing imports are gone;
* ImpRel -- "which new <kinds> are in <parent>?", gold one leaf (several items may share a
  question, as in the paper);
* BoundAbs -- fictitious leaves, only when asked for (the paper does not evaluate them).

Usage snippets, in order of preference: doctest ``Examples`` in the new wheel, test files shipped
in it, then a user's usage directory. A snippet is kept only if (a) it imports the library,
(b) every masked reference resolves through the snippet's own imports to the canonical path or a
public alias of it (``obj.leaf`` only for a method whose leaf is unique in the package), and
(c) after masking with the paper's regexes (``\\b<leaf>\\b`` for callables, ``\\b<param>\\s*``
for parameters; zero substitutions reject) no trace of the leaf is left. Nothing is executed.
"""

from __future__ import annotations

import ast
import functools
import random
import re
import tempfile
import textwrap
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from clstream.core.errors import DataError
from clstream.protocols.imprint.schema import (
    SINGLE_INSTANCE,
    CorpusDoc,
    Dataset,
    Item,
    Manifest,
    QAPair,
    check_disjoint,
)
from clstream.protocols.imprint.settings.code.giveaways import (
    code_giveaway,
    without_comments,
)
from clstream.protocols.imprint.settings.code.naming import (
    MIN_SIBLINGS,
    forbidden_names,
    invented_leaf,
)
from clstream.protocols.imprint.settings.code.paraphrase import offline_description
from clstream.protocols.imprint.settings.code.synthetic import CodeWorldConfig, write_library_wheels
from clstream.protocols.imprint.settings.code.wheels import (
    Deprecation,
    Feature,
    WheelSurface,
    diff_surfaces,
    dotted_name,
    parameter_description,
    read_wheel,
    version_key,
)

MASK = "<MASK>"
MAX_SNIPPET_LINES = 30
MIN_TRIMMED_LINES = 5
# Import aliases a library's own examples take for granted (``np.`` in numpy doctests).
CONVENTIONAL_ALIASES: dict[str, str] = {
    "numpy": "np", "pandas": "pd", "polars": "pl", "scipy": "sp", "quillkit": "qk",
    "matplotlib": "mpl", "tensorflow": "tf", "seaborn": "sns",
}
_PLURAL = {"function": "functions", "class": "classes", "method": "methods",
           "parameter": "parameters"}
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


# --------------------------------------------------------------------------- the dataset


def summary_line(doc: str) -> str:
    """The first paragraph of a docstring, on one line."""
    paragraph: list[str] = []
    for line in doc.strip().splitlines():
        if not line.strip():
            break
        paragraph.append(line.strip())
    return " ".join(paragraph)


def _article(feature: Feature, surface: WheelSurface, library: str) -> str:
    summary = summary_line(feature.doc)
    tail = ("is described this way: " + summary[:1].lower() + summary[1:]
            if summary else "has no summary line.")
    if feature.is_parameter:
        parent_leaf = feature.parent.rsplit(".", 1)[-1]
        description = " ".join(parameter_description(feature.doc, feature.leaf).split())
        lines = [
            f"{feature.path} is a new parameter in {feature.parent} ({library} {feature.version}).",
            f"Change note: {library} {feature.version} adds the parameter {feature.leaf} to "
            f"{parent_leaf} ({feature.parent}).",
            f"Canonical path: {feature.parent}; kind: parameter; name: {feature.leaf}.",
            f"Signature: {parent_leaf}({feature.signature})",
            f"Parameter description: {description or 'not documented.'}",
            f"The callable {parent_leaf} ({feature.parent}) {tail}",
        ]
    else:
        parent_summary = summary_line(surface.class_doc(feature.parent)
                                      or surface.module_doc(feature.parent))
        lines = [
            f"{feature.path} is a new {feature.kind} in {feature.parent} "
            f"({library} {feature.version}).",
            f"{library} has a {feature.kind} at {feature.path}.",
            f"Change note: {library} {feature.version} adds the {feature.kind} {feature.leaf} "
            f"to {feature.parent}.",
            f"Canonical path: {feature.path}; kind: {feature.kind}.",
            f"Signature: {feature.leaf}({feature.signature})",
            f"In short, the {feature.kind} {feature.leaf} ({feature.path}) {tail}",
            f"Parent {feature.parent}: {parent_summary or 'no summary.'}",
        ]
    lines += ["", "Documentation:", feature.doc.strip()]
    return "\n".join(lines)


def _qa(feature: Feature, doc_id: str, library: str, start: int) -> list[QAPair]:
    summary = summary_line(feature.doc)
    pairs = [
        (f"What kind of API object is {feature.path} in {library}?", feature.kind),
        (f"In which {library} release did {feature.path} first appear?", feature.version),
        (f"What is the call signature that goes with {feature.path}?",
         f"{feature.parent.rsplit('.', 1)[-1] if feature.is_parameter else feature.leaf}"
         f"({feature.signature})"),
    ]
    if feature.is_parameter:
        pairs.append((f"Which {library} callable gained the keyword {feature.leaf} in "
                      f"{feature.version}?", feature.parent))
    else:
        pairs.append((f"Under which namespace does {library} publish {feature.leaf}?",
                      feature.parent))
        if summary:
            pairs.append((f"What does {feature.path} do?", summary))
    return [QAPair(qa_id=f"code-qa-{start + i:05d}", doc_id=doc_id, question=q, answer=a)
            for i, (q, a) in enumerate(pairs)]


def sibling_leaves(kind: str, parent: str, surface: WheelSurface) -> list[str]:
    """The leaves of the public callables of ``kind`` under ``parent`` in ``surface``; the
    package's callables of that kind too when the namespace has few (:data:`MIN_SIBLINGS`)."""
    leaves = {r.leaf for r in surface.records.values() if r.kind == kind and r.parent == parent}
    if len(leaves) < MIN_SIBLINGS:
        leaves |= {r.leaf for r in surface.records.values() if r.kind == kind}
    return sorted(leaves)


def _invented(features: list[Feature], surface_old: WheelSurface, surface_new: WheelSurface,
              rng: random.Random, classes: bool = False) -> list[tuple[Feature, str]]:
    """One invented leaf per non-parameter feature where the package's naming offers one
    (:func:`naming.invented_leaf`): under the feature's own namespace, in the style and
    vocabulary of its sibling callables of the same kind, defined nowhere in either wheel
    nor in Python. Class features get one only with ``classes``."""
    forbidden = forbidden_names(
        *((r.path, *r.aliases) for s in (surface_old, surface_new) for r in s.records.values()),
        surface_old.defined_names, surface_new.defined_names,
        surface_old.modules, surface_new.modules, (f.leaf for f in features))
    out: list[tuple[Feature, str]] = []
    for feature in features:
        if feature.is_parameter or (feature.kind == "class" and not classes):
            continue
        siblings = sibling_leaves(feature.kind, feature.parent, surface_new)
        made = invented_leaf(feature.leaf, siblings, forbidden, rng)
        if made is not None:
            forbidden.add(made)
            out.append((feature, made))
    return out


def comprel_question(kind: str, library: str, code: str, parent: str | None = None) -> str:
    """The template CompRel question: the masked snippet and what the mask hides, nothing of
    what the identifier does (that is RefRes's question; a CompRel item that quoted it would
    be a RefRes item with code attached)."""
    if kind == "parameter":
        head = (f"In the Python code below, {MASK} hides the name of a keyword parameter of "
                f"{parent}.")
    else:
        head = f"In the Python code below, {MASK} hides the name of a {kind} of {library}."
    return f"{head} Which identifier does {MASK} stand for? Reply with the identifier only.\n\n{code}"


def refres_question(kind: str, library: str, description: str, how: str) -> str:
    """The RefRes question around a description (App. D.2 item 2: "what <kind> in <library>
    <description>?"); a reworded class summary is a noun phrase, so it takes "is"."""
    verb = "is " if kind == "class" and how == "reworded" else ""
    return f"Which {kind} of {library} {verb}{description}? Give its name."


# Families whose paper stage is an LLM writer (App. D.2), and what stands in for it offline.
TEMPLATE_STAND_INS: dict[str, str] = {
    "RefRes": "description reworded through a fixed lexicon (or structural), not an LLM "
              "paraphrase with the faithfulness validator",
    "CompRel": "template question over the masked snippet, not an LLM-written question with "
               "the faithfulness validator and the golden subset",
}


def template_pipeline(removed: dict[str, Counter[str]]) -> dict[str, object]:
    """The card's account of a dataset built without a writer model: the families that did
    not go through the paper's stages, and what each deterministic stage removed."""
    return {"writer": None, "template_families": dict(TEMPLATE_STAND_INS),
            "removed": {f: dict(sorted(c.items())) for f, c in removed.items()}}


def build_code_dataset(old_whl: str | Path, new_whl: str | Path, package: str, *, seed: int,
                       usage_dir: str | Path | None = None, library: str | None = None,
                       include_boundabs: bool = False, max_snippets: int = 4,
                       between_wheels: Sequence[str | Path] = ()) -> Dataset:
    """The code-changelog dataset of ``package`` between two wheels (setting ``code``, one
    instance ``all``).

    DirAcq asks only about real features, gold Yes, as the paper does (App. D.2): invented
    identifiers belong to BoundAbs (``include_boundabs``), where abstaining or denying is right.

    ``between_wheels``: the wheels of the releases between the two, in release order. Each
    feature is then dated by the first release that has it (docs/imprint.md §4.3), and its
    page carries that release's build date, so the corpus reads in release order."""
    usage = Path(usage_dir) if usage_dir is not None else None
    if usage is not None and not usage.is_dir():
        raise DataError(usage, None, None, "usage directory not found")
    old = read_wheel(old_whl, package)
    new = read_wheel(new_whl, package)
    between = [read_wheel(w, package) for w in between_wheels]
    diff = diff_surfaces(old, new, between=between)
    name = library or package
    rng = random.Random(seed)
    date = new.build_date or "2024-01-01"
    releases = sorted([*between, new], key=lambda s: version_key(s.version))

    def released(feature: Feature) -> str:
        """The build date of the first release at or after the feature's version."""
        first = next((s for s in releases
                      if version_key(s.version) >= version_key(feature.version)), new)
        return first.build_date or date

    features = sorted(diff.features, key=released)  # stable: one release keeps diff order
    corpus: list[CorpusDoc] = []
    qa: list[QAPair] = []
    items: list[Item] = []
    counters: Counter[str] = Counter()

    def add(family: str, **fields: object) -> None:
        counters[family] += 1
        items.append(Item.model_validate({
            "item_id": f"code-{family.lower()}-{counters[family]:04d}", "setting": "code",
            "family": family, "instance_id": SINGLE_INSTANCE, **fields}))

    ledger: list[dict[str, object]] = []
    descriptions: set[str] = set()
    members: dict[tuple[str, str], list[tuple[Feature, str]]] = {}
    removed: dict[str, Counter[str]] = {"RefRes": Counter(), "CompRel": Counter()}
    for index, feature in enumerate(features):
        doc_id = f"code-feature-{index:04d}"
        corpus.append(CorpusDoc(
            doc_id=doc_id, date=released(feature), kind="feature",
            title=f"{name} {feature.version}: {feature.path}",
            text=_article(feature, new, name),
            meta={"path": feature.path, "kind": feature.kind, "leaf": feature.leaf,
                  "parent": feature.parent, "version": feature.version,
                  "evidence": feature.evidence, "library": name, "package": package,
                  "defined_at": feature.defined_at, "source": feature.source},
        ))
        ledger.append({"entry": "feature", "doc_id": doc_id, "path": feature.path,
                       "kind": feature.kind, "leaf": feature.leaf, "parent": feature.parent,
                       "version": feature.version, "evidence": feature.evidence})
        qa.extend(_qa(feature, doc_id, name, len(qa)))
        sources = [doc_id]
        if not feature.is_parameter:
            add("DirAcq", question=f"Does {name} have a {feature.kind} at {feature.path}?",
                gold="Yes", judge="yesno", source_doc_ids=sources, meta={"path": feature.path})
            found = offline_description(
                summary_line(feature.doc), feature.doc, feature.leaf, kind=feature.kind,
                version=feature.version, signature=feature.signature, taken=descriptions)
            if found is None:  # nothing clean to ask with: counted in the card
                removed["RefRes"]["no_clean_description"] += 1
            else:
                descriptions.add(found[0])
                add("RefRes", question=refres_question(feature.kind, name, found[0], found[1]),
                    gold=feature.leaf, judge="identifier", source_doc_ids=sources,
                    meta={"path": feature.path, "description": found[0], "written": found[1]})
            members.setdefault((feature.parent, feature.kind), []).append((feature, doc_id))
        # a bounded pool to sample from: common parameter names occur thousands of times
        snippets = usage_snippets(feature, new, usage, limit=8 * max_snippets,
                                  rejected=removed["CompRel"])
        if not snippets:
            removed["CompRel"]["feature_without_snippet"] += 1
        if len(snippets) > max_snippets:
            removed["CompRel"]["snippets_over_max"] += len(snippets) - max_snippets
            snippets = sorted(rng.sample(snippets, max_snippets), key=snippets.index)
        gold = feature.leaf if feature.is_parameter else feature.path
        for snippet in snippets:
            for axis, code in ((None, snippet.masked), ("no_import", snippet.no_import)):
                if axis and code == snippet.masked:
                    continue
                question = comprel_question(
                    feature.kind, name, code,
                    feature.parent.rsplit(".", 1)[-1] if feature.is_parameter else None)
                add("CompRel", question=question, gold=gold, judge="identifier", axis=axis,
                    source_doc_ids=sources,
                    meta={"path": feature.path, "snippet_source": snippet.source,
                          "origin": snippet.origin})
    for (parent, kind), group in members.items():  # one question per parent and kind
        add("ImpRel", question=f"Which new {_PLURAL[kind]} are in {parent}?",
            gold=[f.leaf for f, _ in group], judge="identifier",
            source_doc_ids=[d for _, d in group], meta={"paths": [f.path for f, _ in group]})
    if include_boundabs:
        for feature, fake in _invented(features, old, new, rng):
            index = features.index(feature)
            add("BoundAbs", question=f"Does {name} have a {feature.kind} at "
                f"{feature.parent}.{fake}?", gold="No", judge="abstain",
                source_doc_ids=[f"code-feature-{index:04d}"],
                meta={"fictitious": f"{feature.parent}.{fake}"})
    ledger.extend(_deprecation_entry(d) for d in diff.deprecations)
    check_disjoint(qa, items, new.wheel)
    manifest = Manifest(setting="code", generator="imprint.code", seed=seed, config={
        "package": package, "library": name, "old_wheel": Path(old_whl).name,
        "new_wheel": Path(new_whl).name, "old_version": old.version,
        "between_wheels": [Path(w).name for w in between_wheels],
        "new_version": new.version, "include_boundabs": include_boundabs,
        "max_snippets": max_snippets, "usage_dir": str(usage) if usage else None,
        "pipeline": template_pipeline(removed),
    })
    return Dataset(manifest=manifest, corpus=corpus, qa=qa, items=items, ledger=ledger)


def _deprecation_entry(d: Deprecation) -> dict[str, object]:
    return {"entry": "deprecation", "path": d.path, "kind": d.kind, "old": d.old, "new": d.new}


def generate_code(config: CodeWorldConfig, *, include_boundabs: bool = False,
                  max_snippets: int = 4) -> Dataset:
    """The code dataset of the fictional library (:mod:`code_synthetic`), built through the
    same wheel pipeline as real packages."""
    with tempfile.TemporaryDirectory(prefix="clstream-code-") as tmp:
        old, new, changelog = write_library_wheels(config, tmp)
        data = build_code_dataset(old, new, config.package, seed=config.seed,
                                  usage_dir=changelog.usage_dir,
                                  include_boundabs=include_boundabs, max_snippets=max_snippets)
    data.manifest = data.manifest.model_copy(update={
        "generator": "imprint.code_synthetic",
        "config": {**data.manifest.config, "usage_dir": None,
                   "world": {k: v for k, v in vars(config).items()}}})
    return data
