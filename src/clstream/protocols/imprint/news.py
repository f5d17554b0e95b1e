"""ImprintBench "world news" setting, generated offline from a seed (docs/imprint.md §4.1).

The paper builds its news corpus from real articles and grounds entities in an encyclopedia
graph (ImprintBench §2, App. D.1). Offline, clstream invents a small world instead, so that
every gold answer is known exactly:

* **World.** Countries, cities, typed organisations (central bank, ministry, company, party,
  league, agency) and people, all named by a syllable grammar (no real names). Every entity has
  aliases -- full name, surname, honorific + surname, a stable role description ("the former
  chief economist at ..."), an organisation's acronym or short name -- and each alias resolves
  to exactly one entity (checked when the ledger is built). Stable background facts (birth
  year and city, headquarters, founding year, earlier post, tenure) stand in for the paper's
  "pretraining knowledge" (App. D.1, CompRel 1-hop).
* **Ledger.** A dated, append-only list of events: leadership changes (TYPE-A, a named-entity
  swap), value changes (TYPE-B: rates and prices), one-off events (deals, acquisitions,
  launches, votes), denials and quotes. Events are grouped into *arcs* (category x country x
  a third of a month, the "~week" of D.1); an arc's salience is its number of articles.
  :class:`NewsLedger` rebuilds the state at any date from the ledger records alone, and
  :meth:`NewsLedger.derive` answers every item's stored query, so a reader can audit each gold.
* **Articles.** Each event yields dated articles (never before the event) that mix the event
  sentence (with a random alias for the secondary entities), follow-ups, background sentences,
  distractor sentences about other arcs and neutral filler; every fact sentence is recorded in
  the document's ``meta["facts"]`` as ``[sentence index, fact id]``.
* **Items** (golds from the ledger, never from the text): DirAcq yes/no claims with exactly as
  many false claims (one element swapped, checked false) as true ones; TempUpd forward /
  negation / prior / backward (ImprintBench App. D.1 item 2, T1-T4; T3 only when grounded);
  CompRel hop chains (``hop2``-``hop4``; kinds chain, counterfactual, temporal, alias); ImpRel
  one per arc with the arc's salience; BoundAbs from the largest arcs with the four absence
  strategies (actor-action, sub-event, quote, consequence) and a BM25 difficulty count.
  Deterministic judges throughout (docs/imprint.md §6: the default for generated data).
* **Q.** Training pairs over each article's fact sentences, from templates that differ from the
  evaluation templates, and never about an absent (BoundAbs) predicate (docs/imprint.md §3.1: Q and the test
  set are disjoint).

Sentences are written so that :func:`clstream.models.builtin_reader.split_sentences` splits
them exactly (no abbreviation periods, no quotation marks): the recorded indices refer to that
split of the document text.
"""

from __future__ import annotations

import calendar
import datetime as dt
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from clstream.core.errors import SpecError
from clstream.protocols.imprint.schema import (
    REPORTED_FAMILIES,
    CorpusDoc,
    Dataset,
    Item,
    Manifest,
    QAPair,
    check_disjoint,
    question_key,
)
from clstream.retrieval.bm25 import IncrementalBM25

GENERATOR = "imprint.news-world-v1"

# --- configuration ---------------------------------------------------------------------------


