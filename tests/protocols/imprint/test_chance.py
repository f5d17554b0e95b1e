"""What a constant answer scores per family (docs/imprint.md §7.11): computed by the items'
own judges, aggregated as the family scores are, and kept at or below each family's design
on the default datasets of the three settings."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from clstream.protocols.imprint.chance import CONSTANT_ANSWERS, chance_floors, floor_text
from clstream.protocols.imprint.report import _chance_table
from clstream.protocols.imprint.run_summary import chance_lines
from clstream.protocols.imprint.schema import Dataset, Item


def make(item_id: str, family: str, judge: str, gold: str | list[str], setting: str = "news",
         **extra: Any) -> Item:
    return Item.model_validate({"item_id": item_id, "setting": setting, "family": family,
                                "judge": judge, "question": "Did it happen?", "gold": gold,
                                **extra})


def test_floors_judge_every_item_with_each_constant() -> None:
    items = [make("d1", "DirAcq", "yesno", "Yes"), make("d2", "DirAcq", "yesno", "No"),
             make("d3", "DirAcq", "yesno", "No"), make("d4", "DirAcq", "yesno", "No"),
             make("b1", "BoundAbs", "abstain", "No record of it."),
             make("t1", "TempUpd", "exact", "Porto"),
             make("l1", "ImpRel", "llm", "anything")]
    floors = chance_floors(items)
    assert floors["answers"] == CONSTANT_ANSWERS and floors["judge"] == "deterministic"
    assert list(floors["by_family"]) == ["DirAcq", "TempUpd", "BoundAbs"]  # llm items left out
    assert floors["by_family"]["DirAcq"] == {"yes": 0.25, "no": 0.75, "abstain": 0.0,
                                             "option_a": 0.0}
    assert floors["by_family"]["BoundAbs"] == {"yes": 0.0, "no": 1.0, "abstain": 1.0,
                                               "option_a": 0.0}
    assert floors["by_family"]["TempUpd"]["no"] == 0.0
    assert floors["avg"]["no"] == pytest.approx((0.75 + 0.0 + 1.0) / 3)
    # strict abstention takes no denial: "No." no longer passes BoundAbs
    assert chance_floors(items, strict_abstention=True)["by_family"]["BoundAbs"]["no"] == 0.0
    assert floor_text(floors).startswith("DirAcq 25.0/75.0/0.0/0.0  TempUpd 0.0/0.0/0.0/0.0")


def test_persona_floors_average_personas_first() -> None:
    options = ["x", "y", "z"]
    items = [make("a1", "ImpRel", "choice", "A", "persona", persona="u1", options=options),
             make("a2", "ImpRel", "choice", "B", "persona", persona="u1", options=options),
             make("a3", "ImpRel", "choice", "C", "persona", persona="u1", options=options),
             make("b1", "ImpRel", "choice", "A", "persona", persona="u2", options=options)]
    # u1: 1/3, u2: 1 -> 2/3 (micro over items would give 1/2)
    assert chance_floors(items)["by_family"]["ImpRel"]["option_a"] == pytest.approx(2 / 3)


def test_the_summary_and_the_report_show_the_floors() -> None:
    floors = chance_floors([make("d1", "DirAcq", "yesno", "Yes"),
                            make("d2", "DirAcq", "yesno", "No")])
    runs = [{"system": s, "dataset": {"setting": "news"}, "metrics": {"chance": floors}}
            for s in ("rag", "oracle")]
    lines = chance_lines(runs)
    assert lines[0].startswith("  constant answers, Pass@1 % (Yes. / No. / I don't know. / A)")
    assert lines[1:] == ["    news: DirAcq 50.0/50.0/0.0/0.0  Avg 50.0/50.0/0.0/0.0"]
    assert chance_lines([{"system": "rag", "metrics": {}}]) == []


def test_the_report_table_has_a_row_per_constant() -> None:
    from clstream.render.runs import read_runs

    floors = chance_floors([make("d1", "DirAcq", "yesno", "Yes"),
                            make("b1", "BoundAbs", "abstain", "No record.")])
    raw = [{"system": "rag", "protocol": "imprint", "dataset": {"setting": "news"},
            "metrics": {"chance": floors, "by_family": {}, "avg": {}}}]
    table = _chance_table("news", read_runs(None, raw, ["rag"]))
    assert table is not None
    assert [c.header for c in table.columns] == ["Constant answer", "DirAcq", "BoundAbs", "Avg"]
    assert [[c.text for c in row] for row in table.rows] == [
        ["Yes.", "100.0", "0.0", "50.0"], ["No.", "0.0", "100.0", "50.0"],
        ["I don't know.", "0.0", "100.0", "50.0"], ["A", "0.0", "0.0", "0.0"]]


# ---- the default datasets ------------------------------------------------------------------

DESIGNED_TO_PASS = {("news", "BoundAbs", "abstain"), ("news", "BoundAbs", "no"),
                    ("code", "BoundAbs", "abstain"), ("code", "BoundAbs", "no"),
                    ("persona", "BoundAbs", "abstain"), ("code", "DirAcq", "yes"),
                    ("news", "TempUpd", "no")}
"""Constants a family is built to pass: an abstention on BoundAbs (App. E.1 also takes a
denial in news and code), "Yes" on code DirAcq, whose paper golds are all Yes (App. D.2), and
"No" on news TempUpd, whose negation axis asks whether the old holder or value still holds
after the change (T2, gold always No, App. D.1); the floors table shows it to the reader."""


def item_design(item: Item) -> Fraction:
    """The chance one blind guess has on an item: 1/2 on yes/no, 1/options on a choice, 0 on
    an open question."""
    if item.judge == "yesno":
        return Fraction(1, 2)
    if item.judge == "choice":
        return Fraction(1, max(len(item.options), 1))
    return Fraction(0)


def family_design(items: list[Item]) -> Fraction:
    """The mean design over items (per persona first in the personalization setting)."""
    units: dict[str, list[Fraction]] = {}
    for item in items:
        unit = (item.persona or item.instance_id) if item.setting == "persona" else item.item_id
        units.setdefault(unit, []).append(item_design(item))
    means = [sum(v, Fraction(0)) / len(v) for v in units.values()]
    return sum(means, Fraction(0)) / len(means)


_DATASETS: dict[str, Dataset] = {}


def default_dataset(setting: str) -> Dataset:
    """The dataset ``generate imprint --setting SETTING`` writes by default (seed 0)."""
    if setting not in _DATASETS:
        if setting == "news":
            from clstream.protocols.imprint.settings.news.generate import (
                NewsConfig,
                generate_news,
            )
            _DATASETS[setting] = generate_news(NewsConfig(seed=0))
        elif setting == "code":
            from clstream.protocols.imprint.settings.code.dataset import generate_code
            from clstream.protocols.imprint.settings.code.synthetic import CodeWorldConfig
            _DATASETS[setting] = generate_code(CodeWorldConfig(seed=0))
        else:
            from clstream.protocols.imprint.settings.persona.synthetic import (
                PersonaConfig,
                generate_persona,
            )
            _DATASETS[setting] = generate_persona(PersonaConfig(seed=0))
    return _DATASETS[setting]


CASES = [(s, f) for s, families in (
    ("news", ("DirAcq", "TempUpd", "CompRel", "ImpRel", "BoundAbs")),
    ("code", ("DirAcq", "RefRes", "CompRel", "ImpRel")),
    ("persona", ("TempUpd", "RefRes", "CompRel", "ImpRel", "BoundAbs"))) for f in families]


@pytest.mark.parametrize("setting, family", CASES)
def test_no_constant_answer_beats_the_family_design(setting: str, family: str) -> None:
    items = [i for i in default_dataset(setting).items if i.family == family]
    assert items, f"the default {setting} dataset has no {family} item"
    floors = chance_floors(items)["by_family"][family]
    design = family_design(items)
    for name, floor in floors.items():
        if (setting, family, name) in DESIGNED_TO_PASS:
            continue
        assert floor <= float(design) + 1e-9, (
            f"{setting} {family}: a constant {CONSTANT_ANSWERS[name]!r} scores "
            f"{100 * floor:.1f} %, above the design {100 * float(design):.1f} %")
