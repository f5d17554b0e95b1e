"""Answering questions from the events the builtin reader found (docs/oaks.md §2, §6 question kinds).

:mod:`clstream.models.builtin.reader` turns passages into sentences and events; this module
reads a question (the people, objects and places it names, the action it asks about) and
answers where / who / how-many / comparison questions from those events. Bridge questions
follow one reading each, stated where they are answered. Question routing, the lexical
fallback, multiple choice and caching are in :mod:`clstream.models.builtin`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from clstream.models.builtin.reader import (
    ACQUIRE,
    CAP_STOP,
    DISCARD,
    MOVE,
    TRANSFER,
    Event,
    ReadText,
    is_name,
    phrase_at,
    tokens_of,
)

HOLD = "hold"
UNKNOWN = "Unknown"
_Q_ACTIONS: tuple[tuple[str, frozenset[str]], ...] = (
    (TRANSFER, frozenset("gave given give gives giving handed passed received receive "
                         "receives receiving".split())),
    (HOLD, frozenset("held holding hold holds carrying carried carries".split())),
    (ACQUIRE, frozenset("picked pick picks picking acquired acquire acquires acquiring took "
                        "taken take takes grabbed got obtained collected".split())),
    (DISCARD, frozenset("dropped drop drops dropping discarded discard discards put left "
                        "leave".split())),
    (MOVE, frozenset("moved move moves moving visited visit visits went gone go goes traveled "
                     "travelled travel travels journeyed visitors".split())),
)  # fmt: skip
_ACTION_WORDS = frozenset().union(*(words for _, words in _Q_ACTIONS))
_DISTINCT = frozenset({"unique", "distinct", "different"})
_PLACE_PREPS = frozenset({"to", "from", "at", "in", "into"})
_PEOPLE = frozenset("people persons individuals characters visitors actors givers".split())
_THINGS = frozenset("objects things items gifts".split())
_PLACES = frozenset("places locations rooms".split())
GENERIC = frozenset(
    """most recent location locations place places number last time times first same greater
    object objects thing things person people one other someone anyone anything""".split()
)
STOP = CAP_STOP | frozenset("many much times did does is are was were the a an".split())


@dataclass(frozen=True)
class Mention:
    pos: int
    # "actor" | "object" | "place" as seen in the events; not seen there: "name" (capitalised,
    # a person or a place) or "thing" (a common-noun phrase)
    kind: str
    key: str


@dataclass
class Question:
    text: str
    tokens: list[str]
    lower: list[str]
    mentions: list[Mention]

    def has(self, *words: str) -> bool:
        return any(w in self.lower for w in words)

    def actions(self) -> list[tuple[int, str]]:
        return [
            (i, kind)
            for i, w in enumerate(self.lower)
            for kind, words in _Q_ACTIONS
            if w in words
        ]

    def of(self, *kinds: str) -> list[Mention]:
        return [m for m in self.mentions if m.kind in kinds]

    def after(self, word: str) -> Mention | None:
        """The first mention following the first ``word``."""
        if word not in self.lower:
            return None
        at = self.lower.index(word)
        return next((m for m in self.mentions if m.pos > at), None)


def read_question(read: ReadText, text: str) -> Question:
    tokens = [t for t in tokens_of(text) if t[0].isalnum()]
    lower = [t.lower() for t in tokens]
    vocab = [(read.actors, "actor"), (read.places, "place"), (read.objects, "object")]
    heads = {o.split()[-1]: o for o in read.objects}

    def known(i: int) -> tuple[Mention, int] | None:
        for n in (3, 2, 1):
            phrase = " ".join(lower[i : i + n])
            for table, kind in vocab:
                if i + n <= len(tokens) and phrase in table:
                    return Mention(i, kind, phrase), n
        if i < len(tokens) and lower[i] in heads:
            return Mention(i, "object", heads[lower[i]]), 1
        return None

    mentions: list[Mention] = []
    i = 0
    while i < len(tokens):
        found = known(i)
        article = lower[i] in ("the", "a", "an") and i + 1 < len(tokens)
        if found is None and article and (after := known(i + 1)) is not None:
            found = (after[0], after[1] + 1)
        elif found is None and is_name(tokens[i]) and i > 0:
            name, end = phrase_at(tokens, i, names=True)
            found = (Mention(i, "name", (name or tokens[i]).lower()), max(end - i, 1))
        elif found is None and article and not is_name(tokens[i + 1]):
            thing, end = phrase_at(tokens, i, names=False)
            words = list(itertools.takewhile(
                lambda w: w not in _ACTION_WORDS, (thing or "").lower().split()
            ))  # fmt: skip
            if words and words[0] not in GENERIC:
                found = (Mention(i, "thing", " ".join(words)), end - i)
        if found:
            mentions.append(found[0])
            i += found[1]
        else:
            i += 1
    return Question(text, tokens, lower, mentions)


def _same(a: str | None, b: str | None) -> bool:
    """Entity match: equal, or one is the other's head word ("red ball" ~ "ball")."""
    if a is None or b is None:
        return False
    return a == b or a.split()[-1] == b or b.split()[-1] == a


