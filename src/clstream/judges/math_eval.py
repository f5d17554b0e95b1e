"""MATH-style answer checking: last \\boxed{...}, normalization, equivalence (docs/seqmem.md §4.2).

SeqMem-Eval asks models to put the final MATH500 answer in the last ``\\boxed{}`` (paper,
Appendix E) and scores it against the reference answer. Checking, in order:

1. the last ``\\boxed{...}`` (or ``\\fbox{...}``) with balanced braces is the prediction; none
   means wrong;
2. both sides are normalized (delimiters, ``\\left``/``\\right``, spacing commands, ``\\text``
   wrappers and trailing unit words, degree and percent signs, ``\\dfrac``, a leading
   ``x =``, thousands separators, trailing period, whitespace) and compared as strings;
3. otherwise, when both parse in the LaTeX subset of :mod:`clstream.judges.latex_expr`, they
   are compared symbolically: with sympy (``simplify(a - b) == 0``, in a worker thread with a
   time limit) when it is installed, else by identity testing at fixed random points.
   Comma-separated tuples and intervals are compared element by element, with the same
   brackets. sympy's own LaTeX parser is used only when its ANTLR runtime is importable.
"""

from __future__ import annotations

import importlib.util
import re
import threading
from typing import Any

from clstream.judges.latex_expr import LatexParseError, numerically_equal, parse_latex, to_sympy

_BOX = re.compile(r"\\(?:boxed|fbox)\s*")
_TEXT_CMD = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}")
_UNIT_WORDS = (
    "units?|cm|mm|km|m|meters?|metres?|inches|inch|in|feet|foot|ft|yards?|miles?|degrees?|"
    "dollars?|cents?|sq|square|hours?|minutes?|seconds?|days?|weeks?|years?|mph|pounds?|lbs?|"
    "grams?|kg|liters?|litres?|cubic"
)
_TRAILING_UNITS = re.compile(rf"(?<=[\d}}])\s*(?:(?:{_UNIT_WORDS})\b\s*(?:\^\{{?\d\}}?)?\s*)+$")


