"""RefRes descriptions that say what an identifier does in words of their own.

The paper's RefRes asks for an identifier from an LLM-written description of what it does that
does not name it (ImprintBench App. D.2, item 2). Without a writer model, clstream rewords the
docstring's summary through a fixed lexicon (:data:`LEXICON`): every content word of the summary
is replaced, longest phrase first, so the description shares no content word with the
docstring (a question quoting the corpus sentence tests string lookup, not recall of what the
identifier does). A summary with a word the lexicon does not cover falls back to a structural
description (release, namespace, how it is called); a description that still shares a content
word with the docstring, or spells a word of the leaf, is no description (the item is dropped
and counted in the dataset card).

The lexicon covers the fictional library's vocabulary whole (its verb, noun, topic, class and
parameter glosses, :mod:`synthetic`) and the commonest words of real libraries' summaries.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from clstream.protocols.imprint.settings.code.giveaways import distinctive_words

# Words that carry no content: kept as they are, never compared.
STOPWORDS = frozenset(
    "a an and are as at be been by each every for from has have in into is it its of on one "
    "or that the their this to two with within without which while whose when where than "
    "then these those so such not no any all both per via onto upon after before between about "
    "around over under through across against among out off up down".split())

# Phrase (lower case) -> its rewording. Longest phrases are tried first.
LEXICON: dict[str, str] = {
    # the fictional library's verb glosses
    "bends over": "creases", "cuts back": "shortens", "mixes together": "combines",
    "piles up": "heaps", "spreads out": "disperses", "reports the size of":
    "gives the dimensions of", "lines up": "squares up", "darkens": "dims",
    "divides": "breaks apart", "joins": "unites", "turns": "revolves",
    "adds filler around": "puts spacing around", "encloses": "envelops",
    "counts": "enumerates", "orders": "arranges", "widens": "broadens",
    "rounds to fixed steps": "quantizes", "follows the outline of": "draws around the contour of",
    "cuts off the overflow of": "crops the excess of", "flips": "inverts",
    # its noun glosses
    "the blank edges of a page": "the empty rims of a leaf",
    "the drawn letter shapes": "the sketched character forms",
    "the vertical text bands": "the upright strips of wording",
    "the colour shades": "the hues", "the long decorative strips": "the lengthy ornamental bands",
    "the frame lines": "the outer rules", "the pigment coats": "the dye films",
    "the boxed regions": "the enclosed zones", "the horizontal cell strips":
    "the sideways table bands", "the gaps between letter pairs":
    "the spacing between character couples", "the cut-out templates": "the punched patterns",
    "the sample colour patches": "the trial hue chips",
    "the stacked drawing sheets": "the overlaid sketch planes",
    "the guide meshes": "the reference grids", "the insertion markers": "the caret pointers",
    "the bound edges of a book": "the stitched sides of a tome",
    # its topic qualifiers
    "in running prose": "within flowing writing", "on a page plan": "on a leaf blueprint",
    "in a palette": "within a set of paints", "around a picture": "encircling an illustration",
    "before printing": "ahead of production", "on a paper sheet": "on a single leaf",
    "in a bound volume": "inside a stitched tome", "in a draft copy": "within a trial version",
    "in a studio": "inside a workshop",
    # its class summaries
    "a drawing surface that keeps pending strokes": "a sketching plane holding queued marks",
    "a named set of colours with a default pick": "a labelled group of hues with a preset choice",
    "a run of letters with its chosen face and size":
        "a sequence of characters in a selected typeface and scale",
    "the strip between two facing leaves": "the band separating two opposite pages",
    "a stand that holds one surface at a time": "a support carrying a single plane at once",
    "a leaf of paper folded once into two halves": "a page bent a single time into a pair of parts",
    "a gathering of folded leaves": "a bundle of creased pages",
    "a printing surface for one colour": "a plane for applying a single hue",
    "a device that weaves ribbons into a pattern": "a machine interlacing bands into a design",
    "a rod that winds a long band": "a bar coiling a lengthy strip",
    "a workroom that groups surfaces, tools and pending jobs":
        "a studio gathering planes, implements and queued tasks",
    # common words of real libraries' summaries
    # (a summary's imperative verb reads as the third person the question needs)
    "return": "gives back", "returns": "gives back", "compute": "works out",
    "computes": "works out", "calculate": "works out", "calculates": "works out",
    "create": "builds", "creates": "builds", "construct": "builds", "constructs": "builds",
    "evaluate": "assesses", "evaluates": "assesses", "cumulative": "running", "sum": "total",
    "product": "multiplied total", "elements": "entries", "element": "entry",
    "along": "over", "given": "chosen", "axis": "dimension", "array": "grid of numbers",
    "arrays": "grids of numbers", "input": "supplied data", "matrix": "table of numbers",
    "vector": "list of numbers", "values": "numbers", "value": "number",
    "string": "text", "strings": "texts", "function": "routine", "data": "records",
    "new": "fresh", "specified": "requested", "maximum": "largest", "minimum": "smallest",
    "mean": "average", "interpolation": "in-between estimate",
    "derivative": "rate of change", "integral": "area under a curve",
    "sort": "arrange", "sorted": "arranged", "unique": "distinct", "numerical": "numeric",
    "estimate": "approximate", "approximation": "rough estimate", "test": "check",
    "distribution": "spread of outcomes", "random": "chance", "sample": "draw",
    "samples": "draws", "signal": "waveform", "frame": "table", "dataframe": "table",
    "column": "field", "columns": "fields", "row": "record", "rows": "records",
    "index": "position", "points": "locations", "point": "location", "set": "collection",
    "list": "sequence", "number": "count", "object": "thing", "objects": "things",
}
_LONGEST = max(len(k.split()) for k in LEXICON)
_WORD = re.compile(r"[a-z][a-z'-]*")


def content_words(text: str) -> set[str]:
    """The content words of ``text``: lower-case words of three letters or more, not
    :data:`STOPWORDS`, a trailing plural ``s`` dropped (``columns`` and ``column`` are one)."""
    words = re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower())
    return {w[:-1] if w.endswith("s") and len(w) > 3 else w
            for w in words if len(w) >= 3 and w not in STOPWORDS}


def shares_content(description: str, doc: str) -> set[str]:
    """The content words ``description`` shares with ``doc`` (empty: it quotes nothing)."""
    return content_words(description) & content_words(doc)


def reword(summary: str) -> str | None:
    """The summary reworded through :data:`LEXICON`, lower case, no final period; None when a
    content word has no rewording."""
    text = summary.strip().rstrip(".").lower()
    tokens = re.findall(r"[a-z][a-z'-]*|[,;]", text)
    out: list[str] = []
    i = 0
    while i < len(tokens):
        for size in range(min(_LONGEST, len(tokens) - i), 0, -1):
            phrase = " ".join(tokens[i:i + size]).replace(" ,", ",")
            if phrase in LEXICON:
                out.append(LEXICON[phrase])
                i += size
                break
        else:
            token = tokens[i]
            if token in STOPWORDS or token in ",;":
                out.append(token)
                i += 1
                continue
            return None
    return " ".join(out).replace(" ,", ",").replace(" ;", ";")


def structural(kind: str, version: str, signature: str) -> str:
    """What can be said of an identifier without its prose or its names: the release that
    brought it and how many leading inputs and named options a call takes."""
    parts = [p.strip() for p in signature.split(",") if p.strip() and p.strip() not in ("/", "*")]
    parts = [p for p in parts if p.split("=")[0].strip(" *") not in ("self", "cls")]
    leading = sum(1 for p in parts if "=" not in p and not p.startswith("*"))
    options = sum(1 for p in parts if "=" in p)
    counted = (f"{_number(leading)} leading input{'' if leading == 1 else 's'} and "
               f"{_number(options)} named option{'' if options == 1 else 's'}")
    if kind == "class":
        return f"arrived with release {version} and is built from {counted}"
    return f"arrived with release {version} and is called with {counted}"


def _number(n: int) -> str:
    return ("no", "one", "two", "three", "four", "five", "six", "seven")[n] if n < 8 else str(n)


def offline_description(summary: str, doc: str, leaf: str, *, kind: str, version: str,
                        signature: str,
                        taken: Iterable[str] = ()) -> tuple[str, str] | None:
    """(description, how) for a RefRes question: ``reworded`` from the summary through the
    lexicon, else ``structural``; None when neither is clean -- it shares a content word with
    the docstring, spells a distinctive word of the leaf, or another feature already has it."""
    banned = distinctive_words(leaf)
    seen = set(taken)
    candidates = [(reword(summary) if summary else None, "reworded"),
                  (structural(kind, version, signature), "structural")]
    for text, how in candidates:
        if not text or text in seen:
            continue
        if shares_content(text, doc) or content_words(text) & banned:
            continue
        return text, how
    return None