def _evidence(read: ReadText, ev: Event) -> str:
    sentence = read.sentences[ev.sentence]
    if len(sentence) > 160:
        sentence = sentence[:157] + "..."
    return f"'{sentence}' (chunk index {read.chunk_of[ev.sentence]})"


def _place(read: ReadText, move: Event) -> str:
    return read.show(move.place or "")


def _location(read: ReadText, actor: str, before: int | None = None) -> Event | None:
    moves = [
        e for e in read.events
        if e.kind == MOVE and e.subj == actor and (before is None or e.seq < before)
    ]  # fmt: skip
    return moves[-1] if moves else None


def _holder(read: ReadText, obj: str) -> tuple[str | None, Event | None]:
    holder, last = None, None
    for e in read.events:
        if e.obj is not None and _same(e.obj, obj) and e.kind in (ACQUIRE, DISCARD, TRANSFER):
            holder = {ACQUIRE: e.subj, TRANSFER: e.target, DISCARD: None}[e.kind]
            last = e
    return holder, last


def _latest(read: ReadText, kind: str, subj: str | None = None, obj: str | None = None,
            place: str | None = None, target: str | None = None) -> Event | None:  # fmt: skip
    for e in reversed(read.events):
        if e.kind == kind and _fits(e, subj, obj, place, target):
            return e
    return None


def _fits(e: Event, subj: str | None, obj: str | None, place: str | None,
          target: str | None) -> bool:  # fmt: skip
    return (
        (subj is None or e.subj == subj)
        and (obj is None or _same(e.obj, obj))
        and (place is None or _same(e.place, place))
        and (target is None or e.target == target)
    )


def _roles(q: Question, kind: str, skip: tuple[Mention, ...] = ()) -> dict[str, str | None]:
    """Which named entity fills which role of the asked event kind."""
    ms = [m for m in q.mentions if m not in skip]
    # An unseen name after "to"/"from"/"at" is a place for a move, a person otherwise.
    as_place = {m for m in ms if m.kind == "name" and m.pos and q.lower[m.pos - 1] in _PLACE_PREPS}
    if kind != MOVE:
        as_place = set()
    actors = [m for m in ms if m.kind == "actor" or (m.kind == "name" and m not in as_place)]
    things = [m for m in ms if m.kind in ("object", "thing")]
    places = [m for m in ms if m.kind in ("place", "thing") or m in as_place]
    roles: dict[str, str | None] = {"subj": None, "obj": None, "place": None, "target": None}
    if kind == MOVE:
        roles["subj"] = actors[0].key if actors else None
        roles["place"] = places[0].key if places else None
        return roles
    roles["obj"] = things[0].key if things else None
    if kind == TRANSFER:
        receiving = q.has("received", "receive", "receives", "receiving")
        for m in actors:
            before = q.lower[m.pos - 1] if m.pos > 0 else ""
            role = "subj" if before == "from" or (not receiving and before != "to") else "target"
            if roles[role] is None:
                roles[role] = m.key
    else:
        roles["subj"] = actors[0].key if actors else None
    return roles


