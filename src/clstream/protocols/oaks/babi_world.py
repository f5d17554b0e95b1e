"""The OAKS-BABI world: invented names, valid action sampling, fact sentences and their parser.

Why: OAKS-BABI (docs/oaks.md §6; paper Appendix B.1.2, Algorithm 1) needs a bAbI-style stream of
facts whose world state is always consistent, so that a gold answer exists at every interval.
Here actions are sampled only when valid in the current state (take an object lying where
the actor stands; drop or give only what the actor holds; give only to someone in the same
place), and held objects travel with their holder. Each action is written with one of several
surface verbs of its group (Move, Acquire, Discard, Transfer), and :func:`parse_fact` reads
any such sentence back, so golds can be re-derived from the recorded facts alone.

Names are invented: actors from syllables, places from an invented root plus a place noun,
objects from a material and a noun (paper Appendix B.1.2 replaced bAbI names the same way).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

MOVE, ACQUIRE, DISCARD, TRANSFER = "move", "acquire", "discard", "transfer"
VERB_GROUPS: tuple[str, ...] = (MOVE, ACQUIRE, DISCARD, TRANSFER)

SURFACE_FORMS: dict[str, tuple[str, ...]] = {
    MOVE: ("{a} went to {p}.", "{a} journeyed to {p}.", "{a} travelled to {p}.",
           "{a} moved to {p}."),
    ACQUIRE: ("{a} got the {o}.", "{a} grabbed the {o}.", "{a} picked up the {o}.",
              "{a} took the {o}."),
    DISCARD: ("{a} dropped the {o}.", "{a} discarded the {o}.", "{a} put down the {o}.",
              "{a} left the {o}."),
    TRANSFER: ("{a} gave the {o} to {r}.", "{a} handed the {o} to {r}.",
               "{a} passed the {o} to {r}."),
}

# Entity shapes: an actor is one capitalised word, a place two, an object two lowercase words.
ACTOR_RE = r"[A-Z][a-z]+"
PLACE_RE = r"[A-Z][a-z]+ [A-Z][a-z]+"
OBJECT_RE = r"[a-z]+ [a-z]+"

_NAME_HEADS = ("Va", "Me", "Tor", "Kae", "Dru", "Sil", "Ri", "Bel", "Thal", "Zo", "Cor",
               "Fen", "Gar", "Hal", "Per", "Ys", "Quen", "Bra", "Ul", "Wyn", "Oro", "Ne")
_NAME_MIDS = ("", "lo", "ra", "ve", "mi", "do", "sa", "the", "qui")
_NAME_TAILS = ("ren", "wyn", "dor", "mir", "esh", "ith", "ova", "ius", "eth", "ard", "ek",
               "ael", "und", "ox")
_PLACE_HEADS = ("Ves", "Mor", "Orr", "Tam", "Kel", "Brin", "Cal", "Ast", "Lum", "Dun", "Hes",
                "Quar", "Sel", "Ath", "Ner", "Yor")
_PLACE_TAILS = ("mar", "wick", "rin", "dell", "mont", "thorn", "moor", "cairn", "gard", "vale",
                "ost", "umbe")
_PLACE_NOUNS = ("Hollow", "Landing", "Quay", "Crossing", "Yard", "Terrace", "Gate", "Reach",
                "Market", "Spire", "Court", "Arbor", "Wharf", "Row", "Cloister", "Barrow")
_MATERIALS = ("brass", "violet", "cracked", "gilded", "tin", "ivory", "ashen", "woven",
              "lacquered", "pewter", "amber", "oaken", "jade", "copper", "silken", "bone")
_OBJECT_NOUNS = ("compass", "ledger", "lantern", "flute", "medallion", "satchel", "spyglass",
                 "hourglass", "thimble", "locket", "kite", "chalice", "abacus", "quill",
                 "sextant", "trowel")


@dataclass(frozen=True)
class Event:
    """One world action: ``actor`` moves to ``place`` or acts on ``obj`` (given to ``recipient``)."""

    verb: str
    actor: str
    place: str | None = None
    obj: str | None = None
    recipient: str | None = None


@dataclass(frozen=True)
class World:
    actors: tuple[str, ...]
    places: tuple[str, ...]
    objects: tuple[str, ...]


def actor_name_space() -> list[str]:
    """Every actor name the syllable tables can spell (tests check it holds no real names)."""
    return [h + m + t for h in _NAME_HEADS for m in _NAME_MIDS for t in _NAME_TAILS]


_VOWELS = set("aeiouy")
_VOWEL_PAIRS = {"ae", "ai", "ea", "ei", "ia", "io", "oa", "ue", "ui", "ya", "yo"}


def _speakable(word: str) -> bool:
    """For invented words: no doubled letter, only common vowel pairs, no three vowels or
    consonants in a row."""
    w = word.lower()
    for x, y in zip(w, w[1:], strict=False):
        if x == y or (x in _VOWELS and y in _VOWELS and x + y not in _VOWEL_PAIRS):
            return False
    triples = (w[i:i + 3] for i in range(len(w) - 2))
    return not any(len({c in _VOWELS for c in t}) == 1 for t in triples)


def _distinct(
    rng: random.Random,
    n: int,
    make: Callable[[], str],
    ok: Callable[[str, list[str]], bool],
) -> list[str]:
    """``n`` distinct names from ``make`` accepted by ``ok(name, chosen_so_far)``."""
    out: list[str] = []
    for _ in range(10_000):
        name = make()
        if name not in out and ok(name, out):
            out.append(name)
            if len(out) == n:
                return out
    raise RuntimeError("name tables too small for the requested world")


def build_world(rng: random.Random, banned_words: Iterable[str] = ()) -> World:
    """A world of 4-6 actors, 5-7 places and 4-6 objects with names avoiding ``banned_words``.

    Places share no root with an actor, and no first syllable or place noun with each other;
    objects share no noun, so every entity is told apart by one distinctive word.
    """
    banned = {w.lower() for w in banned_words}

    def clean(name: str) -> bool:
        return all(w.lower() not in banned for w in name.split())

    actors = _distinct(
        rng, rng.randint(4, 6),
        lambda: rng.choice(_NAME_HEADS) + rng.choice(_NAME_MIDS) + rng.choice(_NAME_TAILS),
        lambda a, _chosen: clean(a) and _speakable(a),
    )
    actor_words = {a.lower() for a in actors}
    places = _distinct(
        rng, rng.randint(5, 7),
        lambda: f"{rng.choice(_PLACE_HEADS)}{rng.choice(_PLACE_TAILS)} {rng.choice(_PLACE_NOUNS)}",
        lambda p, chosen: clean(p) and _speakable(p.split()[0])
        and p.split()[0].lower() not in actor_words
        and all(p[:3] != q[:3] and p.split()[1] != q.split()[1] for q in chosen),
    )
    objects = _distinct(
        rng, rng.randint(4, 6),
        lambda: f"{rng.choice(_MATERIALS)} {rng.choice(_OBJECT_NOUNS)}",
        lambda o, chosen: clean(o) and all(o.split()[1] != x.split()[1] for x in chosen),
    )
    return World(tuple(actors), tuple(places), tuple(objects))


# Relative frequency of each verb group among the groups valid in the current state.
_GROUP_WEIGHTS = {MOVE: 0.4, ACQUIRE: 0.25, DISCARD: 0.15, TRANSFER: 0.2}


def simulate(world: World, n_events: int, rng: random.Random) -> list[Event]:
    """``n_events`` actions, each valid in the state left by the ones before it.

    Actors start nowhere known; objects start lying in hidden places. An actor whose place is
    not yet known (it has not moved) can neither take nor give nor receive anything, so every
    fact a reader sees is consistent with the facts before it. Half of the moves go to a place
    where another actor or a free object is, so that takes and gives keep happening.
    """
    loc: dict[str, str] = {}
    lying = {o: rng.choice(world.places) for o in world.objects}
    holder: dict[str, str] = {}
    events: list[Event] = []
    for _ in range(n_events):
        moves: list[tuple[str, ...]] = [
            (a, p) for a in world.actors for p in world.places if loc.get(a) != p]
        busy = set(loc.values()) | {lying[o] for o in world.objects if o not in holder}
        lively = [move for move in moves if move[1] in busy]
        options: dict[str, list[tuple[str, ...]]] = {
            MOVE: lively if lively and rng.random() < 0.5 else moves,
            ACQUIRE: [(a, o) for a in world.actors if a in loc for o in world.objects
                      if o not in holder and lying[o] == loc[a]],
            DISCARD: [(holder[o], o) for o in world.objects if o in holder],
            TRANSFER: [(holder[o], o, r) for o in world.objects if o in holder
                       for r in world.actors if r != holder[o] and loc.get(r) == loc[holder[o]]],
        }
        groups = [g for g in VERB_GROUPS if options[g]]
        verb = rng.choices(groups, weights=[_GROUP_WEIGHTS[g] for g in groups])[0]
        choice = rng.choice(options[verb])
        if verb == MOVE:
            actor, place = choice
            loc[actor] = place
            events.append(Event(MOVE, actor, place=place))
        elif verb == ACQUIRE:
            actor, obj = choice
            holder[obj] = actor
            events.append(Event(ACQUIRE, actor, obj=obj))
        elif verb == DISCARD:
            actor, obj = choice
            del holder[obj]
            lying[obj] = loc[actor]
            events.append(Event(DISCARD, actor, obj=obj))
        else:
            actor, obj, recipient = choice
            holder[obj] = recipient
            events.append(Event(TRANSFER, actor, obj=obj, recipient=recipient))
    return events


def render_fact(event: Event, rng: random.Random) -> str:
    """The event as a sentence, with a surface verb drawn from its group."""
    form = rng.choice(SURFACE_FORMS[event.verb])
    return form.format(a=event.actor, p=event.place, o=event.obj, r=event.recipient)


def _compile(form: str) -> re.Pattern[str]:
    pattern = re.escape(form)
    for slot, rx in (("a", ACTOR_RE), ("r", ACTOR_RE), ("p", PLACE_RE), ("o", OBJECT_RE)):
        pattern = pattern.replace(re.escape("{" + slot + "}"), f"(?P<{slot}>{rx})")
    return re.compile(pattern)


_PARSERS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (verb, _compile(form)) for verb in VERB_GROUPS for form in SURFACE_FORMS[verb]
)


def parse_fact(sentence: str) -> Event | None:
    """The event a fact sentence states, or None when it is not a fact sentence."""
    text = sentence.strip()
    for verb, pattern in _PARSERS:
        m = pattern.fullmatch(text)
        if m:
            g = m.groupdict()
            return Event(verb, g["a"], place=g.get("p"), obj=g.get("o"), recipient=g.get("r"))
    return None
