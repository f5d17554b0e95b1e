"""OAKS-BABI questions: the paper's Table 8 templates and their gold answer after any prefix.

Why: an OAKS question is asked at every interval, so its gold must be known after every chunk
(docs/oaks.md §6, paper Algorithm 1 "GenerateTimeline"). A :class:`Ledger` folds the facts seen so
far into the aggregates every template reads (places, holders, counts, the last direct trip
between two places, ...), so the gold of each question at each interval is one lookup.

Gold conventions (consistent with docs/oaks.md §4.3 equivalences):
- nothing relevant seen yet: "Unknown" (tracking, bridge, comparison) or "0" (counting; the
  scorer also accepts "Unknown" then);
- comparison: the greater name or place, "Same" when equal once either side has evidence
  (before that "Unknown", and the scorer also accepts "Same");
- an object that was held and then dropped is held by nobody: accepted "Nobody" / "No one".
"""

from __future__ import annotations

import itertools
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from clstream.protocols.oaks.babi_world import (
    ACQUIRE,
    ACTOR_RE,
    DISCARD,
    MOVE,
    OBJECT_RE,
    PLACE_RE,
    Event,
    World,
)

TRACKING, COUNTING, BRIDGE, COMPARISON = "tracking", "counting", "bridge", "comparison"
QUESTION_TYPES: tuple[str, ...] = (TRACKING, COUNTING, BRIDGE, COMPARISON)
UNKNOWN, SAME = "Unknown", "Same"
NOBODY: tuple[str, ...] = ("Nobody", "No one")

Gold = tuple[str, ...]


class Ledger:
    """Everything the templates need to know about the facts applied so far."""

    def __init__(self) -> None:
        self.loc: dict[str, str] = {}
        self.holder: dict[str, str | None] = {}  # absent: never held; None: dropped
        self.last_giver: dict[str, str] = {}
        self.moves_to: Counter[tuple[str, str]] = Counter()
        self.moves: Counter[str] = Counter()
        self.visitors: defaultdict[str, set[str]] = defaultdict(set)
        self.places_of: defaultdict[str, set[str]] = defaultdict(set)
        self.picks: Counter[tuple[str, str]] = Counter()
        self.picks_by: Counter[str] = Counter()
        self.picks_of: Counter[str] = Counter()
        self.picked_set: defaultdict[str, set[str]] = defaultdict(set)
        self.drops: Counter[tuple[str, str]] = Counter()
        self.drops_by: Counter[str] = Counter()
        self.drops_of: Counter[str] = Counter()
        self.dropped_set: defaultdict[str, set[str]] = defaultdict(set)
        self.droppers: defaultdict[str, set[str]] = defaultdict(set)
        self.held_by: defaultdict[str, set[str]] = defaultdict(set)
        self.received: Counter[str] = Counter()
        self.givers_to: defaultdict[str, set[str]] = defaultdict(set)
        self.gifts: Counter[tuple[str, str]] = Counter()
        self.last_direct: dict[tuple[str, str], str] = {}
        self.where_when: dict[tuple[str, str], dict[str, str]] = {}
        self.acq_place: dict[tuple[str, str], str] = {}
        self.drop_place: dict[tuple[str, str], str] = {}
        self.after_acq: dict[tuple[str, str], str] = {}
        self.after_drop: dict[tuple[str, str], str] = {}
        self._pending_acq: set[tuple[str, str]] = set()
        self._pending_drop: set[tuple[str, str]] = set()

    def apply(self, ev: Event) -> None:
        a = ev.actor
        if ev.verb == MOVE:
            assert ev.place is not None
            p = ev.place
            if a in self.loc:
                self.last_direct[(self.loc[a], p)] = a
            self.loc[a] = p
            self.moves_to[(a, p)] += 1
            self.moves[a] += 1
            self.visitors[p].add(a)
            self.places_of[a].add(p)
            self.where_when[(a, p)] = dict(self.loc)
            for pending, done in ((self._pending_acq, self.after_acq),
                                  (self._pending_drop, self.after_drop)):
                for key in [k for k in pending if k[0] == a]:
                    done[key] = p
                    pending.discard(key)
            return
        assert ev.obj is not None
        o = ev.obj
        if ev.verb == ACQUIRE:
            self.holder[o] = a
            self.picks[(a, o)] += 1
            self.picks_by[a] += 1
            self.picks_of[o] += 1
            self.picked_set[a].add(o)
            self.held_by[o].add(a)
            if a in self.loc:
                self.acq_place[(a, o)] = self.loc[a]
            self._pending_acq.add((a, o))
        elif ev.verb == DISCARD:
            self.holder[o] = None
            self.drops[(a, o)] += 1
            self.drops_by[a] += 1
            self.drops_of[o] += 1
            self.dropped_set[a].add(o)
            self.droppers[o].add(a)
            if a in self.loc:
                self.drop_place[(a, o)] = self.loc[a]
            self._pending_drop.add((a, o))
        else:
            assert ev.recipient is not None
            r = ev.recipient
            self.holder[o] = r
            self.last_giver[o] = a
            self.held_by[o].add(r)
            self.received[r] += 1
            self.givers_to[r].add(a)
            self.gifts[(a, r)] += 1


