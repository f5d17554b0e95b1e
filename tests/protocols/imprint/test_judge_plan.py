"""Which judge decides each family under ``--judge``, and in which order (ImprintBench App.
D.2, E; docs/imprint.md §6.10): code RefRes and ImpRel go to their LLM judges for every
sample, code CompRel tries the trailing-component check first and asks the LLM judge only
where it fails."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from clstream.protocols.imprint.judge_plan import (
    DETERMINISTIC,
    judge_mapping,
    judge_outputs,
    paper_judge,
)
from clstream.protocols.imprint.llm_judges import LIST_JUDGE_PROMPT_HASH, LLMJudge, parse_verdict
from clstream.protocols.imprint.schema import Item

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripted_judge import ScriptedJudgeModel  # noqa: E402


def code_item(family: str, gold: str | list[str], item_id: str = "c1") -> Item:
    return Item.model_validate({
        "item_id": item_id, "setting": "code", "family": family, "judge": "identifier",
        "question": "Which function in quillkit returns a running total?", "gold": gold})


@pytest.mark.parametrize("setting, family, kind", [
    ("code", "DirAcq", "rubric"),
    ("code", "RefRes", "identifier"),
    ("code", "CompRel", "identifier+fallback"),
    ("code", "ImpRel", "list"),
    ("code", "BoundAbs", None),
    ("news", "DirAcq", None),
    ("news", "BoundAbs", None),
    ("news", "TempUpd", "yn"),
    ("news", "ImpRel", "yn"),
    ("persona", "ImpRel", "rubric"),
    ("persona", "BoundAbs", "rubric"),
])
def test_each_family_goes_to_the_judge_the_paper_names(setting: str, family: str,
                                                       kind: str | None) -> None:
    item = Item.model_validate({"item_id": "x", "setting": setting, "family": family,
                                "judge": "exact", "question": "q?", "gold": "g",
                                "persona": "u" if setting == "persona" else None})
    assert paper_judge(item) == kind
    assert paper_judge(item, with_model=False) is None
    assert judge_mapping(setting, "m")[family] == (DETERMINISTIC if kind is None
                                                   else f"llm:m ({kind})")
    assert judge_mapping(setting, None)[family] == DETERMINISTIC


def judged(items: list[Item], predictions: dict[str, list[str]],
           script: dict[str, str]) -> tuple[dict[str, Any], ScriptedJudgeModel]:
    model = ScriptedJudgeModel(script, default="NO")
    return asyncio.run(judge_outputs(items, predictions, LLMJudge(model))), model


def test_refres_asks_the_llm_judge_even_where_the_identifier_rule_would_pass() -> None:
    item = code_item("RefRes", "quillkit.cumulative_sum")
    # the rule alone says right to both; the judge says NO to the first: its verdict stands
    got, model = judged([item], {"c1": ["cumulative_sum", "`quillkit.cumulative_sum`"]},
                        {"`quillkit": "YES", "cumulative_sum": "NO"})
    assert len(model.requests) == 2
    assert [v.correct for v in got["c1"]] == [False, True]
    assert {v.judge for v in got["c1"]} == {"identifier"}
    assert all(v.judge_model == "scripted-judge" for v in got["c1"])


def test_comprel_takes_the_trailing_check_first_then_the_llm_judge() -> None:
    item = code_item("CompRel", "quillkit.cumulative_sum")
    got, model = judged([item], {"c1": ["F.cumulative_sum", "running_total", "cumsum"]},
                        {"running_total": "YES"})
    assert len(model.requests) == 2  # the trailing-component match is never asked
    first, second, third = got["c1"]
    assert first.correct and first.judge == "identifier" and first.judge_model is None
    assert second.correct and second.judge == "identifier+fallback"
    assert not third.correct and third.judge_model == "scripted-judge"


def test_imprel_goes_to_the_list_judge_with_every_gold_leaf() -> None:
    item = code_item("ImpRel", ["quillkit.strings.slice", "quillkit.strings.pad"])
    got, model = judged([item], {"c1": ["slice, pad", "strip"]}, {"slice": "YES"})
    assert [v.correct for v in got["c1"]] == [True, False]
    assert {v.judge for v in got["c1"]} == {"list"}
    assert {v.judge_prompt_hash for v in got["c1"]} == {LIST_JUDGE_PROMPT_HASH}
    shown = model.requests[0].messages[-1].content
    assert "slice (any one of: slice, pad)" in shown


@pytest.mark.parametrize("reply, word", [("Listed.\nYES", "YES"), ("N", "NO"),
                                         ("It is listed.", None), ("MATCH", None)])
def test_the_list_judge_reply_ends_in_yes_or_no(reply: str, word: str | None) -> None:
    assert parse_verdict(reply, "list") == word