@dataclass(frozen=True)
class NewsConfig:
    """Size and shape of the invented world (docs/imprint.md §4.1, scaled down so a default world
    generates in well under a second: about 60 articles and 200-300 items).

    ``n_roles`` leadership posts are tracked and each changes hands once in the window (the
    country's central bank governors come first, so four-hop chains can end on one);
    ``n_quantities`` rates and prices each change once. ``claims_per_article`` true claims per
    article, each paired with one false claim; ``boundabs_arcs`` largest arcs get the four
    absence strategies each.
    """

    seed: int = 0
    n_people: int = 30
    n_orgs: int = 12
    n_places: int = 4
    n_roles: int = 8
    n_quantities: int = 6
    start: str = "2030-02-03"
    days: int = 35
    articles_per_event: tuple[int, int] = (1, 3)
    words_per_article: tuple[int, int] = (140, 260)
    n_deals: int = 6
    n_launches: int = 3
    n_votes: int = 3
    claims_per_article: int = 2
    qa_per_article: int = 24
    boundabs_arcs: int = 4

    def start_date(self) -> dt.date:
        try:
            return dt.date.fromisoformat(self.start)
        except ValueError:
            raise SpecError(f"news config: start {self.start!r} is not a YYYY-MM-DD date") from None

    def validate(self) -> None:
        """One-line SpecErrors for sizes the generator cannot build a world from."""
        self.start_date()
        checks = [
            (self.n_places >= 2, "n_places must be at least 2"),
            (self.n_roles >= self.n_places, "n_roles must be at least n_places (every country's "
                                            "central bank governor is tracked)"),
            (self.n_orgs >= self.n_roles + 2, "n_orgs must exceed n_roles by at least 2"),
            (self.n_orgs >= self.n_places + 4, "n_orgs must be at least n_places + 4"),
            (self.n_people >= 2 * self.n_roles + 6, "n_people must be at least 2 * n_roles + 6"),
            (self.n_quantities >= 1, "n_quantities must be at least 1"),
            (self.days >= 14, "days must be at least 14"),
            (1 <= self.articles_per_event[0] <= self.articles_per_event[1],
             "articles_per_event must be (low, high) with 1 <= low <= high"),
            (40 <= self.words_per_article[0] <= self.words_per_article[1],
             "words_per_article must be (low, high) with 40 <= low <= high"),
            (min(self.n_deals, self.n_launches, self.n_votes) >= 0,
             "n_deals, n_launches and n_votes must not be negative"),
            (self.claims_per_article >= 1, "claims_per_article must be at least 1"),
            (self.qa_per_article >= 1, "qa_per_article must be at least 1"),
            (self.boundabs_arcs >= 1, "boundabs_arcs must be at least 1"),
        ]
        for ok, problem in checks:
            if not ok:
                raise SpecError(f"news config: {problem}")

    def as_json(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


# --- dates and periods -------------------------------------------------------------------------


def period_of(date: str) -> tuple[str, str, str]:
    """(first day, last day, label) of the third of a month holding ``date``: days 1-10 are
    "early", 11-20 "mid", 21-end "late" -- the arc's time scope (ImpRel, App. D.1 item 4)."""
    d = dt.date.fromisoformat(date)
    last = calendar.monthrange(d.year, d.month)[1]
    lo, hi, word = (1, 10, "early") if d.day <= 10 else (11, 20, "mid") if d.day <= 20 else (
        21, last, "late")
    label = f"{word} {calendar.month_name[d.month]} {d.year}"
    return (dt.date(d.year, d.month, lo).isoformat(), dt.date(d.year, d.month, hi).isoformat(),
            label)


def shift_period(date: str, steps: int) -> str:
    """A date in the period ``steps`` thirds of a month away from ``date``'s period."""
    d = dt.date.fromisoformat(date)
    index = (d.year * 12 + d.month - 1) * 3 + min((d.day - 1) // 10, 2) + steps
    year, rest = divmod(index, 36)
    month, third = divmod(rest, 3)
    return dt.date(year, month + 1, 1 + 10 * third).isoformat()


def spoken_date(date: str) -> str:
    d = dt.date.fromisoformat(date)
    return f"{d.day} {calendar.month_name[d.month]} {d.year}"


def _plus(date: str, days: int) -> str:
    return (dt.date.fromisoformat(date) + dt.timedelta(days=days)).isoformat()


# --- the ledger --------------------------------------------------------------------------------


class NewsLedger:
    """The world as recorded: entities, posts, quantities, events and arcs, from JSON records.

    The generator answers every gold through this class, and a reader can rebuild it from a
    dataset's ``ledger.jsonl`` alone (``NewsLedger(dataset.ledger)``) to re-derive them.
    """

    def __init__(self, records: Iterable[dict[str, Any]]):
        self.entities: dict[str, dict[str, Any]] = {}
        self.roles: dict[str, dict[str, Any]] = {}
        self.quantities: dict[str, dict[str, Any]] = {}
        self.events: dict[str, dict[str, Any]] = {}
        self.arcs: dict[str, dict[str, Any]] = {}
        tables = {"entity": self.entities, "role": self.roles, "quantity": self.quantities,
                  "event": self.events, "arc": self.arcs}
        for record in records:
            tables[record["kind"]][record["id"]] = record
        self.timeline = sorted(self.events.values(), key=lambda e: (e["date"], e["id"]))
        self.alias_owner: dict[str, str] = {}
        for entity in self.entities.values():
            for alias in [entity["name"], *entity.get("aliases", [])]:
                owner = self.alias_owner.setdefault(alias.casefold(), entity["id"])
                assert owner == entity["id"], f"alias {alias!r} names {owner} and {entity['id']}"

    # state at a date (a change takes effect on its own date)
    def holder_at(self, role: str, date: str) -> str:
        holder = str(self.roles[role]["holder"])
        for event in self.timeline:
            if event["type"] == "role_change" and event["role"] == role and event["date"] <= date:
                holder = event["new"]
        return holder

    def value_at(self, quantity: str, date: str) -> str:
        value = str(self.quantities[quantity]["value"])
        for event in self.timeline:
            if (event["type"] == "value_change" and event["quantity"] == quantity
                    and event["date"] <= date):
                value = event["new"]
        return value

    def name(self, entity: str) -> str:
        return str(self.entities[entity]["name"])

    def resolve(self, alias: str) -> str:
        return self.alias_owner[alias.casefold()]

    def attr(self, entity: str, key: str) -> Any:
        return self.entities[entity]["attrs"][key]

    def governor_role(self, country: str) -> str:
        return next(r["id"] for r in self.roles.values()
                    if self.entities[r["org"]]["attrs"]["org_type"] == "central bank"
                    and self.entities[r["org"]]["attrs"]["country"] == country)

    def claim_holds(self, claim: dict[str, Any]) -> bool:
        """True when some event of the claim's type, dated in ``[from, to]``, matches every
        field the claim names."""
        fields = {k: v for k, v in claim.items() if k not in ("type", "from", "to")}
        return any(
            e["type"] == claim["type"] and claim["from"] <= e["date"] <= claim["to"]
            and all(e.get(k) == v for k, v in fields.items())
            for e in self.timeline
        )

    def person_gold(self, person: str) -> list[str]:
        """A person's accepted answers: the full name, then the surname."""
        return [self.name(person), str(self.attr(person, "surname"))]

    def value_gold(self, quantity: str, value: str) -> list[str]:
        return [f"{value} {self.quantities[quantity]['unit']}", value]

    def derive(self, query: dict[str, Any]) -> str | list[str]:
        """The gold of an item's stored query, from the ledger alone."""
        op = query["op"]
        if op == "claim":
            return "Yes" if self.claim_holds(query["claim"]) else "No"
        if op == "holder":
            return self.person_gold(self.holder_at(query["role"], query["date"]))
        if op == "value":
            return self.value_gold(query["quantity"],
                                   self.value_at(query["quantity"], query["date"]))
        if op == "still_holds":
            held = self.holder_at(query["role"], query["date"]) == query["person"]
            return "Yes" if held else "No"
        if op == "still_value":
            same = self.value_at(query["quantity"], query["date"]) == query["value"]
            return "Yes" if same else "No"
        if op == "prior_post":
            person = query["person"]
            return [str(self.attr(person, "prior_post")), str(self.attr(person, "prior_title"))]
        if op == "successor":
            event = next(e for e in self.timeline if e["type"] == "role_change"
                         and e["role"] == query["role"] and e["old"] == query["old"])
            return self.person_gold(event["new"])
        if op == "without_change":
            event = self.events[query["event"]]
            return self.person_gold(event["old"])
        if op == "holder_at_event":
            return self.person_gold(
                self.holder_at(query["role"], self.events[query["event"]]["date"]))
        if op == "path":
            return self._path(query)
        if op == "alias_attr":
            value = self.attr(self.resolve(query["alias"]), query["attr"])
            return self._attr_gold(query["attr"], value)
        if op == "alias_path":
            city = self.attr(self.resolve(query["alias"]), "hq")
            return self.name(self.attr(city, "country"))
        if op == "arc":
            arc = self.arcs[query["arc"]]
            return [arc["title"], *arc["alternatives"]]
        if op == "absent":
            return f"No record of {query['predicate_clause']}."
        raise ValueError(f"unknown ledger query {op!r}")

    def _attr_gold(self, key: str, value: Any) -> str | list[str]:
        if key in ("home_city", "hq", "country"):
            return self.name(str(value))
        return str(value)

    def _path(self, query: dict[str, Any]) -> str | list[str]:
        """Follow a hop chain: the holder of ``role`` at ``date``, then each step in turn."""
        node = self.holder_at(query["role"], query["date"])
        for step in query["steps"]:
            if step == "birth_city":
                node = str(self.attr(node, "home_city"))
            elif step == "country":
                node = str(self.attr(node, "country"))
            elif step == "governor":
                node = self.holder_at(self.governor_role(node), query["date"])
            else:
                raise ValueError(f"unknown hop {step!r}")
        if self.entities[node]["type"] == "person":
            return self.person_gold(node)
        return self.name(node)


# --- the invented world ------------------------------------------------------------------------

_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr",
           "kr", "st", "tr", "vel", "mor", "sk")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou", "ia")
_CODAS = ("", "", "n", "r", "l", "s", "k", "th", "m", "v")
_HONORIFICS = ("Dr", "Professor", "Ambassador", "Senator", "Judge", "Colonel")
_PRIOR_TITLES = ("chief economist", "deputy director", "finance director", "trade envoy",
                 "policy adviser", "general counsel", "regional manager", "spokesperson")
_ORG_TYPES = ("ministry", "company", "party", "league", "agency", "company", "ministry",
              "company")
_ROLE_TITLE = {"central bank": "governor", "ministry": "minister", "company": "chief executive",
               "party": "party leader", "league": "commissioner", "agency": "director"}
_MINISTRY_AREAS = ("Trade", "Energy", "Transport", "Health", "Culture", "Water", "Labour")
_COMPANY_KINDS = ("Holdings", "Systems", "Energy", "Foods", "Shipping", "Metals", "Networks")
_AGENCY_KINDS = ("Space Agency", "Weather Agency", "Mapping Agency", "Survey Agency")
_LEAGUE_KINDS = ("Football League", "Basketball League", "Rowing League", "Chess League")
_PARTY_KINDS = ("Renewal Party", "Unity Party", "Green Party", "Labour Party", "Liberty Party")
_CAUSES = ("a cabinet reshuffle", "a board review", "the end of a fixed term",
           "a leadership vote", "a restructuring of the leadership")
_DEAL_SUBJECTS = ("port logistics", "grid storage", "rail freight", "water treatment",
                  "satellite data", "cold storage", "fertiliser supply")
_DENIAL_CLAIMS = ("{org} would move its headquarters away from {city}",
                  "{org} planned to sell its stake in {other}",
                  "{org} had paused hiring at its {city} offices")
_QUOTE_TEXTS = ("the change would bring steadier leadership to {org}",
                "{org} was entering a careful new chapter",
                "the decision showed that {country} could plan for the long term",
                "the figures pointed to a calmer season for {country}")
_FILLER = ("Analysts said further details were expected in the coming days.",
           "Officials gave no timetable for the next steps.",
           "Local commentators followed the developments closely.",
           "Reaction among observers was measured.",
           "The announcement came after weeks of speculation in the local press.",
           "Several observers said the full picture would take time to emerge.",
           "Trading in the capital was otherwise quiet for the season.",
           "Commentators noted that the week had been a busy one for regional newsrooms.",
           "Officials promised to publish a fuller account at a later date.")
_CATEGORY = {"role_change": "leadership changes", "value_change": "economic policy moves",
             "acquisition": "business deals", "deal": "business deals",
             "launch": "technology launches", "vote": "political votes"}
_QUANTITY_KINDS = (
    ("policy rate of the {org}", "percent", "central bank", (1.5, 6.0)),
    ("inflation rate in {country}", "percent", "country", (1.0, 7.0)),
    ("fuel price in {country}", "crowns per litre", "country", (1.1, 2.4)),
    ("share price of {org}", "crowns", "company", (12.0, 90.0)),
)
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


def _word(rng: random.Random, syllables: int) -> str:
    text = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables))
    return (text + rng.choice(_CODAS)).capitalize()


