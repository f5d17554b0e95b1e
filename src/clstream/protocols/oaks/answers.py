"""Answer extraction and exact-match judging for OAKS (docs/oaks.md §4; OAKS (Kim et al.), App. B.2.1).

Models reason freely and finish with an answer marker ("## Answer: kitchen"). Scoring needs
one short string per output, so this module pulls it out, normalizes it, folds the counting
equivalences into a *canonical* form, and compares it with the accepted golds. The same
canonical form is what the transition table compares between consecutive intervals, so a
model that says "2" then "two" to a counting question has not changed its answer.

The paper's equivalences (App. B.2.1) hold only for the question types it names:
- counting: numerals and words are one answer ("2" = "two" = "twice" = "2 times";
  "0" = "zero" = "none" = "never"); every other type compares normalized text, so a tracking
  gold "None" does not accept "zero";
- counting, before the counted event first happens: "Unknown" and "0" are both correct;
- comparison, before evidence exists: "Unknown" and "Same" are both correct.

Readings chosen here where the paper leaves room (docs/oaks.md §7):
- the extracted span is the first non-empty line after the last marker (reasoning that follows
  on later lines is not part of the answer);
- punctuation is deleted, not replaced by a space ("twenty-one" -> "twentyone", which the
  numeral parser also understands);
- "before the counted event" / "before evidence" is read from the golds alone: interval t is
  before while every accepted gold at every interval <= t is "0"/"Unknown" (counting) or
  "Unknown"/"Same" (comparison);
- multiple choice: a lowercase letter counts only when it is the whole span, bare ("b") or in
  parentheses ("(c)"); "b.", "b)" or "b kitchen" are not a lone letter.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from itertools import repeat

from clstream.protocols.oaks.data import OaksQuestion, equal_runs

# The word "answer", optional quotes/asterisks/hashes, a colon. Quotes, asterisks or hashes
# before the word need no pattern: only where the marker ends matters.
_MARKER = re.compile(r"""\banswer\b[ \t"'*#]*:""", re.IGNORECASE)
_MC_LETTER = re.compile(r"\b[A-Z]\b")
_MC_LOWER = re.compile(r"([a-z])|\(([a-z])\)")  # fullmatch: the whole span is "b" or "(b)"
_EDGE = " \t\r\n\"'*`"
_TAIL = _EDGE + ",}]"  # also drop what closes a JSON reply: {"answer": "kitchen"}
_ARTICLES = frozenset({"a", "an", "the"})

_UNITS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}
_TENS_WORDS = tuple(_TENS)
_WORD_VALUE = {w: i for i, w in enumerate(_UNITS)} | _TENS
_ADVERBS = {"once": 1, "twice": 2, "thrice": 3, "never": 0, "none": 0}

UNKNOWN = "unknown"
SAME = "same"
COUNTING = "counting"
_EARLY_EQUIVALENTS = {
    COUNTING: frozenset({"0", UNKNOWN}),
    "comparison": frozenset({UNKNOWN, SAME}),
}


def extract_answer(output: str, mc: bool) -> str:
    """The answer part of a raw model output (docs/oaks.md §4.1).

    The span starts after the last answer marker ("## Answer:", "**Answer**:", "\"answer\":",
    "Answer:"; case-insensitive) and ends at the end of the first non-empty line after it;
    surrounding quotes, asterisks, backticks and whitespace (and a closing ``}``, ``]`` or
    ``,`` of a JSON reply) are stripped. Without a marker an open-ended output is kept whole
    (stripped) and a multiple-choice output yields "".
    For multiple choice the result is the first standalone capital letter of the span, else
    the letter of a span that is one lowercase letter alone or in brackets ("b", "(c)"),
    upper-cased; else "".
    """
    matches = list(_MARKER.finditer(output))
    if matches:
        rest = output[matches[-1].end():].lstrip(_EDGE)
        span = rest.split("\n", 1)[0].rstrip(_TAIL).strip(_EDGE)
    elif mc:
        return ""
    else:
        span = output.strip(_EDGE)
    if not mc:
        return span
    letter = _MC_LETTER.search(span)
    if letter:
        return letter.group(0)
    lone = _MC_LOWER.fullmatch(span)
    return next(g for g in lone.groups() if g).upper() if lone else ""


# Distinct answers are few next to the answers scored (a run repeats each question at every
# interval, and models repeat themselves), so the pure string functions below are memoised:
# each distinct (text, flags) is folded once per process. Bounded, so hostile input cannot
# grow memory without limit.
_MEMO = 1 << 16


