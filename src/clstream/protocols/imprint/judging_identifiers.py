"""The identifier judge and the list-contains judge of the code setting (docs/imprint.md §6;
ImprintBench App. D.2, E.2): the identifiers an answer asserts (negated names left out), compared
with the gold by its trailing dotted component. :mod:`.judging` describes the rules.
"""

from __future__ import annotations

import re

from clstream.protocols.imprint.judging_reading import (
    ImprintItem,
    Verdict,
    answer_region,
    answer_text,
    fold_quotes,
)

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
    return _NEGATED_NAME.sub(" ", fold_quotes(text))


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


