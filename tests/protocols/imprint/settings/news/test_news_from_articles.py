"""World-news items from local articles through a scripted model (brief §3.1(b))."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from clstream.core.contracts import Model
from clstream.core.errors import DataError
from clstream.core.types import GenerationRequest, GenerationResult, Sample
from clstream.models.tokenizers import approx_tokenizer
from clstream.protocols.imprint.schema import check_disjoint, load_dataset, write_dataset
from clstream.protocols.imprint.settings.news.from_articles import (
    ArticleEvent,
    cluster_events,
    drop_near_duplicates,
    load_local_news,
    read_articles,
    strip_boilerplate,
)

BODY = {
    "a1": ("Lena Ortiz became chief executive of Halvern Foods on 2 March 2031, replacing "
           "Tom Reyes. Before that, Ortiz was the finance director of Halvern Foods. Halvern "
           "Foods is based in Marlow."),
    "a2": ("Halvern Foods shares rose after Lena Ortiz took over as chief executive of "
           "Halvern Foods. Investors welcomed the change at Halvern Foods in Marlow."),
    "a3": ("The Marlow council raised the parking fee from 2 crowns to 3 crowns on 14 March "
           "2031. Council leader Ada Brink said the change would fund new buses."),
    "a4": ("Lena Ortiz became chief executive of Halvern Foods on 2 March 2031, replacing "
           "Tom Reyes. Before that, Ortiz was the finance director of Halvern Foods. Halvern "
           "Foods is based in Marlow today."),
    "a5": ("Northway Rail opened a new line between Marlow and Dunby on 25 March 2031. The "
           "line cuts the trip to forty minutes."),
}
CHROME = "Home | World | Business | Sport\nSubscribe to our newsletter for more"


def _articles() -> list[dict[str, Any]]:
    dates = {"a1": "2031-03-02", "a2": "2031-03-04", "a3": "2031-03-14", "a4": "2031-03-05",
             "a5": "2031-03-25"}
    titles = {"a1": "Ortiz named Halvern Foods chief executive",
              "a2": "Halvern Foods chief executive Ortiz welcomed by investors",
              "a3": "Marlow raises parking fee", "a4": "Ortiz takes over at Halvern Foods",
              "a5": "Northway Rail opens Marlow line"}
    return [{"id": k, "date": dates[k], "title": titles[k], "text": f"{CHROME}\n{v}\n{CHROME}",
             "url": f"https://example.org/{k}", "tags": ["local"]} for k, v in BODY.items()]


def _write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _canned(family: str, doc: str) -> str:
    """The scripted reply for one family and article (a3's DirAcq reply is malformed)."""
    if family == "dir_acq":
        if doc == "a3":
            return "Sure! Here are some questions: [not json"
        first = BODY[doc].split(". ")[0]
        return json.dumps({"claims": [
            {"question": f"In March 2031, is it true that {first.lower()} ({doc})?",
             "answer": "Yes", "evidence": first},
            {"question": f"In March 2031, is it false that {first.lower()} ({doc})?",
             "answer": "No", "evidence": first},
            {"question": f"Extra yes claim about {doc}?", "answer": "Yes", "evidence": first},
            {"question": f"Ungrounded claim about {doc}?", "answer": "No",
             "evidence": "A sentence the article never had."}]})
    if family == "temp_upd":
        if doc == "a1":
            return json.dumps({"updates": [{
                "kind": "entity", "subject": "chief executive of Halvern Foods",
                "before": "Tom Reyes", "after": "Lena Ortiz", "date": "2031-03-02",
                "after_prior_role": "finance director of Halvern Foods"}]})
        if doc == "a3":
            return "```json\n" + json.dumps({"updates": [{
                "kind": "value", "subject": "parking fee in Marlow", "before": "2 crowns",
                "after": "3 crowns", "date": "2031-03-14"}]}) + "\n```"
        return json.dumps({"updates": []})
    if family == "comp_rel":
        return json.dumps({"questions": [
            {"question": f"In which town is the company led by Lena Ortiz based ({doc})?",
             "answer": "Marlow", "hops": 2, "kind": "chain"},
            {"question": f"Bad hop count ({doc})?", "answer": "Marlow", "hops": 9,
             "kind": "chain"}]})
    if family == "imp_rel":
        heads = {"a1": "Lena Ortiz takes over Halvern Foods",
                 "a2": "Halvern Foods leadership change welcomed",
                 "a3": "Marlow raises its parking fee", "a5": "Northway Rail opens Marlow line"}
        category = "business changes" if doc in ("a1", "a2") else "local decisions"
        return json.dumps({"headline": heads[doc], "category": category, "scope": "Marlow",
                           "entities": ["Halvern Foods", "Lena Ortiz"] if doc in ("a1", "a2")
                           else ["Marlow"]})
    if family == "qa":
        return json.dumps({"pairs": [
            {"question": f"What happened in article {doc}?", "answer": "A change."},
            {"question": "In which town is the company led by Lena Ortiz based (a1)?",
             "answer": "Marlow"}]})
    return json.dumps({"candidates": [
        {"strategy": "actor-action", "question": "Did Lena Ortiz resign from the Halvern "
         "Foods board in March 2031?", "predicate": "resigned from the board"},
        {"strategy": "sub-event", "question": "Was there a strike at Halvern Foods?",
         "predicate": "strike at Halvern Foods"},
        {"strategy": "quote", "question": "Did Ortiz call Halvern Foods a family?",
         "predicate": "a family"},
        {"strategy": "consequence", "question": "Did the change lead to layoffs in Marlow?",
         "predicate": "new buses"},  # stated in a3: dropped
        {"strategy": "rumour", "question": "Unknown strategy?", "predicate": "x"}]})


class ScriptedModel:
    """A Model returning canned JSON keyed by the request key; counts the requests it gets."""

    name = "scripted-news"

    def __init__(self) -> None:
        self.tokenizer = approx_tokenizer()
        self.requests: list[GenerationRequest] = []

    def describe(self) -> dict[str, Any]:
        return {"backend": "test", "name": self.name}

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        self.requests.extend(requests)
        out = []
        for request in requests:
            _, family, doc = request.key.split("/")
            assert request.messages[0].role == "system"
            assert request.messages[1].role == "user"
            out.append(GenerationResult(key=request.key, samples=[Sample(text=_canned(family,
                                                                                  doc))]))
        return out


@pytest.fixture
def fixture_file(tmp_path: Path) -> Path:
    return _write(tmp_path / "articles.jsonl", _articles())


def test_cleaning_steps(fixture_file: Path) -> None:
    articles = read_articles(fixture_file)
    cleaned, dropped = strip_boilerplate(articles)
    assert dropped == 4 * len(articles)
    assert all("Subscribe" not in a.text and "|" not in a.text for a in cleaned)
    kept, duplicates = drop_near_duplicates(cleaned, 0.8)
    assert duplicates == 1 and [a.doc_id for a in kept] == ["a1", "a2", "a3", "a5"]


def test_end_to_end_with_cache(fixture_file: Path, tmp_path: Path) -> None:
    model = ScriptedModel()
    assert isinstance(model, Model)
    cache = tmp_path / "replies.json"
    data = load_local_news(fixture_file, model, seed=5, cache_path=cache)
    assert len(model.requests) == 4 * 5 + 3  # five families x four articles, three clusters
    pipeline = data.manifest.config["pipeline"]
    assert pipeline["near_duplicates"] == 1
    assert pipeline["bad_outputs"] == {"dir_acq": 1}
    assert pipeline["qa_pairs_dropped_as_test_questions"] == 4
    families = Counter(i.family for i in data.items)
    assert set(families) == {"DirAcq", "TempUpd", "CompRel", "ImpRel", "BoundAbs"}
    diracq = [i for i in data.items if i.family == "DirAcq"]
    assert Counter(i.gold for i in diracq) == {"Yes": 3, "No": 3}
    axes = Counter(i.axis for i in data.items if i.family == "TempUpd")
    assert axes == {"forward": 2, "negation": 2, "prior": 1, "backward": 1}
    forward = next(i for i in data.items if i.axis == "forward" and "post" in i.question)
    assert forward.gold == "Lena Ortiz" and forward.gold_before == "Tom Reyes"
    assert {i.axis for i in data.items if i.family == "CompRel"} == {"hop2"}
    imprel = sorted((i for i in data.items if i.family == "ImpRel"),
                    key=lambda i: -i.meta["salience"])
    assert [i.meta["salience"] for i in imprel] == [2, 1, 1]
    assert imprel[0].source_doc_ids == ["a1", "a2"] and "early March 2031" in imprel[0].question
    boundabs = [i for i in data.items if i.family == "BoundAbs"]
    assert len(boundabs) == 3  # same candidates for every cluster: kept once; one grounded
    assert {i.meta["strategy"] for i in boundabs} == {"actor-action", "sub-event", "quote"}
    assert all(i.judge == "abstain" and not i.source_doc_ids for i in boundabs)
    check_disjoint(data.qa, data.items)
    write_dataset(tmp_path / "out", data)
    assert len(load_dataset(tmp_path / "out").items) == len(data.items)

    again = ScriptedModel()
    second = load_local_news(fixture_file, again, seed=5, cache_path=cache)
    assert again.requests == []
    assert second.manifest.config["pipeline"]["cache_hits"] == 23
    assert [i.model_dump() for i in second.items] == [i.model_dump() for i in data.items]
    other_seed = ScriptedModel()
    load_local_news(fixture_file, other_seed, seed=6, cache_path=cache)
    assert len(other_seed.requests) == 23  # decoding seed is part of the cache key


def test_failed_requests_are_counted_not_cached(fixture_file: Path, tmp_path: Path) -> None:
    class Failing(ScriptedModel):
        async def generate(self, requests: Sequence[GenerationRequest]
                           ) -> list[GenerationResult]:
            self.requests.extend(requests)
            return [GenerationResult(key=r.key, error="server down") for r in requests]

    model = Failing()
    data = load_local_news(fixture_file, model, cache_path=tmp_path / "c.json")
    assert data.items == [] and data.manifest.config["pipeline"]["failed_requests"] == 20
    assert json.loads((tmp_path / "c.json").read_text())["entries"] == {}


@pytest.mark.parametrize(("row", "field"), [
    ({"id": "b", "date": "March 3", "title": "t", "text": "x"}, "date"),
    ({"id": "b", "date": "2031-03-03", "title": "t"}, "text"),
    ({"id": "a1", "date": "2031-03-03", "title": "t", "text": "x"}, "id"),
    ({"id": "b", "date": "2031-03-03", "title": "t", "text": "x", "tags": "news"}, "tags"),
])
def test_malformed_line_names_file_line_and_field(tmp_path: Path, row: dict[str, Any],
                                                  field: str) -> None:
    path = _write(tmp_path / "bad.jsonl", [_articles()[0], row])
    with pytest.raises(DataError) as caught:
        load_local_news(path, ScriptedModel(), cache_path=tmp_path / "c.json")
    assert caught.value.field == field and caught.value.record == "line 2"
    assert str(path) in str(caught.value)


def test_not_json_line_is_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a"}\n{not json\n', encoding="utf-8")
    with pytest.raises(DataError, match=re.escape(str(path))):
        read_articles(path)


def test_entities_join_clusters_within_a_period() -> None:
    def event(doc: str, date: str) -> ArticleEvent:
        return ArticleEvent(doc, date, f"headline {doc}", "events", "Marlow", [])

    events = [event("x", "2031-03-02"), event("y", "2031-03-08"), event("z", "2031-03-15")]
    titles = {"x": "Council vote", "y": "Harbour reopens", "z": "Harbour plans"}
    texts = {k: "Ada Brink and the Marlow council met." for k in titles}
    alone = cluster_events(events, titles, {}, texts)
    assert sorted(len(g) for g in alone) == [1, 1, 1]
    table = {"Ada Brink": ["Ada Brink"], "Marlow council": ["Marlow council"]}
    joined = cluster_events(events, titles, table, texts)
    assert [[e.doc_id for e in g] for g in joined] == [["x", "y"], ["z"]]  # z: mid March


def test_entities_file_is_read_and_checked(fixture_file: Path, tmp_path: Path) -> None:
    entities = _write(tmp_path / "entities.jsonl", [
        {"name": "Marlow", "type": "place", "aliases": ["Marlow town"], "facts": {}},
        {"name": "Halvern Foods", "type": "company", "aliases": []}])
    data = load_local_news(fixture_file, ScriptedModel(), cache_path=tmp_path / "c.json",
                           entities_path=entities)
    sizes = sorted(i.meta["salience"] for i in data.items if i.family == "ImpRel")
    assert sizes == [1, 1, 2]  # a3 and a5 fall in other thirds of the month
    bad = _write(tmp_path / "bad_entities.jsonl", [{"name": "", "aliases": []}])
    with pytest.raises(DataError, match="name"):
        load_local_news(fixture_file, ScriptedModel(), cache_path=tmp_path / "c.json",
                        entities_path=bad)


class RegisteredScripted(ScriptedModel):
    """The scripted model as the command line builds it (``--model scripted-news``)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()


def test_generate_from_articles_on_the_command_line(fixture_file: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from clstream.cli import main
    from clstream.core import registry
    from clstream.protocols.imprint.schema import load_dataset

    registry.register("model", "scripted-news", f"{__name__}:RegisteredScripted")
    try:
        out = tmp_path / "data"
        argv = ["generate", "imprint", "--setting", "news", "--articles", str(fixture_file),
                "--model", "scripted-news", "--out", str(out)]
        assert main(argv) == 0
        data = load_dataset(out)
        assert data.items and {i.family for i in data.items} >= {"DirAcq", "BoundAbs"}
        assert (out / "question_cache.json").exists()
        capsys.readouterr()
        assert main(["run", "imprint", str(out), "--system", "oracle", "--samples", "1",
                     "--out", str(tmp_path / "results"), "--no-progress"]) == 0
    finally:
        registry.unregister("model", "scripted-news")


def test_imprel_scored_against_the_clusters_own_events(fixture_file: Path,
                                                       tmp_path: Path) -> None:
    from clstream.protocols.imprint.judging import judge_exact

    data = load_local_news(fixture_file, ScriptedModel(), cache_path=tmp_path / "c.json")
    imprel = [i for i in data.items if i.family == "ImpRel"]
    assert len(imprel) == 3
    titles = {a["id"]: a["title"] for a in _articles()}
    for item in imprel:
        heads = {json.loads(_canned("imp_rel", d))["headline"] for d in item.source_doc_ids}
        assert set(item.golds) <= heads | {titles[d] for d in item.source_doc_ids}
        assert item.golds[0] in heads
        for wrong in ("Nothing notable happened in Marlow.", "Marlow.", "Halvern Foods.",
                      "Lena Ortiz.", "I don't know.", "No record of any such event."):
            assert not judge_exact(item, wrong).correct, (item.question, wrong)
        assert judge_exact(item, f"{item.golds[0]}.").correct


def test_imprel_golds_drop_places_entities_and_abstentions() -> None:
    from clstream.protocols.imprint.settings.news.from_articles import imp_rel_golds

    group = [ArticleEvent("x", "2031-03-02", "Marlow", "events", "Marlow", ["Ada Brink"]),
             ArticleEvent("y", "2031-03-03", "Ada Brink in Marlow", "events", "Marlow",
                          ["Ada Brink"]),
             ArticleEvent("z", "2031-03-04", "No major news", "events", "Marlow", []),
             ArticleEvent("w", "2031-03-05", "Marlow council closes the harbour", "events",
                          "Marlow", ["Marlow council"])]
    titles = {"x": "Marlow", "y": "Ada Brink", "z": "Quiet week", "w": "Harbour closed"}
    golds = imp_rel_golds(group, titles, {}, "What major events happened in Marlow in early "
                                             "March 2031?")
    assert golds == ["Marlow council closes the harbour", "Harbour closed"]