@functools.lru_cache(maxsize=_MEMO)
def normalize(text: str, mc: bool) -> str:
    """Lowercase, delete punctuation, drop articles (open-ended only), collapse whitespace."""
    lowered = text.lower()
    kept = "".join(ch for ch in lowered if not unicodedata.category(ch).startswith("P"))
    words = kept.split()
    if not mc:
        words = [w for w in words if w not in _ARTICLES]
    return " ".join(words)


def _number(words: list[str]) -> int | None:
    """Value of a cardinal written as digits or English words below one hundred."""
    if len(words) == 1:
        word = words[0]
        if word.isascii() and word.isdigit():
            return int(word)
        if word in _WORD_VALUE:
            return _WORD_VALUE[word]
        if not word.startswith(_TENS_WORDS):
            return None
        for tens, value in _TENS.items():  # "twentyone" (a hyphen deleted by normalize)
            unit = word[len(tens):]
            if word.startswith(tens) and unit in _WORD_VALUE and 0 < _WORD_VALUE[unit] < 10:
                return value + _WORD_VALUE[unit]
        return None
    if len(words) == 2 and words[0] in _TENS and words[1] in _WORD_VALUE:
        ones = _WORD_VALUE[words[1]]
        return _TENS[words[0]] + ones if 0 < ones < 10 else None
    return None


def _count(words: list[str]) -> int | None:
    """Value of a count expression: "3", "three", "3 times", "one time", "twice", "never"."""
    if len(words) == 1 and words[0] in _ADVERBS:
        return _ADVERBS[words[0]]
    if len(words) >= 2 and words[-1] in ("time", "times"):
        words = words[:-1]
    return _number(words)


def is_counting(question_type: str | None) -> bool:
    """Whether a question type takes the counting equivalences (names compare case-blind)."""
    return (question_type or "").strip().lower() == COUNTING


@functools.lru_cache(maxsize=_MEMO)
def canonical(answer: str, mc: bool, question_type: str | None = None) -> str:
    """The form two answers are compared in: normalized; counts as decimal numerals for
    counting questions only.

    Counting: "2", "two", "twice", "2 times" and "two times" all become "2"; "zero", "none",
    "never" become "0". Any other type (or none): the normalized text ("two" stays "two").
    Multiple choice: the normalized letter.
    """
    norm = normalize(answer, mc)
    if mc or not is_counting(question_type):
        return norm
    value = _count(norm.split())
    return norm if value is None else str(value)


def canonical_answer(output: str, mc: bool, question_type: str | None = None) -> str:
    """Canonical form of what a raw output answers (used for correctness and model change)."""
    return canonical(extract_answer(output, mc), mc, question_type)


def canonical_golds(question: OaksQuestion) -> tuple[str, ...]:
    """Per-interval canonical gold: MC the option letter, open-ended the first accepted gold."""
    return golds_by_interval(question)[0]


def accepted_answers(question: OaksQuestion) -> tuple[frozenset[str], ...]:
    """Canonical answers accepted at each interval t = 1..C, equivalences included.

    Interval t is *before* the counted event (counting) or the evidence (comparison) while
    every accepted gold at every interval <= t is "0"/"Unknown" (counting) or "Unknown"/"Same"
    (comparison); there both answers of that pair are correct.
    """
    return golds_by_interval(question)[1]


def golds_by_interval(question: OaksQuestion
                      ) -> tuple[tuple[str, ...], tuple[frozenset[str], ...]]:
    """:func:`canonical_golds` and :func:`accepted_answers` of one question together.

    A gold usually holds for many intervals in a row, so each run of one gold is read once
    and its intervals share one accepted set; "before the evidence" holds for all of a run or
    none of it (its golds are the same throughout)."""
    golds: list[str] = []
    accepted: list[frozenset[str]] = []
    mc, qtype = question.is_mc, question.question_type
    early = frozenset() if mc else _EARLY_EQUIVALENTS.get((qtype or "").strip().lower(),
                                                          frozenset())
    before_evidence = bool(early)
    for start, end in equal_runs(question.golds):
        given = question.golds[start]
        if mc:
            gold = canonical(question.gold_letter(start + 1), True)
            ok = frozenset({gold})
        else:
            gold = canonical(given[0], False, qtype) if given else ""
            ok = frozenset(canonical(g, False, qtype) for g in given)
            before_evidence = before_evidence and bool(ok) and ok <= early
            if before_evidence:
                ok |= early
        golds += repeat(gold, end - start)
        accepted += repeat(ok, end - start)
    return tuple(golds), tuple(accepted)


def is_correct(output: str, question: OaksQuestion, t: int) -> bool:
    """Whether a raw output answers ``question`` correctly at 1-based interval ``t``."""
    if not 1 <= t <= len(question.golds):
        raise ValueError(f"interval {t} outside 1..{len(question.golds)}")
    answer = canonical_answer(output, question.is_mc, question.question_type)
    return answer in accepted_answers(question)[t - 1]