class _Names:
    """Unique invented words (a word is never reused, so every alias stays unique)."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.used: set[str] = set()

    def new(self, syllables: tuple[int, int] = (2, 3)) -> str:
        while True:
            word = _word(self.rng, self.rng.randint(*syllables))
            if 4 <= len(word) <= 11 and word not in self.used:
                self.used.add(word)
                return word


def _acronym(name: str) -> str:
    return "".join(w[0] for w in name.split() if w[0].isupper())


@dataclass
class _World:
    records: list[dict[str, Any]] = field(default_factory=list)

    def add(self, record: dict[str, Any]) -> dict[str, Any]:
        self.records.append(record)
        return record


def _build_world(config: NewsConfig, rng: random.Random) -> _World:
    names = _Names(rng)
    world = _World()
    countries: list[dict[str, Any]] = []
    cities: list[dict[str, Any]] = []
    for i in range(config.n_places):
        country = world.add({"kind": "entity", "id": f"k{i + 1:02d}", "type": "country",
                             "name": names.new((2, 3)), "aliases": [], "attrs": {}})
        countries.append(country)
        for j, label in enumerate(("capital", "port city")):
            cities.append(world.add({
                "kind": "entity", "id": f"c{2 * i + j + 1:02d}", "type": "city",
                "name": names.new((2, 2)), "aliases": [],
                "attrs": {"country": country["id"], "label": label}}))
    orgs: list[dict[str, Any]] = []
    for i in range(config.n_orgs):
        country = countries[i % len(countries)]
        org_type = "central bank" if i < len(countries) else _ORG_TYPES[i % len(_ORG_TYPES)]
        cname = country["name"]
        if org_type == "central bank":
            name = f"Central Bank of {cname}"
        elif org_type == "ministry":
            name = f"{cname} Ministry of {rng.choice(_MINISTRY_AREAS)}"
        elif org_type == "company":
            name = f"{names.new((2, 2))} {rng.choice(_COMPANY_KINDS)}"
        elif org_type == "party":
            name = f"{names.new((2, 2))} {rng.choice(_PARTY_KINDS)}"
        elif org_type == "league":
            name = f"{cname} {rng.choice(_LEAGUE_KINDS)}"
        else:
            name = f"{cname} {rng.choice(_AGENCY_KINDS)}"
        if any(o["name"] == name for o in orgs):
            name = f"{names.new((2, 2))} {rng.choice(_COMPANY_KINDS)}"
            org_type = "company"
        home = [c for c in cities if c["attrs"]["country"] == country["id"]]
        short = name.split()[0] if org_type in ("company", "party") else _acronym(name)
        orgs.append(world.add({
            "kind": "entity", "id": f"o{i + 1:02d}", "type": "org", "name": name,
            "aliases": [short],
            "attrs": {"org_type": org_type, "country": country["id"],
                      "hq": rng.choice(home)["id"], "founded": rng.randint(1890, 2015)}}))
    for org in orgs:  # an acronym shared by two organisations is dropped from both
        clash = [o for o in orgs if o["aliases"][:1] == org["aliases"][:1]]
        if len(clash) > 1:
            for o in clash:
                o["aliases"] = []
    prior_pairs = [(t, o) for t in _PRIOR_TITLES for o in orgs]
    rng.shuffle(prior_pairs)
    for i in range(config.n_people):
        given, surname = names.new((1, 2)), names.new((2, 3))
        title, org = prior_pairs[i % len(prior_pairs)]
        prior_post = f"{title} at {org['name']}"
        honorific = _HONORIFICS[i % len(_HONORIFICS)]
        world.add({
            "kind": "entity", "id": f"p{i + 1:02d}", "type": "person",
            "name": f"{given} {surname}",
            "aliases": [surname, f"{honorific} {surname}", f"the former {prior_post}"],
            "attrs": {"surname": surname, "honorific": honorific,
                      "birth_year": rng.randint(1950, 1988),
                      "home_city": rng.choice(cities)["id"], "prior_post": prior_post,
                      "prior_title": title}})
    return world


# --- events and arcs ---------------------------------------------------------------------------


@dataclass
class _Plan:
    """Events, arcs and articles under construction."""

    config: NewsConfig
    rng: random.Random
    world: _World
    events: list[dict[str, Any]] = field(default_factory=list)
    arcs: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)

    def ents(self, kind: str, **attrs: Any) -> list[dict[str, Any]]:
        return [r for r in self.world.records if r["kind"] == "entity" and r["type"] == kind
                and all(r["attrs"].get(k) == v for k, v in attrs.items())]

    def event(self, etype: str, date: str, region: str, **fields: Any) -> dict[str, Any]:
        category = _CATEGORY.get(etype)
        record = {"kind": "event", "id": "", "type": etype, "date": date, "region": region,
                  **fields}
        if category is not None:
            lo, _, label = period_of(date)
            key = (category, region, lo)
            arc = self.arcs.get(key)
            if arc is None:
                arc = {"kind": "arc", "id": "", "category": category, "region": region,
                       "period": label, "events": [], "title": "", "alternatives": [],
                       "salience": 0}
                self.arcs[key] = arc
            record["arc_key"] = key
        self.events.append(record)
        return record


def _random_date(plan: _Plan, lo: int = 0, hi: int | None = None) -> str:
    last = plan.config.days - 1 if hi is None else min(hi, plan.config.days - 1)
    return _plus(plan.config.start, plan.rng.randint(lo, last))


def _money(rng: random.Random) -> str:
    return f"{rng.randint(12, 95) / 10:.2f} billion crowns"


def _plan_events(plan: _Plan) -> None:
    rng, config = plan.rng, plan.config
    people = plan.ents("person")
    orgs = plan.ents("org")
    free = list(people)
    rng.shuffle(free)
    roles = []
    ordered = [o for o in orgs if o["attrs"]["org_type"] == "central bank"] + [
        o for o in orgs if o["attrs"]["org_type"] != "central bank"]
    for i, org in enumerate(ordered[: config.n_roles]):
        holder = free.pop()
        role = plan.world.add({
            "kind": "role", "id": f"r{i + 1:02d}", "org": org["id"],
            "title": _ROLE_TITLE[org["attrs"]["org_type"]], "holder": holder["id"],
            "since": rng.randint(2015, 2028)})
        roles.append(role)
    for role in roles:  # first pass: the main event of a leadership arc, in the window
        org = next(o for o in orgs if o["id"] == role["org"])
        plan.event("role_change", _random_date(plan, 1), org["attrs"]["country"],
                   role=role["id"], old=role["holder"], new=free.pop()["id"],
                   cause=rng.choice(_CAUSES))
    kinds = list(_QUANTITY_KINDS)
    countries = plan.ents("country")
    for i in range(config.n_quantities):
        pattern, unit, owner, (lo, hi) = kinds[i % len(kinds)]
        if owner == "country":
            anchor = countries[(i // len(kinds)) % len(countries)]
            qname, region = pattern.format(country=anchor["name"]), anchor["id"]
        else:
            pool = [o for o in orgs if o["attrs"]["org_type"] == owner]
            org = pool[(i // len(kinds)) % len(pool)]
            qname, region = pattern.format(org=org["name"]), org["attrs"]["country"]
        old = rng.uniform(lo, hi)
        new = old * rng.choice((0.8, 0.9, 1.1, 1.25))
        quantity = plan.world.add({"kind": "quantity", "id": f"q{i + 1:02d}", "name": qname,
                                   "unit": unit, "value": f"{old:.2f}", "region": region})
        plan.event("value_change", _random_date(plan, 1), region, quantity=quantity["id"],
                   old=quantity["value"], new=f"{new:.2f}",
                   direction="up" if new > old else "down")
    companies = [o for o in orgs if o["attrs"]["org_type"] == "company"]
    for i in range(config.n_deals):
        a, b = rng.sample(companies if len(companies) >= 2 else orgs, 2)
        date = _random_date(plan)
        if i % 2 == 0:
            plan.event("acquisition", date, a["attrs"]["country"], buyer=a["id"],
                       target=b["id"], amount=_money(rng))
        else:
            plan.event("deal", date, a["attrs"]["country"], a=a["id"], b=b["id"],
                       subject=rng.choice(_DEAL_SUBJECTS))
    launchers = [o for o in orgs if o["attrs"]["org_type"] in ("agency", "company")]
    for _ in range(config.n_launches):
        org = rng.choice(launchers)
        plan.event("launch", _random_date(plan), org["attrs"]["country"], org=org["id"],
                   mission=_plan_word(plan))
    parties = [o for o in orgs if o["attrs"]["org_type"] == "party"] or orgs
    for _ in range(config.n_votes):
        party = rng.choice(parties)
        total = rng.choice((101, 121, 151))
        plan.event("vote", _random_date(plan), party["attrs"]["country"], party=party["id"],
                   country=party["attrs"]["country"], seats=str(rng.randint(20, total // 2)),
                   total=str(total))
    # Follow-ups inside the leadership arcs: a quote by the new holder, a denial by the old.
    for main in [e for e in plan.events if e["type"] == "role_change"]:
        role = next(r for r in roles if r["id"] == main["role"])
        org = next(o for o in orgs if o["id"] == role["org"])
        country = next(c for c in countries if c["id"] == org["attrs"]["country"])
        period_end = period_of(main["date"])[1]
        later = min(_plus(main["date"], rng.randint(0, 3)), period_end)
        if rng.random() < 0.6:
            text = rng.choice(_QUOTE_TEXTS).format(org=org["name"], country=country["name"])
            plan.event("quote", later, main["region"], person=main["new"], text=text, arc_key=main["arc_key"])
        else:
            other = rng.choice([o for o in orgs if o["id"] != org["id"]])
            city = plan.ents("city", country=country["id"])[0]
            claim = rng.choice(_DENIAL_CLAIMS).format(org=org["name"], city=city["name"],
                                                      other=other["name"])
            plan.event("denial", later, main["region"], person=main["old"], org=org["id"],
                       claim=claim, arc_key=main["arc_key"])


def _plan_word(plan: _Plan) -> str:
    return _word(plan.rng, 2)


def _finish_events(plan: _Plan) -> None:
    plan.events.sort(key=lambda e: (e["date"], e["type"], repr(sorted(e.items()))))
    arc_order: list[tuple[str, str, str]] = []
    for e in plan.events:
        if e["arc_key"] not in arc_order:
            arc_order.append(e["arc_key"])
    for n, key in enumerate(arc_order):
        plan.arcs[key]["id"] = f"a{n + 1:02d}"
    for n, e in enumerate(plan.events):
        e["id"] = f"e{n + 1:03d}"
        arc = plan.arcs[e.pop("arc_key")]
        e["arc"] = arc["id"]
        arc["events"].append(e["id"])


# --- sentences -----------------------------------------------------------------------------------


class _Writer:
    """Renders events and facts as sentences (wording of this project, several variants)."""

    def __init__(self, ledger: NewsLedger, rng: random.Random):
        self.led = ledger
        self.rng = rng

    def alias(self, entity: str) -> str:
        record = self.led.entities[entity]
        return str(self.rng.choice([record["name"], *record.get("aliases", [])]))

    def role_text(self, role: str) -> str:
        return _post(self.led, role)

    def event_sentence(self, e: dict[str, Any], full: bool) -> str:
        """The event stated once; the answer-bearing entity always by its full name."""
        led, when = self.led, spoken_date(e["date"])
        t = e["type"]
        if t == "role_change":
            old = led.name(e["old"]) if full else self.alias(e["old"])
            # The new holder comes right after the first preposition, so a reader taking the
            # phrase after it finds the holder, not the date or the predecessor.
            return self.rng.choice((
                f"The post of {self.role_text(e['role'])} passed to {led.name(e['new'])} on "
                f"{when}, replacing {old} after {e['cause']}.",
                f"The role of {self.role_text(e['role'])} went to {led.name(e['new'])} on "
                f"{when}, who succeeded {old} after {e['cause']}.",
            ))
        if t == "value_change":
            q = led.quantities[e["quantity"]]
            verb = "rose" if e["direction"] == "up" else "fell"
            return (f"The {q['name']} {verb} from {e['old']} {q['unit']} to {e['new']} "
                    f"{q['unit']} on {when}.")
        if t == "acquisition":
            return (f"{led.name(e['buyer'])} agreed on {when} to acquire "
                    f"{led.name(e['target'])} for {e['amount']}.")
        if t == "deal":
            return (f"{led.name(e['a'])} and {led.name(e['b'])} signed an agreement on "
                    f"{e['subject']} on {when}.")
        if t == "launch":
            return f"{_cap(_the(led, e['org']))} launched the {e['mission']} mission on {when}."
        if t == "vote":
            return (f"{_cap(_the(led, e['party']))} won {e['seats']} of {e['total']} seats in "
                    f"the {led.name(e['country'])} parliamentary vote held on {when}.")
        if t == "denial":
            return f"On {when}, {led.name(e['person'])} denied that {e['claim']}."
        if t == "quote":
            return f"On {when}, {led.name(e['person'])} said that {e['text']}."
        raise ValueError(t)

    def background(self, fact: str) -> str:
        """A stable background fact ("bg:<entity>:<key>") as a sentence."""
        _, entity, key = fact.split(":")
        led = self.led
        if key == "birth":
            city = led.attr(entity, "home_city")
            return (f"{led.name(entity)} was born in {led.name(city)} in "
                    f"{led.attr(entity, 'birth_year')}.")
        if key == "prior_post":
            return (f"Earlier in their career, {led.name(entity)} served as "
                    f"{led.attr(entity, 'prior_post')}.")
        if key == "tenure":
            role = next(r for r in led.roles.values() if r["holder"] == entity)
            return (f"{led.name(entity)} had served as {self.role_text(role['id'])} since "
                    f"{role['since']}.")
        if key == "hq":  # also where an organisation's short name is introduced
            known = led.entities[entity]["aliases"]
            also = f", known as {known[0]}," if known else ""
            return (f"{_cap(_the(led, entity))}{also} has its headquarters in "
                    f"{led.name(led.attr(entity, 'hq'))}.")
        if key == "founded":
            return f"{_cap(_the(led, entity))} was founded in {led.attr(entity, 'founded')}."
        if key == "country":
            return (f"{led.name(entity)} is the {led.attr(entity, 'label')} of "
                    f"{led.name(led.attr(entity, 'country'))}.")
        raise ValueError(fact)

    def arc_sentence(self, arc: dict[str, Any]) -> str:
        return (f"Among the {arc['category']} in {self.led.name(arc['region'])} in "
                f"{arc['period']}, attention centred on {arc['alternatives'][0]}: "
                f"{arc['title']}.")


def _the(led: NewsLedger, entity: str) -> str:
    """An organisation as running text names it: "the" before institutions, not companies."""
    record = led.entities[entity]
    if record["type"] == "org" and record["attrs"]["org_type"] != "company":
        return f"the {record['name']}"
    return str(record["name"])


def _cap(text: str) -> str:
    return text[0].upper() + text[1:]


def _post(led: NewsLedger, role: str) -> str:
    """A tracked post in words: "governor of the Central Bank of Velmora"."""
    r = led.roles[role]
    return f"{r['title']} of {_the(led, r['org'])}"


def _arc_title(led: NewsLedger, e: dict[str, Any]) -> tuple[str, str]:
    """(title, key phrase) of an event as an arc headline (ImpRel gold, App. D.1 item 4)."""
    t = e["type"]
    if t == "role_change":
        role = led.roles[e["role"]]
        return (f"{led.name(e['new'])} named {role['title']} of {_the(led, role['org'])}",
                led.name(e["new"]))
    if t == "value_change":
        q = led.quantities[e["quantity"]]
        return f"the {q['name']} moved to {e['new']} {q['unit']}", f"{e['new']} {q['unit']}"
    if t == "acquisition":
        return (f"{led.name(e['buyer'])} agreed to acquire {led.name(e['target'])}",
                led.name(e["target"]))
    if t == "deal":
        return (f"{led.name(e['a'])} and {led.name(e['b'])} signed a {e['subject']} agreement",
                f"{e['subject']} agreement")
    if t == "launch":
        return f"{_the(led, e['org'])} launched the {e['mission']} mission", e["mission"]
    if t == "vote":
        return (f"{_the(led, e['party'])} won {e['seats']} seats", led.name(e["party"]))
    raise ValueError(t)


@dataclass
class _Article:
    date: str
    order: int
    title: str
    sentences: list[tuple[str, list[str]]]  # (sentence, fact ids)
    arc: str
    events: list[str]
    doc_id: str = ""


def _event_background(led: NewsLedger, e: dict[str, Any]) -> list[str]:
    """Background facts an article about ``e`` may carry."""
    t = e["type"]
    if t == "role_change":
        org = led.roles[e["role"]]["org"]
        return [f"bg:{e['new']}:prior_post", f"bg:{e['new']}:birth", f"bg:{e['old']}:tenure",
                f"bg:{e['old']}:birth", f"bg:{org}:hq", f"bg:{org}:founded",
                f"bg:{led.attr(e['new'], 'home_city')}:country",
                f"bg:{led.attr(org, 'hq')}:country"]
    orgs = [e[k] for k in ("buyer", "target", "a", "b", "org", "party") if k in e
            and led.entities.get(e[k], {}).get("type") == "org"]
    if t == "value_change":
        region = led.quantities[e["quantity"]]["region"]
        orgs += [o for o, r in led.entities.items() if r["type"] == "org"
                 and r["attrs"]["org_type"] == "central bank" and r["attrs"]["country"] == region]
    people = [e["person"]] if "person" in e else []
    facts = [f"bg:{o}:{k}" for o in orgs for k in ("hq", "founded")]
    facts += [f"bg:{p}:{k}" for p in people for k in ("birth", "prior_post")]
    facts += [f"bg:{led.attr(o, 'hq')}:country" for o in orgs]
    return facts


def _title_for(led: NewsLedger, e: dict[str, Any], follow_up: bool) -> str:
    if e["type"] in ("denial", "quote"):
        who = led.attr(e["person"], "surname")
        return f"{who} {'rejects report' if e['type'] == 'denial' else 'speaks out'}"
    title, _ = _arc_title(led, e)
    title = _cap(title)
    return f"Reaction: {title}" if follow_up else title


def _write_articles(plan: _Plan, led: NewsLedger) -> list[_Article]:
    rng, config = plan.rng, plan.config
    writer = _Writer(led, rng)
    arc_firsts: set[str] = set()
    articles: list[_Article] = []
    timeline = led.timeline
    for order, e in enumerate(timeline):
        n_articles = rng.randint(*config.articles_per_event)
        if e["type"] in ("denial", "quote"):
            n_articles = 1
        for k in range(n_articles):
            date = _plus(e["date"], 0 if k == 0 else rng.randint(1, 4))
            sents: list[tuple[str, list[str]]] = []
            arc = led.arcs[e["arc"]]
            if e["arc"] not in arc_firsts and e["type"] not in ("denial", "quote"):
                arc_firsts.add(e["arc"])
                sents.append((writer.arc_sentence(arc), [f"arc:{arc['id']}"]))
            sents.append((writer.event_sentence(e, full=k == 0), [e["id"]]))
            background = _event_background(led, e)
            rng.shuffle(background)
            # A leadership article always grounds the new holder's earlier post (T3).
            if e["type"] == "role_change" and k == 0:
                background.remove(f"bg:{e['new']}:prior_post")
                background.insert(0, f"bg:{e['new']}:prior_post")
            for fact in background[: rng.randint(3, 5)]:
                sents.append((writer.background(fact), [fact]))
            others = [o for o in timeline if o["arc"] != e["arc"] and o["date"] <= date
                      and o["type"] not in ("denial", "quote")]
            for o in rng.sample(others, min(len(others), rng.randint(2, 4))):
                lead = rng.choice(("Elsewhere, ", "Separately, ", "Also this week, "))
                text = writer.event_sentence(o, full=True)
                if text.split()[0] in ("The", "On"):
                    text = text[0].lower() + text[1:]
                sents.append((lead + text, [o["id"]]))
            target = rng.randint(*config.words_per_article)
            fillers = list(_FILLER)
            rng.shuffle(fillers)
            while sum(len(s.split()) for s, _ in sents) < target and fillers:
                sents.insert(rng.randint(1, len(sents)), (fillers.pop(), []))
            articles.append(_Article(date, order * 10 + k, _title_for(led, e, k > 0),
                                     sents, e["arc"], [e["id"]]))
    articles.sort(key=lambda a: (a.date, a.order))
    for n, article in enumerate(articles):
        article.doc_id = f"news-{n + 1:04d}"
    return articles


# --- items -------------------------------------------------------------------------------------


@dataclass
class _Support:
    """Where each fact is stated: fact id -> [(doc id, sentence index)] in corpus order."""

    places: dict[str, list[tuple[str, int]]] = field(default_factory=dict)

    def add(self, article: _Article) -> None:
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


class _Items:
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
    fields = {"role_change": ("role", "old", "new"), "value_change": ("quantity", "new"),
              "acquisition": ("buyer", "target", "amount"), "deal": ("a", "b", "subject"),
              "launch": ("org", "mission"), "vote": ("party", "seats"),
              "denial": ("person", "claim"), "quote": ("person", "text")}[e["type"]]
    return {"type": e["type"], **{k: e[k] for k in fields}, "from": lo, "to": hi}


def _claim_question(led: NewsLedger, c: dict[str, Any]) -> str:
    when = period_of(c["from"])[2]
    t = c["type"]
    if t == "role_change":
        return (f"In {when}, did {led.name(c['new'])} succeed {led.name(c['old'])} as "
                f"{_post(led, c['role'])}?")
    if t == "value_change":
        q = led.quantities[c["quantity"]]
        return f"In {when}, was the {q['name']} changed to {c['new']} {q['unit']}?"
    if t == "acquisition":
        return (f"In {when}, did {led.name(c['buyer'])} agree to acquire "
                f"{led.name(c['target'])} for {c['amount']}?")
    if t == "deal":
        return (f"In {when}, did {led.name(c['a'])} and {led.name(c['b'])} sign an agreement "
                f"on {c['subject']}?")
    if t == "launch":
        return f"In {when}, did {_the(led, c['org'])} launch the {c['mission']} mission?"
    if t == "vote":
        return f"In {when}, did {_the(led, c['party'])} win {c['seats']} seats?"
    if t == "denial":
        return f"In {when}, did {led.name(c['person'])} deny that {c['claim']}?"
    if t == "quote":
        return f"In {when}, did {led.name(c['person'])} say that {c['text']}?"
    raise ValueError(t)


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
    if claim["type"] == "role_change":
        options.append(({**claim, "old": claim["new"], "new": claim["old"]}, "relation"))
    if claim["type"] == "acquisition":
        options.append(({**claim, "buyer": claim["target"], "target": claim["buyer"]},
                        "relation"))
    rng.shuffle(options)
    for candidate, how in options:
        if not led.claim_holds(candidate):
            return candidate, how
    return None


def _dir_acq(led: NewsLedger, articles: list[_Article], out: _Items, config: NewsConfig,
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


def _temp_upd(led: NewsLedger, support: _Support, out: _Items, rng: random.Random) -> None:
    writer = _Writer(led, rng)
    for e in led.timeline:
        where = support.first(e["id"])
        if where is None:
            continue
        asof = _plus(e["date"], rng.randint(3, 12))
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


def _comp_rel(led: NewsLedger, support: _Support, out: _Items, config: NewsConfig,
              rng: random.Random) -> None:
    writer = _Writer(led, rng)
    first_day = config.start
    last_day = _plus(config.start, config.days - 1)
    changes = [e for e in led.timeline if e["type"] == "role_change"]

    def add(question: str, query: dict[str, Any], facts: list[str], hops: int,
            kind: str) -> None:
        places = support.all_of(facts)
        if places is not None:
            out.add("CompRel", question, led.derive(query), "exact", places,
                    {"query": query, "kind": kind, "facts": facts}, f"hop{hops}")

    for e in changes:
        role, post = e["role"], writer.role_text(e["role"])
        for date in (_plus(e["date"], rng.randint(1, 8)), _plus(e["date"], -rng.randint(1, 6))):
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
        asof = _plus(e["date"], rng.randint(2, 9))
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
            clause = _event_clause(led, x)
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


def _event_clause(led: NewsLedger, e: dict[str, Any]) -> str:
    t = e["type"]
    if t == "acquisition":
        return f"{led.name(e['buyer'])} agreed to acquire {led.name(e['target'])}"
    if t == "deal":
        return (f"{led.name(e['a'])} and {led.name(e['b'])} signed their {e['subject']} "
                "agreement")
    if t == "launch":
        return f"{_the(led, e['org'])} launched the {e['mission']} mission"
    return f"{_the(led, e['party'])} won {e['seats']} seats"


def _imp_rel(led: NewsLedger, support: _Support, out: _Items) -> None:
    for arc in led.arcs.values():
        where = support.first(f"arc:{arc['id']}")
        if where is None:
            continue
        q = {"op": "arc", "arc": arc["id"]}
        out.add("ImpRel", f"What major {arc['category']} happened in "
                f"{led.name(arc['region'])} in {arc['period']}?", led.derive(q), "exact",
                [where], {"query": q, "salience": arc["salience"], "arc": arc["id"]})


def _main_event(led: NewsLedger, arc: dict[str, Any]) -> dict[str, Any]:
    """An arc's first event that is not a follow-up (quote or denial)."""
    return next(led.events[e] for e in arc["events"]
                if led.events[e]["type"] not in ("denial", "quote"))


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