def last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}``/``\\fbox{...}`` (balanced braces), or None.

    ``\\boxed 5`` (no braces) yields the following token. An unclosed brace yields None.
    """
    matches = list(_BOX.finditer(text))
    if not matches:
        return None
    start = matches[-1].end()
    if start >= len(text):
        return None
    if text[start] != "{":
        token = re.match(r"[^\s$]+", text[start:])
        return token.group() if token else None
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i].strip()
    return None


def _strip_outer(s: str) -> str:
    changed = True
    while changed:
        changed = False
        s = s.strip()
        for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
            if len(s) >= len(left) + len(right) and s.startswith(left) and s.endswith(right):
                s, changed = s[len(left) : len(s) - len(right)], True
                break
        if not changed and s.startswith("{") and s.endswith("}") and _balanced(s[1:-1]):
            s, changed = s[1:-1], True
    return s


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        depth += (ch == "{") - (ch == "}")
        if depth < 0:
            return False
    return depth == 0


def normalize_math(answer: str) -> str:
    """Canonical string form of a MATH answer (rules in the module docstring)."""
    s = _strip_outer(answer)
    for old, new in (
        ("\\dfrac", "\\frac"),
        ("\\tfrac", "\\frac"),
        ("\\dbinom", "\\binom"),
        ("\\left", ""),
        ("\\right", ""),
        ("\\displaystyle", ""),
        ("\\!", ""),
        ("\\,", ""),
        ("\\;", ""),
        ("\\:", ""),
        ("\\ ", " "),
        ("~", " "),
        ("^{\\circ}", ""),
        ("^\\circ", ""),
        ("\\circ", ""),
        ("°", ""),
        ("\\%", ""),
        ("%", ""),
        ("\\$", ""),
        ("$", ""),
        ("\\{", "{"),
        ("\\}", "}"),
        ("−", "-"),
        ("\\le ", "\\leq "),
        ("\\ge ", "\\geq "),
    ):
        s = s.replace(old, new)
    # \text{ cm} after a value is a unit; other \text{...} wrappers keep their content
    s = re.sub(r"(?<=\S)\s*\\(?:text|mbox|mathrm)\{\s+[^{}]*\}", "", s)
    while (m := _TEXT_CMD.search(s)) is not None:
        s = s[: m.start()] + m.group(1) + s[m.end() :]
    s = _TRAILING_UNITS.sub("", s.strip())
    s = s.strip().rstrip(".").strip()
    m = re.fullmatch(r"\s*[A-Za-z](?:_\{?\w+\}?)?\s*=\s*([^=]+)", s)
    if m:  # "x = 5" -> "5"
        s = m.group(1)
    s = re.sub(r"\s+", "", s)
    if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?", s):
        s = s.replace(",", "")
    s = re.sub(r"\\frac(\d)(\d)", r"\\frac{\1}{\2}", s)
    s = re.sub(r"\\frac\{([^{}]*)\}(\d)", r"\\frac{\1}{\2}", s)
    s = re.sub(r"\\sqrt(\d+|[A-Za-z])", r"\\sqrt{\1}", s)
    s = re.sub(r"(?<![\d.])\.(\d)", r"0.\1", s)
    if re.fullmatch(r"-?\d+\.\d*?0+", s):  # 2.50 -> 2.5, 3.0 -> 3
        s = s.rstrip("0").rstrip(".")
    return s


def _split_top(s: str) -> list[str]:
    parts, depth, last = [], 0, 0
    for i, ch in enumerate(s):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(s[last:i])
            last = i + 1
    parts.append(s[last:])
    return parts


def _sympy_available() -> bool:
    return importlib.util.find_spec("sympy") is not None


def _run_with_timeout(fn: Any, timeout_s: float) -> Any:
    """Run ``fn()`` in a daemon thread; None if it fails or does not finish in time."""
    box: list[Any] = []

    def target() -> None:
        try:
            box.append(fn())
        except Exception:  # any sympy failure means "undecided"
            box.append(None)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(timeout_s)
    return box[0] if box else None


def _parse_for_sympy(text: str) -> Any:
    if importlib.util.find_spec("antlr4") is not None:
        try:
            from sympy.parsing.latex import parse_latex as sympy_parse_latex

            return sympy_parse_latex(text)
        except Exception:  # wrong ANTLR version or unsupported input: use the local parser
            pass
    return to_sympy(parse_latex(text))


def _symbolic_equal(a: str, b: str, timeout_s: float) -> bool:
    try:
        tree_a, tree_b = parse_latex(a), parse_latex(b)
    except LatexParseError:
        return False
    if _sympy_available():
        import sympy  # imported here, outside the time limit

        def check() -> bool:
            return bool(sympy.simplify(_parse_for_sympy(a) - _parse_for_sympy(b)) == 0)

        verdict = _run_with_timeout(check, timeout_s)
        if verdict is not None:
            return bool(verdict)
    return numerically_equal(tree_a, tree_b)


def math_equal(pred: str, gold: str, timeout_s: float = 2.0) -> bool:
    """True when ``pred`` and ``gold`` are the same MATH answer (module docstring)."""
    a, b = normalize_math(pred), normalize_math(gold)
    if not a or not b:
        return False
    if a == b:
        return True
    parts_a, parts_b = _split_top(a), _split_top(b)
    if len(parts_a) > 1 or len(parts_b) > 1:
        if len(parts_a) != len(parts_b):
            return False
        if parts_a[0][:1] in ("(", "[") or parts_b[0][:1] in ("(", "["):
            if parts_a[0][:1] != parts_b[0][:1] or parts_a[-1][-1:] != parts_b[-1][-1:]:
                return False
            parts_a[0], parts_b[0] = parts_a[0][1:], parts_b[0][1:]
            parts_a[-1], parts_b[-1] = parts_a[-1][:-1], parts_b[-1][:-1]
        pairs = zip(parts_a, parts_b, strict=True)
        return all(x == y or _symbolic_equal(x, y, timeout_s) for x, y in pairs)
    return _symbolic_equal(a, b, timeout_s)
