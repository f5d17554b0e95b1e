"""The no-context option-bias audit (App. D.3 item 8): the options-only strategies, and every
generated CompRel and ImpRel item checked against them."""

from __future__ import annotations

from collections import Counter

import pytest

from clstream.protocols.imprint.schema import Dataset, Item
from clstream.protocols.imprint.settings.persona.option_audit import (
    option_only_picks,
    solved_by,
)
from clstream.protocols.imprint.settings.persona.synthetic import PersonaConfig, generate_persona


def _bundle(rows: list[str]) -> tuple[list[str], list[list[str]]]:
    names = {"T": ("tofu bowl", "noon call", "river loop"),
             "F": ("beef ragout", "evening call", "spin class")}
    slots = [[names[flag][k] for k, flag in enumerate(row)] for row in rows]
    return ["; ".join(s) for s in slots], slots


def test_the_single_violation_truth_table_is_solved_by_slot_majority() -> None:
    """TTT, FTT, TFT, TTF: every slot's majority is its true value, so the options alone
    give the gold -- the table a no-context model solves."""
    options, slots = _bundle(["FTT", "TTT", "TFT", "TTF"])
    assert "slot_majority" in solved_by("Which plan suits me?", options, "B", slots)


def test_the_balanced_truth_tables_are_not() -> None:
    for rows, gold in ((["TFF", "FTF", "TTT", "FFT"], "C"), (["FT", "TT", "FF", "TF"], "B")):
        options, slots = _bundle(rows)
        assert solved_by("Which plan suits me?", options, gold, slots) == []
        assert "slot_majority" not in option_only_picks("Which plan suits me?", options, slots)


def test_shared_and_question_words_are_tells() -> None:
    options = ["a quiet dinner", "a quiet dinner with friends", "a loud dinner with friends"]
    assert option_only_picks("Where should I go?", options)["shared_words"] == "B"
    assert solved_by("Which dinner?", ["a dinner out", "a walk", "a film"], "A") == [
        "question_words"]


@pytest.fixture(scope="module", params=(0, 1, 7, 11))
def data(request: pytest.FixtureRequest) -> Dataset:
    return generate_persona(PersonaConfig(seed=request.param, chunk_tokens=0))


def _choice_items(data: Dataset) -> list[Item]:
    return [i for i in data.items if i.family in ("CompRel", "ImpRel")]


def test_no_item_is_solvable_from_its_options(data: Dataset) -> None:
    items = _choice_items(data)
    assert {i.family for i in items} == {"CompRel", "ImpRel"}
    for item in items:
        slots = item.meta["option_values"] if item.family == "CompRel" else None
        assert len(item.options) >= 3, item.item_id
        assert solved_by(item.question, item.options, str(item.gold), slots) == [], item.item_id
        if slots is not None:
            # Every slot's true value is in exactly half of the options.
            for k in range(len(slots[0])):
                assert Counter(row[k] for row in slots).most_common(1)[0][1] == 2


def test_length_tells_stay_near_chance(data: Dataset) -> None:
    """Over the dataset, picking the longest (or the shortest) option scores near chance."""
    items = _choice_items(data)
    chance = sum(1 / len(i.options) for i in items) / len(items)
    for pick in (max, min):
        hits = sum(1 for i in items
                   if "ABCD"[i.options.index(pick(i.options, key=len))] == i.gold)
        assert hits / len(items) <= chance + 0.2, pick.__name__


def test_the_card_counts_what_the_audit_removed(data: Dataset) -> None:
    pipeline = data.manifest.config["pipeline"]
    assert set(pipeline["audits"]["option_only"]) == {"CompRel", "ImpRel"}
    assert pipeline["writer"] == "templates"
    assert set(pipeline["template_families"]) == {i.family for i in data.items}
