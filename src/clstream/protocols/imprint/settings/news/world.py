"""The news world, invented from a seed (docs/imprint.md §4.1; ImprintBench App. D.1): its
configuration, its entities and the plan of its events and arcs.

The paper grounds real articles in an encyclopedia graph; offline, clstream invents countries,
cities, typed organisations (central bank, ministry, company, party, league, agency) and
people, all named by a syllable grammar (no real names). Every entity has aliases -- full
name, surname, honorific + surname, a stable role description ("the former chief economist at
..."), an organisation's acronym or short name -- and each alias names exactly one entity
(checked when the ledger is built). Stable background facts (birth year and city,
headquarters, founding year, earlier post, tenure) stand in for the paper's "pretraining
knowledge" (App. D.1, CompRel 1-hop). The plan then dates the events -- leadership changes,
value changes, deals, acquisitions, launches, votes, and the quotes and denials that follow a
leadership change -- and groups them into arcs (category x country x third of a month).
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import asdict, dataclass, field
from typing import Any

from clstream.core.errors import SpecError
from clstream.protocols.imprint.settings.news.events import EVENT_KINDS
from clstream.protocols.imprint.settings.news.ledger import period_of, plus_days

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
                "the appointment pointed to a calmer season for {country}")
_QUANTITY_KINDS = (
    ("policy rate of the {org}", "percent", "central bank", (1.5, 6.0)),
    ("inflation rate in {country}", "percent", "country", (1.0, 7.0)),
    ("fuel price in {country}", "crowns per litre", "country", (1.1, 2.4)),
    ("share price of {org}", "crowns", "company", (12.0, 90.0)),
)


def invented_word(rng: random.Random, syllables: int) -> str:
    text = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables))
    return (text + rng.choice(_CODAS)).capitalize()


class _Names:
    """Unique invented words (a word is never reused, so every alias stays unique)."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.used: set[str] = set()

    def new(self, syllables: tuple[int, int] = (2, 3)) -> str:
        while True:
            word = invented_word(self.rng, self.rng.randint(*syllables))
            if 4 <= len(word) <= 11 and word not in self.used:
                self.used.add(word)
                return word


def _running_name(org: dict[str, Any]) -> str:
    """An organisation as running text names it ("the" before institutions, not companies;
    the same rule as :func:`~clstream.protocols.imprint.settings.news.ledger.the`)."""
    return org["name"] if org["attrs"]["org_type"] == "company" else f"the {org['name']}"


def _acronym(name: str) -> str:
    return "".join(w[0] for w in name.split() if w[0].isupper())


@dataclass
class World:
    records: list[dict[str, Any]] = field(default_factory=list)

    def add(self, record: dict[str, Any]) -> dict[str, Any]:
        self.records.append(record)
        return record


def build_world(config: NewsConfig, rng: random.Random) -> World:
    names = _Names(rng)
    world = World()
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
        prior_post = f"{title} at {_running_name(org)}"
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
class Plan:
    """Events, arcs and articles under construction."""

    config: NewsConfig
    rng: random.Random
    world: World
    events: list[dict[str, Any]] = field(default_factory=list)
    arcs: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)

    def ents(self, kind: str, **attrs: Any) -> list[dict[str, Any]]:
        return [r for r in self.world.records if r["kind"] == "entity" and r["type"] == kind
                and all(r["attrs"].get(k) == v for k, v in attrs.items())]

    def event(self, etype: str, date: str, region: str, **fields: Any) -> dict[str, Any]:
        category = EVENT_KINDS[etype].category
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


def _random_date(plan: Plan, lo: int = 0, hi: int | None = None) -> str:
    last = plan.config.days - 1 if hi is None else min(hi, plan.config.days - 1)
    return plus_days(plan.config.start, plan.rng.randint(lo, last))


def _money(rng: random.Random) -> str:
    return f"{rng.randint(12, 95) / 10:.2f} billion crowns"


def plan_events(plan: Plan) -> None:
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
        owner_org: str | None = None
        if owner == "country":
            anchor = countries[(i // len(kinds)) % len(countries)]
            qname, region = pattern.format(country=anchor["name"]), anchor["id"]
        else:
            pool = [o for o in orgs if o["attrs"]["org_type"] == owner]
            org = pool[(i // len(kinds)) % len(pool)]
            qname, region, owner_org = (pattern.format(org=org["name"]),
                                        org["attrs"]["country"], org["id"])
        old = rng.uniform(lo, hi)
        new = old * rng.choice((0.8, 0.9, 1.1, 1.25))
        quantity = plan.world.add({"kind": "quantity", "id": f"q{i + 1:02d}", "name": qname,
                                   "unit": unit, "value": f"{old:.2f}", "region": region,
                                   "org": owner_org})
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
        later = min(plus_days(main["date"], rng.randint(0, 3)), period_end)
        if rng.random() < 0.6:
            text = rng.choice(_QUOTE_TEXTS).format(org=_running_name(org),
                                                    country=country["name"])
            plan.event("quote", later, main["region"], person=main["new"], text=text, arc_key=main["arc_key"])
        else:
            other = rng.choice([o for o in orgs if o["id"] != org["id"]])
            city = plan.ents("city", country=country["id"])[0]
            claim = rng.choice(_DENIAL_CLAIMS).format(org=_running_name(org), city=city["name"],
                                                      other=_running_name(other))
            plan.event("denial", later, main["region"], person=main["old"], org=org["id"],
                       claim=claim, arc_key=main["arc_key"])


def _plan_word(plan: Plan) -> str:
    return invented_word(plan.rng, 2)


def finish_events(plan: Plan) -> None:
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
