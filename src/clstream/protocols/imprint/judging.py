"""ImprintBench judges: is one sampled answer to a held-out item correct (docs/imprint.md §6)?

Every judge here is a pure function ``(item, output, ...) -> Verdict`` that calls no model;
the paper's LLM judges, which do, are in :mod:`clstream.protocols.imprint.llm_judges`.

Reading of an output, shared by every judge (the project's reading; ImprintBench App. E leaves
it open): a leading ``<think>...</think>`` block is dropped (an unclosed one means the output
is all reasoning and answers nothing; a lone ``</think>`` drops what precedes it, as some chat
templates strip the opening tag). When the rest carries an answer marker (``## Answer:``,
``Answer:``), the judged text is what :func:`clstream.core.layout.final_answer_text` reads
after the last marker; the list judge takes every line after that marker. Otherwise the whole
rest is judged.

The judges, by the item's ``judge`` field (docs/imprint.md §6 gives every rule and the
paper's judge each one stands in for; :mod:`clstream.protocols.imprint.judge_plan` maps a
family to the paper's LLM judge under ``--judge``):

* ``yesno`` (news DirAcq, App. E.1): the first standalone ``yes``/``no`` token must equal the
  gold's; none ("Not sure") or both joined as a hedge ("Yes and no") is wrong. For a code item
  whose gold is No (an invented name), abstaining or denying is right too (App. D.2).
* ``abstain`` (news BoundAbs, App. E.1): an abstention phrase within the first 600 characters,
  or a first yes/no token "no" (a denial, which E.1's regex accepts; ``strict=True`` follows
  D.1 and drops that rule, and personalization never takes it: a "No, <claim>" there is a
  claim about the user, App. D.3). An affirmation before the phrase ("Yes. Its length is
  unknown.") is a claim, never an abstention, and so is an abstention beside a clause that
  affirms what the question asks ("Investigators questioned him; there is no record of
  charges."; :mod:`~clstream.protocols.imprint.hedges`).
* ``identifier`` (code RefRes/CompRel, App. D.2/E.2): one identifier equal to the gold or
  with the same trailing dotted component; in free text exactly one distinct leaf asserted
  (negated names, "not `foo`", are not asserted). Family ImpRel takes the list-contains rule.
* ``choice`` (persona CompRel/ImpRel): the option letter; a negated letter or option ("not
  B") is not chosen; a hedge ("A or B", "Probably B") is wrong.
* ``exact``: some gold asserted, no ``gold_before`` value asserted, no hedge. A value is not
  asserted where it is negated ("not X") or, for an old value, named as the past ("down from
  X", "who replaced X"); a gold with "or" and another value beside it, a gold under a modal
  ("you might be X") and a gold in an answer that says it is unsure are hedges.

The judges take any object with the item fields they read (:class:`ImprintItem`), not the
dataset schema's class, so they can be tried on a bare record.

This module lives in the protocol package, not in :mod:`clstream.judges`, because only
ImprintBench judges its items this way: the filters, the runner, ``score imprint`` and the
stored-run summary all sit here, and no system or model reads a verdict (docs/design.md §2.1:
a piece shared by one protocol belongs to it).

The verdict and the reading of an output are in :mod:`.judging_reading`, the identifier and
list judges in :mod:`.judging_identifiers`, the exact judge in :mod:`.judging_exact`; this module
holds the yes/no, abstention and choice judges and re-exports the others' public names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from clstream.core.errors import SpecError
from clstream.judges.extraction import extract_choice
from clstream.protocols.imprint.hedges import affirming_clause, modal_hedge, uncertainty
from clstream.protocols.imprint.judging_exact import (
    NEGATION,
    is_stale,
    judge_exact,
    normalize_text,
    phrase_spans,
)
from clstream.protocols.imprint.judging_identifiers import (
    asserted_identifiers,
    drop_negated_names,
    identifiers_agree,
    judge_identifier,
    judge_list_contains,
    leaf,
    listed_items,
    normalize_identifier,
)
from clstream.protocols.imprint.judging_reading import (
    ImprintItem,
    JudgeError,
    Verdict,
    answer_region,
    answer_text,
    fold_quotes,
    strip_think,
)

__all__ = [
    "abstain_phrases",
    "ABSTAIN_WINDOW",
    "answer_region",
    "answer_text",
    "asserted_identifiers",
    "chosen_letter",
    "DENIAL_PHRASES",
    "DETERMINISTIC_JUDGES",
    "drop_negated_names",
    "EXTENSION_ABSTAIN_PHRASES",
    "first_yes_no",
    "gold_letter",
    "identifiers_agree",
    "ImprintItem",
    "invented_code_name",
    "is_stale",
    "judge_abstain",
    "judge_choice",
    "judge_deterministic",
    "judge_exact",
    "judge_identifier",
    "judge_list_contains",
    "judge_yesno",
    "JudgeError",
    "leaf",
    "listed_items",
    "normalize_identifier",
    "normalize_text",
    "option_count",
    "PAPER_ABSTAIN_PHRASES",
    "strip_think",
    "Verdict",
]

ABSTAIN_WINDOW = 600
"""Characters of the judged text searched for an abstention phrase (App. E.1)."""

PAPER_ABSTAIN_PHRASES: tuple[str, ...] = (
    "insufficient information", "no record of", "not in my reference", "not mentioned",
    "not covered", "no information about", "cannot find",
)
"""The abstention phrases ImprintBench App. E.1 lists (its list ends in "etc.")."""

EXTENSION_ABSTAIN_PHRASES: tuple[str, ...] = (
    "do not know", "don't know", "not enough information", "no information on",
    "unable to find", "can't find", "cannot determine", "no mention of", "not available in",
    "unknown", "not sure", "cannot answer", "can't answer", "no idea",
    "don't have that information", "do not have that information",
    "don't have any information", "do not have any information", "have no information",
    "don't have enough information", "do not have enough information", "cannot tell",
    "can't tell", "haven't mentioned", "have not mentioned", "never mentioned",
    "haven't told me", "have not told me", "no way to know", "do not mention",
    "does not mention", "don't mention", "doesn't mention", "did not mention",
    "didn't mention", "make no mention", "makes no mention", "not aware of", "unaware of",
    "not familiar with", "no knowledge of", "no reports of", "no evidence of",
)
"""clstream's extension of the abstention list (on unless ``extended=False``)."""

