"""Wordings that change what an ordinary answer commits to, read by the deterministic judges
(docs/imprint.md §6.3, §6.6, §6.7).

The paper's LLM judges read meaning: its rubric (ImprintBench App. E.2, E.3) gives MATCH only
to an answer that states the key fact, calling a vague or partly right one NONMATCH; its Y/N
judge (App. E.1) passes only an answer consistent with the gold; its abstention rule (App.
D.1, D.3) counts a substantive claim as wrong. Offline, three readings stand in for that:

* an answer that says it is unsure ("I'm not sure, but ...", "no idea") or puts the gold
  under a modal ("you might be an early bird", "probably Porto") does not commit to it: a
  hedge, wrong (:func:`uncertainty`, :func:`modal_hedge`);
* an abstention phrase next to a clause that affirms what the question asks about
  ("Investigators questioned him; there is no record of charges." asked whether he was
  questioned) abstains on something else: a claim, wrong (:func:`affirming_clause`).

Every function reads plain text and returns what it found (None: nothing), so a verdict can
say why. The judges, not this module, decide which judge applies which reading.
"""

from __future__ import annotations

import re

UNCERTAINTY_PHRASES: tuple[str, ...] = (
    "not sure", "not certain", "unsure", "uncertain", "no idea", "hard to say",
    "can't be sure", "cannot be sure", "i guess", "don't know", "do not know",
)
"""Phrases by which an answer says it does not know what it goes on to say."""

MODAL_HEDGES: tuple[str, ...] = (
    "might", "maybe", "perhaps", "possibly", "probably", "could be", "may be", "i guess",
)
"""Words that put a stated value under doubt when they share its clause."""

_STOP = frozenset("""
    about after again also been before being could does doing during early ever from have
    into late more most over some such than that their them then there these they this those
    under very were what when where which while whom whose will with would your yours mine
    still since other others the and mid""".split())

_NEGATED = re.compile(
    r"\b(?:not|never|no|none|nothing|neither|nor|without)\b|n't\b", re.IGNORECASE)
_CLAUSE = re.compile(r"[^.;:!?\n]+(?:[.;:!?\n]+|$)")
_BUT = re.compile(r",?\s+but\s+", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def _fold(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'")


def _first(phrases: tuple[str, ...], text: str) -> str | None:
    folded = _fold(text)
    hits = [(m.start(), p) for p in phrases
            if (m := re.search(rf"\b{re.escape(p)}\b", folded, re.IGNORECASE))]
    return min(hits)[1] if hits else None


def uncertainty(text: str) -> str | None:
    """The first phrase by which ``text`` says it is unsure, or None."""
    return _first(UNCERTAINTY_PHRASES, text)


def modal_hedge(clause: str) -> str | None:
    """The first modal hedge word of one clause, or None."""
    return _first(MODAL_HEDGES, clause)


def _stem(word: str) -> str:
    return word.casefold()[:5]


def predicate_stems(question: str) -> set[str]:
    """The question's own words, not its names: the stems (first five letters) of the words
    of four letters or more written in lower case, less function and time words. "was Taith
    Railegun questioned by investigators over the party?" gives {quest, inves, party}."""
    return {_stem(w) for w in _WORD.findall(question)
            if len(w) >= 4 and w[0].islower() and w.casefold() not in _STOP}


def affirming_clause(question: str, text: str, skip: tuple[str, ...] = ()) -> str | None:
    """A clause of ``text`` that affirms what ``question`` asks about, or None.

    The answer is cut into clauses at sentence ends, semicolons, colons and "but"; a clause
    affirms when it is a statement (not a question back), negates nothing, contains none of
    the ``skip`` phrases (the abstention phrases) and repeats at least two of the question's
    own words (:func:`predicate_stems`), or its only one."""
    wanted = predicate_stems(question)
    if not wanted:
        return None
    need = min(2, len(wanted))
    for sentence in _CLAUSE.findall(_fold(text)):
        if sentence.rstrip().endswith("?"):
            continue
        for part in _BUT.split(sentence):
            clause = part.strip().rstrip(".;:!\n ")
            if clause and _affirms(clause, wanted, need, skip):
                return clause
    return None


def _affirms(clause: str, wanted: set[str], need: int, skip: tuple[str, ...]) -> bool:
    if _NEGATED.search(clause) or _first(skip, clause) is not None:
        return False
    said = {_stem(w) for w in _WORD.findall(clause) if len(w) >= 4}
    return len(said & wanted) >= need
