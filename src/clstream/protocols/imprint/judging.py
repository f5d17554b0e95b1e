"""ImprintBench judges: is one sampled answer to a held-out item correct (docs/imprint.md §6)?

Every judge is a pure function ``(item, output, ...) -> Verdict``; the LLM judge
(:class:`LLMJudge`) is the one that calls a model, and it caches every verdict.

Reading of an output, shared by every judge (the project's reading; ImprintBench App. E leaves
it open): a leading ``<think>...</think>`` block is dropped (an unclosed one means the output
is all reasoning and answers nothing; a lone ``</think>`` drops what precedes it, as some chat
templates strip the opening tag). When the rest carries an answer marker (``## Answer:``,
``Answer:``), the judged text is what :func:`clstream.core.layout.final_answer_text` reads
after the last marker; the list judge takes every line after that marker. Otherwise the whole
rest is judged.

The judges, by the item's ``judge`` field:

* ``yesno`` (news DirAcq, App. E.1): the first standalone ``yes``/``no`` token, case-insensitive,
  must equal the gold's; no token at all ("Not sure") is wrong.
* ``abstain`` (news BoundAbs, App. E.1): an abstention phrase within the first 600 characters,
  or a first yes/no token that is "no" (a denial, which E.1's regex accepts; ``strict=True``
  follows D.1 and drops that rule). The paper's list is open-ended ("etc."); the project
  extension (:data:`EXTENSION_ABSTAIN_PHRASES`, on by default so that a bare "Unknown" is read
  as the abstention it is) adds common wordings of the same intent.
* ``identifier`` (code RefRes/CompRel, App. D.2/E.2): the answer, normalised (fences,
  backticks, quotes, a leading "the identifier is", trailing punctuation, call parentheses,
  whitespace), equals the gold or has the same trailing dotted component (``F.conv2d`` is
  ``torch.nn.functional.conv2d``). An answer that is not one identifier is read as free text:
  its asserted identifiers (backticked ones, else the code-like ones; a namespace of the gold
  is context, not an answer) must have exactly one distinct leaf and it must be the gold's (a
  hedged list is wrong). Family ImpRel uses the
  list-contains rule instead: the gold leaf must be named as one listed item.
* ``choice`` (persona CompRel/ImpRel): the option letter, read by
  :func:`clstream.judges.extraction.extract_choice`, else a bare letter or the one option whose
  text the answer repeats; no letter is wrong.
* ``exact``: normalised (case, accents, punctuation, articles), some gold occurs as a
  whole-word phrase and no ``gold_before`` value does (a stale answer is wrong).
* ``llm`` (code DirAcq, persona, App. E.2/E.3): :class:`LLMJudge`, verdict MATCH / NONMATCH /
  REFUSAL; correct iff MATCH, or iff REFUSAL for a BoundAbs item.

The judges take any object with the item fields they read (:class:`ImprintItem`), not the
dataset schema's class, so they can be tried on a bare record.

This module lives in the protocol package, not in :mod:`clstream.judges`, because only
ImprintBench judges its items this way: the filters, the runner, ``score imprint`` and the
stored-run summary all sit here, and no system or model reads a verdict (docs/design.md §2.1:
a piece shared by one protocol belongs to it).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from clstream.core.contracts import Model
from clstream.core.errors import ClstreamError, DataError, SpecError
from clstream.core.files import atomic_writer
from clstream.core.jsonio import iter_json_lines
from clstream.core.layout import final_answer_text
from clstream.core.types import GenerationRequest, Message, SamplingParams
from clstream.judges.extraction import extract_choice

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
    "unknown", "not sure", "cannot answer", "can't answer",
)
"""clstream's extension of the abstention list (on unless ``extended=False``)."""

DETERMINISTIC_JUDGES: tuple[str, ...] = ("yesno", "abstain", "identifier", "choice", "exact")


class JudgeError(ClstreamError):
    """A judge model could not give a verdict (its call failed)."""