DENIAL_PHRASES: tuple[str, ...] = (
    "does not exist", "doesn't exist", "do not exist", "no such", "does not have",
    "doesn't have", "is not part of", "isn't part of", "not a real", "there is no",
)
"""Wordings that deny an invented code name exists (App. D.2: denying is right for one)."""

DETERMINISTIC_JUDGES: tuple[str, ...] = ("yesno", "abstain", "identifier", "choice", "exact")


# ----------------------------------------------------------------------------- yes / no

_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_YES_NO_HEDGE = re.compile(r"\b(yes|no)\b\s*(?:and|or|/|&)\s*\b(yes|no)\b", re.IGNORECASE)


def first_yes_no(text: str) -> str | None:
    """``"yes"``, ``"no"`` or None: the first standalone yes/no token (App. E.1 regex)."""
    hit = _YES_NO.search(text)
    return hit.group(1).lower() if hit else None


def _hedges_yes_no(text: str) -> bool:
    """Both answers joined as one ("Yes and no", "yes/no", "either yes or no")."""
    hit = _YES_NO_HEDGE.search(text)
    return hit is not None and hit.group(1).lower() != hit.group(2).lower()


def _phrase_at(phrases: Sequence[str], text: str) -> tuple[int, str] | None:
    """The earliest listed phrase in ``text`` (whole words, case-insensitive): (start, phrase)."""
    best: tuple[int, str] | None = None
    for phrase in phrases:
        hit = re.search(rf"\b{re.escape(fold_quotes(phrase))}\b", text, re.IGNORECASE)
        if hit and (best is None or hit.start() < best[0]):
            best = (hit.start(), phrase)
    return best


def invented_code_name(item: ImprintItem) -> bool:
    """A code item about a name that does not exist: BoundAbs, or DirAcq with gold No."""
    return item.setting == "code" and (
        item.family == "BoundAbs" or (item.family == "DirAcq" and bool(item.golds)
                                      and first_yes_no(item.golds[0]) == "no"))


def judge_yesno(item: ImprintItem, output: str) -> Verdict:
    """Correct iff the first standalone yes/no token equals the gold's (no token, or a
    "yes and no" hedge: wrong); an invented code name also takes an abstention or a denial."""
    gold = next((t for t in (first_yes_no(g) for g in item.golds) if t), None)
    if gold is None:
        raise SpecError(f"item {item.item_id!r}: the yesno judge needs a Yes/No gold, "
                        f"got {item.golds[0]!r}")
    text = fold_quotes(answer_text(output))
    if _hedges_yes_no(text):
        return Verdict(False, "hedged", "yesno", "answers both yes and no")
    said = first_yes_no(text)
    if said is None and invented_code_name(item):
        found = _phrase_at(abstain_phrases() + DENIAL_PHRASES, text[:ABSTAIN_WINDOW])
        if found is not None:
            return Verdict(True, "abstain", "yesno",
                           f"abstains or denies on an invented name ({found[1]!r})")
    if said is None:
        return Verdict(False, "none", "yesno", "no standalone yes/no token")
    return Verdict(said == gold, said, "yesno", f"answered {said!r}, gold {gold!r}")


