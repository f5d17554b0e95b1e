"""The news world's held-out items, every gold derived from the ledger, never from the text
(docs/imprint.md §4.1; ImprintBench App. D.1).

* DirAcq: yes/no claims, exactly as many false claims (one element swapped, checked false) as
  true ones;
* TempUpd: forward / negation / prior / backward (App. D.1 item 2, T1-T4; T3 only when
  grounded);
* CompRel: hop chains (``hop2``-``hop4``; kinds chain, counterfactual, temporal, alias);
* ImpRel: one per arc, with the arc's salience;
* BoundAbs: from the largest arcs, with the four absence strategies (actor-action, sub-event,
  quote, consequence) and a BM25 difficulty count.

Deterministic judges throughout (docs/imprint.md §6: the default for generated data).
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from clstream.protocols.imprint.schema import Item, QAPair, question_key
from clstream.protocols.imprint.settings.news.articles import Article, Writer, article_text
from clstream.protocols.imprint.settings.news.events import clause as event_clause
from clstream.protocols.imprint.settings.news.events import is_follow_up, kind_of
from clstream.protocols.imprint.settings.news.ledger import (
    NewsLedger,
    period_of,
    plus_days,
    shift_period,
    the,
)
from clstream.protocols.imprint.settings.news.world import NewsConfig
from clstream.retrieval.bm25 import IncrementalBM25

# Absence predicates (BoundAbs, App. D.1): wording no event, background or filler sentence
# ever uses; the generator checks each against every article and training pair.
_ABSENT: dict[str, tuple[tuple[str, str, str], ...]] = {
    # strategy: (predicate, "No record of ..." clause, question body); {p} person, {o} org
    "actor-action": (
        ("investigators", "{p} being questioned by investigators over {o}",
         "was {p} questioned by investigators over {o}"),
        ("travel ban", "{p} being placed under a travel ban",
         "was {p} placed under a travel ban over matters at {o}")),
    "sub-event": (
        ("walkout", "staff at {o} staging a walkout", "did staff at {o} stage a walkout"),
        ("recount", "a recount being ordered at {o}", "was a recount ordered at {o}")),
    "quote": (
        ("sinking ship", "{p} calling {o} a sinking ship",
         "did {p} publicly call {o} a sinking ship"),
        ("house of cards", "{p} calling {o} a house of cards",
         "did {p} publicly describe {o} as a house of cards")),
    "consequence": (
        ("boycott", "a consumer boycott of {o}",
         "did the events lead to a consumer boycott of {o}"),
        ("sanctions", "emergency sanctions against {o}",
         "did the events lead to emergency sanctions against {o}")),
}


@dataclass
class Support:
    """Where each fact is stated: fact id -> [(doc id, sentence index)] in corpus order."""

    places: dict[str, list[tuple[str, int]]] = field(default_factory=dict)

    def add(self, article: Article) -> None:
        for index, (_, facts) in enumerate(article.sentences):
            for fact in facts:
                self.places.setdefault(fact, []).append((article.doc_id, index))

    def first(self, fact: str) -> tuple[str, int] | None:
        hits = self.places.get(fact)
        return hits[0] if hits else None

    def all_of(self, facts: Sequence[str]) -> list[tuple[str, int]] | None:
        found = [self.first(f) for f in facts]
        if any(f is None for f in found):
            return None
        return [f for f in found if f is not None]


class Items:
    def __init__(self) -> None:
        self.items: list[Item] = []
        self.keys: set[str] = set()
        self.counts: dict[str, int] = {}

    def add(self, family: str, question: str, gold: str | list[str], judge: str,
            support: list[tuple[str, int]], meta: dict[str, Any], axis: str | None = None,
            gold_before: str | list[str] | None = None) -> bool:
        key = question_key(question)
        if key in self.keys:
            return False
        self.keys.add(key)
        n = self.counts[family] = self.counts.get(family, 0) + 1
        sources = list(dict.fromkeys(doc for doc, _ in support))
        self.items.append(Item.model_validate({
            "item_id": f"news-{family.lower()}-{n:04d}", "setting": "news", "family": family,
            "question": question, "gold": gold, "judge": judge, "axis": axis,
            "source_doc_ids": sources, "gold_before": gold_before,
            "meta": {**meta, "support": [[d, i] for d, i in support]}}))
        return True


def _claim_of(e: dict[str, Any]) -> dict[str, Any] | None:
    lo, hi, _ = period_of(e["date"])
    return {"type": e["type"], **{k: e[k] for k in kind_of(e).claim_fields}, "from": lo,
            "to": hi}


def _claim_question(led: NewsLedger, c: dict[str, Any]) -> str:
    return kind_of(c).claim_question(led, c, period_of(c["from"])[2])


def _false_claim(led: NewsLedger, claim: dict[str, Any],
                 rng: random.Random) -> tuple[dict[str, Any], str] | None:
    """One element of a true claim swapped (entity of the same type, the date moved outside the
    event's period, a quantity scaled by 0.5 or 1.5, or the relation reversed), checked false
    against the ledger (App. D.1 item 1)."""
    options: list[tuple[dict[str, Any], str]] = []
    for steps in (-3, 3, 4):
        moved = shift_period(claim["from"], steps)
        lo, hi, _ = period_of(moved)
        options.append(({**claim, "from": lo, "to": hi}, "date"))
    people = sorted(k for k, v in led.entities.items() if v["type"] == "person")
    for key in ("new", "person", "buyer", "a", "org", "party"):
        if key in claim and claim[key] in led.entities:
            kind = led.entities[claim[key]]["type"]
            pool = people if kind == "person" else sorted(
                k for k, v in led.entities.items() if v["type"] == "org"
                and v["attrs"]["org_type"] == led.entities[claim[key]]["attrs"]["org_type"])
            pool = [p for p in pool if p not in claim.values()]
            if pool:
                options.append(({**claim, key: rng.choice(pool)}, "entity"))
    for key in ("new", "seats", "amount"):
        value = claim.get(key)
        if key == "new" and claim["type"] != "value_change":
            continue
        if isinstance(value, str):
            number = float(value.split()[0])
            factor = rng.choice((0.5, 1.5))
            scaled = (f"{number * factor:.2f}" if key != "seats" else str(round(number * factor)))
            if key == "amount":
                scaled = f"{number * factor:.2f} billion crowns"
            options.append(({**claim, key: scaled}, "quantity"))
    pair = kind_of(claim).reversible
    if pair is not None:
        first, second = pair
        options.append(({**claim, first: claim[second], second: claim[first]}, "relation"))
    rng.shuffle(options)
    for candidate, how in options:
        if not led.claim_holds(candidate):
            return candidate, how
    return None


def dir_acq(led: NewsLedger, articles: list[Article], out: Items, config: NewsConfig,
             rng: random.Random) -> None:
    for article in articles:
        made = 0
        for index, (_, facts) in enumerate(article.sentences):
            if made >= config.claims_per_article:
                break
            event_ids = [f for f in facts if f in led.events]
            if not event_ids:
                continue
            claim = _claim_of(led.events[event_ids[0]])
            if claim is None or not led.claim_holds(claim):
                continue
            swapped = _false_claim(led, claim, rng)
            if swapped is None:
                continue
            false_claim, how = swapped
            q_true, q_false = _claim_question(led, claim), _claim_question(led, false_claim)
            if question_key(q_true) in out.keys or question_key(q_false) in out.keys:
                continue
            support = [(article.doc_id, index)]
            out.add("DirAcq", q_true, "Yes", "yesno", support,
                    {"query": {"op": "claim", "claim": claim}, "swap": None})
            out.add("DirAcq", q_false, "No", "yesno", support,
                    {"query": {"op": "claim", "claim": false_claim}, "swap": how})
            made += 1


def temp_upd(led: NewsLedger, support: Support, out: Items, rng: random.Random) -> None:
    writer = Writer(led, rng)
    for e in led.timeline:
        where = support.first(e["id"])
        if where is None:
            continue
        asof = plus_days(e["date"], rng.randint(3, 12))
        if e["type"] == "role_change":
            role, post = e["role"], writer.role_text(e["role"])
            q = {"op": "holder", "role": role, "date": asof}
            out.add("TempUpd", f"As of {asof}, who is the {post}?", led.derive(q),
                    "exact", [where], {"query": q, "event": e["id"]}, "forward",
                    led.person_gold(e["old"]))
            q = {"op": "still_holds", "role": role, "person": e["old"], "date": asof}
            out.add("TempUpd", f"As of {asof}, is {led.name(e['old'])} still the {post}?",
                    led.derive(q), "yesno", [where], {"query": q, "event": e["id"]},
                    "negation", "Yes")
            grounded = support.first(f"bg:{e['new']}:prior_post")
            if grounded is not None:
                q = {"op": "prior_post", "person": e["new"]}
                out.add("TempUpd", f"Before becoming {post}, what post had "
                        f"{led.name(e['new'])} held?", led.derive(q), "exact",
                        [where, grounded], {"query": q, "event": e["id"]}, "prior")
            q = {"op": "successor", "role": role, "old": e["old"]}
            out.add("TempUpd", f"As of {asof}, who replaced {led.name(e['old'])} as {post}?",
                    led.derive(q), "exact", [where], {"query": q, "event": e["id"]},
                    "backward")
        elif e["type"] == "value_change":
            qty = led.quantities[e["quantity"]]
            q = {"op": "value", "quantity": qty["id"], "date": asof}
            out.add("TempUpd", f"As of {asof}, what is the {qty['name']}?", led.derive(q),
                    "exact", [where], {"query": q, "event": e["id"]}, "forward",
                    led.value_gold(qty["id"], e["old"]))
            q = {"op": "still_value", "quantity": qty["id"], "value": e["old"], "date": asof}
            out.add("TempUpd", f"As of {asof}, is the {qty['name']} still {e['old']} "
                    f"{qty['unit']}?", led.derive(q), "yesno", [where],
                    {"query": q, "event": e["id"]}, "negation", "Yes")


def _holding_facts(led: NewsLedger, role: str, date: str) -> list[str]:
    """Facts that show who held ``role`` on ``date``: the change (and, before it, the old
    holder's tenure)."""
    change = next(e for e in led.timeline if e["type"] == "role_change" and e["role"] == role)
    if change["date"] <= date:
        return [change["id"]]
    return [change["id"], f"bg:{change['old']}:tenure"]


def comp_rel(led: NewsLedger, support: Support, out: Items, config: NewsConfig,
              rng: random.Random) -> None:
    writer = Writer(led, rng)
    first_day = config.start
    last_day = plus_days(config.start, config.days - 1)
    changes = [e for e in led.timeline if e["type"] == "role_change"]

    def add(question: str, query: dict[str, Any], facts: list[str], hops: int,
            kind: str) -> None:
        places = support.all_of(facts)
        if places is not None:
            out.add("CompRel", question, led.derive(query), "exact", places,
                    {"query": query, "kind": kind, "facts": facts}, f"hop{hops}")

    for e in changes:
        role, post = e["role"], writer.role_text(e["role"])
        for date in (plus_days(e["date"], rng.randint(1, 8)), plus_days(e["date"], -rng.randint(1, 6))):
            if not first_day <= date <= last_day:
                continue
            holder = led.holder_at(role, date)
            city = led.attr(holder, "home_city")
            base = _holding_facts(led, role, date) + [f"bg:{holder}:birth"]
            q = {"op": "path", "role": role, "date": date, "steps": ["birth_city"]}
            add(f"On {date}, in which city was the person serving as {post} born?", q, base,
                2, "chain")
            q = {"op": "path", "role": role, "date": date, "steps": ["birth_city", "country"]}
            add(f"On {date}, in which country is the birthplace of the {post}?", q,
                base + [f"bg:{city}:country"], 3, "chain")
            country = led.attr(city, "country")
            gov = led.governor_role(country)
            if gov != role:
                q = {"op": "path", "role": role, "date": date,
                     "steps": ["birth_city", "country", "governor"]}
                add(f"On {date}, who was the central bank governor of the country where the "
                    f"{post} was born?", q,
                    base + [f"bg:{city}:country"] + _holding_facts(led, gov, date), 4, "chain")
        asof = plus_days(e["date"], rng.randint(2, 9))
        q = {"op": "without_change", "event": e["id"], "date": asof}
        add(f"Had {led.name(e['new'])} not taken over as {post}, who would still have held "
            f"that post on {asof}?", q, [e["id"], f"bg:{e['old']}:tenure"], 2,
            "counterfactual")
    one_offs = [e for e in led.timeline if e["type"] in ("acquisition", "deal", "launch", "vote")]
    for x in one_offs:
        near = sorted(changes, key=lambda c: (abs(dt.date.fromisoformat(c["date"]).toordinal()
                                                  - dt.date.fromisoformat(x["date"])
                                                  .toordinal()), c["id"]))
        for c in near[:1]:
            clause = event_clause(led, x)
            q = {"op": "holder_at_event", "role": c["role"], "event": x["id"]}
            add(f"Who was {writer.role_text(c['role'])} at the time {clause}?", q,
                [x["id"]] + _holding_facts(led, c["role"], x["date"]), 3, "temporal")
    people = sorted({e["new"] for e in changes} | {e["old"] for e in changes})
    for p in people:
        record = led.entities[p]
        alias = rng.choice(record["aliases"][1:])
        q = {"op": "alias_attr", "alias": alias, "attr": "birth_year"}
        facts = [f"bg:{p}:birth"]
        if alias.startswith("the former "):  # the description is resolved through this fact
            facts.append(f"bg:{p}:prior_post")
        add(f"In which year was {alias} born?", q, facts, 2, "alias")
    for org in sorted(k for k, v in led.entities.items() if v["type"] == "org"
                      and v["aliases"]):
        alias = led.entities[org]["aliases"][0]
        hq = led.attr(org, "hq")
        q = {"op": "alias_path", "alias": alias}
        add(f"In which country are the headquarters of {alias} located?", q,
            [f"bg:{org}:hq", f"bg:{hq}:country"], 3, "alias")


def imp_rel(led: NewsLedger, support: Support, out: Items) -> None:
    for arc in led.arcs.values():
        where = support.first(f"arc:{arc['id']}")
        if where is None:
            continue
        q = {"op": "arc", "arc": arc["id"]}
        out.add("ImpRel", f"What major {arc['category']} happened in "
                f"{led.name(arc['region'])} in {arc['period']}?", led.derive(q), "exact",
                [where], {"query": q, "salience": arc["salience"], "arc": arc["id"]})


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
        for strategy, choices in _ABSENT.items():
            predicate, clause, asked = rng.choice(choices)
            if predicate.casefold() in corpus_text:
                continue
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
