"""The news world's arc items: ImpRel and BoundAbs, golds from the ledger (docs/imprint.md
§4.1; ImprintBench App. D.1 items 4 and 5).

* ImpRel: one per arc, "what major <category> happened in <region> in <third of a month>?",
  the gold the arc's headline or a key phrase of one of its events, with the arc's salience.
  No sentence holds a key phrase with the event's date (an article dates an event in the next
  sentence) and, where the statement does not name the region, only the organisation's
  headquarters and that city's country place it there: the support is the statement, its
  date and, where needed, those two background sentences.
* BoundAbs: from the largest arcs, with the four absence strategies (actor-action, sub-event,
  quote, consequence) and a BM25 difficulty count.
"""

from __future__ import annotations

import random
from typing import Any

from clstream.protocols.imprint.schema import QAPair
from clstream.protocols.imprint.settings.news.articles import Article, article_text, event_org
from clstream.protocols.imprint.settings.news.events import is_follow_up
from clstream.protocols.imprint.settings.news.items import Items, Support
from clstream.protocols.imprint.settings.news.ledger import NewsLedger, the
from clstream.protocols.imprint.settings.news.world import NewsConfig
from clstream.retrieval.bm25 import IncrementalBM25

# Absence predicates (BoundAbs, App. D.1): wording no event, background or filler sentence
# ever uses; the generator checks each against every article and training pair. Each names an
# event that could befall the kind of organisation it is asked about (a recount is asked of a
# party, a consumer boycott of a company), so the question is plausible and only the corpus
# can tell it never happened.
_ANY = frozenset(("central bank", "ministry", "company", "party", "league", "agency"))
_OFFICES = frozenset(("central bank", "ministry", "agency"))
# Asked only when the person holds a post at the organisation (not of an outside official).
_MEMBER = frozenset({"member"})
_ABSENT: dict[str, tuple[tuple[str, str, str, frozenset[str]], ...]] = {
    # strategy: (predicate, "No record of ..." clause, question body, organisation kinds);
    # {p} person, {o} organisation
    "actor-action": (
        ("investigators", "{p} being questioned by investigators about {o}",
         "was {p} questioned by investigators about {o}", _ANY),
        ("leave of absence", "{p} taking a leave of absence from {o}",
         "did {p} take a leave of absence from {o}", _MEMBER)),
    "sub-event": (
        ("walkout", "staff at {o} staging a walkout", "did staff at {o} stage a walkout",
         _OFFICES | {"company"}),
        ("data breach", "a data breach at {o}", "was there a data breach at {o}",
         _OFFICES | {"company"}),
        ("recount", "a recount of the votes cast for {o}",
         "was a recount of the votes cast for {o} ordered", frozenset(("party",))),
        ("leadership challenge", "a leadership challenge within {o}",
         "was a leadership challenge mounted within {o}", frozenset(("party",))),
        ("referee strike", "referees of {o} going on strike",
         "did the referees of {o} go on strike", frozenset(("league",)))),
    "quote": (
        ("sinking ship", "{p} calling {o} a sinking ship",
         "did {p} publicly call {o} a sinking ship", _ANY),
        ("house of cards", "{p} calling {o} a house of cards",
         "did {p} publicly describe {o} as a house of cards", _ANY)),
    "consequence": (
        ("boycott", "a consumer boycott of {o}", "was a consumer boycott of {o} called",
         frozenset(("company",))),
        ("emergency audit", "an emergency audit of {o}", "was an emergency audit of {o} ordered",
         _OFFICES | {"company", "league"}),
        ("funding freeze", "a freeze on the public funding of {o}",
         "was the public funding of {o} frozen", frozenset(("party", "league"))),
        ("sanctions", "emergency sanctions against {o}",
         "were emergency sanctions imposed on {o}", frozenset(("company",)))),
}