# ----------------------------------------------------------------------------- abstention

def abstain_phrases(extended: bool = True) -> tuple[str, ...]:
    return PAPER_ABSTAIN_PHRASES + (EXTENSION_ABSTAIN_PHRASES if extended else ())


_GUESS = re.compile(
    r"\b(?:maybe|perhaps|probably|possibly|likely|my guess is|i(?:'d| would)? guess|i think|"
    r"i believe|i suspect)\b[\s,:-]+(?!you\b|i\b|we\b|it\b|that\b|this\b|ask\b|tell\b|"
    r"share\b|let\b|check\b|could\b|can\b|would\b|should\b|not\b)[A-Za-z]",
    re.IGNORECASE)
_GUESS_ABOUT_YOU = re.compile(
    r"\byou(?:'re| are)?\s+(?:might|may|must|could|probably|likely)\s+(?:also\s+)?"
    r"(?!want\b|wish\b|like to\b|tell\b|share\b|let\b|ask\b|check\b|mention\b|say\b)[a-z]",
    re.IGNORECASE)
"""A guess after an abstention phrase ("I'm not sure -- maybe Lisbon?", "I'm not sure, but
you might be an early bird"): a claim, which the personalization rubric does not read as a
REFUSAL (App. E.3). "You might want to tell me" is a request, not a guess."""


def judge_abstain(item: ImprintItem, output: str, *, strict: bool = False,
                  extended: bool = True, phrases: Sequence[str] | None = None) -> Verdict:
    """Correct iff the answer abstains: a listed phrase in the first 600 characters, not
    after an affirming "yes", or (unless ``strict``, and never for personalization, where a
    "No, ..." asserts something about the user) a first yes/no token "no". An invented code
    name also takes a denial phrase. ``phrases`` replaces the list."""
    text = fold_quotes(answer_text(output))
    window = text[:ABSTAIN_WINDOW]
    listed = tuple(phrases) if phrases is not None else abstain_phrases(extended)
    if item.setting == "code":
        listed += DENIAL_PHRASES
    found = _phrase_at(listed, window)
    token = _YES_NO.search(text)
    affirmed = token is not None and token.group(1).lower() == "yes"
    if affirmed and (found is None or token is not None and token.start() < found[0]):
        return Verdict(False, "answer", "abstain", "affirms a claim ('yes')")
    if found is not None and item.setting == "persona":
        guess = _GUESS.search(window, found[0]) or _GUESS_ABOUT_YOU.search(window, found[0])
        if guess is not None:  # the rubric's REFUSAL declines; a guess is an answer
            return Verdict(False, "answer", "abstain",
                           f"guesses after abstaining ({guess.group(0).strip()!r})")
    denial_counts = not strict and item.setting != "persona"
    denies = denial_counts and first_yes_no(text) == "no"
    if found is not None or denies:
        claim = affirming_clause(item.question, window, listed)
        if claim is not None:  # abstains on something else than what was asked
            return Verdict(False, "answer", "abstain",
                           f"affirms what the question asks ({claim[:80]!r})")
    if found is not None:
        return Verdict(True, "abstain", "abstain", f"abstention phrase {found[1]!r}")
    if denies:
        return Verdict(True, "abstain", "abstain", "denial: first yes/no token is 'no'")
    return Verdict(False, "answer", "abstain", "no abstention phrase"
                   + ("" if not denial_counts else " and no denial"))


# ----------------------------------------------------------------------------- choice

_BARE_LETTER = re.compile(r"^[(\[]?\s*([A-Z])\s*[)\].:,;]?(?:\s|$)")
_LAST_LETTER = re.compile(r"(?:^|[\s;:,])[(\[]?([A-Z])[)\]]?[.!]?$")
_NEGATED_LETTER = re.compile(
    r"\b(?:[Nn]ot|[Nn]ever|[Rr]ather than|[Ii]nstead of|[Ee]xcept|[Aa]nything but|[Bb]ut not)"
    r"\s+(?:[Oo]ption\s+)?[(\[]?[A-Z](?![\w'])[)\]]?")


def gold_letter(item: ImprintItem) -> str:
    """The gold option letter (a gold written as the option's text is mapped to its letter)."""
    gold = item.golds[0].strip().strip("()").strip().rstrip(".")
    if len(gold) == 1 and gold.upper().isalpha():
        return gold.upper()
    for i, option in enumerate(item.options):
        if normalize_text(option) == normalize_text(gold):
            return chr(ord("A") + i)
    raise SpecError(f"item {item.item_id!r}: choice gold {item.golds[0]!r} is neither a "
                    "letter nor one of the options")


