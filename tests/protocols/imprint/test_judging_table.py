"""The deterministic judges against a table of ordinary, hedged, negated and abstaining
answers, each with the paper's verdict (data/judge_answers.toml; ImprintBench App. D, E;
docs/imprint.md §6): every row must agree, and the table must keep all four kinds of answer
for every family of every setting, right and wrong ones alike."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from clstream.protocols.imprint.judging import judge_deterministic
from clstream.protocols.imprint.schema import FAMILIES, Item

TABLE = Path(__file__).resolve().parent / "data" / "judge_answers.toml"
KINDS = ("ordinary", "hedged", "negated", "abstaining")
SETTING_FAMILIES = {"news": ("DirAcq", "TempUpd", "CompRel", "ImpRel", "BoundAbs"),
                    "code": ("DirAcq", "RefRes", "CompRel", "ImpRel", "BoundAbs"),
                    "persona": FAMILIES}


def load() -> tuple[dict[str, Item], list[dict[str, Any]]]:
    data = tomllib.loads(TABLE.read_text(encoding="utf-8"))
    items = {key: Item.model_validate({"item_id": key, **row})
             for key, row in data["items"].items()}
    return items, list(data["answers"])


ITEMS, ANSWERS = load()


def test_every_family_has_every_kind_of_answer_right_and_wrong() -> None:
    for setting, families in SETTING_FAMILIES.items():
        for family in families:
            rows = [a for a in ANSWERS if ITEMS[a["item"]].setting == setting
                    and ITEMS[a["item"]].family == family]
            assert {a["kind"] for a in rows} == set(KINDS), (setting, family)
            assert {a["correct"] for a in rows} == {True, False}, (setting, family)
    assert {a["kind"] for a in ANSWERS} == set(KINDS)
    assert len(ANSWERS) >= 100
    assert all(a["item"] in ITEMS for a in ANSWERS)


@pytest.mark.parametrize("row", ANSWERS,
                         ids=[f"{a['item']}-{a['kind']}-{i}" for i, a in enumerate(ANSWERS)])
def test_the_deterministic_judge_gives_the_papers_verdict(row: dict[str, Any]) -> None:
    verdict = judge_deterministic(ITEMS[row["item"]], row["answer"])
    assert verdict.correct is row["correct"], (row["answer"], verdict)
