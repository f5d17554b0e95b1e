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
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from clstream.core.errors import ClstreamError, SpecError
from clstream.core.layout import final_answer_text
from clstream.judges.extraction import extract_choice
from clstream.protocols.imprint.hedges import affirming_clause, modal_hedge, uncertainty

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


class JudgeError(ClstreamError):
    """A judge model could not give a verdict (its call failed)."""


class ImprintItem(Protocol):
    """The fields of an ImprintBench item the judges read (the dataset schema's ``Item``)."""

    @property
    def item_id(self) -> str: ...

    @property
    def setting(self) -> str: ...

    @property
    def family(self) -> str: ...

    @property
    def judge(self) -> str: ...

    @property
    def question(self) -> str: ...

    @property
    def golds(self) -> list[str]: ...

    @property
    def stale_golds(self) -> list[str]: ...

    @property
    def options(self) -> list[str]: ...


@dataclass(frozen=True)
class Verdict:
    """One judged sample: whether it is correct, the judge's label and why.

    ``verdict`` is the judge's own label (the yes/no token read, ``abstain``/``answer``,
    ``match``/``mismatch``/``hedged``/``none``, the letter, ``stale``, or the LLM judge's
    MATCH / NONMATCH / REFUSAL / Y / N / YES / NO). LLM verdicts also carry the judge model and
    prompt hash. ``error`` is set when the judge gave no verdict at all (a reply that does not
    end in a verdict word): the sample is then an error, never a wrong answer, and
    ``correct`` means nothing.
    """

    correct: bool
    verdict: str
    judge: str
    detail: str
    judge_model: str | None = None
    judge_prompt_hash: str | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"correct": self.correct, "verdict": self.verdict,
                               "judge": self.judge, "detail": self.detail}
        if self.judge_model is not None:
            out["judge_model"] = self.judge_model
            out["judge_prompt_hash"] = self.judge_prompt_hash
        if self.error is not None:
            out["error"] = self.error
        return out


# ----------------------------------------------------------------------------- reading

