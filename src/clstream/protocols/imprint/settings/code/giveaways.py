"""What could give a hidden identifier away: in a masked snippet, in a description.

The paper keeps a CompRel snippet only when its judges agree on three properties (App. D.2,
snippet quality): the snippet uses the library, the masked identifier is the new API, and the
gold leaf is not spelled in comments, docstrings or variable names; its RefRes descriptions say
what the identifier does without naming it. clstream checks the first two with gates (a) and (b)
(:mod:`dataset`) and the third here, deterministically (docs/imprint.md §4.4): no *distinctive*
word of the leaf (three letters or more, not a function word: ``cumulative`` and ``sum`` for
``cumulative_sum``) may be spelled in a comment, a string or docstring, or any name of the
snippet (variables, functions, keyword arguments, the surrounding API calls), nor, for a
parameter, its usual counterpart (``max=`` next to a masked ``min=``). A word of four letters
or more that begins or ends the other counts as the same word (``product`` gives ``prod``
away, ``stack`` gives ``unstack``). The names of the masked reference's own namespace (``np``,
``linalg``, the callable of a parameter) are allowed: they are the call.

A description is a whole sentence of the docstring's prose that holds no distinctive word of
the leaf; words are never cut out of one (a sentence with a hole in it reads as a riddle, or
as nonsense), so when no sentence is clean there is no description.
"""

from __future__ import annotations

import io
import keyword
import re
import tokenize
from collections.abc import Iterable, Iterator

from clstream.protocols.imprint.settings.code.naming import identifier_words

# Words that name nothing: a leaf's word among these gives nothing away.
FUNCTION_WORDS = frozenset(
    "a an and are as at be by can do does for from get has have in into is it its no not of "
    "on or out per set the to up use via was with".split())
# Words that cannot end a sentence: a summary ending in one lost its last words.
DANGLING_ENDS = FUNCTION_WORDS | frozenset(
    "all other each which that these those their whose any some both either".split())
# Parameter words that come in pairs: one spelled beside the other's mask names it.
COUNTERPARTS: dict[str, tuple[str, ...]] = {
    "min": ("max",), "max": ("min",), "start": ("stop", "end"), "stop": ("start",),
    "end": ("start", "begin"), "begin": ("end",), "lower": ("upper",), "upper": ("lower",),
    "left": ("right",), "right": ("left",), "first": ("last",), "last": ("first",),
    "low": ("high",), "high": ("low",), "width": ("height",), "height": ("width",),
    "rows": ("cols", "columns"), "cols": ("rows",), "columns": ("rows",), "before": ("after",),
    "after": ("before",), "head": ("tail",), "tail": ("head",), "src": ("dst",),
    "dst": ("src",), "input": ("output",), "output": ("input",), "xmin": ("xmax",),
    "xmax": ("xmin",), "ymin": ("ymax",), "ymax": ("ymin",),
}
_SECTION_RULE = re.compile(r"^\s*(-{3,}|={3,})\s*$")
_FIELD = re.compile(r"^\s*(:\w+|\.\. |>>>|(Args|Arguments|Returns|Raises|Yields|Examples?|"
                    r"Notes?|See Also|References|Parameters|Attributes)\s*:?\s*$)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(`])")
_ROLE = re.compile(r":[\w:.-]+:`~?([^`]*)`")


def distinctive_words(leaf: str) -> set[str]:
    """The words of ``leaf`` that would hint at it: three letters or more, not function words."""
    return {w for w in identifier_words(leaf) if len(w) >= 3 and w not in FUNCTION_WORDS}


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 4 and word.endswith("s") and not word.endswith("ss") else word


def _matches(word: str, distinctive: Iterable[str]) -> bool:
    """``word`` is a distinctive word, its plural, or (four letters or more in common) a
    longer or shorter form of one (``prod`` / ``product``, ``stack`` / ``unstack``)."""
    for d in distinctive:
        if word in (d, d + "s", d + "es") or d in (word + "s", word + "es"):
            return True
        shorter, longer = sorted((_singular(word), _singular(d)), key=len)
        if len(shorter) >= 4 and (longer.startswith(shorter) or longer.endswith(shorter)):
            return True
    return False


