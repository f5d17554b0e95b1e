"""The readings of hedges and of claims beside abstentions (docs/imprint.md §6.3, §6.7)."""

from __future__ import annotations

import pytest

from clstream.protocols.imprint.hedges import (
    affirming_clause,
    modal_hedge,
    predicate_stems,
    uncertainty,
)

QUESTIONED = ("In mid February 2030, was Taith Railegun questioned by investigators over the "
              "Morovelek Renewal Party?")


def test_uncertainty_and_modal_hedges() -> None:
    assert uncertainty("I\u2019m not sure, but you might be an early bird.") == "not sure"
    assert uncertainty("I have no idea.") == "no idea"
    assert uncertainty("You are an early bird.") is None
    assert modal_hedge("you might be an early bird") == "might"
    assert modal_hedge("Probably Faidres") == "probably"
    assert modal_hedge("the chief executive was born in Faidres") is None
    assert modal_hedge("a mighty river") is None  # whole words only


def test_predicate_stems_leave_names_and_time_words_out() -> None:
    assert predicate_stems(QUESTIONED) == {"quest", "inves"}
    assert predicate_stems("Which allergy do I have?") == {"aller"}


@pytest.mark.parametrize("answer, clause", [
    ("Investigators questioned him; there is no record of charges.",
     "Investigators questioned him"),
    ("There is no record of charges, but investigators questioned him.",
     "investigators questioned him"),
    ("There is no record of Taith Railegun being questioned by investigators.", None),
    ("Was he questioned by investigators? I have no record of it.", None),
    ("Investigators did not question him.", None),
    ("I checked every article about the Morovelek Renewal Party: no record of it.", None),
])
def test_affirming_clause(answer: str, clause: str | None) -> None:
    assert affirming_clause(QUESTIONED, answer, ("no record of",)) == clause
