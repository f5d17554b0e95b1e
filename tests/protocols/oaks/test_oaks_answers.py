"""Answer extraction, normalization, equivalences and correctness (SPECS §1.3)."""

from __future__ import annotations

import pytest

from clstream.protocols.oaks.answers import (
    accepted_answers,
    canonical,
    canonical_answer,
    canonical_golds,
    extract_answer,
    is_correct,
    normalize,
)
from clstream.protocols.oaks.data import OaksQuestion


def open_q(golds: list[str | tuple[str, ...]], qtype: str | None = None) -> OaksQuestion:
    return OaksQuestion(
        question_id="d_q0",
        text="q?",
        golds=tuple((g,) if isinstance(g, str) else g for g in golds),
        question_type=qtype,
    )


def mc_q(golds: list[str], options: tuple[str, ...]) -> OaksQuestion:
    return OaksQuestion("d_q1", "q?", tuple((g,) for g in golds), "tracking", options)


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("reasoning...\n## Answer: Kitchen", "Kitchen"),
        ("**Answer**: the hallway", "the hallway"),
        ("**Answer:** garden", "garden"),
        ('{"answer": "office"}', "office"),
        ("Answer: bedroom", "bedroom"),
        ("ANSWER:cellar", "cellar"),
        ("final answer : 'attic'", "attic"),
        ("## Answer: park\nBecause the text says so.", "park"),
        ("## Answer:\n\n   **roof**  \nexplanation", "roof"),
        ("Answer: first\n## Answer: second", "second"),  # the last marker wins
        ("answer: a. ## Answer: b. **Answer**: c", "c"),
        ("  just the kitchen \n", "just the kitchen"),  # no marker: whole text
        ("## Answer:", ""),
    ],
)
def test_extract_open_ended(output: str, expected: str) -> None:
    assert extract_answer(output, mc=False) == expected


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("## Answer: B", "B"),
        ("## Answer: (C) the hallway", "C"),
        ("**Answer**: **D**", "D"),
        ('{"answer": "E"}', "E"),
        ("Answer: option A\n", "A"),
        # SPECS §1.3: a lone lowercase letter, bare or in brackets, is that letter
        ("## Answer: b", "B"),
        ("## Answer: (c)", "C"),
        ('{"answer": "d"}', "D"),
        ("**Answer**: **b**", "B"),
        ("## Answer: B.", "B"),  # a capital letter is standalone before the period
        ("## Answer: b.", ""),  # a lowercase letter counts only as the whole answer
        ("## Answer: b) kitchen", ""),
        ("## Answer: the answer is b", ""),
        ("## Answer: the answer is B", "B"),
        ("the answer is b", ""),  # no marker: MC gets nothing
        ("## Answer: kitchen", ""),
        ("The answer is B.", ""),  # no colon, no marker: MC gets nothing
        ("B", ""),
        ("Answer: A\nthinking again\n## Answer: C", "C"),
        ("## Answer:\nB", "B"),
    ],
)
def test_extract_multiple_choice(output: str, expected: str) -> None:
    assert extract_answer(output, mc=True) == expected


def test_normalize() -> None:
    assert normalize("  The  Kitchen!! ", mc=False) == "kitchen"
    assert normalize("An apple, a pear", mc=False) == "apple pear"
    assert normalize("“Mary’s” room.", mc=False) == "marys room"
    assert normalize("A", mc=True) == "a"  # articles are kept for multiple choice
    assert normalize("theatre", mc=False) == "theatre"  # only whole words are articles


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2", "2"), ("two", "2"), ("twice", "2"), ("2 times", "2"), ("Two times.", "2"),
        ("1", "1"), ("one", "1"), ("once", "1"), ("one time", "1"), ("1 time", "1"),
        ("0", "0"), ("zero", "0"), ("none", "0"), ("never", "0"), ("0 times", "0"),
        ("thrice", "3"), ("seven", "7"), ("twelve times", "12"), ("twenty", "20"),
        ("twenty-one", "21"), ("twenty one times", "21"), ("07", "7"), ("19", "19"),
        ("kitchen", "kitchen"), ("the garden", "garden"), ("Unknown", "unknown"),
        ("two kitchens", "two kitchens"), ("times", "times"), ("twenty zero", "twenty zero"),
    ],
)
def test_canonical_numerals(text: str, expected: str) -> None:
    assert canonical(text, mc=False, question_type="counting") == expected


@pytest.mark.parametrize("qtype", ["tracking", "bridge", "comparison", None])
def test_numerals_are_text_outside_counting(qtype: str | None) -> None:
    # SPECS §1.3: the numeral equivalences are for counting questions only.
    assert canonical("two", mc=False, question_type=qtype) == "two"
    assert canonical("None", mc=False, question_type=qtype) == "none"
    assert canonical("2 times", mc=False, question_type=qtype) == "2 times"
    assert canonical("twice", mc=False, question_type="Counting") == "2"


def test_canonical_mc_is_the_letter() -> None:
    assert canonical("B", mc=True) == "b"
    assert canonical_answer("## Answer: B) two", mc=True) == "b"


def test_is_correct_open_ended_with_numerals() -> None:
    q = open_q(["1", "2", "3"], "counting")
    assert is_correct("## Answer: once", q, 1)
    assert is_correct("**Answer**: Twice.", q, 2)
    assert is_correct("## Answer: three times", q, 3)
    assert not is_correct("## Answer: 3", q, 2)
    with pytest.raises(ValueError):
        is_correct("## Answer: 3", q, 4)


