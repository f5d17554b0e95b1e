"""The news world's held-out items, every gold derived from the ledger, never from the text
(docs/imprint.md §4.1; ImprintBench App. D.1).

* DirAcq: yes/no claims, exactly as many false claims (one element swapped, checked false) as
  true ones;
* TempUpd: forward / negation / prior / backward (App. D.1 item 2, T1-T4; T3 only when
  grounded);
* CompRel: hop chains (``hop2``-``hop4``; kinds chain, counterfactual, temporal, alias); an
  alias is asked only where an article names the entity by it;
* ImpRel and BoundAbs: :mod:`~clstream.protocols.imprint.settings.news.arc_items`.

An item that asks for the state at a date ("as of", "on", "at the time") never falls on the day
a change it depends on took effect, where the gold would hang on the hour of the change.

Deterministic judges throughout (docs/imprint.md §6: the default for generated data).
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from clstream.protocols.imprint.schema import Item, question_key
from clstream.protocols.imprint.settings.news.articles import Article, Writer
from clstream.protocols.imprint.settings.news.events import clause as event_clause
from clstream.protocols.imprint.settings.news.events import kind_of
from clstream.protocols.imprint.settings.news.ledger import (
    NewsLedger,
    period_of,
    plus_days,
    shift_period,
)
from clstream.protocols.imprint.settings.news.world import NewsConfig


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

    def first_in(self, fact: str, doc_id: str) -> tuple[str, int] | None:
        """Where ``fact`` is stated in one document, else its first place in the corpus."""
        hits = self.places.get(fact, [])
        return next((h for h in hits if h[0] == doc_id), hits[0] if hits else None)

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


def in_window(period_start: str, window: tuple[str, str]) -> bool:
    """Whether the third of a month starting ``period_start`` lies inside the corpus window
    (first and last article dates): its middle day does. A dated question about a period the
    corpus does not cover is answered "No" by its date alone."""
    lo, hi, _ = period_of(period_start)
    middle = plus_days(lo, (dt.date.fromisoformat(hi) - dt.date.fromisoformat(lo)).days // 2)
    return window[0] <= middle <= window[1]


def _false_claim(led: NewsLedger, claim: dict[str, Any], rng: random.Random,
                 window: tuple[str, str]) -> tuple[dict[str, Any], str] | None:
    """One element of a true claim swapped (entity of the same type, the date moved to another
    period inside the corpus window, a quantity scaled by 0.5 or 1.5, or the relation
    reversed), checked false against the ledger (App. D.1 item 1)."""
    options: list[tuple[dict[str, Any], str]] = []
    for steps in (-2, -1, 1, 2):
        moved = shift_period(claim["from"], steps)
        lo, hi, _ = period_of(moved)
        if in_window(lo, window):
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


def dir_acq(led: NewsLedger, articles: list[Article], support: Support, out: Items,
            config: NewsConfig, rng: random.Random) -> None:
    window = corpus_window(articles)
    for article in articles:
        made = 0
        for index, (_, facts) in enumerate(article.sentences):
            if made >= config.claims_per_article:
                break
            event_ids = [f for f in facts if f in led.events]
            if not event_ids:
                continue
            claim = _claim_of(led.events[event_ids[0]])
            if claim is None or not led.claim_holds(claim) or not in_window(claim["from"],
                                                                              window):
                continue
            swapped = _false_claim(led, claim, rng, window)
            if swapped is None:
                continue
            false_claim, how = swapped
            q_true, q_false = _claim_question(led, claim), _claim_question(led, false_claim)
            if question_key(q_true) in out.keys or question_key(q_false) in out.keys:
                continue
            dated = support.first_in(f"when:{event_ids[0]}", article.doc_id)
            if dated is None:
                continue
            where = [(article.doc_id, index), dated]
            out.add("DirAcq", q_true, "Yes", "yesno", where,
                    {"query": {"op": "claim", "claim": claim}, "swap": None})
            out.add("DirAcq", q_false, "No", "yesno", where,
                    {"query": {"op": "claim", "claim": false_claim}, "swap": how})
            made += 1


def corpus_window(articles: Sequence[Article]) -> tuple[str, str]:
    """The first and last article dates: dated questions ask inside this window."""
    dates = sorted(a.date for a in articles)
    return dates[0], dates[-1]


def temp_upd(led: NewsLedger, support: Support, out: Items, rng: random.Random,
             window: tuple[str, str] | None = None) -> None:
    """TempUpd items asked "as of" a day after the change and, given ``window``, no later
    than the last article (a later date asks about a time the corpus does not cover)."""
    writer = Writer(led, rng)
    for e in led.timeline:
        first = support.first(e["id"])
        if first is None:
            continue
        dated = support.first_in(f"when:{e['id']}", first[0])
        if dated is None:
            continue
        where = [first, dated]
        asof = plus_days(e["date"], rng.randint(3, 12))
        if window is not None:
            asof = min(asof, window[1])
            if asof <= e["date"]:
                continue
        if e["type"] == "role_change":
            role, post = e["role"], writer.role_text(e["role"])
            q = {"op": "holder", "role": role, "date": asof}
            out.add("TempUpd", f"As of {asof}, who is the {post}?", led.derive(q),
                    "exact", where, {"query": q, "event": e["id"]}, "forward",
                    led.person_gold(e["old"]))
            q = {"op": "still_holds", "role": role, "person": e["old"], "date": asof}
            out.add("TempUpd", f"As of {asof}, is {led.name(e['old'])} still the {post}?",
                    led.derive(q), "yesno", where, {"query": q, "event": e["id"]},
                    "negation", "Yes")
            grounded = support.first(f"bg:{e['new']}:prior_post")
            if grounded is not None:
                q = {"op": "prior_post", "person": e["new"]}
                out.add("TempUpd", f"Before becoming {post}, what post had "
                        f"{led.name(e['new'])} held?", led.derive(q), "exact",
                        [*where, grounded], {"query": q, "event": e["id"]}, "prior")
            q = {"op": "successor", "role": role, "old": e["old"]}
            out.add("TempUpd", f"As of {asof}, who replaced {led.name(e['old'])} as {post}?",
                    led.derive(q), "exact", where, {"query": q, "event": e["id"]},
                    "backward")
        elif e["type"] == "value_change":
            qty = led.quantities[e["quantity"]]
            q = {"op": "value", "quantity": qty["id"], "date": asof}
            out.add("TempUpd", f"As of {asof}, what is the {qty['name']}?", led.derive(q),
                    "exact", where, {"query": q, "event": e["id"]}, "forward",
                    led.value_gold(qty["id"], e["old"]))
            q = {"op": "still_value", "quantity": qty["id"], "value": e["old"], "date": asof}
            out.add("TempUpd", f"As of {asof}, is the {qty['name']} still {e['old']} "
                    f"{qty['unit']}?", led.derive(q), "yesno", where,
                    {"query": q, "event": e["id"]}, "negation", "Yes")


def _change_of(led: NewsLedger, role: str) -> dict[str, Any]:
    return next(e for e in led.timeline if e["type"] == "role_change" and e["role"] == role)


def _holding_facts(led: NewsLedger, role: str, date: str) -> list[str]:
    """Facts that show who held ``role`` on ``date``: the change and its date (and, before
    it, the old holder's tenure)."""
    change = _change_of(led, role)
    facts = [change["id"], f"when:{change['id']}"]
    return facts if change["date"] <= date else [*facts, f"bg:{change['old']}:tenure"]


def _changes_on(led: NewsLedger, role: str, date: str) -> bool:
    """True when ``role`` changes hands on ``date`` itself (the state that day is
    ambiguous: before or after the change)."""
    return bool(_change_of(led, role)["date"] == date)


def _aliases_used(support: Support, person: str) -> list[str]:
    """The aliases some article names ``person`` by (surname, honorific or former post)."""
    prefix = f"alias:{person}:"
    return sorted(fact[len(prefix):] for fact in support.places if fact.startswith(prefix))


def comp_rel(led: NewsLedger, support: Support, out: Items, config: NewsConfig,
              rng: random.Random, window: tuple[str, str] | None = None) -> None:
    writer = Writer(led, rng)
    first_day, last_day = window or (config.start, plus_days(config.start, config.days - 1))
    changes = [e for e in led.timeline if e["type"] == "role_change"]

    def add(question: str, query: dict[str, Any], facts: list[str], hops: int,
            kind: str) -> None:
        places = support.all_of(facts)
        gold = led.derive(query)
        named = [gold] if isinstance(gold, str) else gold
        if any(g in question for g in named):  # the gold may not be read off the question
            return
        if places is not None:
            out.add("CompRel", question, led.derive(query), "exact", places,
                    {"query": query, "kind": kind, "facts": facts}, f"hop{hops}")

    for e in changes:
        role, post = e["role"], writer.role_text(e["role"])
        for date in (plus_days(e["date"], rng.randint(1, 8)),
                     plus_days(e["date"], -rng.randint(1, 6))):
            if not first_day <= date <= last_day:
                continue
            holder = led.holder_at(role, date)
            city = led.attr(holder, "home_city")
            base = _holding_facts(led, role, date) + [f"bg:{holder}:birth"]
            q = {"op": "path", "role": role, "date": date, "steps": ["birth_city"]}
            add(f"On {date}, in which city was the person serving as {post} born?", q, base,
                2, "chain")
            q = {"op": "path", "role": role, "date": date, "steps": ["birth_city", "country"]}
            add(f"On {date}, in which country was the {post} born?", q,
                base + [f"bg:{city}:country"], 3, "chain")
            country = led.attr(city, "country")
            gov = led.governor_role(country)
            if gov != role and not _changes_on(led, gov, date):
                q = {"op": "path", "role": role, "date": date,
                     "steps": ["birth_city", "country", "governor"]}
                add(f"On {date}, who was the central bank governor of the country where the "
                    f"{post} was born?", q,
                    base + [f"bg:{city}:country"] + _holding_facts(led, gov, date), 4, "chain")
        asof = min(plus_days(e["date"], rng.randint(2, 9)), last_day)
        if asof <= e["date"]:
            continue
        q = {"op": "without_change", "event": e["id"], "date": asof}
        add(f"Had {led.name(e['new'])} not taken over as {post}, who would still have held "
            f"that post on {asof}?", q, [e["id"], f"bg:{e['old']}:tenure"], 2,
            "counterfactual")
    one_offs = [e for e in led.timeline if e["type"] in ("acquisition", "deal", "launch", "vote")]
    for x in one_offs:
        near = sorted((c for c in changes if c["date"] != x["date"]),
                      key=lambda c: (abs(dt.date.fromisoformat(c["date"]).toordinal()
                                         - dt.date.fromisoformat(x["date"]).toordinal()),
                                     c["id"]))
        for c in near[:1]:
            clause = event_clause(led, x)
            q = {"op": "holder_at_event", "role": c["role"], "event": x["id"]}
            add(f"Who was {writer.role_text(c['role'])} at the time {clause}?", q,
                [x["id"], f"when:{x['id']}"] + _holding_facts(led, c["role"], x["date"]), 3,
                "temporal")
    people = sorted({e["new"] for e in changes} | {e["old"] for e in changes})
    for p in people:
        named = _aliases_used(support, p)
        if not named:
            continue
        alias = rng.choice(named)
        q = {"op": "alias_attr", "alias": alias, "attr": "birth_year"}
        facts = [f"alias:{p}:{alias}", f"bg:{p}:birth"]
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
