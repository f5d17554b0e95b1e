"""Code, multiple-choice and synthetic evaluators, and the kind -> evaluator table."""

from __future__ import annotations

import pytest

from clstream.core.errors import DataError, SpecError
from clstream.judges.evaluators import (
    ApiCallEvaluator,
    ChoiceEvaluator,
    CodeEvaluator,
    Evaluator,
    MathEvaluator,
    SyntheticEvaluator,
    Verdict,
    build_program,
    evaluator_for,
    final_answer,
)
from clstream.judges.extraction import extract_choice, extract_code
from clstream.judges.isolation import detect
from clstream.protocols.seqmem.tasks import SeqTask

PROMPT = '''from typing import List


def total_even(values: List[int]) -> int:
    """Sum of the even numbers in values."""
'''
TEST = """def check(candidate):
    assert candidate([1, 2, 3, 4]) == 6
    assert candidate([]) == 0
    assert candidate([5]) == 0
"""
CODE_TASK = SeqTask(
    "he/0",
    PROMPT,
    "    return sum(v for v in values if v % 2 == 0)\n",
    "code",
    {"test": TEST, "entry_point": "total_even"},
)


def evaluate_code(output: str, **kw: object) -> Verdict:
    found = detect()
    if isinstance(found, str):
        pytest.skip(f"running model-written code needs bubblewrap (bwrap): {found}")
    evaluator = CodeEvaluator(timeout_s=kw.pop("timeout_s", 5.0), **kw)  # type: ignore[arg-type]
    return evaluator.evaluate(CODE_TASK, output)


def test_body_only_completion_continues_the_prompt() -> None:
    verdict = evaluate_code("    return sum(v for v in values if v % 2 == 0)\n")
    assert verdict.score == 1.0 and verdict.success
    assert verdict.detail["status"] == "ok"


def test_fenced_full_definition_with_prose_passes() -> None:
    output = (
        "Here is my solution.\n```python\ndef is_even(v):\n    return v % 2 == 0\n\n"
        "def total_even(values: List[int]) -> int:\n"
        "    return sum(v for v in values if is_even(v))\n"
        "```\nThat should do it."
    )
    assert evaluate_code(output).score == 1.0


def test_block_defining_the_entry_point_is_chosen_among_several() -> None:
    output = (
        "```python\ndef total_even(values):\n    return sum(v for v in values if v % 2 == 0)\n```\n"
        "Example:\n```python\nprint(total_even([2]))\n```"
    )
    assert extract_code(output, "total_even").startswith("def total_even")
    assert evaluate_code(output).score == 1.0


def test_unclosed_fence_still_yields_the_code() -> None:
    output = "```python\ndef total_even(values):\n    return sum(v for v in values if not v % 2)\n"
    assert evaluate_code(output).score == 1.0


def test_wrong_solution_fails_with_error_in_feedback() -> None:
    verdict = evaluate_code("    return sum(values)\n")
    assert verdict.score == 0.0 and not verdict.success
    assert verdict.detail["status"] == "fail"
    assert "AssertionError" in verdict.feedback
    assert "candidate([1, 2, 3, 4])" not in verdict.feedback  # hidden tests are not shown


def test_endless_solution_times_out_and_scores_zero() -> None:
    verdict = evaluate_code("    while True:\n        pass\n", timeout_s=1.0)
    assert verdict.score == 0.0 and verdict.detail["status"] == "timeout"
    assert "did not finish" in verdict.feedback


def test_exit_before_the_tests_does_not_pass() -> None:
    verdict = evaluate_code("    return 0\nimport sys\nsys.exit(0)\n")
    assert verdict.score == 0.0


def test_forbidden_operation_is_reported() -> None:
    verdict = evaluate_code("    import os\n    os.system('true')\n    return 6\n")
    assert verdict.score == 0.0 and verdict.detail["status"] == "forbidden"
    assert "forbidden" in verdict.feedback


