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
The snippets and their gates are in :mod:`.snippets`, whose public names this module
re-exports.
"""

from __future__ import annotations

import random
import tempfile
from collections import Counter
from collections.abc import Sequence
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
from clstream.protocols.imprint.settings.code.naming import (
    MIN_SIBLINGS,
    forbidden_names,
    invented_leaf,
)
from clstream.protocols.imprint.settings.code.paraphrase import offline_description
from clstream.protocols.imprint.settings.code.snippets import (
    CONVENTIONAL_ALIASES,
    MASK,
    MAX_SNIPPET_LINES,
    MIN_TRIMMED_LINES,
    Snippet,
    doctest_code,
    enclosing_function,
    gate_snippet,
    imports_library,
    leaf_words,
    mask_snippet,
    no_import_variant,
    no_residue,
    resolves,
    usage_snippets,
)
from clstream.protocols.imprint.settings.code.synthetic import CodeWorldConfig, write_library_wheels
from clstream.protocols.imprint.settings.code.wheels import (
    Deprecation,
    Feature,
    WheelSurface,
    diff_surfaces,
    parameter_description,
    read_wheel,
    version_key,
)
from clstream.protocols.imprint.stage_timings import timed, timed_build

__all__ = [
    "build_code_dataset",
    "comprel_question",
    "CONVENTIONAL_ALIASES",
    "doctest_code",
    "enclosing_function",
    "gate_snippet",
    "generate_code",
    "imports_library",
    "leaf_words",
    "MASK",
    "mask_snippet",
    "MAX_SNIPPET_LINES",
    "MIN_TRIMMED_LINES",
    "no_import_variant",
    "no_residue",
    "refres_question",
    "resolves",
    "sibling_leaves",
    "Snippet",
    "summary_line",
    "template_pipeline",
    "TEMPLATE_STAND_INS",
    "usage_snippets",
]

_PLURAL = {"function": "functions", "class": "classes", "method": "methods",
           "parameter": "parameters"}
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


@timed_build("template_build")
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
        with timed("library_wheels", 0):
            old, new, changelog = write_library_wheels(config, tmp)
        data = build_code_dataset(old, new, config.package, seed=config.seed,
                                  usage_dir=changelog.usage_dir,
                                  include_boundabs=include_boundabs, max_snippets=max_snippets)
    data.manifest = data.manifest.model_copy(update={
        "generator": "imprint.code_synthetic",
        "config": {**data.manifest.config, "usage_dir": None,
                   "world": {k: v for k, v in vars(config).items()}}})
    return data