def imp_rel(led: NewsLedger, articles: list[Article], support: Support, out: Items) -> None:
    """One ImpRel item per arc whose main event, its date and its region are all stated."""
    own: dict[str, Article] = {}
    for written in articles:
        own.setdefault(written.events[0], written)
    for arc in led.arcs.values():
        main = main_event(led, arc)
        article = own.get(main["id"])
        if article is None:
            continue
        statement = support.first_in(main["id"], article.doc_id)
        if statement is None:
            continue
        facts = [f"when:{main['id']}"]
        if led.name(arc["region"]) not in article.sentences[statement[1]][0]:
            org = event_org(led, main)
            if org is None:
                continue
            facts += [f"bg:{org}:hq", f"bg:{led.attr(org, 'hq')}:country"]
        places = [support.first_in(f, article.doc_id) for f in facts]
        if any(p is None for p in places):
            continue
        q = {"op": "arc", "arc": arc["id"]}
        out.add("ImpRel", f"What major {arc['category']} happened in "
                f"{led.name(arc['region'])} in {arc['period']}?", led.derive(q), "exact",
                [statement, *(p for p in places if p is not None)],
                {"query": q, "salience": arc["salience"], "arc": arc["id"]})


def main_event(led: NewsLedger, arc: dict[str, Any]) -> dict[str, Any]:
    """An arc's first event that is not a follow-up (quote or denial)."""
    return next(led.events[e] for e in arc["events"] if not is_follow_up(led.events[e]))


def _arc_actors(led: NewsLedger, main: dict[str, Any]) -> tuple[str, str]:
    """(organisation, person) an arc is about: the event's own, else the organisation's post
    holder, else the country's central bank governor at the event's date."""
    t = main["type"]
    if t == "role_change":
        return led.roles[main["role"]]["org"], main["new"]
    if t == "value_change":
        gov = led.governor_role(led.quantities[main["quantity"]]["region"])
        return led.roles[gov]["org"], led.holder_at(gov, main["date"])
    org = next(main[k] for k in ("buyer", "a", "org", "party", "target") if k in main)
    posts = [r["id"] for r in led.roles.values() if r["org"] == org]
    role = posts[0] if posts else led.governor_role(led.attr(org, "country"))
    return org, led.holder_at(role, main["date"])


def bound_abs(led: NewsLedger, articles: list[Article], qa: list[QAPair], out: Items,
               config: NewsConfig, rng: random.Random) -> None:
    index = IncrementalBM25()
    texts = [article_text(a) for a in articles]
    for n, text in enumerate(texts):
        index.add(n, text)
    corpus_text = "\n".join(texts + [f"{p.question} {p.answer}" for p in qa]).casefold()
    arcs = sorted(led.arcs.values(), key=lambda a: (-a["salience"], a["id"]))
    for arc in arcs[: config.boundabs_arcs]:
        main = main_event(led, arc)
        org, person = _arc_actors(led, main)
        kind = led.entities[org]["attrs"]["org_type"]
        member = any(r["org"] == org and r["holder"] == person for r in led.roles.values()) \
            or any(e["type"] == "role_change" and e["new"] == person
                   and led.roles[e["role"]]["org"] == org for e in led.timeline)
        for strategy, choices in _ABSENT.items():
            fitting = [c for c in choices if (kind in c[3] or (member and c[3] == _MEMBER))
                       and c[0].casefold() not in corpus_text]
            if not fitting:
                continue
            predicate, clause, asked, _ = rng.choice(fitting)
            fill = {"p": led.name(person), "o": the(led, org)}
            question = f"In {arc['period']}, {asked.format(**fill)}?"
            question = question[0].upper() + question[1:]
            q = {"op": "absent", "predicate": predicate, "predicate_clause": clause.format(**fill)}
            names = [led.name(person), led.name(org)]
            aliases = [a for e in (person, org) for a in
                       [led.name(e), *led.entities[e].get("aliases", [])]]
            top = index.search(question, 5)
            difficulty = sum(1 for n, _ in top if any(a in texts[n] for a in aliases))
            out.add("BoundAbs", question, led.derive(q), "abstain", [],
                    {"query": q, "strategy": strategy, "predicate": predicate,
                     "entities": names, "arc": arc["id"], "difficulty": difficulty})
