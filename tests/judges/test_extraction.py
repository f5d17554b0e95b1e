"""SeqMem-Eval extraction of code and option letters (SPECS §2.3), case by case."""

from __future__ import annotations

import pytest

from clstream.judges import evaluators
from clstream.judges.extraction import extract_choice, extract_code

DEF = "def total_even(values):\n    return sum(v for v in values if v % 2 == 0)\n"


def test_evaluators_use_this_module() -> None:
    # the names the evaluators module binds (imported, not re-exported)
    assert vars(evaluators)["extract_code"] is extract_code
    assert vars(evaluators)["extract_choice"] is extract_choice


# ---- code -----------------------------------------------------------------------------------


def test_code_after_an_unfenced_answer_label() -> None:
    # The label on its own line, the code below it: everything after the label is the code.
    output = "I will sum the even values.\nANSWER:\n" + DEF
    assert extract_code(output, "total_even") == DEF
    assert extract_code("Some thoughts.\nAnswer:\n" + DEF) == DEF


def test_code_on_the_label_line_and_markdown_labels() -> None:
    assert extract_code("ANSWER: " + DEF) == DEF
    assert extract_code("**Answer:**\n" + DEF) == DEF
    assert extract_code("## ANSWER:\n\n" + DEF) == DEF
    assert extract_code("Final Answer:\n" + DEF) == DEF


def test_body_only_code_after_the_label_keeps_its_indentation() -> None:
    body = "    return sum(v for v in values if v % 2 == 0)\n"
    assert extract_code("ANSWER:\n" + body) == body


def test_last_label_wins() -> None:
    output = "ANSWER:\nprint('draft')\nOn second thought.\nANSWER:\n" + DEF
    assert extract_code(output) == DEF


def test_code_after_the_label_fenced() -> None:
    output = "Reasoning.\nANSWER:\n```python\n" + DEF + "```\n"
    assert extract_code(output, "total_even") == DEF
    assert extract_code(output) == DEF


def test_last_fence_wins() -> None:
    first = "def total_even(values):\n    return 0\n"
    output = f"Draft:\n```python\n{first}```\nFixed:\n```python\n{DEF}```\nDone."
    assert extract_code(output) == DEF
    assert extract_code(output, "total_even") == DEF
    # a fence beats unfenced code after a label earlier in the output
    assert extract_code(f"ANSWER:\n{first}\nBetter:\n```\n{DEF}```") == DEF


def test_fence_before_a_later_label_still_wins() -> None:
    # Rule 1 (the last fenced block) applies before rule 2 (the text after the label).
    output = f"```python\n{DEF}```\nANSWER: see above"
    assert extract_code(output) == DEF


def test_unclosed_fence_runs_to_the_end() -> None:
    assert extract_code("```python\n" + DEF) == DEF


def test_no_fence_no_label_is_the_whole_output() -> None:
    assert extract_code(DEF) == DEF
    # "Answer:" inside code is not a label: it does not start its line
    code = "class Answer:\n    value = 1\n"
    assert extract_code(code) == code
    # a label with nothing after it: the whole output
    assert extract_code(DEF + "ANSWER:\n") == DEF + "ANSWER:\n"


# ---- letters --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "letter"),
    [
        # \boxed{x}, any case
        ("so \\boxed{c}", "C"),
        ("\\boxed{(d)}", "D"),
        ("\\boxed{\\text{b}}", "B"),
        # after an answer marker, any case
        ("Answer: c", "C"),
        ("answer: (c)", "C"),
        ("The answer is (c).", "C"),
        ("the answer is b", "B"),
        ("The answer is: **e**", "E"),
        ('{"answer": "c"}', "C"),
        ("**Answer**: option d", "D"),
        ("## Answer:\n\nc", "C"),
        ("Answer: a", "A"),
        ("The answer is A because the text says so.", "A"),
        # "(x)" alone
        ("Between the two, I pick (c).", "C"),
        ("(a) fails and (b) fails, leaving (d).", "D"),
        # the marker's letter beats earlier "(x)"; the last marker wins
        ("(B) is tempting. Answer: d", "D"),
        ("Answer: A\nWait.\nAnswer: c", "C"),
        # \boxed beats a marker
        ("Answer: A. Final: \\boxed{b}", "B"),
    ],
)
def test_letters_case_insensitive(output: str, letter: str) -> None:
    assert extract_choice(output) == letter


@pytest.mark.parametrize(
    "output",
    [
        "A is wrong, B is wrong, so it must be F",  # no marker, no form: no guess
        "I would go with c",
        "b",
        "Option C seems best",
        "f(a) grows faster than g(b)",  # calls are not "(x)"
        "The answer isn't clear.",  # "isn't" is no marker, nothing else either
        "",
    ],
)
def test_no_marker_and_no_form_gives_no_letter(output: str) -> None:
    assert extract_choice(output) == ""


def test_words_after_a_marker_are_not_letters() -> None:
    # the article "a", the pronoun "I" and abbreviations do not open an answer
    assert extract_choice("The answer is a tricky one; I settle on (b).") == "B"
    assert extract_choice("Answer: I think B") == "B"
    assert extract_choice("Answer: I'd say D") == "D"
    assert extract_choice("Answer: e.g. (c) fits") == "C"
    assert extract_choice("The answer is unclear") == ""


def test_letters_outside_the_options() -> None:
    assert extract_choice("Answer: h", n_options=4) == ""
    assert extract_choice("The answer is H", n_options=4) == ""
    assert extract_choice("\\boxed{c}", n_options=2) == ""
    assert extract_choice("\\boxed{b}", n_options=2) == "B"
    # a boxed value that is no letter falls through to the other forms
    assert extract_choice("\\boxed{42}. Answer: b") == "B"