def _counted(q: Question, kind: str, roles: dict[str, str | None]) -> str | None:
    """The role whose distinct values are counted, or None to count events."""
    for i, w in enumerate(q.lower):
        if w in _DISTINCT or w in _PEOPLE or (w == "many" and i + 1 < len(q.lower)):
            noun = next((x for x in q.lower[i + 1 : i + 3] if x not in _DISTINCT), "")
            noun = w if w in _PEOPLE else noun
            distinct = w in _DISTINCT or noun in _PEOPLE
            if noun in _PEOPLE:
                if kind == TRANSFER:
                    return "subj" if roles["target"] else "target"
                return "holder" if kind == HOLD else "subj"
            if distinct and noun in _THINGS:
                return "obj"
            if distinct and noun in _PLACES:
                return "place"
    return None


def _measure(read: ReadText, kind: str, roles: dict[str, str | None], counted: str | None) -> int:
    """Matching events counted, or the distinct values of the ``counted`` role among them."""
    values: list[str | None] = []
    for e in read.events:
        if kind == HOLD and e.kind in (ACQUIRE, TRANSFER):
            holder = e.subj if e.kind == ACQUIRE else e.target
            if not _fits(e, None, roles["obj"], None, None) or roles["subj"] not in (None, holder):
                continue
            values.append(holder if counted in ("holder", "subj") else e.obj)
        elif e.kind == kind and _fits(e, roles["subj"], roles["obj"], roles["place"],
                                      roles["target"]):  # fmt: skip
            values.append(getattr(e, counted) if counted else None)
    return len(values) if counted is None else len(set(values))


def _first_action(q: Question) -> str | None:
    acts = q.actions()
    return acts[0][1] if acts else None


def answer_count(read: ReadText, q: Question) -> tuple[str, str] | None:
    kind = _first_action(q)
    if kind is None:
        return None
    roles = _roles(q, kind)
    n = _measure(read, kind, roles, _counted(q, kind, roles))
    return f"Counted {n} matching {kind} statement(s) in the passages.", str(n)


def answer_compare(read: ReadText, q: Question) -> tuple[str, str] | None:
    kind = _first_action(q)
    if kind is None or "or" not in q.lower:
        return None
    at = len(q.lower) - 1 - q.lower[::-1].index("or")
    left = [m for m in q.mentions if m.pos < at]
    right = [m for m in q.mentions if m.pos > at]
    if not left or not right:
        return None
    a, b = left[-1], right[0]
    roles = _roles(q, kind, skip=(a, b))
    kinds = {a.kind, b.kind}
    if "place" in kinds or ("thing" in kinds and kind == MOVE):
        slot = "place"
    elif kinds & {"object", "thing"}:
        slot = "obj"
    else:
        slot = "target" if kind == TRANSFER and q.has("received", "receive") else "subj"
    counts = []
    for side in (a, b):
        side_roles = dict(roles, **{slot: side.key})
        counts.append(_measure(read, kind, side_roles, _counted(q, kind, side_roles)))
    reason = f"Counted {counts[0]} for {read.show(a.key)} and {counts[1]} for {read.show(b.key)}."
    if counts[0] == counts[1]:
        return reason, "Same"
    return reason, read.show((a if counts[0] > counts[1] else b).key)


def _next_move(read: ReadText, ev: Event) -> Event | None:
    return next((e for e in read.events if e.kind == MOVE and e.subj == ev.subj and e.seq > ev.seq),
                None)  # fmt: skip


def _where_during(read: ReadText, q: Question, actors: list[Mention]) -> tuple[str, str]:
    """Where was A the last time B went to P: A's latest move before B's latest trip to P."""
    place = q.after("to")
    trip = _latest(read, MOVE, subj=actors[1].key, place=place.key if place else None)
    if trip is None:
        return "No such trip is stated.", UNKNOWN
    loc = _location(read, actors[0].key, before=trip.seq)
    if loc is None:
        return f"Trip {_evidence(read, trip)}; no earlier move is stated.", UNKNOWN
    return f"Trip {_evidence(read, trip)}; before it {_evidence(read, loc)}.", _place(read, loc)


