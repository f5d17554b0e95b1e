"""The seeded world-news generator (brief §3.1(a) invariants; SPECS §4)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from clstream.core.errors import SpecError
from clstream.protocols.imprint.schema import (
    Dataset,
    check_disjoint,
    load_dataset,
    question_key,
    write_dataset,
)
from clstream.protocols.imprint.settings.news import generate
from clstream.protocols.imprint.settings.news.articles import sentence_split
from clstream.protocols.imprint.settings.news.generate import NewsConfig, generate_news
from clstream.protocols.imprint.settings.news.ledger import NewsLedger, period_of, shift_period
from clstream.retrieval.bm25 import tokenize

FILES = ("manifest.json", "corpus.jsonl", "qa.jsonl", "items.jsonl", "ledger.jsonl")


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Dataset]:
    root = tmp_path_factory.mktemp("news") / "default"
    write_dataset(root, generate_news(NewsConfig()))
    return root, load_dataset(root)


def test_same_config_writes_identical_bytes(tmp_path: Path) -> None:
    write_dataset(tmp_path / "a", generate_news(NewsConfig(seed=7)))
    write_dataset(tmp_path / "b", generate_news(NewsConfig(seed=7)))
    for name in FILES:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    write_dataset(tmp_path / "c", generate_news(NewsConfig(seed=8)))
    assert (tmp_path / "a" / "corpus.jsonl").read_bytes() != (
        tmp_path / "c" / "corpus.jsonl").read_bytes()


def test_default_world_size() -> None:
    data = generate_news(NewsConfig(seed=3))
    assert 40 <= len(data.corpus) <= 80
    assert 150 <= len(data.items) <= 300
    per_article = len(data.qa) / len(data.corpus)
    assert 15 <= per_article <= 25
    assert data.manifest.setting == "news" and data.instances() == ["all"]


@pytest.mark.parametrize("seed", [0, 1, 2, 11])
def test_every_reported_family_present(seed: int) -> None:
    data = generate_news(NewsConfig(seed=seed))
    families = Counter(i.family for i in data.items)
    assert set(families) == {"DirAcq", "TempUpd", "CompRel", "ImpRel", "BoundAbs"}
    axes = {i.axis for i in data.items if i.family == "TempUpd"}
    assert axes == {"forward", "negation", "prior", "backward"}
    hops = {i.axis for i in data.items if i.family == "CompRel"}
    assert hops == {"hop2", "hop3", "hop4"}
    kinds = {i.meta["kind"] for i in data.items if i.family == "CompRel"}
    assert kinds == {"chain", "counterfactual", "temporal", "alias"}
    strategies = Counter(i.meta["strategy"] for i in data.items if i.family == "BoundAbs")
    assert set(strategies) == {"actor-action", "sub-event", "quote", "consequence"}


def test_missing_family_is_a_spec_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generate, "imp_rel", lambda *args: None)
    with pytest.raises(SpecError, match="no ImpRel items"):
        generate_news(NewsConfig())


@pytest.mark.parametrize("bad", [{"n_places": 1}, {"start": "soon"}, {"days": 3},
                                 {"articles_per_event": (2, 1)}, {"n_people": 5}])
def test_bad_config_is_a_spec_error(bad: dict[str, Any]) -> None:
    with pytest.raises(SpecError, match="news config"):
        generate_news(NewsConfig(**bad))


def test_every_gold_rederived_from_the_written_ledger(written: tuple[Path, Dataset]) -> None:
    _, data = written
    ledger = NewsLedger(data.ledger)
    for item in data.items:
        assert item.gold == ledger.derive(item.meta["query"]), item.item_id


def _holder(records: list[dict[str, Any]], role: str, date: str) -> str:
    """Who held ``role`` on ``date``, read straight from the records (independent of
    NewsLedger)."""
    holder = next(r["holder"] for r in records if r["kind"] == "role" and r["id"] == role)
    changes = sorted((r["date"], r["new"]) for r in records if r["kind"] == "event"
                     and r["type"] == "role_change" and r["role"] == role)
    for day, new in changes:
        if day <= date:
            holder = new
    return str(holder)


def test_tempupd_golds_match_a_direct_reading_of_the_ledger(
        written: tuple[Path, Dataset]) -> None:
    _, data = written
    names = {r["id"]: r["name"] for r in data.ledger if r["kind"] == "entity"}
    values = {r["id"]: r["value"] for r in data.ledger if r["kind"] == "quantity"}
    for item in data.items:
        query = item.meta["query"]
        if item.family == "TempUpd" and query["op"] == "holder":
            now = names[_holder(data.ledger, query["role"], query["date"])]
            assert item.golds[0] == now and now not in item.stale_golds
        if item.family == "TempUpd" and query["op"] == "value":
            changes = sorted((r["date"], r["new"]) for r in data.ledger if r["kind"] == "event"
                             and r.get("quantity") == query["quantity"])
            value = values[query["quantity"]]
            for day, new in changes:
                value = new if day <= query["date"] else value
            assert item.golds[1] == value
        if item.family == "TempUpd" and item.axis == "negation":
            assert item.gold == "No" and item.gold_before == "Yes"


def test_diracq_claims_checked_against_events_and_balanced(written: tuple[Path, Dataset]) -> None:
    _, data = written
    events = [r for r in data.ledger if r["kind"] == "event"]
    diracq = [i for i in data.items if i.family == "DirAcq"]
    for item in diracq:
        claim = item.meta["query"]["claim"]
        fields = {k: v for k, v in claim.items() if k not in ("type", "from", "to")}
        holds = any(e["type"] == claim["type"] and claim["from"] <= e["date"] <= claim["to"]
                    and all(e.get(k) == v for k, v in fields.items()) for e in events)
        assert item.gold == ("Yes" if holds else "No"), item.question
        assert item.judge == "yesno"
        assert (item.meta["swap"] is None) == holds
    yes = sum(1 for i in diracq if i.gold == "Yes")
    assert abs(yes / len(diracq) - 0.5) <= 0.05


def test_aliases_resolve_to_one_entity(written: tuple[Path, Dataset]) -> None:
    _, data = written
    owners: dict[str, set[str]] = {}
    for r in data.ledger:
        if r["kind"] == "entity":
            for alias in [r["name"], *r["aliases"]]:
                owners.setdefault(alias.casefold(), set()).add(r["id"])
    assert all(len(ids) == 1 for ids in owners.values())
    people = [r for r in data.ledger if r["kind"] == "entity" and r["type"] == "person"]
    assert all(len(p["aliases"]) == 3 for p in people)


def test_boundabs_predicates_appear_nowhere(written: tuple[Path, Dataset]) -> None:
    _, data = written
    text = "\n".join(d.text + d.title for d in data.corpus).casefold()
    pairs = "\n".join(p.question + p.answer for p in data.qa).casefold()
    ledger = repr(data.ledger).casefold()
    boundabs = [i for i in data.items if i.family == "BoundAbs"]
    for item in boundabs:
        predicate = item.meta["predicate"].casefold()
        assert predicate not in text and predicate not in pairs and predicate not in ledger
        assert item.judge == "abstain" and item.source_doc_ids == []
        assert item.golds[0].startswith("No record")
        assert 0 <= item.meta["difficulty"] <= 5


def _content(text: str) -> set[str]:
    return set(tokenize(text))


def test_supporting_sentence_in_a_source_doc(written: tuple[Path, Dataset]) -> None:
    _, data = written
    docs = {d.doc_id: d for d in data.corpus}
    for item in data.items:
        if item.family == "BoundAbs":
            continue
        assert item.source_doc_ids, item.item_id
        sentences = []
        for doc_id, index in item.meta["support"]:
            assert doc_id in item.source_doc_ids
            doc = docs[doc_id]
            assert any(i == index for i, _ in doc.meta["facts"])
            sentences.append(sentence_split(doc.text)[index])
        shared = max(len(_content(item.question) & _content(s)) for s in sentences)
        assert shared >= 2, (item.question, sentences)
        if item.judge == "exact":
            assert any(g in s for g in item.golds for s in sentences), (item.question,
                                                                        item.golds, sentences)


def test_articles_follow_their_events(written: tuple[Path, Dataset]) -> None:
    _, data = written
    dates = {r["id"]: r["date"] for r in data.ledger if r["kind"] == "event"}
    assert [d.date for d in data.corpus] == sorted(d.date for d in data.corpus)
    for doc in data.corpus:
        assert doc.kind == "article" and doc.title
        for _, fact in doc.meta["facts"]:
            if fact in dates:
                assert dates[fact] <= doc.date, (doc.doc_id, fact)
        assert len(sentence_split(doc.text)) > max(i for i, _ in doc.meta["facts"])


def test_training_pairs_disjoint_from_items(written: tuple[Path, Dataset]) -> None:
    _, data = written
    check_disjoint(data.qa, data.items)
    tests = {question_key(i.question) for i in data.items}
    assert not tests & {question_key(p.question) for p in data.qa}
    assert {p.doc_id for p in data.qa} == {d.doc_id for d in data.corpus}


def test_imprel_one_per_arc_with_salience(written: tuple[Path, Dataset]) -> None:
    _, data = written
    arcs = {r["id"]: r for r in data.ledger if r["kind"] == "arc"}
    imprel = [i for i in data.items if i.family == "ImpRel"]
    assert len({i.meta["arc"] for i in imprel}) == len(imprel) == len(arcs)
    for item in imprel:
        arc = arcs[item.meta["arc"]]
        assert item.meta["salience"] == arc["salience"] == sum(
            1 for d in data.corpus if d.meta["arc"] == arc["id"])
        assert arc["period"] in item.question and item.golds[0] == arc["title"]


def test_periods_and_shifts() -> None:
    assert period_of("2030-02-03") == ("2030-02-01", "2030-02-10", "early February 2030")
    assert period_of("2030-02-28")[2] == "late February 2030"
    assert shift_period("2030-02-25", 1) == "2030-03-01"
    assert shift_period("2030-01-05", -1) == "2029-12-21"