class ImprintItem(Protocol):
    """The fields of an ImprintBench item the judges read (the dataset schema's ``Item``)."""

    @property
    def item_id(self) -> str: ...

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
    MATCH / NONMATCH / REFUSAL). LLM verdicts also carry the judge model and prompt hash.
    """

    correct: bool
    verdict: str
    judge: str
    detail: str
    judge_model: str | None = None
    judge_prompt_hash: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"correct": self.correct, "verdict": self.verdict,
                               "judge": self.judge, "detail": self.detail}
        if self.judge_model is not None:
            out["judge_model"] = self.judge_model
            out["judge_prompt_hash"] = self.judge_prompt_hash
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


def first_yes_no(text: str) -> str | None:
    """``"yes"``, ``"no"`` or None: the first standalone yes/no token (App. E.1 regex)."""
    hit = _YES_NO.search(text)
    return hit.group(1).lower() if hit else None


def judge_yesno(item: ImprintItem, output: str) -> Verdict:
    """Correct iff the first standalone yes/no token equals the gold's (no token: wrong)."""
    gold = next((t for t in (first_yes_no(g) for g in item.golds) if t), None)
    if gold is None:
        raise SpecError(f"item {item.item_id!r}: the yesno judge needs a Yes/No gold, "
                        f"got {item.golds[0]!r}")
    said = first_yes_no(answer_text(output))
    if said is None:
        return Verdict(False, "none", "yesno", "no standalone yes/no token")
    return Verdict(said == gold, said, "yesno", f"answered {said!r}, gold {gold!r}")


# ----------------------------------------------------------------------------- abstention