def _where_event(read: ReadText, q: Question, kind: str, actor: Mention,
                 obj: Mention | None) -> tuple[str, str]:  # fmt: skip
    """Where A took / dropped / gave O, or (with "after") where A went after doing so."""
    events = [e for e in read.events
              if e.kind == kind and _fits(e, actor.key, obj.key if obj else None, None, None)]
    if not events:
        return "No such event is stated.", UNKNOWN
    if q.has("after"):
        # Reading taken: the latest (event, first move after it) pair; an event with no move
        # after it yet leaves the previous pair standing.
        for ev in reversed(events):
            nxt = _next_move(read, ev)
            if nxt is not None:
                return f"{_evidence(read, ev)}; next {_evidence(read, nxt)}.", _place(read, nxt)
        return f"{_evidence(read, events[-1])}; no move after it.", UNKNOWN
    ev = events[-1]
    loc = _location(read, ev.subj, before=ev.seq)  # where the subject was at the time
    if loc is None:
        return f"{_evidence(read, ev)}; place not stated.", UNKNOWN
    return f"{_evidence(read, ev)}; there after {_evidence(read, loc)}.", _place(read, loc)


def _where_now(read: ReadText, target: Mention) -> tuple[str, str]:
    """A person's latest move; an object is where its holder is, or where it was dropped."""
    if target.kind in ("actor", "name"):
        loc = _location(read, target.key)
        if loc is None:
            return "No move of theirs is stated.", UNKNOWN
        return f"Latest move {_evidence(read, loc)}.", _place(read, loc)
    holder, last = _holder(read, target.key)
    if last is None:
        return "The object is not mentioned in any event.", UNKNOWN
    loc = _location(read, holder or last.subj, before=None if holder else last.seq)
    if loc is None:
        return f"Latest change {_evidence(read, last)}; place not stated.", UNKNOWN
    reason = f"Latest change {_evidence(read, last)}; place {_evidence(read, loc)}."
    return reason, _place(read, loc)


def answer_where(read: ReadText, q: Question) -> tuple[str, str] | None:
    actors = q.of("actor", "name")
    if q.has("last") and q.has("time") and len(actors) >= 2:
        return _where_during(read, q, actors)
    acts = [kind for _, kind in q.actions() if kind in (ACQUIRE, DISCARD, TRANSFER)]
    obj = next(iter(q.of("object", "thing")), None)
    if acts and actors:
        return _where_event(read, q, acts[0], actors[0], obj)
    target = actors[0] if actors else obj
    return _where_now(read, target) if target is not None else None


def answer_who(read: ReadText, q: Question) -> tuple[str, str] | None:
    if q.has("from") and q.has("to") and _first_action(q) == MOVE:
        src, dst = q.after("from"), q.after("to")
        best: tuple[Event, Event] | None = None
        last_move: dict[str, Event] = {}
        for e in read.events:
            if e.kind != MOVE:
                continue
            prev = last_move.get(e.subj)
            if prev and src and dst and _same(prev.place, src.key) and _same(e.place, dst.key):
                best = (prev, e)
            last_move[e.subj] = e
        if best is None:
            return "No direct trip between those places is stated.", UNKNOWN
        return f"Trip {_evidence(read, best[1])}.", read.show(best[1].subj)
    obj = next(iter(q.of("object", "thing")), None)
    if q.has("holding", "holds", "has", "carrying", "have") and obj is not None:
        holder, last = _holder(read, obj.key)
        if last is None:
            return "No one is stated to have taken it.", UNKNOWN
        if holder is None:  # put down: known to be held by no one, unlike never taken
            return f"It was put down: {_evidence(read, last)}.", "nobody"
        return f"Latest change {_evidence(read, last)}.", read.show(holder)
    kind = _first_action(q)
    if kind is None or kind == HOLD:
        return None
    roles = _roles(q, kind)
    ev = _latest(read, kind, None, roles["obj"], roles["place"], roles["target"])
    if ev is None:
        return "No such event is stated.", UNKNOWN
    return f"Latest {_evidence(read, ev)}.", read.show(ev.subj)