def _tokens(code: str) -> Iterator[tuple[str, str]]:
    """(kind, text) of the comments, strings and names of ``code``; every word as ``text``
    when the code does not tokenize."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        for word in re.findall(r"\w+", code):
            yield "text", word
        return
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            yield "comment", tok.string
        elif tok.type == tokenize.STRING:
            yield "string", tok.string
        elif tok.type == tokenize.NAME and not keyword.iskeyword(tok.string):
            yield "name", tok.string


def code_giveaway(masked: str, mask: str, leaf: str, *, allowed: Iterable[str] = (),
                  parameter: bool = False) -> str | None:
    """Where ``masked`` spells a distinctive word of ``leaf`` (or, for a parameter, its
    counterpart): "comment '# sum over rows'"; None when nothing gives it away."""
    distinctive = distinctive_words(leaf)
    counterparts = {c for w in identifier_words(leaf) for c in COUNTERPARTS.get(w, ())
                    } if parameter else set()
    if not distinctive and not counterparts:
        return None
    permitted = set(allowed)
    for kind, text in _tokens(masked.replace(mask, " __hidden__ ")):
        if kind == "name" and (text in permitted or text == "__hidden__"):
            continue
        for word in identifier_words(text):
            if _matches(word, distinctive) or word in counterparts:
                return f"{kind} {text.strip()[:60]!r}"
    return None


def without_comments(code: str) -> str:
    """``code`` with its comments cut (lines left empty by them dropped): the rewrite that
    saves a snippet whose only give-away is a comment. ``code`` unchanged when it does not
    tokenize."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return code
    lines = code.splitlines()
    cut = {tok.start[0] - 1: tok.start[1] for tok in tokens if tok.type == tokenize.COMMENT}
    out: list[str] = []
    for i, line in enumerate(lines):
        if i in cut:
            line = line[: cut[i]].rstrip()
            if not line:
                continue
        out.append(line)
    return "\n".join(out)


def text_giveaway(text: str, leaf: str) -> bool:
    """Prose names a distinctive word of ``leaf``, or the leaf itself run together."""
    words = identifier_words(text)
    run_together = "".join(identifier_words(leaf))
    return run_together in words or any(_matches(w, distinctive_words(leaf)) for w in words)


def prose_sentences(doc: str) -> list[str]:
    """The sentences of a docstring's prose (before its first section, field list, directive
    or example), each on one line, Sphinx roles reduced to their text."""
    lines = doc.strip().splitlines()
    prose: list[str] = []
    for i, line in enumerate(lines):
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if _FIELD.match(line) or (line.strip() and _SECTION_RULE.match(following)):
            break
        prose.append(line.strip())
    out: list[str] = []
    for paragraph in "\n".join(prose).split("\n\n"):
        flat = _ROLE.sub(r"`\1`", " ".join(paragraph.split())).replace("``", "`")
        out += [s.strip() for s in _SENTENCE_END.split(flat) if s.strip()]
    return out


def is_whole_sentence(sentence: str) -> bool:
    """A sentence a question can quote: capitalised, four to forty words, ends with a full
    stop after a word that can end one, brackets and backticks balanced, no placeholder."""
    words = sentence.split()
    if not 4 <= len(words) <= 40 or not sentence[:1].isupper() or not sentence.endswith("."):
        return False
    if any(mark in sentence for mark in ("[", "]", "...", ">>>", "<", ">")):
        return False
    if sentence.count("(") != sentence.count(")") or sentence.count("`") % 2:
        return False
    last = re.sub(r"\W+$", "", words[-1]).lower()
    return last not in DANGLING_ENDS


def plain_description(doc: str, leaf: str) -> tuple[str, int] | None:
    """(sentence, its index in the prose): the first whole sentence of the docstring that
    gives no word of ``leaf`` away; None when there is none."""
    for index, sentence in enumerate(prose_sentences(doc)):
        if is_whole_sentence(sentence) and not text_giveaway(sentence, leaf):
            return sentence, index
    return None