_THINK_OPEN = re.compile(r"^\s*<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_ANSWER_MARKER = re.compile(r"""["'*#]*\s*answer\s*["'*#]*\s*:""", re.IGNORECASE)


def strip_think(output: str) -> str:
    """The output without its leading reasoning block (module docstring)."""
    close = _THINK_CLOSE.search(output)
    if _THINK_OPEN.match(output):
        return output[close.end():].strip() if close else ""
    if close and "<think>" not in output[:close.start()].lower():
        return output[close.end():].strip()
    return output.strip()


def answer_text(output: str) -> str:
    """The judged text: after the think block, what the last answer marker introduces."""
    return final_answer_text(strip_think(output))


def answer_region(output: str) -> str:
    """Everything after the last answer marker (all lines), else the whole rest; lists span
    lines, so the list judge reads this."""
    rest = strip_think(output)
    markers = list(_ANSWER_MARKER.finditer(rest))
    if markers:
        tail = rest[markers[-1].end():].strip()
        if tail:
            return tail
    return rest


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
        hit = re.search(rf"\b{re.escape(_fold_quotes(phrase))}\b", text, re.IGNORECASE)
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
    text = _fold_quotes(answer_text(output))
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

def _fold_quotes(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'")


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
    text = _fold_quotes(answer_text(output))
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


# ----------------------------------------------------------------------------- identifiers

_FENCED = re.compile(r"```[^\n`]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_LEAD_PHRASE = re.compile(
    r"^(?:the\s+)?(?:identifier|answer|name|function|method|class|attribute)\s+(?:is|would be)"
    r"\s*:?\s*", re.IGNORECASE)
_QUOTES = "`'\"\u2018\u2019\u201c\u201d"
_CALL = re.compile(r"\([^()]*\)")
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_IDENTIFIER = re.compile(rf"^{_IDENT}(?:\.{_IDENT})*$")
_DOTTED = re.compile(rf"(?<![\w.]){_IDENT}(?:\.{_IDENT})+(?![\w])")
_CALLED = re.compile(rf"(?<![\w.])({_IDENT})\s*\(")
_SNAKE = re.compile(r"(?<![\w.])[A-Za-z0-9]*_[A-Za-z0-9_]*(?![\w])")
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "cf"})


def _strip_calls(text: str) -> str:
    previous = None
    while previous != text:
        previous, text = text, _CALL.sub("", text)
    return text


def normalize_identifier(text: str) -> str:
    """An answer as an identifier: fences, backticks, quotes, a leading "the identifier is",
    trailing punctuation, call parentheses and whitespace removed."""
    fenced = _FENCED.search(text)
    if fenced:
        text = fenced.group(1)
    text = text.strip()
    text = _LEAD_PHRASE.sub("", text)
    text = text.strip().strip(_QUOTES).strip()
    text = _strip_calls(text)
    text = text.strip().rstrip(".,;:!?").strip().strip(_QUOTES)
    return re.sub(r"\s*\.\s*", ".", " ".join(text.split()))


def leaf(identifier: str) -> str:
    """The trailing dotted component (``torch.nn.functional.conv2d`` -> ``conv2d``)."""
    return identifier.rstrip(".").rsplit(".", 1)[-1]


def identifiers_agree(answer: str, gold: str) -> bool:
    """Equal, or the same trailing dotted component (docs/imprint.md §6.4, App. D.2)."""
    a, g = normalize_identifier(answer), normalize_identifier(gold)
    return bool(a) and (a == g or leaf(a) == leaf(g))


def asserted_identifiers(text: str) -> list[str]:
    """The identifiers a free-text answer asserts: the backticked ones, else the code-like
    tokens (dotted names, called names, snake_case names); a namespace that prefixes another
    asserted name is context, not an answer, and is dropped."""
    spans = [normalize_identifier(s) for s in _BACKTICKED.findall(text)]
    found = [s for s in spans if _IDENTIFIER.match(s)]
    if not found:
        bare = _strip_calls(text.replace("`", ""))
        code = (_DOTTED.findall(bare) + _CALLED.findall(text.replace("`", ""))
                + [t for t in _SNAKE.findall(bare) if _IDENTIFIER.match(t)])
        found = [c for c in code if c.lower() not in _ABBREVIATIONS]
    distinct = list(dict.fromkeys(found))
    return [c for c in distinct if not any(o.startswith(c + ".") for o in distinct)]


_NEGATED_NAME = re.compile(
    rf"\b(?:not|never|isn't|is not|no longer|instead of|rather than)\s+"
    rf"(?:`[^`\n]+`|{_IDENT}(?:\.{_IDENT})*(?:\([^()]*\))?)", re.IGNORECASE)


def drop_negated_names(text: str) -> str:
    """``text`` without the names it negates ("not `foo`", "rather than foo"): a negated
    name is not an answer (docs/imprint.md §6.4)."""
    return _NEGATED_NAME.sub(" ", _fold_quotes(text))


_ALTERNATIVES = re.compile(r"\s*(?:,|;|/|\bor\b|\band\b|\beither\b)\s*", re.IGNORECASE)


def _offered_names(text: str) -> list[str]:
    """The distinct leaves of an answer that is nothing but names offered as alternatives
    ("cumulative_sum or cumsum", "`a`, `b`"): a hedged list, which the paper's identifier
    judge does not accept. Any other answer gives []."""
    parts = [p for p in _ALTERNATIVES.split(text.strip().rstrip(".?!")) if p]
    names = [normalize_identifier(p) for p in parts]
    if len(names) < 2 or not all(_IDENTIFIER.match(n) for n in names):
        return []
    return list(dict.fromkeys(leaf(n) for n in names))


def judge_identifier(item: ImprintItem, output: str) -> Verdict:
    """The identifier judge (module docstring); ImpRel items go to :func:`judge_list_contains`."""
    if item.family == "ImpRel":
        return judge_list_contains(item, output)
    text = drop_negated_names(answer_text(output))
    whole = normalize_identifier(text)
    if _IDENTIFIER.match(whole):
        hit = next((g for g in item.golds if identifiers_agree(whole, g)), None)
        if hit is not None:
            return Verdict(True, "match", "identifier", f"{whole!r} agrees with {hit!r}")
        return Verdict(False, "mismatch", "identifier", f"{whole!r} is not {item.golds[0]!r}")
    offered = _offered_names(text)
    if len(offered) > 1:
        return Verdict(False, "hedged", "identifier",
                       f"{len(offered)} names offered: {', '.join(offered[:6])}")
    namespaces = {normalize_identifier(g) for g in item.golds}
    candidates = [c for c in asserted_identifiers(text)
                  if not any(g.startswith(c + ".") for g in namespaces)]
    leaves = list(dict.fromkeys(leaf(c) for c in candidates))
    if not leaves:
        return Verdict(False, "none", "identifier", "no identifier asserted")
    if len(leaves) > 1:
        return Verdict(False, "hedged", "identifier",
                       f"{len(leaves)} distinct identifiers asserted: {', '.join(leaves[:6])}")
    ok = any(leaves[0] == leaf(normalize_identifier(g)) for g in item.golds)
    return Verdict(ok, "match" if ok else "mismatch", "identifier",
                   f"asserted {candidates[0]!r}, gold {item.golds[0]!r}")


_LIST_SPLIT = re.compile(r"\n|;|,|\band\b|\bor\b")
_BULLET = re.compile(r"^\s*(?:[-*\u2022+]|\d+[.)])\s+")
_ANY_IDENT = re.compile(rf"{_IDENT}(?:\s*\.\s*{_IDENT})*")


def listed_items(text: str) -> list[str]:
    """The items of a listed answer: lines, commas, semicolons, "and"/"or" separate them;
    bullets, numbering and call arguments are dropped."""
    flat = _strip_calls(text.replace("`", " "))
    return [_BULLET.sub("", part).strip() for part in _LIST_SPLIT.split(flat) if part.strip()]


def judge_list_contains(item: ImprintItem, output: str) -> Verdict:
    """Code ImpRel (App. E.2): correct iff the gold leaf (or a dotted path ending in it) is
    named as one listed item -- the leading or trailing identifier of an item."""
    targets = {leaf(normalize_identifier(g)) for g in item.golds}
    entries = listed_items(drop_negated_names(answer_region(output)))
    for entry in entries:
        names = [re.sub(r"\s+", "", m) for m in _ANY_IDENT.findall(entry)]
        ends = {leaf(names[0]), leaf(names[-1])} if names else set()
        if ends & targets:
            return Verdict(True, "match", "identifier",
                           f"listed item {entry[:80]!r} names {sorted(ends & targets)[0]!r}")
    return Verdict(False, "mismatch", "identifier",
                   f"{sorted(targets)[0]!r} not among {len(entries)} listed items")


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
        not _NEGATION.search(said[:start].strip())
        for start, _ in _phrase_spans(normalize_text(o), said))]
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
        if any(not _NEGATION.search(said[:start].strip())
               for word in own if len(word) > 3 for start, _ in _phrase_spans(word, said)):
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


def _phrase_spans(phrase: str, text: str) -> list[tuple[int, int]]:
    """Where the normalised ``phrase`` occurs in normalised ``text`` as whole words."""
    if not phrase:
        return []
    return [(m.start(), m.end())
            for m in re.finditer(rf"(?<!\S){re.escape(phrase)}(?!\S)", text)]


def _inside(span: tuple[int, int], others: list[tuple[int, int]]) -> bool:
    return any(o[0] <= span[0] and span[1] <= o[1] and o != span for o in others)


_CLAUSE_BREAK = re.compile(
    r"[;:()\[\]\n!?\u2014\u2013]|,(?!\d{3}\b)|\.(?!\d)|\s-\s|\bbut\b", re.IGNORECASE)
_NEGATION = re.compile(
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
    rival_spans = [s for r in rivals for s in _phrase_spans(normalize_text(r), clause)]
    out = []
    for value in values:
        for span in _phrase_spans(normalize_text(value), clause):
            before, after = clause[:span[0]].strip(), clause[span[1]:].strip()
            if _inside(span, rival_spans) or _NEGATION.search(before):
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
