"""The exact judge (docs/imprint.md §6): some gold asserted, no ``gold_before`` value
asserted, no hedge, read clause by clause, with negated values and old values named as the past
not asserted. :mod:`.judging` describes the rules.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from clstream.protocols.imprint.hedges import modal_hedge, uncertainty
from clstream.protocols.imprint.judging_reading import ImprintItem, Verdict, answer_text

# ----------------------------------------------------------------------------- exact

_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_DIGIT_COMMA = re.compile(r"(?<=\d),(?=\d{3}\b)")
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


def normalize_text(text: str) -> str:
    """Casefolded, accents removed, punctuation to spaces, articles dropped, spaces collapsed
    (thousands separators kept inside numbers)."""
    folded = unicodedata.normalize("NFKD", text).casefold()
    folded = "".join(c for c in folded if not unicodedata.combining(c))
    folded = _NON_WORD.sub(" ", _DIGIT_COMMA.sub("", folded))
    return " ".join(_ARTICLES.sub(" ", folded).split())


def phrase_spans(phrase: str, text: str) -> list[tuple[int, int]]:
    """Where the normalised ``phrase`` occurs in normalised ``text`` as whole words."""
    if not phrase:
        return []
    return [(m.start(), m.end())
            for m in re.finditer(rf"(?<!\S){re.escape(phrase)}(?!\S)", text)]


def _inside(span: tuple[int, int], others: list[tuple[int, int]]) -> bool:
    return any(o[0] <= span[0] and span[1] <= o[1] and o != span for o in others)


_CLAUSE_BREAK = re.compile(
    r"[;:()\[\]\n!?\u2014\u2013]|,(?!\d{3}\b)|\.(?!\d)|\s-\s|\bbut\b", re.IGNORECASE)
NEGATION = re.compile(
    r"\b(?:not|never|neither|nor|no|isn t|wasn t|aren t|weren t|doesn t|didn t|hasn t)"
    r"(?: \w+){0,2}$")
_PAST_BEFORE = re.compile(
    r"\b(?:from|replaced|replacing|replaces|succeeded|succeeding|succeeds|formerly|previously|"
    r"former|was|were|used to|instead of|rather than|no longer|after|until|ousted|ex)"
    r"(?: \w+){0,2}$")
_PAST_AFTER = re.compile(
    r"^(?:\w+ ){0,2}(?:was replaced|was succeeded|stepped down|left|previously|formerly|"
    r"before|earlier|until|used to)\b")
_HEDGE_WORD = "or"
_GOLD_MARK = "\x00"


def _clauses(text: str) -> list[str]:
    """The answer's clauses, normalised: "X, who replaced Y" and "1.04 (down from 1.30)" are
    two clauses each, so a marker speaks only of its own clause."""
    return [c for c in (normalize_text(part) for part in _CLAUSE_BREAK.split(text)) if c]


def _asserted_in(values: Sequence[str], rivals: Sequence[str], clause: str, *,
                 past: bool) -> list[tuple[int, int]]:
    """Occurrences of ``values`` in a normalised clause that assert them: not part of a
    longer rival occurrence ("New York" inside "New York City"), not negated ("not X"), and
    with ``past``, not named as the past ("down from X", "who replaced X", "X was replaced")."""
    rival_spans = [s for r in rivals for s in phrase_spans(normalize_text(r), clause)]
    out = []
    for value in values:
        for span in phrase_spans(normalize_text(value), clause):
            before, after = clause[:span[0]].strip(), clause[span[1]:].strip()
            if _inside(span, rival_spans) or NEGATION.search(before):
                continue
            if past and (_PAST_BEFORE.search(before) or _PAST_AFTER.search(after)):
                continue
            out.append(span)
    return out


def _hedged(golds: Sequence[str], clause: str) -> bool:
    """A gold offered with an alternative: "or" with the gold within three words on one
    side and some other word on the other ("Faidres or Stovelubrev", "either 1.04 or 2.00";
    two accepted forms of the gold joined by "or" are no hedge)."""
    marked = clause
    for gold in sorted((normalize_text(g) for g in golds), key=len, reverse=True):
        if gold:
            marked = re.sub(rf"(?<!\S){re.escape(gold)}(?!\S)", _GOLD_MARK, marked)
    words = marked.split()
    for i, word in enumerate(words):
        if word != _HEDGE_WORD:
            continue
        left, right = words[max(0, i - 3):i], words[i + 1:i + 4]
        for near, far in ((left, right), (right, left)):
            if _GOLD_MARK in near and any(w not in (_GOLD_MARK, "maybe", "possibly", "perhaps")
                                          for w in far):
                return True
    return False


@dataclass(frozen=True)
class _Reading:
    gold: bool
    stale: bool
    hedged: bool


def _read_values(item: ImprintItem, output: str) -> _Reading:
    text = answer_text(output)
    clauses = _clauses(text)
    gold = any(_asserted_in(item.golds, item.stale_golds, c, past=False) for c in clauses)
    stale = any(_asserted_in(item.stale_golds, item.golds, c, past=True) for c in clauses)
    hedged = any(_asserted_in(item.golds, item.stale_golds, c, past=False)
                 and (_hedged(item.golds, c) or modal_hedge(c) is not None)
                 for c in clauses) or (gold and uncertainty(text) is not None)
    return _Reading(gold, stale, hedged)


def judge_exact(item: ImprintItem, output: str) -> Verdict:
    """Correct iff a gold is asserted, no ``gold_before`` is, and the gold is not offered
    with an alternative (module docstring)."""
    read = _read_values(item, output)
    if read.stale:
        return Verdict(False, "stale", "exact", "states the value before the update")
    if read.hedged:
        return Verdict(False, "hedged", "exact", "offers the gold with an alternative")
    if read.gold:
        return Verdict(True, "match", "exact", "gold stated")
    return Verdict(False, "mismatch", "exact", "gold not stated")


def is_stale(item: ImprintItem, output: str) -> bool:
    """The answer states a ``gold_before`` value and not the gold: the stale-answer error of
    the report (HorizonBench's "originally stated value"; docs/imprint.md §6.9)."""
    if not item.stale_golds:
        return False
    read = _read_values(item, output)
    return read.stale and not read.gold