def test_main_guard_demo_is_not_run() -> None:
    output = (
        "def total_even(values):\n    return sum(v for v in values if v % 2 == 0)\n\n"
        "if __name__ == '__main__':\n    raise SystemExit(1)\n"
    )
    assert evaluate_code(output).score == 1.0


def test_reveal_target_adds_the_reference_solution() -> None:
    verdict = evaluate_code("    return -1\n", reveal_target=True)
    assert "return sum(v for v in values if v % 2 == 0)" in verdict.feedback


def test_build_program_layout() -> None:
    program = build_program(PROMPT, "    return 1\n", TEST, "total_even")
    assert program.startswith(PROMPT + "    return 1")
    assert program.rstrip().endswith("check(total_even)")


def test_code_task_without_tests_is_a_data_error() -> None:
    task = SeqTask("x", PROMPT, "", "code", {"entry_point": "total_even"})
    with pytest.raises(DataError) as err:
        CodeEvaluator().evaluate(task, "pass")
    assert err.value.field == "test"


@pytest.mark.parametrize(
    ("output", "letter"),
    [
        ("Reasoning... so the result is \\boxed{C}.", "C"),
        ("\\boxed{\\text{J}}", "J"),
        ("I think (B) is tempting. Answer: D", "D"),
        ("**Answer**: (E) because ...", "E"),
        ("The answer is (G).", "G"),
        ("A is wrong, B is wrong, so it must be F", ""),  # no marker, no form: no guess
        ("\\boxed{c}", "C"),  # letters are read case-insensitively
        ("Answer: c", "C"),
        ("no letter here", ""),
    ],
)
def test_extract_choice(output: str, letter: str) -> None:
    assert extract_choice(output) == letter


def test_extract_choice_respects_the_number_of_options() -> None:
    assert extract_choice("The answer is H", n_options=4) == ""


def test_choice_evaluator_scores_letters() -> None:
    task = SeqTask("q", "Which?", "C", "mc", {"options": ["a", "b", "c", "d"]})
    assert ChoiceEvaluator().evaluate(task, "\\boxed{C}").score == 1.0
    wrong = ChoiceEvaluator(reveal_target=True).evaluate(task, "Answer: B")
    assert (
        wrong.score == 0.0
        and "option B" in wrong.feedback
        and "correct option is C" in wrong.feedback
    )
    assert ChoiceEvaluator().evaluate(task, "hmm").feedback.startswith("Incorrect: no option")


def test_final_answer_and_synthetic_exact_match() -> None:
    assert final_answer("thinking\n## Answer: 4721\nextra") == "4721"
    assert final_answer("line one\n\nQoven\n") == "Qoven"
    task = SeqTask(
        "s",
        "What is the vault code of Tirovan?",
        "4721",
        "synthetic",
        {"reveal": "The vault code of Tirovan is 4721. Correct answer: 4721."},
    )
    good = SyntheticEvaluator().evaluate(task, "Based on memory.\n## Answer: 4721.")
    assert good.score == 1.0 and good.feedback.startswith("Correct. The vault code")
    bad = SyntheticEvaluator().evaluate(task, "## Answer: Unknown")
    assert bad.score == 0.0 and bad.feedback.endswith("Correct answer: 4721.")
    assert SyntheticEvaluator().evaluate(task, "**Answer:** 47 21").score == 0.0


def test_evaluator_for_each_kind() -> None:
    assert isinstance(evaluator_for("code", timeout_s=3.0), CodeEvaluator)
    assert isinstance(evaluator_for("math"), MathEvaluator)
    assert isinstance(evaluator_for("mc"), ChoiceEvaluator)
    assert isinstance(evaluator_for("synthetic"), SyntheticEvaluator)
    api = evaluator_for("api", api_pool=[{"api_call": "f('x')", "domain": "d"}])
    assert isinstance(api, ApiCallEvaluator) and isinstance(api, Evaluator)
    with pytest.raises(SpecError):
        evaluator_for("api")
    with pytest.raises(SpecError):
        evaluator_for("poetry")
    with pytest.raises(SpecError):
        evaluator_for("math", bogus=1)