def _bound_abs(led: NewsLedger, articles: list[_Article], qa: list[QAPair], out: _Items,
               config: NewsConfig, rng: random.Random) -> None:
    index = IncrementalBM25()
    texts = [_text(a) for a in articles]
    for n, text in enumerate(texts):
        index.add(n, text)
    corpus_text = "\n".join(texts + [f"{p.question} {p.answer}" for p in qa]).casefold()
    arcs = sorted(led.arcs.values(), key=lambda a: (-a["salience"], a["id"]))
    for arc in arcs[: config.boundabs_arcs]:
        main = _main_event(led, arc)
        org, person = _arc_actors(led, main)
        for strategy, choices in _ABSENT.items():
            predicate, clause, asked = rng.choice(choices)
            if predicate.casefold() in corpus_text:
                continue
            fill = {"p": led.name(person), "o": _the(led, org)}
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


# --- training pairs (Q) --------------------------------------------------------------------------


def _qa_for_fact(led: NewsLedger, fact: str, writer: _Writer) -> list[tuple[str, str]]:
    """Training questions over one fact, in wording the evaluation templates never use."""
    if fact.startswith("arc:"):
        arc = led.arcs[fact[4:]]
        region = led.name(arc["region"])
        return [(f"Which story led the {arc['category']} coverage for {region} during "
                 f"{arc['period']}?", arc["title"])]
    if fact.startswith("bg:"):
        _, ent, key = fact.split(":")
        name = led.name(ent)
        if key == "birth":
            year, city = str(led.attr(ent, "birth_year")), led.name(led.attr(ent, "home_city"))
            return [(f"What is the birth year of {name}?", year),
                    (f"Which city is the birthplace of {name}?", city),
                    (f"Name the city {name} comes from.", city),
                    (f"{name} was born in which year?", year)]
        if key == "prior_post":
            post = str(led.attr(ent, "prior_post"))
            return [(f"What job did {name} do earlier in their career?", post),
                    (f"Which earlier position is {name} known for?", post)]
        if key == "tenure":
            role = next(r for r in led.roles.values() if r["holder"] == ent)
            return [(f"From which year had {name} served in their leadership post?",
                     str(role["since"]))]
        if key == "hq":
            hq = led.name(led.attr(ent, "hq"))
            return [(f"Where are the headquarters of {_the(led, ent)}?", hq),
                    (f"Which city hosts the head office of {_the(led, ent)}?", hq)]
        if key == "founded":
            founded = str(led.attr(ent, "founded"))
            return [(f"What is the founding year of {_the(led, ent)}?", founded),
                    (f"How long ago was {_the(led, ent)} set up? Give the year.", founded)]
        if key == "country":
            country = led.name(led.attr(ent, "country"))
            return [(f"{name} lies in which country?", country),
                    (f"Is {name} a capital or a port city, and of which country?",
                     f"the {led.attr(ent, 'label')} of {country}")]
        return []
    e = led.events[fact]
    when = spoken_date(e["date"])
    t = e["type"]
    if t == "role_change":
        post = writer.role_text(e["role"])
        return [(f"On what date did {led.name(e['new'])} take up the post of {post}?", when),
                (f"Whom did {led.name(e['new'])} succeed as {post}?", led.name(e["old"])),
                (f"Who stepped away from the post of {post} on {when}?", led.name(e["old"])),
                (f"What led to the leadership change for the post of {post}?", e["cause"])]
    if t == "value_change":
        q = led.quantities[e["quantity"]]
        return [(f"To what level did the {q['name']} move on {when}?", f"{e['new']} {q['unit']}"),
                (f"What level was the {q['name']} at before {when}?", f"{e['old']} {q['unit']}"),
                (f"On what date did the {q['name']} last change?", when)]
    if t == "acquisition":
        return [(f"Which company did {led.name(e['buyer'])} agree to buy on {when}?",
                 led.name(e["target"])),
                (f"What price did {led.name(e['buyer'])} agree to pay for "
                 f"{led.name(e['target'])}?", e["amount"]),
                (f"Which buyer agreed to take over {led.name(e['target'])}?",
                 led.name(e["buyer"])),
                (f"When was the purchase of {led.name(e['target'])} agreed?", when)]
    if t == "deal":
        return [(f"What was the subject of the agreement between {led.name(e['a'])} and "
                 f"{led.name(e['b'])}?", e["subject"]),
                (f"On what date did {led.name(e['a'])} sign its {e['subject']} agreement?",
                 when),
                (f"With which partner did {led.name(e['a'])} sign a {e['subject']} agreement?",
                 led.name(e["b"]))]
    if t == "launch":
        return [(f"Which mission did {_the(led, e['org'])} launch on {when}?", e["mission"]),
                (f"Which organisation was behind the {e['mission']} mission?",
                 led.name(e["org"])),
                (f"When did the {e['mission']} mission lift off?", when)]
    if t == "vote":
        return [(f"How many seats did {_the(led, e['party'])} take in the vote on {when}?",
                 e["seats"]),
                (f"How many seats were there in total in the {led.name(e['country'])} vote "
                 f"on {when}?", e["total"]),
                (f"Which party took {e['seats']} seats in the {led.name(e['country'])} vote?",
                 led.name(e["party"]))]
    if t == "denial":
        return [(f"What claim did {led.name(e['person'])} reject on {when}?", e["claim"]),
                (f"Who rejected the claim that {e['claim']}?", led.name(e["person"]))]
    return [(f"What remark did {led.name(e['person'])} make on {when}?", e["text"]),
            (f"Who made the remark that {e['text']}?", led.name(e["person"]))]


