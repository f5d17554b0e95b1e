"""The news world's ledger, and the dates and names every part of the generator writes
(docs/imprint.md §4.1; ImprintBench App. D.1).

:class:`NewsLedger` is the world as recorded -- entities, posts, quantities, events and arcs --
rebuilt from JSON records alone: the generator answers every gold through it, and a reader can
rebuild it from a dataset's ``ledger.jsonl`` (``NewsLedger(dataset.ledger)``) and re-derive
each item's gold from its stored query (:meth:`NewsLedger.derive`). Arcs are scoped to a third
of a month (:func:`period_of`, the "~week" of D.1).
"""

from __future__ import annotations

import calendar
import datetime as dt
import random
from collections.abc import Iterable
from typing import Any

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


def plus_days(date: str, days: int) -> str:
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
        role: str = next(r["id"] for r in self.roles.values()
                         if self.entities[r["org"]]["attrs"]["org_type"] == "central bank"
                         and self.entities[r["org"]]["attrs"]["country"] == country)
        return role

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


# --- names in running text ----------------------------------------------------------------


def the(led: NewsLedger, entity: str) -> str:
    """An organisation as running text names it: "the" before institutions, not companies."""
    record = led.entities[entity]
    if record["type"] == "org" and record["attrs"]["org_type"] != "company":
        return f"the {record['name']}"
    return str(record["name"])


def cap(text: str) -> str:
    return text[0].upper() + text[1:]


def post(led: NewsLedger, role: str) -> str:
    """A tracked post in words: "governor of the Central Bank of Velmora"."""
    r = led.roles[role]
    return f"{r['title']} of {the(led, r['org'])}"


def alias_of(led: NewsLedger, rng: random.Random, entity: str) -> str:
    """One of the entity's names, drawn from ``rng``: the full name or an alias."""
    record = led.entities[entity]
    return str(rng.choice([record["name"], *record.get("aliases", [])]))


def led_records(ledger: NewsLedger) -> list[dict[str, Any]]:
    """The ledger as JSON records, entities first, then posts, quantities, events, arcs."""
    return [*ledger.entities.values(), *ledger.roles.values(), *ledger.quantities.values(),
            *ledger.timeline, *ledger.arcs.values()]
