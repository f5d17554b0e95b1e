"""A small LaTeX math parser for answer equivalence (docs/seqmem.md §4.2, math evaluator).

MATH-style answers are short LaTeX expressions (``\\frac{\\sqrt{3}}{2}``, ``2x^2+1``,
``3\\pi``). docs/seqmem.md §4.2 asks for symbolic equivalence where available; sympy's own LaTeX parser
needs an ANTLR runtime that is rarely installed, so this module parses the common subset
itself into a tiny expression tree, which can then be

- evaluated numerically (complex arithmetic, with guards on huge powers), used for
  identity testing at a few fixed random points when sympy is absent, or
- turned into a sympy expression for an exact check when sympy is installed.

Supported: integers and decimals, single-letter variables (with subscripts), + - * /, implicit
multiplication, ^ (braced or single token), \\frac, \\sqrt and \\sqrt[n], \\cdot, \\times,
\\div, \\pi, e, postfix !, \\binom, and the functions \\sin \\cos \\tan \\ln \\log \\exp.
Anything else raises :class:`LatexParseError`, and the caller falls back to string equality.
"""

from __future__ import annotations

import cmath
import math
import random
import re
from typing import Any

Node = tuple[Any, ...]


class LatexParseError(ValueError):
    """The text is outside the supported LaTeX subset."""


_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+\.\d*|\.\d+|\d+)|(?P<cmd>\\[A-Za-z]+)"
    r"|(?P<var>[A-Za-z](?:_(?:\{[A-Za-z0-9]+\}|[A-Za-z0-9]))?)"
    r"|(?P<sym>[-+*/^(){}\[\]!]))"
)
_FUNCS = {"\\sin", "\\cos", "\\tan", "\\ln", "\\log", "\\exp"}
_MUL_CMDS = {"\\cdot", "\\times"}


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise LatexParseError(f"unexpected {text[pos : pos + 10]!r}")
        kind = m.lastgroup or ""
        tokens.append((kind, m.group(kind)))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return tokens


class _Parser:
    def __init__(self, text: str):
        self.tokens = _tokenize(text)
        self.i = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok is None or (value is not None and tok[1] != value):
            raise LatexParseError(f"expected {value or 'more input'}")
        self.i += 1
        return tok

    def parse(self) -> Node:
        node = self.expr()
        rest = self.peek()
        if rest is not None:
            raise LatexParseError(f"unexpected {rest[1]!r}")
        return node

    def expr(self) -> Node:
        node = self.term()
        while (tok := self.peek()) is not None and tok[1] in "+-" and tok[0] == "sym":
            self.take()
            node = ("add" if tok[1] == "+" else "sub", node, self.term())
        return node

    def _starts_primary(self, tok: tuple[str, str] | None) -> bool:
        if tok is None:
            return False
        kind, value = tok
        if kind in ("num", "var"):
            return True
        if kind == "cmd":
            return value not in _MUL_CMDS and value != "\\div"
        return value in "({["

    def term(self) -> Node:
        node = self.factor()
        while True:
            tok = self.peek()
            if tok is not None and (
                tok[1] in ("*", "/") or tok[1] in _MUL_CMDS or tok[1] == "\\div"
            ):
                self.take()
                op = "div" if tok[1] in ("/", "\\div") else "mul"
                node = (op, node, self.factor())
            elif self._starts_primary(tok):
                right = self.power()
                mixed = (
                    tok is not None
                    and tok[1] == "\\frac"
                    and node[0] == "num"
                    and right[0] == "div"
                    and right[1][0] == right[2][0] == "num"
                )
                node = ("add" if mixed else "mul", node, right)  # 2\frac{1}{2} is a mixed number
            else:
                return node

    def factor(self) -> Node:
        tok = self.peek()
        if tok is not None and tok[0] == "sym" and tok[1] in "+-":
            self.take()
            inner = self.factor()
            return ("neg", inner) if tok[1] == "-" else inner
        return self.power()

    def power(self) -> Node:
        base = self.postfix()
        if (tok := self.peek()) is not None and tok[1] == "^":
            self.take()
            nxt = self.peek()
            if nxt is not None and nxt[1] == "{":
                exponent = self.group("{", "}")
            elif nxt is not None and nxt[1] == "-":
                self.take()
                exponent = ("neg", self.postfix())
            else:
                exponent = self.postfix()
            return ("pow", base, exponent)
        return base

    def postfix(self) -> Node:
        node = self.primary()
        while (tok := self.peek()) is not None and tok[1] == "!":
            self.take()
            node = ("fact", node)
        return node

    def group(self, open_: str, close: str) -> Node:
        self.take(open_)
        node = self.expr()
        self.take(close)
        return node

    def primary(self) -> Node:
        tok = self.take()
        kind, value = tok
        if kind == "num":
            return ("num", value)
        if kind == "var":
            return (
                ("const", "e") if value == "e" else ("var", value.replace("{", "").replace("}", ""))
            )
        if value in ("(", "{", "["):
            self.i -= 1
            return self.group(value, {"(": ")", "{": "}", "[": "]"}[value])
        if value == "\\frac" or value == "\\binom":
            top = self.group("{", "}") if self._braced() else self.single_digit()
            bottom = self.group("{", "}") if self._braced() else self.single_digit()
            return ("div" if value == "\\frac" else "binom", top, bottom)
        if value == "\\sqrt":
            if (tok2 := self.peek()) is not None and tok2[1] == "[":
                index = self.group("[", "]")
                return ("root", self.group("{", "}") if self._braced() else self.postfix(), index)
            return (
                "root",
                self.group("{", "}") if self._braced() else self.postfix(),
                ("num", "2"),
            )
        if value == "\\pi":
            return ("const", "pi")
        if value in _FUNCS:
            arg = self.group("{", "}") if self._braced() else self.power()
            return ("func", value[1:], arg)
        raise LatexParseError(f"unsupported {value!r}")

    def _braced(self) -> bool:
        tok = self.peek()
        return tok is not None and tok[1] == "{"

    def single_digit(self) -> Node:
        """``\\frac12``: each argument is a single character."""
        kind, value = self.take()
        if kind == "num":
            if len(value) > 1 and value.isdigit():
                self.tokens.insert(self.i, ("num", value[1:]))
                value = value[0]
            return ("num", value)
        if kind == "var":
            return ("var", value)
        raise LatexParseError("bad \\frac argument")