def _training_pairs(led: NewsLedger, articles: list[_Article], config: NewsConfig,
                    rng: random.Random) -> list[QAPair]:
    writer = _Writer(led, rng)
    pairs: list[QAPair] = []
    for article in articles:
        per_fact = [_qa_for_fact(led, f, writer) for _, facts in article.sentences
                    for f in facts]
        chosen: list[tuple[str, str]] = []
        seen: set[str] = set()
        depth = 0
        while len(chosen) < config.qa_per_article and any(depth < len(p) for p in per_fact):
            for options in per_fact:
                if depth < len(options) and len(chosen) < config.qa_per_article:
                    question, answer = options[depth]
                    key = question_key(question)
                    if key not in seen:
                        seen.add(key)
                        chosen.append((question, answer))
            depth += 1
        for n, (question, answer) in enumerate(chosen):
            pairs.append(QAPair(qa_id=f"{article.doc_id}-q{n + 1:02d}", doc_id=article.doc_id,
                                question=question, answer=answer))
    return pairs


# --- assembly ------------------------------------------------------------------------------------


def _text(article: _Article) -> str:
    """Paragraphs of up to four sentences; the splitter also breaks at newlines, so sentence
    indices are the same either way."""
    sentences = [s for s, _ in article.sentences]
    return "\n\n".join(" ".join(sentences[i:i + 4]) for i in range(0, len(sentences), 4))