def test_is_correct_any_accepted_gold() -> None:
    q = open_q([("hallway", "the corridor"), "kitchen"], "tracking")
    assert is_correct("## Answer: Corridor", q, 1)
    assert is_correct("## Answer: the hallway", q, 1)
    assert not is_correct("## Answer: kitchen", q, 1)


def test_counting_before_the_event_accepts_unknown_and_zero() -> None:
    # Golds: 0, Unknown, 0, 1, 0 — the event first happens at t=4; t=5 is after it.
    q = open_q(["0", "Unknown", "0", "1", "0"], "counting")
    for t in (1, 2, 3):
        assert is_correct("## Answer: Unknown", q, t)
        assert is_correct("## Answer: zero", q, t)
        assert is_correct("## Answer: never", q, t)
    assert not is_correct("## Answer: Unknown", q, 4)
    assert is_correct("## Answer: 0", q, 5)
    assert not is_correct("## Answer: Unknown", q, 5)  # no longer before the event


def test_comparison_before_evidence_accepts_unknown_and_same() -> None:
    q = open_q(["Unknown", "Same", "Alice", "Same"], "comparison")
    assert [is_correct("## Answer: Same", q, t) for t in (1, 2, 3, 4)] == [
        True, True, False, True]
    assert [is_correct("## Answer: unknown", q, t) for t in (1, 2, 3, 4)] == [
        True, True, False, False]


def test_equivalences_only_for_their_types() -> None:
    tracking = open_q(["Unknown", "kitchen"], "tracking")
    assert not is_correct("## Answer: Same", tracking, 1)
    assert not is_correct("## Answer: 0", tracking, 1)
    # a tracking gold "None" is text: "zero" / "never" / "0" are other answers
    holder = open_q(["None", "Ann", "2"], "tracking")
    assert is_correct("## Answer: none.", holder, 1)
    assert not is_correct("## Answer: zero", holder, 1)
    assert not is_correct("## Answer: never", holder, 1)
    assert is_correct("## Answer: 2", holder, 3)
    assert not is_correct("## Answer: two", holder, 3)
    bridge = open_q(["Unknown", "1"], "bridge")
    assert not is_correct("## Answer: once", bridge, 2)
    assert not is_correct("## Answer: 0", bridge, 1)
    untyped = open_q(["two"], None)
    assert not is_correct("## Answer: 2", untyped, 1)
    counting = open_q(["Unknown", "2"], "Counting")  # type names compare case-insensitively
    assert is_correct("## Answer: 0", counting, 1)
    assert not is_correct("## Answer: Same", counting, 1)


def test_accepted_answers_sets() -> None:
    q = open_q(["Unknown", "0", "two"], "counting")
    assert accepted_answers(q) == (
        frozenset({"unknown", "0"}), frozenset({"unknown", "0"}), frozenset({"2"}))


def test_is_correct_multiple_choice() -> None:
    options = ("kitchen", "garden", "cannot answer at this point")
    q = mc_q(["cannot answer at this point", "garden", "kitchen"], options)
    assert is_correct("## Answer: C", q, 1)
    assert is_correct("**Answer**: (B) garden", q, 2)
    assert not is_correct("## Answer: garden", q, 2)  # the letter is required
    assert not is_correct("I pick A", q, 3)  # no marker
    assert is_correct("## Answer: A", q, 3)


def test_canonical_golds() -> None:
    assert canonical_golds(open_q([("Two", "2"), "Three times"], "counting")) == ("2", "3")
    assert canonical_golds(open_q([("Two", "2"), "The Garden"])) == ("two", "garden")
    options = ("x", "y")
    assert canonical_golds(mc_q(["y", "x", "y"], options)) == ("b", "a", "b")


def test_counting_equivalences_before_and_after_the_event() -> None:
    # golds Unknown, 0, 2, 2: the event first happens at t = 3.
    q = open_q(["Unknown", "0", "2", "two"], "counting")
    before = ["## Answer: Unknown", "## Answer: 0", "## Answer: zero", "## Answer: none",
              "## Answer: never", "## Answer: 0 times"]
    for t in (1, 2):
        assert all(is_correct(out, q, t) for out in before)
        assert not is_correct("## Answer: Same", q, t)
    for t in (3, 4):
        assert not any(is_correct(out, q, t) for out in before)
        for out in ("## Answer: 2", "## Answer: two", "## Answer: twice", "## Answer: 2 times",
                    "## Answer: Two times."):
            assert is_correct(out, q, t)
    once = open_q(["1"], "counting")
    assert all(is_correct(f"## Answer: {a}", once, 1) for a in ("1", "one", "once", "1 time"))


def test_comparison_equivalences_before_and_after_evidence() -> None:
    # golds Unknown, Unknown, Ann, Same: evidence first exists at t = 3; "Same" at t = 4 is
    # an answer (equal counts), no longer "no evidence".
    q = open_q(["Unknown", "Unknown", "Ann", "Same"], "comparison")
    for t in (1, 2):
        assert is_correct("## Answer: Unknown", q, t)
        assert is_correct("## Answer: same", q, t)
        assert not is_correct("## Answer: 0", q, t)  # "0" is for counting
    assert not is_correct("## Answer: Unknown", q, 3)
    assert not is_correct("## Answer: Same", q, 3)
    assert is_correct("## Answer: Same", q, 4)
    assert not is_correct("## Answer: Unknown", q, 4)