def _known(value: str | None) -> Gold:
    return (value,) if value else (UNKNOWN,)


def _count(n: int) -> Gold:
    return (str(n),)


def _compare(x: str, x_val: int, y: str, y_val: int) -> Gold:
    if x_val == 0 and y_val == 0:
        return (UNKNOWN,)
    if x_val == y_val:
        return (SAME,)
    return (x,) if x_val > y_val else (y,)


def _holder(led: Ledger, o: str) -> Gold:
    if o not in led.holder:
        return (UNKNOWN,)
    h = led.holder[o]
    return (h,) if h else NOBODY


def _where_when(led: Ledger, s: str, s2: str, p: str) -> Gold:
    snap = led.where_when.get((s2, p))
    return _known(snap.get(s) if snap else None)


@dataclass(frozen=True)
class Template:
    """A question form; slots ``s``/``s2`` are actors, ``p``/``p2`` places, ``o`` an object."""

    key: str
    family: str
    text: str
    answer: Callable[..., Gold]
    symmetric: bool = False  # the two slots of one kind are interchangeable: ask one order

    @property
    def slots(self) -> tuple[str, ...]:
        return tuple(re.findall(r"\{(\w+)\}", self.text))


T = Template
TEMPLATES: tuple[Template, ...] = (
    T("where_is", TRACKING, "Where is {s}?", lambda L, s: _known(L.loc.get(s))),
    T("holder", TRACKING, "Who is holding the {o}?", _holder),
    T("last_giver", TRACKING, "Who gave the {o} to someone else?",
      lambda L, o: _known(L.last_giver.get(o))),
    T("moves_to", COUNTING, "How many times has {s} moved to {p}?",
      lambda L, s, p: _count(L.moves_to[(s, p)])),
    T("moves", COUNTING, "How many times has {s} moved?", lambda L, s: _count(L.moves[s])),
    T("visitors", COUNTING, "How many people have visited {p}?",
      lambda L, p: _count(len(L.visitors[p]))),
    T("picks", COUNTING, "How many times has {s} picked up the {o}?",
      lambda L, s, o: _count(L.picks[(s, o)])),
    T("picked_unique", COUNTING, "How many unique objects has {s} picked up?",
      lambda L, s: _count(len(L.picked_set[s]))),
    T("drops", COUNTING, "How many times has {s} dropped the {o}?",
      lambda L, s, o: _count(L.drops[(s, o)])),
    T("dropped_unique", COUNTING, "How many unique objects has {s} dropped?",
      lambda L, s: _count(len(L.dropped_set[s]))),
    T("picks_of", COUNTING, "How many total times has the {o} been picked up?",
      lambda L, o: _count(L.picks_of[o])),
    T("holders_of", COUNTING, "How many unique people have held the {o}?",
      lambda L, o: _count(len(L.held_by[o]))),
    T("drops_of", COUNTING, "How many total times has the {o} been dropped?",
      lambda L, o: _count(L.drops_of[o])),
    T("droppers_of", COUNTING, "How many unique people have dropped the {o}?",
      lambda L, o: _count(len(L.droppers[o]))),
    T("received", COUNTING, "How many times has {s} received anything from anyone?",
      lambda L, s: _count(L.received[s])),
    T("givers_to", COUNTING, "How many different people have given something to {s}?",
      lambda L, s: _count(len(L.givers_to[s]))),
    T("gifts", COUNTING, "How many times has {s} given any object to {s2}?",
      lambda L, s, s2: _count(L.gifts[(s, s2)])),
    T("direct", BRIDGE, "Who most recently traveled directly from {p} to {p2}?",
      lambda L, p, p2: _known(L.last_direct.get((p, p2)))),
    T("where_when", BRIDGE, "Where was {s} the last time {s2} moved to {p}?", _where_when),
    # Reading chosen for "moved to after acquiring/dropping": the first move that follows an
    # acquisition (drop), taken for the latest acquisition (drop) already followed by a move.
    T("after_acquire", BRIDGE,
      "Where is the most recent location that {s} moved to after acquiring the {o}?",
      lambda L, s, o: _known(L.after_acq.get((s, o)))),
    T("after_drop", BRIDGE,
      "Where is the most recent location that {s} moved to after dropping the {o}?",
      lambda L, s, o: _known(L.after_drop.get((s, o)))),
    # "Acquire" is the Acquire verb group (got/grabbed/picked up/took); receiving is Transfer.
    T("acquire_place", BRIDGE, "Where did {s} most recently acquire the {o}?",
      lambda L, s, o: _known(L.acq_place.get((s, o)))),
    T("drop_place", BRIDGE, "Where did {s} most recently drop the {o}?",
      lambda L, s, o: _known(L.drop_place.get((s, o)))),
    T("more_places", COMPARISON, "Has {s} or {s2} visited more distinct places?",
      lambda L, s, s2: _compare(s, len(L.places_of[s]), s2, len(L.places_of[s2])), True),
    T("place_more", COMPARISON, "Which location did {s} visit more often, {p} or {p2}?",
      lambda L, s, p, p2: _compare(p, L.moves_to[(s, p)], p2, L.moves_to[(s, p2)]), True),
    T("more_unique_picks", COMPARISON,
      "Who picked up a greater number of distinct objects, {s} or {s2}?",
      lambda L, s, s2: _compare(s, len(L.picked_set[s]), s2, len(L.picked_set[s2])), True),
    T("more_unique_drops", COMPARISON,
      "Who dropped a greater number of distinct objects, {s} or {s2}?",
      lambda L, s, s2: _compare(s, len(L.dropped_set[s]), s2, len(L.dropped_set[s2])), True),
    T("more_picks", COMPARISON, "Who picked up a greater number of objects, {s} or {s2}?",
      lambda L, s, s2: _compare(s, L.picks_by[s], s2, L.picks_by[s2]), True),
    T("more_drops", COMPARISON, "Who dropped more objects, {s} or {s2}?",
      lambda L, s, s2: _compare(s, L.drops_by[s], s2, L.drops_by[s2]), True),
)
del T