def _fold_quotes(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'")


def abstain_phrases(extended: bool = True) -> tuple[str, ...]:
    return PAPER_ABSTAIN_PHRASES + (EXTENSION_ABSTAIN_PHRASES if extended else ())


def judge_abstain(item: ImprintItem, output: str, *, strict: bool = False,
                  extended: bool = True, phrases: Sequence[str] | None = None) -> Verdict:
    """Correct iff the answer abstains: a listed phrase in the first 600 characters, or
    (unless ``strict``) a first yes/no token "no". ``phrases`` replaces the list."""
    text = _fold_quotes(answer_text(output))
    window = text[:ABSTAIN_WINDOW]
    for phrase in phrases if phrases is not None else abstain_phrases(extended):
        if re.search(rf"\b{re.escape(_fold_quotes(phrase))}\b", window, re.IGNORECASE):
            return Verdict(True, "abstain", "abstain", f"abstention phrase {phrase!r}")
    if not strict and first_yes_no(text) == "no":
        return Verdict(True, "abstain", "abstain", "denial: first yes/no token is 'no'")
    return Verdict(False, "answer", "abstain", "no abstention phrase"
                   + ("" if strict else " and no denial"))


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


def judge_identifier(item: ImprintItem, output: str) -> Verdict:
    """The identifier judge (module docstring); ImpRel items go to :func:`judge_list_contains`."""
    if item.family == "ImpRel":
        return judge_list_contains(item, output)
    text = answer_text(output)
    whole = normalize_identifier(text)
    if _IDENTIFIER.match(whole):
        hit = next((g for g in item.golds if identifiers_agree(whole, g)), None)
        if hit is not None:
            return Verdict(True, "match", "identifier", f"{whole!r} agrees with {hit!r}")
        return Verdict(False, "mismatch", "identifier", f"{whole!r} is not {item.golds[0]!r}")
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
    entries = listed_items(answer_region(output))
    for entry in entries:
        names = [re.sub(r"\s+", "", m) for m in _ANY_IDENT.findall(entry)]
        ends = {leaf(names[0]), leaf(names[-1])} if names else set()
        if ends & targets:
            return Verdict(True, "match", "identifier",
                           f"listed item {entry[:80]!r} names {sorted(ends & targets)[0]!r}")
    return Verdict(False, "mismatch", "identifier",
                   f"{sorted(targets)[0]!r} not among {len(entries)} listed items")


# ----------------------------------------------------------------------------- choice

_BARE_LETTER = re.compile(r"^[(\[]?\s*([A-Z])\s*[)\].:]?(?:\s|$)")


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


def chosen_letter(item: ImprintItem, output: str) -> str:
    """The option the answer picks, '' when it commits to none (module docstring)."""
    n = len(item.options)
    valid = "".join(chr(ord("A") + i) for i in range(n))
    rest = strip_think(output)
    letter = extract_choice(rest, n_options=n) if n else ""
    if letter:
        return letter
    text = answer_text(output)
    bare = _BARE_LETTER.match(text)
    if bare and bare.group(1) in valid:
        return bare.group(1)
    said = normalize_text(text)
    named = [i for i, o in enumerate(item.options) if normalize_text(o) and _phrase_spans(
        normalize_text(o), said)]
    return chr(ord("A") + named[0]) if len(named) == 1 else ""


def judge_choice(item: ImprintItem, output: str) -> Verdict:
    """Correct iff the chosen letter is the gold's; no letter is wrong."""
    gold = gold_letter(item)
    letter = chosen_letter(item, output)
    if not letter:
        return Verdict(False, "none", "choice", "no option letter")
    return Verdict(letter == gold, letter, "choice", f"chose {letter}, gold {gold}")


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


def _asserts(values: Sequence[str], rivals: Sequence[str], text: str) -> bool:
    """Some value occurs in ``text`` other than as part of a longer rival occurrence
    ("New York" inside "New York City" asserts only the longer one)."""
    rival_spans = [s for r in rivals for s in _phrase_spans(normalize_text(r), text)]
    return any(not _inside(s, rival_spans)
               for v in values for s in _phrase_spans(normalize_text(v), text))


def judge_exact(item: ImprintItem, output: str) -> Verdict:
    """Correct iff a gold is asserted as a whole-word phrase and no ``gold_before`` is."""
    said = normalize_text(answer_text(output))
    gold = _asserts(item.golds, item.stale_golds, said)
    stale = _asserts(item.stale_golds, item.golds, said)
    if gold and not stale:
        return Verdict(True, "match", "exact", "gold stated")
    if stale:
        return Verdict(False, "stale", "exact", "states the value before the update")
    return Verdict(False, "mismatch", "exact", "gold not stated")


def is_stale(item: ImprintItem, output: str) -> bool:
    """The answer states a ``gold_before`` value and not the gold: the stale-answer error of
    the report (HorizonBench's "originally stated value"; docs/imprint.md §6.9)."""
    if not item.stale_golds:
        return False
    said = normalize_text(answer_text(output))
    return (_asserts(item.stale_golds, item.golds, said)
            and not _asserts(item.golds, item.stale_golds, said))


def judge_deterministic(item: ImprintItem, output: str) -> Verdict:
    """The item's deterministic judge (``llm`` items need :class:`LLMJudge`)."""
    judge = item.judge
    if judge == "yesno":
        return judge_yesno(item, output)
    if judge == "abstain":
        return judge_abstain(item, output)
    if judge == "identifier":
        return judge_identifier(item, output)
    if judge == "choice":
        return judge_choice(item, output)
    if judge == "exact":
        return judge_exact(item, output)
    raise SpecError(f"item {item.item_id!r}: judge {judge!r} is not deterministic "
                    f"(deterministic judges: {', '.join(DETERMINISTIC_JUDGES)})")


# ----------------------------------------------------------------------------- LLM judge

LLM_JUDGE_SYSTEM = (
    "You check one answer to a question against a reference answer and label it. "
    "Judge only the answer's content, never its style or length."
)
LLM_JUDGE_TEMPLATE = (
    "Question:\n{question}\n\n"
    "Reference answer:\n{reference}\n\n"
    "Answer to check:\n{response}\n\n"
    "Pick the one label that fits the answer to check:\n"
    "MATCH - it states the key fact of the reference answer, and states it correctly. Other "
    "wording is fine; a partly right, hedged or incomplete answer does not qualify.\n"
    "NONMATCH - it gives a different or wrong answer, stays vague, strays from the question, "
    "or leaves the key fact out.\n"
    "REFUSAL - it declines to answer, says it does not know, or says it lacks the "
    "information.\n"
    "You may reason in a few sentences first. Then write the label alone as the last line."
)
LLM_NO_ANSWER_REFERENCE = (
    "(none: nothing known about this answers the question; a correct response says it does "
    "not know or lacks the information)"
)
LLM_CHOICE_REFERENCE = "option {letter}: {text} (an answer naming option {letter} matches)"
LLM_JUDGE_VERSION = "imprint-llm-judge-v1"
LLM_JUDGE_PROMPT_HASH = hashlib.sha256("\x00".join(
    (LLM_JUDGE_VERSION, LLM_JUDGE_SYSTEM, LLM_JUDGE_TEMPLATE, LLM_NO_ANSWER_REFERENCE,
     LLM_CHOICE_REFERENCE)).encode()).hexdigest()[:16]
"""The hash every LLM verdict carries and every cache key holds: change a prompt text and
earlier verdicts are no longer reused."""

LLM_JUDGE_PARAMS = SamplingParams(temperature=0.0, top_p=1.0, top_k=-1, max_tokens=1024, n=1)
_LABEL = re.compile(r"\b(NON[-_ ]?MATCH|MATCH|REFUSAL)\b")


def parse_llm_verdict(reply: str) -> str | None:
    """The last MATCH / NONMATCH / REFUSAL word of a judge reply (NONMATCH, also spelled
    NON-MATCH, is never read as MATCH), or None when there is none."""
    labels = _LABEL.findall(strip_think(reply))
    if not labels:
        return None
    last = labels[-1]
    return "NONMATCH" if last.startswith("NON") else last


def llm_reference(item: ImprintItem) -> str:
    """What the judge compares against: the gold (its accepted variants), the gold option,
    or, for a BoundAbs item, the statement that nothing answers it."""
    if item.family == "BoundAbs":
        return LLM_NO_ANSWER_REFERENCE
    if item.options:
        letter = gold_letter(item)
        return LLM_CHOICE_REFERENCE.format(letter=letter,
                                           text=item.options[ord(letter) - ord("A")])
    golds = item.golds
    return golds[0] + (f" (also accepted: {'; '.join(golds[1:])})" if len(golds) > 1 else "")


def llm_verdict(item: ImprintItem, reply: str, judge_model: str) -> Verdict:
    """The verdict a judge reply gives: correct iff MATCH (iff REFUSAL for BoundAbs)."""
    label = parse_llm_verdict(reply)
    wanted = "REFUSAL" if item.family == "BoundAbs" else "MATCH"
    if label is None:
        return Verdict(False, "NONMATCH", "llm", "judge reply holds no verdict word",
                       judge_model, LLM_JUDGE_PROMPT_HASH)
    return Verdict(label == wanted, label, "llm", f"judge said {label}, correct is {wanted}",
                   judge_model, LLM_JUDGE_PROMPT_HASH)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class ReplyCache:
    """Model replies stored in a JSON Lines file, one record per key (``{"key", ...}``).

    Loaded whole when opened; :meth:`put_many` adds records and rewrites the file atomically,
    so a killed run keeps every batch it finished and a re-run sends only what is missing.
    ``path`` None keeps the records in memory only.
    """

    def __init__(self, path: str | Path | None, required: Sequence[str] = ()):
        self.path = Path(path) if path is not None else None
        self._records: dict[str, dict[str, Any]] = {}
        if self.path is None or not self.path.exists():
            return
        for number, record in iter_json_lines(self.path):
            if not isinstance(record, dict) or not isinstance(record.get("key"), str):
                raise DataError(self.path, f"line {number}", "key", "not a cache record")
            absent = next((f for f in required if f not in record), None)
            if absent is not None:
                raise DataError(self.path, f"line {number}", absent, "missing key")
            self._records[record["key"]] = record

    def get(self, key: str) -> dict[str, Any] | None:
        return self._records.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._records

    def __len__(self) -> int:
        return len(self._records)

    def put_many(self, records: Sequence[dict[str, Any]]) -> None:
        for record in records:
            self._records[record["key"]] = record
        if self.path is None or not records:
            return
        with atomic_writer(self.path, make_parent=True) as handle:
            for value in self._records.values():
                handle.write(json.dumps(value, ensure_ascii=False, sort_keys=True) + "\n")


class LLMJudge:
    """MATCH / NONMATCH / REFUSAL judge over a model, temperature 0 (App. E.2/E.3).

    Replies are cached (:class:`ReplyCache`), one ``{"key", "judge_model",
    "judge_prompt_hash", "item_id", "reply"}`` record each, keyed by the judge model's name,
    the prompt hash, the item (its id and the hash of its question and reference) and the hash
    of the judged output.
    """

    def __init__(self, model: Model, cache_path: str | Path | None = None, *,
                 batch_size: int = 256):
        self.model = model
        self.cache = ReplyCache(cache_path, required=("reply",))
        self.batch_size = batch_size
        self.calls = 0

    @property
    def name(self) -> str:
        return self.model.name

    def key(self, item: ImprintItem, output: str) -> str:
        body = {"judge_model": self.model.name, "judge_prompt_hash": LLM_JUDGE_PROMPT_HASH,
                "item_id": item.item_id,
                "item_hash": _sha(item.question + "\x00" + llm_reference(item)),
                "output_hash": _sha(output)}
        return _sha(json.dumps(body, sort_keys=True))

    def request(self, item: ImprintItem, output: str, key: str) -> GenerationRequest:
        user = LLM_JUDGE_TEMPLATE.format(question=item.question.strip(),
                                         reference=llm_reference(item),
                                         response=strip_think(output) or "(empty)")
        return GenerationRequest(
            key=f"judge/{item.item_id}/{key[:12]}", stage="judge", params=LLM_JUDGE_PARAMS,
            messages=(Message(role="system", content=LLM_JUDGE_SYSTEM),
                      Message(role="user", content=user)))

    async def judge_many(self, pairs: Sequence[tuple[ImprintItem, str]]) -> list[Verdict]:
        """Verdicts for (item, output) pairs, same order; only uncached pairs call the model,
        each distinct one once."""
        keys = [self.key(item, output) for item, output in pairs]
        todo: dict[str, GenerationRequest] = {}
        for (item, output), key in zip(pairs, keys, strict=True):
            if key not in self.cache and key not in todo:
                todo[key] = self.request(item, output, key)
        owners = {k: pairs[i][0].item_id for i, k in enumerate(keys)}
        pending = list(todo.items())
        for start in range(0, len(pending), self.batch_size):
            chunk = pending[start:start + self.batch_size]
            results = await self.model.generate([r for _, r in chunk])
            self.calls += len(chunk)
            records = []
            for (key, _), result in zip(chunk, results, strict=True):
                if not result.ok or not result.samples:
                    raise JudgeError(f"judge model {self.model.name!r} failed on item "
                                     f"{owners[key]!r}: {result.error or 'no sample'}")
                records.append({"key": key, "judge_model": self.model.name,
                                "judge_prompt_hash": LLM_JUDGE_PROMPT_HASH,
                                "item_id": owners[key], "reply": result.samples[0].text})
            self.cache.put_many(records)
        return [llm_verdict(item, str((self.cache.get(key) or {}).get("reply", "")),
                            self.model.name)
                for (item, _), key in zip(pairs, keys, strict=True)]

    async def judge(self, item: ImprintItem, output: str) -> Verdict:
        return (await self.judge_many([(item, output)]))[0]


# ----------------------------------------------------------------------------- entry point

async def judge_outputs(items: Sequence[ImprintItem], predictions: Mapping[str, Sequence[str]],
                        llm: LLMJudge | None = None) -> dict[str, list[Verdict]]:
    """Every sample of every item that has predictions, judged: ``{item_id: [Verdict]}`` in
    sample order. Items judged ``llm`` without ``llm`` are an error naming the first one.
    The scorer and the run summary both judge through here."""
    if llm is None:
        needing = next((i for i in items if i.judge == "llm" and i.item_id in predictions), None)
        if needing is not None:
            raise SpecError(f"item {needing.item_id!r} is judged by an LLM judge; give a judge "
                            "model")
    verdicts: dict[str, list[Verdict]] = {}
    llm_pairs: list[tuple[ImprintItem, str]] = []
    for item in items:
        samples = predictions.get(item.item_id)
        if samples is None:
            continue
        if item.judge == "llm":
            llm_pairs.extend((item, s) for s in samples)
            continue
        verdicts[item.item_id] = [judge_deterministic(item, s) for s in samples]
    if llm_pairs and llm is not None:
        judged = await llm.judge_many(llm_pairs)
        for (item, _), verdict in zip(llm_pairs, judged, strict=True):
            verdicts.setdefault(item.item_id, []).append(verdict)
    return {i.item_id: verdicts[i.item_id] for i in items if i.item_id in verdicts}


def judge_outputs_sync(items: Sequence[ImprintItem], predictions: Mapping[str, Sequence[str]],
                       llm: LLMJudge | None = None) -> dict[str, list[Verdict]]:
    """:func:`judge_outputs` for callers outside an event loop (the ``score`` command)."""
    return asyncio.run(judge_outputs(items, predictions, llm))
