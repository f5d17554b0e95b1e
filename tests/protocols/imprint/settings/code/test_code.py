"""The code-changelog dataset (brief §3.2(b) steps 7-9): gated snippets, item families, Q/test
disjointness and determinism, on the fictional library's two wheels."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path
from typing import Any

import pytest

from clstream.core.errors import DataError
from clstream.protocols.imprint.schema import Dataset, check_disjoint, load_dataset, write_dataset
from clstream.protocols.imprint.settings.code.dataset import (
    MASK,
    build_code_dataset,
    generate_code,
    mask_snippet,
    no_import_variant,
    no_residue,
    sibling_leaves,
    usage_snippets,
)
from clstream.protocols.imprint.settings.code.giveaways import distinctive_words
from clstream.protocols.imprint.settings.code.naming import name_style, name_words
from clstream.protocols.imprint.settings.code.paraphrase import content_words, shares_content
from clstream.protocols.imprint.settings.code.synthetic import (
    CodeWorldConfig,
    SyntheticChangelog,
    write_library_wheels,
)
from clstream.protocols.imprint.settings.code.wheels import diff_surfaces, read_wheel

# the two releases' wheels, the changelog written with them and the dataset built from them
Library = tuple[Path, Path, SyntheticChangelog, Dataset]


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Library:
    root = tmp_path_factory.mktemp("code")
    old, new, changelog = write_library_wheels(CodeWorldConfig(seed=5), root)
    data = build_code_dataset(old, new, changelog.package, seed=5,
                              usage_dir=changelog.usage_dir, include_boundabs=True)
    return old, new, changelog, data


def test_families_and_golds(library: Library) -> None:
    _, _, changelog, data = library
    assert data.setting == "code" and data.instances() == ["all"]
    non_param = [e for e in changelog.added if e.kind != "parameter"]
    families = {f: [i for i in data.items if i.family == f] for f in
                ("DirAcq", "RefRes", "ImpRel", "CompRel", "BoundAbs")}
    # DirAcq as the paper's: every non-parameter feature, gold always Yes; nothing invented
    assert len(families["DirAcq"]) == len(non_param)
    assert all(i.gold == "Yes" and i.judge == "yesno" and "fictitious" not in i.meta
               for i in families["DirAcq"])
    assert all(i.judge == "identifier" for f in ("RefRes", "ImpRel", "CompRel")
               for i in families[f])
    assert all(i.judge == "abstain" and i.gold == "No" for i in families["BoundAbs"])
    assert families["BoundAbs"]
    golds = {i.meta["path"]: i.gold for i in families["RefRes"]}
    assert {e.path: e.leaf for e in non_param} == golds
    # ImpRel: one question per parent and kind, every new member of it accepted
    questions = [i.question for i in families["ImpRel"]]
    assert len(questions) == len(set(questions))
    expected: dict[str, set[str]] = {}
    for e in non_param:
        plural = {"function": "functions", "class": "classes", "method": "methods"}[e.kind]
        expected.setdefault(f"Which new {plural} are in {e.parent}?", set()).add(e.leaf)
    assert {i.question: set(i.golds) for i in families["ImpRel"]} == expected
    # every feature has at least one CompRel snippet, and twins exist
    assert {i.meta["path"] for i in families["CompRel"]} == changelog.added_paths
    assert any(i.axis == "no_import" for i in families["CompRel"])
    assert {i.meta["snippet_source"] for i in families["CompRel"]} == {"doctest", "tests", "usage"}


def test_diracq_is_answerable_from_its_article(library: Library) -> None:
    _, _, _, data = library
    docs = {d.doc_id: d for d in data.corpus}
    for item in data.items:
        if item.family == "BoundAbs":
            assert all(item.meta["fictitious"] not in d.text for d in data.corpus)
            continue
        text = " ".join(docs[d].text for d in item.source_doc_ids)
        paths = item.meta["paths"] if item.family == "ImpRel" else [item.meta["path"]]
        assert all(p in text for p in paths)
        path = paths[0]
        if item.family == "DirAcq":
            assert path in item.question
            sentence = next(s for s in text.splitlines() if s.endswith(f"at {path}."))
            assert "has a" in sentence
        if item.family in ("RefRes", "ImpRel"):
            assert all(re.search(rf"\b{re.escape(g)}\b", text) for g in item.golds)


def test_compositional_snippets_pass_the_gates(library: Library) -> None:
    _, new, changelog, data = library
    leaves = {e.path: e.leaf for e in changelog.added}
    for item in data.items:
        if item.family != "CompRel":
            continue
        code = item.question.split("\n\n", 1)[1]
        leaf = leaves[item.meta["path"]]
        assert MASK in code and no_residue(code, leaf)
        if item.axis is None:
            assert re.search(r"^\s*(import|from) quillkit", code, re.MULTILINE), code
        else:
            assert not re.search(r"[\w.]\." + re.escape(MASK), code)
            assert not any(MASK in line for line in code.splitlines()
                           if line.lstrip().startswith(("import ", "from ")))
    origins = {i.meta["origin"] for i in data.items if i.family == "CompRel"}
    # the homograph, the script defining the leaf and the script without the library are out
    assert not any(o.endswith(("homograph.py", "defines_its_own.py", "no_library.py"))
                   for o in origins)


def test_gate_rejections(library: Library) -> None:
    old, new, changelog, _ = library
    surface = read_wheel(new, changelog.package)
    features = diff_surfaces(read_wheel(old, changelog.package), surface).features
    function = next(f for f in features if f.kind == "function")
    assert mask_snippet("x = 1", function.leaf, parameter=False) == ("x = 1", 0)
    masked, count = mask_snippet(f"f(a, {function.leaf} = 2)", function.leaf, parameter=True)
    assert count == 1 and masked == f"f(a, {MASK}= 2)"
    assert not no_residue(f"{MASK}()  # see {function.leaf.upper()}", function.leaf)
    # the test named after the identifier is rejected by gate (c)
    snippets = usage_snippets(function, surface, changelog.usage_dir)
    assert all(not re.search(function.leaf, s.masked) for s in snippets)
    assert no_import_variant(f"import quillkit as qk\nimport os\nqk.text.{MASK}(1)\n") == \
        f"{MASK}(1)"
    assert no_import_variant(f"from quillkit.text import {MASK}\nimport os\n{MASK}(os.sep)") == \
        f"import os\n{MASK}(os.sep)"
    # an instance's method keeps its receiver: ``obj`` is no namespace
    assert no_import_variant(f"import quillkit as qk\nobj = qk.Loom()\nobj.{MASK}(1)\n") == \
        f"import quillkit as qk\nobj = qk.Loom()\nobj.{MASK}(1)"


def test_q_is_disjoint_and_references_hold(library: Library, tmp_path: Path) -> None:
    _, _, _, data = library
    check_disjoint(data.qa, data.items)
    assert len(data.qa) >= 4 * len(data.corpus)
    out = write_dataset(tmp_path / "ds", data)
    again = load_dataset(out)
    assert [i.item_id for i in again.items] == [i.item_id for i in data.items]
    assert again.manifest.counts["by_family"]["DirAcq"] == sum(
        1 for i in data.items if i.family == "DirAcq")


def test_seed_determinism() -> None:
    a = generate_code(CodeWorldConfig(seed=11))
    b = generate_code(CodeWorldConfig(seed=11))
    c = generate_code(CodeWorldConfig(seed=12))
    def dump(d: Dataset) -> list[dict[str, Any]]:
        return [x.model_dump() for x in (*d.corpus, *d.qa, *d.items)]

    assert dump(a) == dump(b)
    assert dump(a) != dump(c)
    assert not any(i.family == "BoundAbs" for i in a.items)


def test_bad_inputs_are_data_errors(library: Library, tmp_path: Path) -> None:
    old, new, _, _ = library
    junk = tmp_path / "junk.whl"
    junk.write_bytes(b"\x00garbage")
    with pytest.raises(DataError, match="junk.whl"):
        build_code_dataset(junk, new, "quillkit", seed=0)
    with pytest.raises(DataError, match="no package 'nothere'"):
        build_code_dataset(old, new, "nothere", seed=0)
    with pytest.raises(DataError, match="usage directory"):
        build_code_dataset(old, new, "quillkit", seed=0, usage_dir=tmp_path / "none")


def test_invented_names_follow_the_package_naming(library: Library) -> None:
    old, new, changelog, data = library
    surfaces = [read_wheel(old, changelog.package), read_wheel(new, changelog.package)]
    newer = surfaces[1]
    existing = {name for s in surfaces for r in s.records.values()
                for name in (r.path, r.leaf, *r.aliases)}
    existing |= {name.rsplit(".", 1)[-1] for s in surfaces for name in s.defined_names}
    features = {e.path: e for e in changelog.added}
    namespaces = set(newer.modules) | {p for p, r in newer.records.items() if r.kind == "class"}
    invented = [i for i in data.items if i.family == "BoundAbs"]
    assert invented
    for item in invented:
        path = item.meta["fictitious"]
        parent, leaf = path.rsplit(".", 1)
        real = features[data.corpus[int(item.source_doc_ids[0].rsplit("-", 1)[1])].meta["path"]]
        assert parent == real.parent and parent in namespaces  # a real namespace of release 2
        assert path not in existing and leaf not in existing  # in neither release
        siblings = sibling_leaves(real.kind, real.parent, newer)
        # the kind of its siblings, their casing, word count and vocabulary at each place
        assert f"a {real.kind} at {path}?" in item.question
        assert name_style(leaf) == name_style(real.leaf)
        words = name_words(leaf)
        assert len(words) == len(name_words(real.leaf))
        for i, word in enumerate(words):
            assert any(len(name_words(s)) > i and name_words(s)[i] == word for s in siblings)


def _code_words(code: str) -> list[tuple[str, str]]:
    """(token, word) for every word of the comments, strings and names of ``code``."""
    tokens = tokenize.generate_tokens(io.StringIO(code.replace(MASK, "__hidden__")).readline)
    return [(tok.string, w) for tok in tokens
            if tok.type in (tokenize.COMMENT, tokenize.STRING, tokenize.NAME)
            for w in re.findall(r"[a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", tok.string)
                                .lower())]


def test_masked_items_are_not_answerable_from_the_call_alone(library: Library) -> None:
    _, _, changelog, data = library
    entries = {e.path: e for e in changelog.added}
    comprel = [i for i in data.items if i.family == "CompRel"]
    assert comprel
    for item in comprel:
        head, code = item.question.split("\n\n", 1)
        entry = entries[item.meta["path"]]
        leaf_words = {w for w in re.split(r"_|(?<=[a-z])(?=[A-Z])", entry.leaf.lower())
                      if len(w) >= 3}
        call = {"qk", *entry.parent.split(".")}  # the masked reference's own namespace
        for token, word in _code_words(code):
            if token in call or token == "__hidden__":
                continue
            assert word.rstrip("s") not in {w.rstrip("s") for w in leaf_words}, (token, code)
        quoted = re.findall(r'"([^"]*)"', head)
        assert all(not (set(re.findall(r"[a-z]+", q.lower())) & leaf_words) for q in quoted)


def test_refres_descriptions_quote_nothing_of_the_docstring(library: Library) -> None:
    _, _, _, data = library
    docs = {d.doc_id: d.text.split("Documentation:\n", 1)[1] for d in data.corpus}
    refres = [i for i in data.items if i.family == "RefRes"]
    assert refres
    for item in refres:
        description = item.meta["description"]
        assert description in item.question
        assert not shares_content(description, docs[item.source_doc_ids[0]]), item.question
        assert not content_words(description) & distinctive_words(str(item.gold))
    # the fictional library's summaries are all covered by the lexicon
    assert {i.meta["written"] for i in refres} == {"reworded"}
    assert data.manifest.config["pipeline"]["writer"] is None
    assert set(data.manifest.config["pipeline"]["template_families"]) == {"RefRes", "CompRel"}


def test_no_comprel_item_repeats_a_refres_item(library: Library) -> None:
    _, _, _, data = library
    refres = [i for i in data.items if i.family == "RefRes"]
    comprel = [i for i in data.items if i.family == "CompRel"]
    for item in comprel:
        head = item.question.split("\n\n", 1)[0]
        assert not any(r.meta["description"] in item.question for r in refres)
        assert '"' not in head  # no documentation sentence is quoted
        # the snippet calls the API with a page of text, not a placeholder
        assert '("abc")' not in item.question


def test_giveaway_scripts_are_rewritten_or_rejected(library: Library) -> None:
    _, _, changelog, data = library
    scripts = {p.name for p in changelog.usage_dir.iterdir()}
    assert any(s.endswith("_note.py") for s in scripts)
    assert any(s.endswith("_named.py") for s in scripts)
    comprel = [i for i in data.items if i.family == "CompRel"]
    origins = {i.meta["origin"] for i in comprel}
    # the comment is cut and the snippet kept; the variable named after the noun is not
    assert any(o.endswith("_note.py") for o in origins)
    assert not any(o.endswith("_named.py") for o in origins)
    assert all("#" not in i.question for i in comprel if i.meta["origin"].endswith("_note.py"))
    # the card counts what the gates turned down: at least the four negative-control scripts
    assert data.manifest.config["pipeline"]["removed"]["CompRel"]["snippet_gates"] >= 4


def test_a_wheel_between_changes_no_feature_it_does_not_have(library: Library) -> None:
    """A release in between that lacks every feature (here: the old one again) dates each by
    the newer wheel, so the dataset's items are the two-wheel dataset's."""
    old, new, changelog, data = library
    between = build_code_dataset(old, new, changelog.package, seed=5,
                                 usage_dir=changelog.usage_dir, include_boundabs=True,
                                 between_wheels=[old])
    assert between.items == data.items and between.corpus == data.corpus
    assert between.manifest.config["between_wheels"] == [old.name]
