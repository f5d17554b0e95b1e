"""MATH answers: \\boxed extraction, normalization, and symbolic or numeric equivalence."""

from __future__ import annotations

import threading

import pytest

from clstream.judges import math_eval
from clstream.judges.evaluators import MathEvaluator
from clstream.judges.latex_expr import LatexParseError, numerically_equal, parse_latex
from clstream.judges.math_eval import last_boxed, math_equal, normalize_math
from clstream.protocols.seqmem.tasks import SeqTask


@pytest.mark.parametrize(
    ("text", "boxed"),
    [
        ("first \\boxed{1} then \\boxed{\\frac{1}{\\sqrt{2}}}.", "\\frac{1}{\\sqrt{2}}"),
        ("nested \\boxed{\\{1, 2\\}}", "\\{1, 2\\}"),
        ("bare \\boxed 5$", "5"),
        ("\\fbox{x+1}", "x+1"),
        ("unclosed \\boxed{3", None),
        ("nothing here", None),
    ],
)
def test_last_boxed(text: str, boxed: str | None) -> None:
    assert last_boxed(text) == boxed


@pytest.mark.parametrize(
    ("raw", "norm"),
    [
        ("$\\dfrac{3}{4}$", "\\frac{3}{4}"),
        ("\\left( 1, 2 \\right)", "(1,2)"),
        ("10^\\circ", "10"),
        ("45\\%", "45"),
        ("5\\text{ cm}", "5"),
        ("12 inches", "12"),
        ("\\text{Monday}", "Monday"),
        ("x = 7", "7"),
        ("1,234", "1234"),
        ("\\frac12", "\\frac{1}{2}"),
        ("\\sqrt3", "\\sqrt{3}"),
        (".5", "0.5"),
        ("2.50", "2.5"),
        ("3.", "3"),
        ("\\$18.90", "18.9"),
        ("\\!4\\,000", "4000"),
    ],
)
def test_normalize_math(raw: str, norm: str) -> None:
    assert normalize_math(raw) == norm


EQUAL = [
    ("\\frac{1}{2}", "0.5"),
    ("\\dfrac{2}{4}", "\\frac12"),
    ("2\\sqrt{2}", "\\sqrt{8}"),
    ("x^2+2x+1", "(x+1)^2"),
    ("\\frac{\\pi}{2}", "\\pi/2"),
    ("3\\frac{1}{2}", "\\frac{7}{2}"),
    ("(3, \\frac{\\pi}{2})", "\\left(3,\\frac{\\pi}{2}\\right)"),
    ("\\sqrt[3]{8}", "2"),
    ("2^{10}", "1024"),
    ("\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}\\sqrt{3}"),
    ("y = 2x+3", "3+2x"),
    ("\\binom{5}{2}", "10"),
    ("4!", "24"),
    ("-\\frac{1}{3}", "\\frac{-1}{3}"),
]
NOT_EQUAL = [
    ("\\frac{1}{3}", "0.333"),
    ("[1,2)", "(1,2)"),
    ("(1,2)", "(1,2,3)"),
    ("x+1", "x-1"),
    ("2", "3"),
    ("a", "b"),
    ("\\sqrt{2}", "1.414"),
    ("", "0"),
    ("\\text{Tuesday}", "Monday"),
]


@pytest.mark.parametrize(("a", "b"), EQUAL)
def test_equivalent_answers(a: str, b: str) -> None:
    assert math_equal(a, b) and math_equal(b, a)


@pytest.mark.parametrize(("a", "b"), NOT_EQUAL)
def test_different_answers(a: str, b: str) -> None:
    assert not math_equal(a, b)


@pytest.mark.parametrize(("a", "b"), EQUAL[:10])
def test_equivalence_without_sympy_uses_identity_testing(
    a: str, b: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(math_eval, "_sympy_available", lambda: False)
    assert math_equal(a, b)


@pytest.mark.parametrize(("a", "b"), NOT_EQUAL[:6])
def test_difference_without_sympy(a: str, b: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(math_eval, "_sympy_available", lambda: False)
    assert not math_equal(a, b)


def test_sympy_path_decides_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sympy")
    calls: list[bool] = []
    real = math_eval._run_with_timeout

    def spy(fn, timeout_s):  # type: ignore[no-untyped-def]
        result = real(fn, timeout_s)
        calls.append(result)
        return result

    monkeypatch.setattr(math_eval, "_run_with_timeout", spy)
    assert math_equal("\\frac{x^2-1}{x-1}", "x+1")
    assert calls == [True]


def test_slow_symbolic_check_is_cut_off() -> None:
    release = threading.Event()  # the check finishes only when released: after the cut-off
    assert math_eval._run_with_timeout(lambda: (release.wait(), "finished")[1], 0.1) is None
    release.set()
    assert math_eval._run_with_timeout(lambda: "finished", 60.0) == "finished"
    assert math_eval._run_with_timeout(lambda: 1 / 0, 1.0) is None


def test_latex_parser_rejects_unsupported_input() -> None:
    for text in ("\\int_0^1 x dx", "x +", "\\frac{1}", ""):
        with pytest.raises(LatexParseError):
            parse_latex(text)


def test_numeric_identity_guards_huge_powers() -> None:
    assert not numerically_equal(parse_latex("2^{100000}"), parse_latex("3"))


def test_math_evaluator_verdicts() -> None:
    task = SeqTask("m", "Compute.", "\\frac{1}{2}", "math", {})
    assert MathEvaluator().evaluate(task, "so \\boxed{0.5}").score == 1.0
    wrong = MathEvaluator(reveal_target=True).evaluate(task, "\\boxed{2}")
    assert wrong.score == 0.0 and "\\frac{1}{2}" in wrong.feedback
    missing = MathEvaluator().evaluate(task, "the answer is 1/2")
    assert missing.score == 0.0 and "boxed" in missing.feedback
    boxed_gold = SeqTask("m2", "Compute.", "so \\boxed{7}", "math", {})
    assert MathEvaluator().evaluate(boxed_gold, "\\boxed{7}").score == 1.0