_HINTS = {"DirAcq": "raise n_deals or days", "TempUpd": "raise n_roles or n_quantities",
          "CompRel": "raise n_roles or n_people", "ImpRel": "raise n_roles or n_deals",
          "BoundAbs": "raise boundabs_arcs"}


def generate_news(config: NewsConfig | None = None) -> Dataset:
    """The news setting's dataset for ``config`` (one instance, ``"all"``), byte-identical
    for the same config."""
    config = config or NewsConfig()
    config.validate()
    rng = random.Random(config.seed)
    world = _build_world(config, rng)
    plan = _Plan(config, rng, world)
    _plan_events(plan)
    _finish_events(plan)
    base = [*world.records, *plan.events]
    led = NewsLedger(base + list(plan.arcs.values()))
    for arc in plan.arcs.values():
        main = _main_event(led, arc)
        arc["title"] = _arc_title(led, main)[0]
        arc["alternatives"] = list(dict.fromkeys(
            _arc_title(led, led.events[e])[1] for e in arc["events"]
            if led.events[e]["type"] not in ("denial", "quote")))
    articles = _write_articles(plan, led)
    for arc in plan.arcs.values():
        arc["salience"] = sum(1 for a in articles if a.arc == arc["id"])
    led = NewsLedger(base + sorted(plan.arcs.values(), key=lambda a: a["id"]))
    support = _Support()
    for article in articles:
        support.add(article)
    qa = _training_pairs(led, articles, config, rng)
    items = _Items()
    _dir_acq(led, articles, items, config, rng)
    _temp_upd(led, support, items, rng)
    _comp_rel(led, support, items, config, rng)
    _imp_rel(led, support, items)
    _bound_abs(led, articles, qa, items, config, rng)
    present = {item.family for item in items.items}
    for family in REPORTED_FAMILIES["news"]:
        if family not in present:
            raise SpecError(f"news world (seed {config.seed}) has no {family} items; "
                            f"{_HINTS[family]}")
    corpus = [CorpusDoc(doc_id=a.doc_id, date=a.date, kind="article", title=a.title,
                        text=_text(a),
                        meta={"arc": a.arc, "events": a.events,
                              "facts": [[i, f] for i, (_, facts) in enumerate(a.sentences)
                                        for f in facts]})
              for a in articles]
    order = {f: n for n, f in enumerate(REPORTED_FAMILIES["news"])}
    ordered = sorted(items.items, key=lambda i: order[i.family])
    check_disjoint(qa, ordered, "news generator")
    manifest = Manifest(setting="news", generator=GENERATOR, seed=config.seed,
                        config=config.as_json())
    return Dataset(manifest, corpus, qa, ordered, led_records(led))


def led_records(ledger: NewsLedger) -> list[dict[str, Any]]:
    """The ledger as JSON records, entities first, then posts, quantities, events, arcs."""
    return [*ledger.entities.values(), *ledger.roles.values(), *ledger.quantities.values(),
            *ledger.timeline, *ledger.arcs.values()]


def sentence_split(text: str) -> list[str]:
    """The split the recorded sentence indices refer to (same as the builtin reader's)."""
    return [s.strip() for s in re.split(r"(?<=[.!?])[\"')\]]*\s+|\n+", text) if s.strip()]
