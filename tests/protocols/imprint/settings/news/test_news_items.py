"""Each news family tests what it names (docs/imprint.md §4.1): ImpRel needs more than one
sentence, every alias a question uses occurs in an earlier article, no dated item falls on the
day of the change it asks about."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest

from clstream.protocols.imprint.schema import Dataset, Item
from clstream.protocols.imprint.settings.news.articles import sentence_split
from clstream.protocols.imprint.settings.news.generate import NewsConfig, generate_news
from clstream.protocols.imprint.settings.news.ledger import NewsLedger, period_of, spoken_date

# The default world and the command line's --size small world.
SMALL = NewsConfig(seed=1, n_people=16, n_orgs=8, n_roles=4, n_quantities=3, days=21,
                   n_deals=3, n_launches=2, n_votes=2, qa_per_article=8)


@pytest.fixture(scope="module", params=["default", "small"])
def data(request: pytest.FixtureRequest) -> Dataset:
    return generate_news(NewsConfig() if request.param == "default" else SMALL)


def _days(lo: str, hi: str) -> list[str]:
    start, end = dt.date.fromisoformat(lo), dt.date.fromisoformat(hi)
    return [(start + dt.timedelta(days=n)).isoformat() for n in range((end - start).days + 1)]


def _units(data: Dataset) -> list[tuple[str, str]]:
    """(date, text) of every sentence of the corpus, and of every title read with its date."""
    out = [(d.date, s) for d in data.corpus for s in sentence_split(d.text)]
    return out + [(d.date, f"{d.title} ({d.date})") for d in data.corpus]


def test_no_sentence_answers_an_imprel_question_alone(data: Dataset) -> None:
    ledger = NewsLedger(data.ledger)
    units = [text.casefold() for _, text in _units(data)]
    imprel = [i for i in data.items if i.family == "ImpRel"]
    assert imprel
    for item in imprel:
        arc = ledger.arcs[item.meta["arc"]]
        lo, hi, label = period_of(ledger.events[arc["events"][0]]["date"])
        assert label == arc["period"]
        cues = [label] + [c for day in _days(lo, hi) for c in (day, spoken_date(day))]
        region = ledger.name(arc["region"]).casefold()
        golds = [g.casefold() for g in item.golds]
        for text in units:
            alone = (any(g in text for g in golds) and region in text
                     and any(c.casefold() in text for c in cues))
            assert not alone, (item.question, text)
        assert len({tuple(s) for s in item.meta["support"]}) >= 2, item.question


def _question_date(item: Item, corpus_end: str) -> str:
    found = re.search(r"\d{4}-\d{2}-\d{2}", item.question)
    return found.group(0) if found else (dt.date.fromisoformat(corpus_end)
                                         + dt.timedelta(days=1)).isoformat()


def _aliases_in(question: str, forms: list[tuple[str, str, bool]]) -> list[str]:
    """The aliases (not full names) a question names, longest form first so that a surname
    inside a full name, or an organisation inside a former post, is not counted."""
    found = []
    for form, _, is_alias in forms:
        pattern = rf"(?<![\w]){re.escape(form)}(?![\w])"
        if re.search(pattern, question, flags=re.IGNORECASE):
            if is_alias:
                found.append(form)
            question = re.sub(pattern, "#", question, flags=re.IGNORECASE)
    return found


def test_every_alias_in_a_question_occurs_in_an_earlier_article(data: Dataset) -> None:
    ledger = NewsLedger(data.ledger)
    forms = sorted(((form, r["id"], form != r["name"]) for r in data.ledger
                    if r["kind"] == "entity" for form in [r["name"], *r["aliases"]]),
                   key=lambda f: (-len(f[0]), f[0]))
    corpus_end = max(d.date for d in data.corpus)
    used = 0
    for item in data.items:
        when = _question_date(item, corpus_end)
        for alias in _aliases_in(item.question, forms):
            used += 1
            owners = {owner for form, owner, _ in forms if form.casefold() == alias.casefold()}
            assert owners == {ledger.resolve(alias)}, alias
            pattern = rf"(?<![\w]){re.escape(alias)}(?![\w])"
            earlier = [text for date, text in _units(data)
                       if date < when and re.search(pattern, text, flags=re.IGNORECASE)]
            assert earlier, (item.question, alias)
    assert used >= 8


def _changes(data: Dataset) -> dict[str, set[str]]:
    """Role or quantity id -> the dates it changed."""
    out: dict[str, set[str]] = {}
    for r in data.ledger:
        if r["kind"] == "event" and r["type"] in ("role_change", "value_change"):
            out.setdefault(r.get("role") or r["quantity"], set()).add(r["date"])
    return out


def _minus_day(date: str) -> str:
    return (dt.date.fromisoformat(date) - dt.timedelta(days=1)).isoformat()


def test_no_dated_item_falls_on_the_day_of_its_change(data: Dataset) -> None:
    ledger = NewsLedger(data.ledger)
    changes = _changes(data)
    dated = 0
    for item in data.items:
        query: dict[str, Any] = item.meta.get("query", {})
        if query.get("op") == "holder_at_event":
            dated += 1
            day = ledger.events[query["event"]]["date"]
            assert day not in changes[query["role"]], item.question
        elif "date" in query and query["op"] != "without_change":
            dated += 1
            # A change on the day itself is the only way the gold can differ from the day
            # before's: the state that day would hang on the hour of the change.
            before = ledger.derive({**query, "date": _minus_day(query["date"])})
            assert ledger.derive(query) == before, item.question
    assert dated >= 10


def test_alias_items_name_where_the_alias_is_read(data: Dataset) -> None:
    docs = {d.doc_id: d for d in data.corpus}
    alias_items = [i for i in data.items if i.meta.get("query", {}).get("op") == "alias_attr"]
    assert alias_items
    for item in alias_items:
        alias = item.meta["query"]["alias"]
        sentences = [sentence_split(docs[d].text)[i] for d, i in item.meta["support"]]
        assert any(alias.casefold() in s.casefold() for s in sentences), item.question


_PERIOD = re.compile(r"\b(early|mid|late) (January|February|March|April|May|June|July|August|"
                     r"September|October|November|December) (\d{4})\b")


def _period_middle(word: str, month: str, year: str) -> str:
    number = dt.datetime.strptime(month, "%B").month
    day = {"early": 5, "mid": 15, "late": 25}[word]
    return dt.date(int(year), number, day).isoformat()


def test_dated_items_ask_inside_the_corpus_window(data: Dataset) -> None:
    """Every date and period a question names lies inside the window the articles cover, so
    no "No" is given away by a date the corpus never reaches (App. D.1 item 1: one element
    swapped, the rest of the claim as reported)."""
    dates = sorted(d.date for d in data.corpus)
    lo, hi = dates[0], dates[-1]
    swaps = {"date": 0}
    for item in data.items:
        for day in re.findall(r"\d{4}-\d{2}-\d{2}", item.question):
            assert lo <= day <= hi, (item.item_id, item.question)
        if item.family == "BoundAbs":
            continue
        for word, month, year in _PERIOD.findall(item.question):
            middle = _period_middle(word, month, year)
            assert period_of(lo)[0] <= middle <= hi, (item.item_id, item.question)
        if item.family == "DirAcq" and item.meta.get("swap") == "date":
            swaps["date"] += 1
            claim = item.meta["query"]["claim"]
            assert lo <= _period_middle(*period_of(claim["from"])[2].split()) <= hi
    assert swaps["date"] > 0


_KINDS = {"recount": {"party"}, "leadership challenge": {"party"}, "boycott": {"company"},
          "sanctions": {"company"}, "referee strike": {"league"}}


def test_boundabs_names_an_event_that_fits_its_organisation(data: Dataset) -> None:
    """A recount is asked of a party, a boycott of a company: the absent event is plausible
    for its entity, so only the corpus can rule it out."""
    led = NewsLedger(data.ledger)
    by_name = {v["name"]: v for v in led.entities.values()}
    boundabs = [i for i in data.items if i.family == "BoundAbs"]
    assert boundabs
    for item in boundabs:
        assert re.fullmatch(r"In (early|mid|late) [A-Z][a-z]+ \d{4}, [a-z].*[a-z]\?",
                            item.question), item.question
        org = next(by_name[n] for n in item.meta["entities"] if n in by_name
                   and by_name[n]["type"] == "org")
        fits = _KINDS.get(item.meta["predicate"])
        if fits is not None:
            assert org["attrs"]["org_type"] in fits, (item.question, org["attrs"])
        if item.meta["predicate"] == "leave of absence":  # only from where one works
            person = next(k for k, v in led.entities.items()
                          if v["name"] in item.meta["entities"] and v["type"] == "person")
            posts = {led.roles[e["role"]]["org"] for e in led.timeline
                     if e["type"] == "role_change" and e["new"] == person}
            posts |= {r["org"] for r in led.roles.values() if r["holder"] == person}
            assert org["id"] in posts, item.question