_KIND_RE = {"s": ACTOR_RE, "p": PLACE_RE, "o": OBJECT_RE}


@dataclass(frozen=True)
class Question:
    template: Template
    values: tuple[tuple[str, str], ...]  # (slot, entity) in slot order

    @property
    def text(self) -> str:
        return self.template.text.format(**dict(self.values))

    @property
    def family(self) -> str:
        return self.template.family

    def answer(self, ledger: Ledger) -> Gold:
        return self.template.answer(ledger, **dict(self.values))


def enumerate_questions(world: World) -> list[Question]:
    """Every filled template over the world's entities, in a fixed order."""
    pools = {"s": world.actors, "p": world.places, "o": world.objects}
    out: list[Question] = []
    for tpl in TEMPLATES:
        slots = tpl.slots
        for combo in itertools.product(*(pools[s[0]] for s in slots)):
            by_kind: dict[str, list[str]] = defaultdict(list)
            for slot, value in zip(slots, combo, strict=True):
                by_kind[slot[0]].append(value)
            if any(len(set(v)) < len(v) for v in by_kind.values()):
                continue
            if tpl.symmetric and any(
                [pools[k].index(x) for x in v] != sorted(pools[k].index(x) for x in v)
                for k, v in by_kind.items()
            ):
                continue
            out.append(Question(tpl, tuple(zip(slots, combo, strict=True))))
    return out


def _template_pattern(tpl: Template) -> re.Pattern[str]:
    pattern = re.escape(tpl.text)
    for slot in tpl.slots:
        pattern = pattern.replace(re.escape("{" + slot + "}"), f"(?P<{slot}>{_KIND_RE[slot[0]]})")
    return re.compile(pattern)


_PATTERNS = tuple((tpl, _template_pattern(tpl)) for tpl in TEMPLATES)


def parse_question(text: str) -> Question | None:
    """The template and entities of a question text, or None when no template matches."""
    for tpl, pattern in _PATTERNS:
        m = pattern.fullmatch(text.strip())
        if m:
            return Question(tpl, tuple((s, m.group(s)) for s in tpl.slots))
    return None


def timelines(questions: Sequence[Question], events_by_chunk: Sequence[Sequence[Event]]
              ) -> list[list[Gold]]:
    """Gold of every question after each chunk (index 0 = after the first chunk)."""
    ledger = Ledger()
    out: list[list[Gold]] = [[] for _ in questions]
    for chunk_events in events_by_chunk:
        for ev in chunk_events:
            ledger.apply(ev)
        for golds, q in zip(out, questions, strict=True):
            golds.append(q.answer(ledger))
    return out


def count_changes(golds: Sequence[Gold]) -> int:
    """Intervals t = 2..C whose gold differs from the one before (docs/oaks.md §5.7)."""
    return sum(1 for prev, cur in zip(golds, golds[1:], strict=False) if prev != cur)


def count_phases(golds: Sequence[Gold]) -> int:
    """Maximal runs of equal gold: 1 + :func:`count_changes` (an initial Unknown run counts).

    This is the paper's count of "answer changes" (App. B: 2-20 per question) and what the
    subsets bin on (docs/oaks.md §5.7, §6); 0 for an empty timeline.
    """
    return count_changes(golds) + 1 if golds else 0
