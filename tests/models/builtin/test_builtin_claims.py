"""The builtin reader's yes/no route: a claim stated, a claim with a swapped element, a
claim overtaken by a later change, and a claim about nothing shown."""

from __future__ import annotations

import pytest

from clstream.models.builtin.claims import (
    ABSTAIN,
    answer_statement,
    answer_yes_no,
    claim_words,
    is_yes_no,
)
from clstream.models.builtin.reader import ReadText

PASSAGES = [
    (0, "Title: Cabinet news\nDate: 2031-03-02\n\nIvo Brenn was named finance minister of "
        "Ostrava. The Ostrava central bank raised its rate to 4 percent."),
    (1, "Title: Reshuffle\nDate: 2031-03-20\n\nAna Kowal replaced Ivo Brenn as finance "
        "minister of Ostrava."),
]


@pytest.mark.parametrize("question, answer", [
    ("Did the Ostrava central bank raise its rate to 4 percent in early March 2031?", "Yes"),
    ("Did the Ostrava central bank raise its rate to 9 percent in early March 2031?", "No"),
    ("As of 2031-03-25, is Ivo Brenn still the finance minister of Ostrava?", "No"),
    ("Did Ana Kowal replace Ivo Brenn as finance minister of Ostrava?", "Yes"),
    ("Did the Velmar league sign a broadcasting deal?", ABSTAIN),
])
def test_claims(question: str, answer: str) -> None:
    assert is_yes_no(question)
    assert answer_yes_no(ReadText(PASSAGES), question)[1] == answer


def test_nothing_shown_abstains() -> None:
    assert answer_yes_no(ReadText([]), "Did Ivo Brenn resign?")[1] == ABSTAIN


def test_question_kinds_and_date_anchor() -> None:
    assert not is_yes_no("Who holds the role of finance minister?")
    assert is_yes_no("As of 2031-03-12, is Ivo Brenn still minister?")
    assert "march" not in claim_words("Did it happen in early March 2031?")
    assert "2031" not in claim_words("Did it happen on 2031-03-02?")


def test_leading_date_clause() -> None:
    assert is_yes_no("In early February 2030, did Ivo Brenn resign?")
    assert is_yes_no("On 2030-02-03, was the rate 4 percent?")
    assert not is_yes_no("In Ostrava, who holds the post?")


STATEMENTS = [
    (0, "Title: Cabinet\nDate: 2031-02-02\n\nIvo Brenn was named finance minister of Ostrava. "
        "Earlier in his career, Ana Kowal served as spokesperson at Velmar Foods. The fuel "
        "price in Ostrava rose from 2.10 crowns to 2.36 crowns on 2 February 2031."),
    (1, "Title: Reshuffle\nDate: 2031-03-20\n\nSeparately, the post of finance minister of "
        "Ostrava passed to Ana Kowal, replacing Ivo Brenn."),
]


@pytest.mark.parametrize("question, answer", [
    ("As of 2031-03-25, who holds the post of finance minister of Ostrava?", "Ana Kowal"),
    ("As of 2031-02-10, what is the fuel price in Ostrava?", "2.36 crowns"),
    ("Before becoming finance minister of Ostrava, what post had Ana Kowal held?",
     "spokesperson at Velmar Foods"),
    ("As of 2031-03-25, who holds the post of harbour master of Velmar?", ABSTAIN),
])
def test_dated_statements(question: str, answer: str) -> None:
    found = answer_statement(ReadText(STATEMENTS), question)
    assert found is not None and found[1] == answer


def test_persistence_and_month_claims() -> None:
    read = ReadText(STATEMENTS)
    assert answer_yes_no(read, "As of 2031-02-10, is the fuel price in Ostrava still 2.10 "
                               "crowns?")[1] == "No"
    assert answer_yes_no(read, "In early February 2031, did the fuel price in Ostrava rise to "
                               "2.36 crowns?")[1] == "Yes"
    assert answer_yes_no(read, "In early May 2031, did the fuel price in Ostrava rise to "
                               "2.36 crowns?")[1] == "No"
    assert answer_statement(read, "Who holds the post of finance minister?") is None
