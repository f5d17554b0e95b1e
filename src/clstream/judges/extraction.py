"""What a SeqMem-Eval answer says: its code or its option letter (docs/seqmem.md §4.1, §4.3).

Extraction must never let formatting decide correctness: a correct program or letter written in
an unexpected but readable form is found, and text that states no answer yields none.

Code (:func:`extract_code`), first rule that applies:

1. the last fenced block (an unclosed final fence runs to the end of the output). Reading
   chosen among several blocks: Python or untagged blocks are preferred to blocks tagged with
   another language, and when the task names its entry point, the last such block that defines
   it, so a trailing usage example or printed output does not replace the solution;
2. else the text after the last answer label ("ANSWER:", "Answer:", also "**Answer:**",
   "## ANSWER:", "Final Answer:"), fenced or not. Reading chosen: the label starts its line
   (after optional markdown), so code such as ``class Answer:`` is never read as a label; the
   indentation of the first code line is kept (a body-only completion stays a body);
3. else the whole output.

Letter (:func:`extract_choice`), read case-insensitively ("c" is C), first rule that applies:

1. the last ``\\boxed{x}`` whose content is one option letter (``\\boxed{c}``,
   ``\\boxed{(C)}``, ``\\boxed{\\text{C}}``);
2. after the last answer marker ("answer is", "Answer:", "**Answer**:", "answer is:"), up to
   the next blank line: the letter that opens the answer ("Answer: c", "the answer is (B)",
   "Answer: **option d**"), else the first "(x)" or standalone capital letter there;
3. the last "(x)" of the output (not a call such as ``f(x)``);
4. else no letter: an output that commits to no option through one of these forms is wrong
   (a guessed last letter would credit noise).

Readings chosen for the marker's opening letter: a lowercase "a" followed by a word is the
article ("the answer is a tricky one"), an "I" followed by a lowercase word or an apostrophe is
the pronoun ("Answer: I think B"), and a letter followed by ".x" is an abbreviation ("e.g.");
these open no answer, and the rest of the marker's text is read instead. An opening letter
outside the options ("Answer: H" with four options) gives no letter.
"""

from __future__ import annotations

import re

from clstream.judges.math_eval import last_boxed

# ------------------------------------------------------------------------------------ code

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_PYTHON_TAGS = ("python", "py", "python3", "")
# An answer label at the start of a line, after optional markdown (#, *, >, -, _) and "Final".
_LABEL = re.compile(
    r"^[ \t>#*_-]*(?:(?:Final|FINAL|final)[ \t]+)?(?:ANSWER|Answer)[*_]*[ \t]*:[*_]*",
    re.MULTILINE,
)


def _defines(entry_point: str) -> re.Pattern[str]:
    return re.compile(rf"^\s*(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(", re.MULTILINE)


def _after_label(output: str) -> str | None:
    """The text after the last answer label, first code line's indentation kept; None when
    there is no label or nothing follows it."""
    labels = list(_LABEL.finditer(output))
    if not labels:
        return None
    rest = output[labels[-1].end():]
    first, newline, tail = rest.partition("\n")
    text = first.lstrip(" \t") + newline + tail if first.strip() else tail
    lines = text.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    code = "\n".join(lines).rstrip()
    return code + "\n" if code else None


def extract_code(output: str, entry_point: str | None = None) -> str:
    """The code in a model output (rules in the module docstring)."""
    blocks = _FENCE.findall(output)
    if blocks:
        python = [body for lang, body in blocks if lang.lower() in _PYTHON_TAGS]
        candidates = python or [body for _, body in blocks]
        if entry_point:
            defining = [body for body in candidates if _defines(entry_point).search(body)]
            if defining:
                return str(defining[-1])
        return str(candidates[-1])
    labelled = _after_label(output)
    return labelled if labelled is not None else output


# ------------------------------------------------------------------------------------ choice

_LETTERS = "ABCDEFGHIJ"
# "answer is" or "answer" + colon, with the markdown and quotes models put around the word.
_MARKER = re.compile(r"""\banswer\b[ \t"'*#_]*(?:is\b[ \t"'*#_]*[:：]?|[:：])""", re.IGNORECASE)
# The letter that opens an answer: markup, \boxed{ / \text{, "option"/"choice", a bracket.
_OPENING = re.compile(
    r"""^[\s*_"'`$]*(?:\\(?:boxed|text|textbf|mathrm)\s*\{[\s*_]*)*"""
    r"""(?:(?:option|choice)\s*)?[(\[]?\s*([A-Za-z])(?![A-Za-z0-9])""",
    re.IGNORECASE,
)
_BRACKETED = re.compile(r"(?<![A-Za-z0-9_])\(\s*([A-Za-z])\s*\)")
_CAPITAL = re.compile(r"(?<![A-Za-z0-9_])([A-Z])(?![A-Za-z0-9_])")
_BOXED_WRAPPERS = re.compile(r"\\(?:text|textbf|mathrm|mathbf)\s*\{([^{}]*)\}")


def _not_a_choice(letter: str, after: str) -> bool:
    """The article "a", the pronoun "I", or an abbreviation such as "e.g." (module docstring)."""
    if letter == "a" and re.match(r"\s+[A-Za-z]", after):
        return True
    if letter in "Ii" and re.match(r"(?:['’]|\s+[a-z])", after):
        return True
    return bool(re.match(r"\.[A-Za-z]", after))


def _from_marker(tail: str, valid: str) -> str | None:
    """The letter a marker's text gives: a letter, "" (an invalid opening letter), or None."""
    opening = _OPENING.match(tail)
    if opening and not _not_a_choice(opening.group(1), tail[opening.end():]):
        letter = opening.group(1).upper()
        return letter if letter in valid else ""
    found: list[tuple[int, str]] = []
    bracketed = next((m for m in _BRACKETED.finditer(tail) if m.group(1).upper() in valid), None)
    if bracketed:
        found.append((bracketed.start(), bracketed.group(1).upper()))
    for m in _CAPITAL.finditer(tail):
        if m.group(1) in valid and not _not_a_choice(m.group(1), tail[m.end():]):
            found.append((m.start(), m.group(1)))
            break
    return min(found)[1] if found else None


def extract_choice(output: str, n_options: int = 10) -> str:
    """The chosen letter A-J (rules in the module docstring), '' when there is none."""
    valid = _LETTERS[: max(1, min(n_options, len(_LETTERS)))]
    boxed = last_boxed(output)
    if boxed is not None:
        inner = _BOXED_WRAPPERS.sub(r"\1", boxed).strip().strip("()").strip()
        if len(inner) == 1 and inner.upper() in valid:
            return inner.upper()
    markers = list(_MARKER.finditer(output))
    if markers:
        tail = output[markers[-1].end():].lstrip().split("\n\n")[0]
        letter = _from_marker(tail, valid)
        if letter is not None:
            return letter
    bracketed = [m.group(1).upper() for m in _BRACKETED.finditer(output)
                 if m.group(1).upper() in valid]
    return bracketed[-1] if bracketed else ""