_ARTICLE_OPENING = re.compile(r"^\s*An?\s+[a-z]")
_LETTER_HEDGE = re.compile(r"^(?:either\s+)?[(\[]?([A-Z])[)\]]?\s*(?:or|/|and)\s*[(\[]?([A-Z])\b")


def option_count(item: ImprintItem) -> int:
    """How many letters an item offers: its options, else (letter gold, no options, as
    docs/imprint.md §3.2 allows) A up to at least J and at least the gold's letter."""
    if item.options:
        return len(item.options)
    return max(10, ord(gold_letter(item)) - ord("A") + 1)


def chosen_letter(item: ImprintItem, output: str) -> str:
    """The option the answer picks, '' when it commits to none (module docstring). A letter
    or an option the answer negates ("not B", "not the curry house") is not picked."""
    n = option_count(item)
    valid = "".join(chr(ord("A") + i) for i in range(n))
    rest = _NEGATED_LETTER.sub(" ", strip_think(output))
    text = _NEGATED_LETTER.sub(" ", answer_text(output)).strip(" \t\n;,.:-")
    said = normalize_text(text)
    named = [i for i, o in enumerate(item.options) if normalize_text(o) and any(
        not NEGATION.search(said[:start].strip())
        for start, _ in phrase_spans(normalize_text(o), said))]
    if len(named) == 1 and _ARTICLE_OPENING.match(text):  # "A softly seasoned bistro": no letter
        return chr(ord("A") + named[0])
    letter = extract_choice(rest, n_options=n)
    if letter:
        return letter
    bare = _BARE_LETTER.match(text) or _LAST_LETTER.search(text)
    if bare and bare.group(1) in valid:
        return bare.group(1)
    if len(named) == 1:
        return chr(ord("A") + named[0])
    own = _options_by_own_words(item, said)
    return chr(ord("A") + own[0]) if len(own) == 1 else ""


def _options_by_own_words(item: ImprintItem, said: str) -> list[int]:
    """The options the answer names by a word no other option has ("the bistro" for "a
    softly seasoned bistro" beside "a curry house"), not negated."""
    words = [set(normalize_text(o).split()) for o in item.options]
    found = []
    for i, own in enumerate(words):
        own = own - set().union(*(w for j, w in enumerate(words) if j != i))
        if any(not NEGATION.search(said[:start].strip())
               for word in own if len(word) > 3 for start, _ in phrase_spans(word, said)):
            found.append(i)
    return found


def judge_choice(item: ImprintItem, output: str) -> Verdict:
    """Correct iff the chosen letter is the gold's; no letter, two letters offered as
    alternatives ("A or B"), or a letter under doubt ("Probably B", "I'm not sure, B";
    :mod:`~clstream.protocols.imprint.hedges`, words of the options themselves aside) is
    wrong."""
    gold = gold_letter(item)
    text = answer_text(output).strip()
    hedge = _LETTER_HEDGE.match(text)
    if hedge and hedge.group(1) != hedge.group(2):
        return Verdict(False, "hedged", "choice",
                       f"offers {hedge.group(1)} and {hedge.group(2)} as alternatives")
    letter = chosen_letter(item, output)
    if not letter:
        return Verdict(False, "none", "choice", "no option letter")
    doubt = _choice_doubt(item, text)
    if doubt is not None:
        return Verdict(False, "hedged", "choice", f"picks {letter} under doubt ({doubt!r})")
    return Verdict(letter == gold, letter, "choice", f"chose {letter}, gold {gold}")


def _choice_doubt(item: ImprintItem, text: str) -> str | None:
    """An uncertainty phrase or modal hedge of the answer outside the options' own words."""
    for option in item.options:
        text = re.sub(re.escape(option), " ", text, flags=re.IGNORECASE)
    return uncertainty(text) or modal_hedge(text)


def judge_deterministic(item: ImprintItem, output: str, *,
                        strict_abstention: bool = False) -> Verdict:
    """The item's deterministic judge (``llm`` items need an LLM judge);
    ``strict_abstention`` drops the denial rule of the abstention judge (App. D.1)."""
    judge = item.judge
    if judge == "yesno":
        return judge_yesno(item, output)
    if judge == "abstain":
        return judge_abstain(item, output, strict=strict_abstention)
    if judge == "identifier":
        return judge_identifier(item, output)
    if judge == "choice":
        return judge_choice(item, output)
    if judge == "exact":
        return judge_exact(item, output)
    raise SpecError(f"item {item.item_id!r}: judge {judge!r} is not deterministic "
                    f"(deterministic judges: {', '.join(DETERMINISTIC_JUDGES)})")
