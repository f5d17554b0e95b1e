"""What the builtin baseline reads: sentences and the state-changing events they state.

The builtin model answers OAKS questions from the prompt text alone (docs/oaks.md §2). Reading
splits passages into sentences, keeps their order (chunk index first, then position), and
recognises four kinds of events with a small lexicon of common English verbs -- moving to a
place, taking an object, putting an object down, handing an object to someone. The subject is
the capitalised name nearest before the verb in the same clause ("Later, Mara went to the
hall"), or the sentence's previous subject after "and"/"then". Pronouns are never resolved,
so narrative filler rarely yields events about named people.

Answering questions from these events is in :mod:`clstream.models.builtin.answer`; question
routing, the lexical fallback, multiple choice and caching in :mod:`clstream.models.builtin`.
"""

from __future__ import annotations

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
    words = tuple(content_words(s) for s in sentences)
    # A sentence none of whose words opens a lexicon verb states no event (most of a stream's
    # filler): its word set says so without reading it token by token.
    events = tuple(() if sentence_words.isdisjoint(_VERB_INDEX) else
                   tuple(sentence_events(sentence, display))
                   for sentence, sentence_words in zip(sentences, words, strict=True))
    return ParsedPassage(sentences, words, events, display)


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
