"""What the builtin baseline reads: sentences, state-changing events, and questions about them.

The builtin model answers OAKS questions from the prompt text alone (SPECS §1.2). Reading
splits passages into sentences, keeps their order (chunk index first, then position), and
recognises four kinds of events with a small lexicon of common English verbs -- moving to a
place, taking an object, putting an object down, handing an object to someone. The subject is
the capitalised name nearest before the verb in the same clause ("Later, Mara went to the
hall"), or the sentence's previous subject after "and"/"then". Pronouns are never resolved,
so narrative filler rarely yields events about named people.

The second half reads a question (the people, objects and places it names, the action it
asks about) and answers where / who / how-many / comparison questions from the events.
Bridge questions follow one reading each, stated where they are answered. Question routing,
the lexical fallback, multiple choice and caching are in :mod:`clstream.models.builtin`.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from functools import lru_cache

_TOKEN = re.compile(r"[A-Za-z][A-Za-z'\-]*|\d+|[,;:()\"]")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+")
_CONTENT_WORD = re.compile(r"[a-z0-9]+")

MOVE, ACQUIRE, DISCARD, TRANSFER = "move", "acquire", "discard", "transfer"

# Common English verbs for the four kinds of state change; tuples are multi-word verbs.
VERBS: dict[str, frozenset[str | tuple[str, ...]]] = {
    MOVE: frozenset(
        """went go goes moved move moves journeyed journeys travelled traveled travels walked
        walks ran runs headed heads returned returns hurried hurries rushed rushes drove flew
        wandered strolled marched proceeded relocated came comes""".split()
    ),
    ACQUIRE: frozenset(
        "got gets grabbed grabs took takes collected collects obtained obtains seized snatched "
        "fetched acquired acquires lifted".split()
    )
    | {("picked", "up"), ("picks", "up"), ("took", "hold", "of")},
    DISCARD: frozenset("dropped drops discarded discards left leaves abandoned abandons".split())
    | {
        ("put", "down"),
        ("puts", "down"),
        ("set", "down"),
        ("sets", "down"),
        ("laid", "down"),
        ("threw", "away"),
        ("let", "go", "of"),
    },
    TRANSFER: frozenset("gave gives handed hands passed passes offered offers".split()),
}
_MOVE_PREPS = frozenset({"to", "into", "toward", "towards"})
_MOVE_PARTICLES = frozenset({"back", "over", "off", "out", "straight", "directly", "then", "on"})
DETERMINERS = frozenset("the a an some his her their its my our your this that".split())
# Words that end an object or place phrase.
_PHRASE_BREAK = frozenset(
    """to into toward towards from with in at on by for of and or but then there here again
    after before while when as up down away back quickly slowly soon later once also now
    too yesterday today afterwards that which who because is was are were be been being has
    have had""".split()
)
_ADVERBS = frozenset(
    """then later soon also quickly slowly finally afterwards again once eventually
    subsequently promptly immediately suddenly next""".split()
)
# Capitalised words that are not names: pronouns, function words, question words.
CAP_STOP = frozenset(
    """the a an he she it they we i you his her their its our my your this that these those
    then after before when while where what who whom whose which why how is are was were has
    have had did do does will would can could should may might must shall there here and but
    or so if yet also later soon finally afterwards meanwhile once next first however although
    though because since until as at in on to from by with for of into onto over under mr mrs
    ms dr sir lady lord miss yes no not all every each some any one two unknown same
    chapter""".split()
)
WORD_NUMBERS = {
    "zero": 0, "none": 0, "never": 0, "one": 1, "once": 1, "two": 2, "twice": 2, "three": 3,
    "thrice": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
}  # fmt: skip


@dataclass(frozen=True)
class Event:
    """One state change. Names and phrases are lowercase; ``seq`` orders events in a text."""

    kind: str
    subj: str
    obj: str | None = None
    place: str | None = None
    target: str | None = None
    sentence: int = 0
    seq: int = 0


@dataclass(frozen=True)
class ParsedPassage:
    sentences: tuple[str, ...]
    words: tuple[frozenset[str], ...]
    events: tuple[tuple[Event, ...], ...]
    display: dict[str, str] = field(hash=False, compare=False)


def is_name(token: str) -> bool:
    return token[:1].isupper() and token.lower() not in CAP_STOP and not token.isupper()


def _verb_index() -> dict[str, list[tuple[tuple[str, ...], str]]]:
    """First word -> (full form, kind), longest forms first."""
    index: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for kind, verbs in VERBS.items():
        for verb in verbs:
            form = verb if isinstance(verb, tuple) else (verb,)
            index.setdefault(form[0], []).append((form, kind))
    for forms in index.values():
        forms.sort(key=lambda item: -len(item[0]))
    return index


_VERB_INDEX = _verb_index()


def _verb_at(tokens: list[str], lower: list[str], i: int) -> tuple[str, int] | None:
    """(kind, length) of a lexicon verb starting at token ``i``, longest form first.
    A capitalised one-word verb is not taken ("Left alone, ..." or a name like "Drew")."""
    for form, kind in _VERB_INDEX.get(lower[i], ()):
        n = len(form)
        if tuple(lower[i : i + n]) == form and (n > 1 or not tokens[i][:1].isupper()):
            return kind, n
    return None


def _name_before(tokens: list[str], i: int) -> tuple[str | None, str | None]:
    """The capitalised name ending just before ``i`` (skipping adverbs), and the word that
    stopped the search when there is no name (to tell "and went" from "he went")."""
    j = i - 1
    while j >= 0 and tokens[j].lower() in _ADVERBS and not is_name(tokens[j]):
        j -= 1
    if j < 0:
        return None, None
    if not is_name(tokens[j]):
        return None, tokens[j].lower()
    end = j
    while j - 1 >= 0 and is_name(tokens[j - 1]):
        j -= 1
    return " ".join(tokens[j : end + 1]), None


def phrase_at(tokens: list[str], i: int, names: bool) -> tuple[str | None, int]:
    """A noun phrase of up to three words at ``i`` (determiners skipped); returns (phrase, next)."""
    while i < len(tokens) and tokens[i].lower() in DETERMINERS:
        i += 1
    words: list[str] = []
    while i < len(tokens) and len(words) < 3:
        tok, low = tokens[i], tokens[i].lower()
        if not tok[0].isalnum() or low in _PHRASE_BREAK or low in DETERMINERS:
            break
        if not names and is_name(tok) and words:
            break
        words.append(tok)
        i += 1
    return (" ".join(words) if words else None), i


def sentence_events(sentence: str, display: dict[str, str]) -> list[Event]:
    """Events stated in one sentence, in order. ``display`` collects names as written."""
    tokens = _TOKEN.findall(sentence)
    lower = [t.lower() for t in tokens]
    events: list[Event] = []
    last_subj: str | None = None
    i = 0
    while i < len(tokens):
        found = _verb_at(tokens, lower, i)
        if found is None:
            i += 1
            continue
        kind, n = found
        subj, stop = _name_before(tokens, i)
        if subj is None and stop in {"and", "then", ","}:
            subj = last_subj
        elif subj is not None:
            display.setdefault(subj.lower(), subj)
            subj = subj.lower()
        last_subj = subj
        j = i + n
        event = None
        if subj is not None:
            event, j = _complete(kind, subj, tokens, lower, j, display)
        if event is not None:
            events.append(event)
        i = max(j, i + 1)
    return events


def _complete(
    kind: str, subj: str, tokens: list[str], lower: list[str], j: int, display: dict[str, str]
) -> tuple[Event | None, int]:
    """Read the rest of an event after its verb (ending at token ``j``)."""
    if kind == MOVE:
        while j < len(tokens) and lower[j] in _MOVE_PARTICLES:
            j += 1
        if j >= len(tokens) or lower[j] not in _MOVE_PREPS:
            return None, j
        place, j = phrase_at(tokens, j + 1, names=True)
        if place is None:
            return None, j
        display.setdefault(place.lower(), place)
        return Event(MOVE, subj, place=place.lower()), j
    if kind == TRANSFER:
        if j < len(tokens) and is_name(tokens[j]):  # "gave Ada the lamp"
            recipient, j2 = phrase_at(tokens, j, names=True)
            obj, j2 = phrase_at(tokens, j2, names=False)
            if recipient and obj:
                display.setdefault(recipient.lower(), recipient)
                return Event(TRANSFER, subj, obj=obj.lower(), target=recipient.lower()), j2
            return None, j2
        obj, j = phrase_at(tokens, j, names=False)
        if obj is None or j >= len(tokens) or lower[j] != "to":
            return None, j
        recipient, j = phrase_at(tokens, j + 1, names=True)
        if recipient is None or not is_name(recipient.split()[0]):
            return None, j
        display.setdefault(recipient.lower(), recipient)
        return Event(TRANSFER, subj, obj=obj.lower(), target=recipient.lower()), j
    if j < len(tokens) and lower[j] in _MOVE_PREPS | {"up", "out", "away", "off", "back"}:
        return None, j  # "got to the hall", "got up": not a taking or a dropping
    obj, j = phrase_at(tokens, j, names=False)
    if obj is None or is_name(obj.split()[0]):
        return None, j
    return Event(kind, subj, obj=obj.lower()), j


def tokens_of(text: str) -> list[str]:
    """Word, number and punctuation tokens, as the reader sees them."""
    return _TOKEN.findall(text)


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def content_words(text: str) -> frozenset[str]:
    return frozenset(_CONTENT_WORD.findall(text.lower()))


@lru_cache(maxsize=1024)  # about 150 KB each for a 2k-token passage
def parse_passage(text: str) -> ParsedPassage:
    """Sentences, their word sets and events; cached because retrieval reuses passages."""
    display: dict[str, str] = {}
    sentences = tuple(split_sentences(text))
    events = tuple(tuple(sentence_events(s, display)) for s in sentences)
    return ParsedPassage(sentences, tuple(content_words(s) for s in sentences), events, display)


class ReadText:
    """The passages of one prompt merged in reading order, with look-up tables."""

    def __init__(self, passages: list[tuple[int, str]]):
        self.sentences: list[str] = []
        self.chunk_of: list[int] = []  # chunk index of each sentence
        self.events: list[Event] = []
        self.display: dict[str, str] = {}
        words: list[frozenset[str]] = []
        for index, text in sorted(passages, key=lambda p: p[0]):
            parsed = parse_passage(text)
            for k, sentence in enumerate(parsed.sentences):
                number = len(self.sentences)
                self.sentences.append(sentence)
                self.chunk_of.append(index)
                words.append(parsed.words[k])
                for ev in parsed.events[k]:
                    self.events.append(_renumber(ev, number, len(self.events)))
            for key, value in parsed.display.items():
                self.display.setdefault(key, value)
        self.words = words
        self.places = {e.place for e in self.events if e.place}
        # "left the hall" reads as a dropping by form; a known place is not an object.
        self.events = [e for e in self.events if e.obj is None or e.obj not in self.places]
        self.objects = {e.obj for e in self.events if e.obj}
        self.actors = {e.subj for e in self.events} | {e.target for e in self.events if e.target}
        self._postings: dict[str, list[int]] | None = None

    def postings(self) -> dict[str, list[int]]:
        """word -> sentence numbers, built on first use (many questions never need it)."""
        if self._postings is None:
            table: dict[str, list[int]] = {}
            for number, words in enumerate(self.words):
                for w in words:
                    table.setdefault(w, []).append(number)
            self._postings = table
        return self._postings

    def show(self, name: str) -> str:
        """A name or place as the text writes it."""
        return self.display.get(name, name)


def _renumber(ev: Event, sentence: int, seq: int) -> Event:
    return Event(ev.kind, ev.subj, ev.obj, ev.place, ev.target, sentence, seq)


# --- answering -------------------------------------------------------------------------------

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
    tokens = [t for t in _TOKEN.findall(text) if t[0].isalnum()]
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
        last: dict[str, Event] = {}
        for e in read.events:
            if e.kind != MOVE:
                continue
            prev = last.get(e.subj)
            if prev and src and dst and _same(prev.place, src.key) and _same(e.place, dst.key):
                best = (prev, e)
            last[e.subj] = e
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
