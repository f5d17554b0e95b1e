"""The news world's event kinds, one table entry each (docs/imprint.md §4.1; ImprintBench App. D.1).

An :class:`EventKind` holds everything the generator says about one kind of event: the arc
category it belongs to, the fields a DirAcq claim about it names and the pair a relation swap
reverses, how an article states it and dates it, its arc headline and key phrases (the ImpRel
golds), the title of an article about it, its clause, the DirAcq question asked of a claim,
and the training questions over it. :data:`EVENT_KINDS` maps each event type of the ledger to
its entry, so adding a kind is adding one entry here.

An article states an event in one sentence and dates it in the next (:attr:`EventKind.timing`,
which names neither the event's participants nor its place): no sentence holds an event's
key phrase together with its date, so an ImpRel question (category, region, third of a month)
is answered by joining sentences, never by reading one (docs/imprint.md §4.1). Article titles
name the subject but never the key phrase, for the same reason.

The wording is this project's own. A statement names the answer-bearing entity by its full
name; only the leadership statement draws from the random source (a predecessor's alias and
one of two wordings), in that order.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from clstream.protocols.imprint.settings.news.ledger import (
    NewsLedger,
    alias_of,
    cap,
    post,
    spoken_date,
    the,
)

Event = dict[str, Any]
Pairs = list[tuple[str, str]]


@dataclass(frozen=True)
class EventKind:
    """One kind of event. ``category`` is None for follow-ups (quotes and denials), which join
    the arc of the event they follow and have no headline or clause of their own."""

    category: str | None
    claim_fields: tuple[str, ...]
    statement: Callable[[NewsLedger, random.Random, Event, bool], str]
    timing: str  # the sentence that dates the event: "{date}" is filled in, nothing else
    claim_question: Callable[[NewsLedger, Event, str], str]
    training: Callable[[NewsLedger, Event, str], Pairs]
    headline: Callable[[NewsLedger, Event], tuple[str, list[str]]] | None = None
    article_title: Callable[[NewsLedger, Event], str] | None = None
    clause: Callable[[NewsLedger, Event], str] | None = None
    follow_up_title: str | None = None
    reversible: tuple[str, str] | None = None  # the two fields a relation swap exchanges


# --- leadership changes (TYPE-A) ---------------------------------------------------------------


def _role_statement(led: NewsLedger, rng: random.Random, e: Event, full: bool) -> str:
    old = led.name(e["old"]) if full else alias_of(led, rng, e["old"])
    # The new holder comes right after the first preposition, so a reader taking the phrase
    # after it finds the holder, not the predecessor.
    return rng.choice((
        f"The post of {post(led, e['role'])} passed to {led.name(e['new'])}, replacing "
        f"{old} after {e['cause']}.",
        f"The role of {post(led, e['role'])} went to {led.name(e['new'])}, who succeeded "
        f"{old} after {e['cause']}.",
    ))


def _role_headline(led: NewsLedger, e: Event) -> tuple[str, list[str]]:
    role = led.roles[e["role"]]
    return (f"{led.name(e['new'])} named {role['title']} of {the(led, role['org'])}",
            [led.name(e["new"])])


def _role_training(led: NewsLedger, e: Event, when: str) -> Pairs:
    role = post(led, e["role"])
    return [(f"On what date did {led.name(e['new'])} take up the post of {role}?", when),
            (f"Whom did {led.name(e['new'])} succeed as {role}?", led.name(e["old"])),
            (f"Who stepped away from the post of {role} on {when}?", led.name(e["old"])),
            (f"What led to the leadership change for the post of {role}?", e["cause"])]


ROLE_CHANGE = EventKind(
    category="leadership changes",
    claim_fields=("role", "old", "new"),
    statement=_role_statement,
    timing="The appointment took effect on {date}.",
    claim_question=lambda led, c, when: (
        f"In {when}, did {led.name(c['new'])} succeed {led.name(c['old'])} as "
        f"{post(led, c['role'])}?"),
    training=_role_training,
    headline=_role_headline,
    article_title=lambda led, e: (
        f"Leadership change at {the(led, led.roles[e['role']]['org'])}"),
    reversible=("old", "new"),
)


# --- value changes (TYPE-B) --------------------------------------------------------------------


def _value_statement(led: NewsLedger, rng: random.Random, e: Event, full: bool) -> str:
    q = led.quantities[e["quantity"]]
    verb = "rose" if e["direction"] == "up" else "fell"
    return f"The {q['name']} {verb} from {e['old']} {q['unit']} to {e['new']} {q['unit']}."


def _value_question(led: NewsLedger, c: Event, when: str) -> str:
    q = led.quantities[c["quantity"]]
    return f"In {when}, did the {q['name']} move to {c['new']} {q['unit']}?"


def _value_headline(led: NewsLedger, e: Event) -> tuple[str, list[str]]:
    q = led.quantities[e["quantity"]]
    return f"the {q['name']} moved to {e['new']} {q['unit']}", [f"{e['new']} {q['unit']}"]


def _value_training(led: NewsLedger, e: Event, when: str) -> Pairs:
    q = led.quantities[e["quantity"]]
    return [(f"To what level did the {q['name']} move on {when}?", f"{e['new']} {q['unit']}"),
            (f"What level was the {q['name']} at before {when}?", f"{e['old']} {q['unit']}"),
            (f"On what date did the {q['name']} last change?", when)]


VALUE_CHANGE = EventKind(
    category="economic and market moves",
    claim_fields=("quantity", "new"),
    statement=_value_statement,
    timing="The new figure was published on {date}.",
    claim_question=_value_question,
    training=_value_training,
    headline=_value_headline,
    article_title=lambda led, e: f"{cap(led.quantities[e['quantity']]['name'])} changes",
)


# --- one-off events ----------------------------------------------------------------------------


ACQUISITION = EventKind(
    category="business deals",
    claim_fields=("buyer", "target", "amount"),
    statement=lambda led, rng, e, full: (
        f"{led.name(e['buyer'])} agreed to acquire {led.name(e['target'])} for "
        f"{e['amount']}."),
    timing="The purchase was agreed on {date}.",
    claim_question=lambda led, c, when: (
        f"In {when}, did {led.name(c['buyer'])} agree to acquire "
        f"{led.name(c['target'])} for {c['amount']}?"),
    training=lambda led, e, when: [
        (f"Which company did {led.name(e['buyer'])} agree to buy on {when}?",
         led.name(e["target"])),
        (f"What price did {led.name(e['buyer'])} agree to pay for "
         f"{led.name(e['target'])}?", e["amount"]),
        (f"Which buyer agreed to take over {led.name(e['target'])}?", led.name(e["buyer"])),
        (f"When was the purchase of {led.name(e['target'])} agreed?", when)],
    headline=lambda led, e: (
        f"{led.name(e['buyer'])} agreed to acquire {led.name(e['target'])}",
        [f"acquire {led.name(e['target'])}", f"acquisition of {led.name(e['target'])}"]),
    article_title=lambda led, e: f"{led.name(e['buyer'])} agrees a takeover",
    clause=lambda led, e: f"{led.name(e['buyer'])} agreed to acquire {led.name(e['target'])}",
    reversible=("buyer", "target"),
)

DEAL = EventKind(
    category="business deals",
    claim_fields=("a", "b", "subject"),
    statement=lambda led, rng, e, full: (
        f"{led.name(e['a'])} and {led.name(e['b'])} signed an agreement on "
        f"{e['subject']}."),
    timing="The agreement was signed on {date}.",
    claim_question=lambda led, c, when: (
        f"In {when}, did {led.name(c['a'])} and {led.name(c['b'])} sign an agreement "
        f"on {c['subject']}?"),
    training=lambda led, e, when: [
        (f"What was the subject of the agreement between {led.name(e['a'])} and "
         f"{led.name(e['b'])}?", e["subject"]),
        (f"On what date did {led.name(e['a'])} sign its {e['subject']} agreement?", when),
        (f"With which partner did {led.name(e['a'])} sign a {e['subject']} agreement?",
         led.name(e["b"]))],
    headline=lambda led, e: (
        f"{led.name(e['a'])} and {led.name(e['b'])} signed a {e['subject']} agreement",
        [f"{e['subject']} agreement", f"agreement on {e['subject']}"]),
    article_title=lambda led, e: f"{led.name(e['a'])} and {led.name(e['b'])} sign a deal",
    clause=lambda led, e: (
        f"{led.name(e['a'])} and {led.name(e['b'])} signed their {e['subject']} agreement"),
)

LAUNCH = EventKind(
    category="technology launches",
    claim_fields=("org", "mission"),
    statement=lambda led, rng, e, full: (
        f"{cap(the(led, e['org']))} launched the {e['mission']} mission."),
    timing="The launch took place on {date}.",
    claim_question=lambda led, c, when: (
        f"In {when}, did {the(led, c['org'])} launch the {c['mission']} mission?"),
    training=lambda led, e, when: [
        (f"Which mission did {the(led, e['org'])} launch on {when}?", e["mission"]),
        (f"Which organisation was behind the {e['mission']} mission?", led.name(e["org"])),
        (f"When did the {e['mission']} mission lift off?", when)],
    headline=lambda led, e: (f"{the(led, e['org'])} launched the {e['mission']} mission",
                             [e["mission"]]),
    article_title=lambda led, e: f"{cap(the(led, e['org']))} launches a new mission",
    clause=lambda led, e: f"{the(led, e['org'])} launched the {e['mission']} mission",
)

VOTE = EventKind(
    category="political votes",
    claim_fields=("party", "seats"),
    statement=lambda led, rng, e, full: (
        f"{cap(the(led, e['party']))} won {e['seats']} of {e['total']} seats in "
        f"the {led.name(e['country'])} parliamentary vote."),
    timing="The vote was held on {date}.",
    claim_question=lambda led, c, when: (
        f"In {when}, did {the(led, c['party'])} win {c['seats']} seats?"),
    training=lambda led, e, when: [
        (f"How many seats did {the(led, e['party'])} take in the vote on {when}?", e["seats"]),
        (f"How many seats were there in total in the {led.name(e['country'])} vote "
         f"on {when}?", e["total"]),
        (f"Which party took {e['seats']} seats in the {led.name(e['country'])} vote?",
         led.name(e["party"]))],
    headline=lambda led, e: (f"{the(led, e['party'])} won {e['seats']} seats",
                             [f"{e['seats']} seats", f"{e['seats']} of {e['total']} seats"]),
    article_title=lambda led, e: f"{led.name(e['country'])} parliamentary vote counted",
    clause=lambda led, e: f"{the(led, e['party'])} won {e['seats']} seats",
)


# --- follow-ups inside a leadership arc --------------------------------------------------------


DENIAL = EventKind(
    category=None,
    claim_fields=("person", "claim"),
    statement=lambda led, rng, e, full: (
        f"{led.name(e['person'])} denied that {e['claim']}."),
    timing="The denial was issued on {date}.",
    claim_question=lambda led, c, when: (
        f"In {when}, did {led.name(c['person'])} deny that {c['claim']}?"),
    training=lambda led, e, when: [
        (f"What claim did {led.name(e['person'])} reject on {when}?", e["claim"]),
        (f"Who rejected the claim that {e['claim']}?", led.name(e["person"]))],
    follow_up_title="rejects report",
)

QUOTE = EventKind(
    category=None,
    claim_fields=("person", "text"),
    statement=lambda led, rng, e, full: (
        f"{led.name(e['person'])} said that {e['text']}."),
    timing="The remark was made on {date}.",
    claim_question=lambda led, c, when: (
        f"In {when}, did {led.name(c['person'])} say that {c['text']}?"),
    training=lambda led, e, when: [
        (f"What remark did {led.name(e['person'])} make on {when}?", e["text"]),
        (f"Who made the remark that {e['text']}?", led.name(e["person"]))],
    follow_up_title="speaks out",
)


EVENT_KINDS: dict[str, EventKind] = {
    "role_change": ROLE_CHANGE, "value_change": VALUE_CHANGE, "acquisition": ACQUISITION,
    "deal": DEAL, "launch": LAUNCH, "vote": VOTE, "denial": DENIAL, "quote": QUOTE,
}


def kind_of(e: Event) -> EventKind:
    """The table entry of an event (or of a claim, which carries the event's type)."""
    try:
        return EVENT_KINDS[e["type"]]
    except KeyError:
        raise ValueError(e["type"]) from None


def is_follow_up(e: Event) -> bool:
    return kind_of(e).category is None


def headline(led: NewsLedger, e: Event) -> tuple[str, list[str]]:
    """(title, key phrases) of an event as an arc headline (the ImpRel golds, App. D.1
    item 4): each key phrase names this event -- the new holder, the new value, the mission,
    the seats won, the target bought, the subject agreed -- not merely an entity that takes
    part in it."""
    make = kind_of(e).headline
    if make is None:
        raise ValueError(e["type"])
    return make(led, e)


def timing_sentence(e: Event) -> str:
    """The sentence that dates ``e``, naming neither its participants nor its place."""
    return kind_of(e).timing.format(date=spoken_date(e["date"]))


def article_title(led: NewsLedger, e: Event) -> str:
    """The title of an article about a main event: its subject, never its key phrase."""
    make = kind_of(e).article_title
    if make is None:
        raise ValueError(e["type"])
    return make(led, e)


def clause(led: NewsLedger, e: Event) -> str:
    """A one-off event as a clause ("X agreed to acquire Y"), for CompRel temporal items."""
    make = kind_of(e).clause
    if make is None:
        raise ValueError(e["type"])
    return make(led, e)