def parse_latex(text: str) -> Node:
    """Parse ``text`` into an expression tree, or raise :class:`LatexParseError`."""
    if not text or len(text) > 400:
        raise LatexParseError("empty or too long")
    return _Parser(text).parse()


def variables(node: Node) -> set[str]:
    if node[0] == "var":
        return {node[1]}
    out: set[str] = set()
    for child in node[1:]:
        if isinstance(child, tuple):
            out |= variables(child)
    return out


def evaluate(node: Node, env: dict[str, complex]) -> complex:
    """Numeric value of ``node``; raises ArithmeticError/ValueError when it is not computable."""
    op = node[0]
    if op == "num":
        return complex(float(node[1]))
    if op == "var":
        return env[node[1]]
    if op == "const":
        return complex(math.pi if node[1] == "pi" else math.e)
    if op == "neg":
        return -evaluate(node[1], env)
    if op in ("fact", "func"):
        arg = evaluate(node[-1], env)
        if op == "fact":
            if arg.imag or arg.real != int(arg.real) or not 0 <= arg.real <= 170:
                raise ValueError("factorial of a non-integer or large value")
            return complex(math.factorial(int(arg.real)))
        fn = {
            "sin": cmath.sin,
            "cos": cmath.cos,
            "tan": cmath.tan,
            "ln": cmath.log,
            "log": cmath.log,
            "exp": cmath.exp,
        }[node[1]]
        return fn(arg)
    a, b = evaluate(node[1], env), evaluate(node[2], env)
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / b
    if op in ("pow", "root"):
        exponent = b if op == "pow" else 1 / b
        if abs(exponent) > 1000 or (abs(a) > 1e6 and abs(exponent) > 50):
            raise OverflowError("power too large")
        if a == 0:
            return 0j if exponent.real > 0 else a / 0
        return a**exponent
    if op == "binom":
        if a.imag or b.imag or a.real != int(a.real) or b.real != int(b.real) or a.real > 10_000:
            raise ValueError("binomial of non-integers")
        return complex(math.comb(int(a.real), int(b.real)))
    raise ValueError(f"unknown node {op!r}")


def numerically_equal(a: Node, b: Node, trials: int = 3, rel_tol: float = 1e-9) -> bool:
    """Identity test: equal values at fixed random points for every free variable."""
    names = sorted(variables(a) | variables(b))
    rng = random.Random(20240611)
    for _ in range(trials if names else 1):
        env = {name: complex(rng.uniform(0.3, 1.7), 0.0) for name in names}
        try:
            va, vb = evaluate(a, env), evaluate(b, env)
        except (ArithmeticError, ValueError, OverflowError):
            return False
        if not cmath.isclose(va, vb, rel_tol=rel_tol, abs_tol=1e-12):
            return False
    return True


def to_sympy(node: Node) -> Any:
    """Build the sympy expression for ``node`` (sympy must be importable)."""
    import sympy

    op = node[0]
    if op == "num":
        return sympy.Rational(node[1])
    if op == "var":
        return sympy.Symbol(node[1])
    if op == "const":
        return sympy.pi if node[1] == "pi" else sympy.E
    if op == "neg":
        return -to_sympy(node[1])
    if op == "fact":
        return sympy.factorial(to_sympy(node[1]))
    if op == "func":
        fn = {
            "sin": sympy.sin,
            "cos": sympy.cos,
            "tan": sympy.tan,
            "ln": sympy.log,
            "log": sympy.log,
            "exp": sympy.exp,
        }[node[1]]
        return fn(to_sympy(node[2]))
    a, b = to_sympy(node[1]), to_sympy(node[2])
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / b
    if op == "pow":
        return a**b
    if op == "root":
        return a ** (1 / b)
    if op == "binom":
        return sympy.binomial(a, b)
    raise ValueError(f"unknown node {op!r}")
