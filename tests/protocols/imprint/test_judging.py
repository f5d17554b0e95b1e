"""ImprintBench judges (SPECS §4; brief §5), rule by rule, and the cached LLM judge."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from clstream.core.errors import SpecError
from clstream.protocols.imprint.judge_plan import judge_outputs, judge_outputs_sync
from clstream.protocols.imprint.judging import (
    JudgeError,
    answer_text,
    asserted_identifiers,
    identifiers_agree,
    is_stale,
    judge_abstain,
    judge_choice,
    judge_deterministic,
    judge_exact,
    judge_identifier,
    judge_yesno,
    normalize_identifier,
    normalize_text,
    strip_think,
)
from clstream.protocols.imprint.llm_judges import (
    LLM_JUDGE_PROMPT_HASH,
    LLMJudge,
    parse_llm_verdict,
)
from clstream.protocols.imprint.schema import Item

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripted_judge import ScriptedJudgeModel  # noqa: E402


def item(**fields: Any) -> Item:
    base: dict[str, Any] = {"item_id": "i1", "setting": "news", "family": "DirAcq",
                            "question": "Did the council approve the canal toll?",
                            "gold": "Yes", "judge": "yesno"}
    return Item(**{**base, **fields})


# ---- reading ---------------------------------------------------------------------------------

@pytest.mark.parametrize("output, expected", [
    ("<think>no, wait</think>Yes.", "Yes."),
    ("<THINK>\nlong\n</THINK>\n\nAnswer: B", "Answer: B"),
    ("<think>never closed, all reasoning", ""),
    ("reasoning the template opened</think> final", "final"),
    ("plain answer", "plain answer"),
    ("Yes <think>late tag kept</think>", "Yes <think>late tag kept</think>"),
])
def test_strip_think(output: str, expected: str) -> None:
    assert strip_think(output) == expected


def test_answer_text_reads_after_the_last_marker() -> None:
    assert answer_text("I think no.\n## Answer: yes") == "yes"
    assert answer_text("Answer: no\nOn reflection.\nAnswer: yes, it did") == "yes, it did"
    assert answer_text("<think>Answer: no</think>No marker here") == "No marker here"


# ---- yes / no --------------------------------------------------------------------------------

@pytest.mark.parametrize("output, correct, verdict", [
    ("Yes, the council approved it.", True, "yes"),
    ("yes", True, "yes"),
    ("No.", False, "no"),
    ("No, it did not; yes votes were short.", False, "no"),
    ("Not sure", False, "none"),  # "Not" is no standalone "no"
    ("Nobody knows; yesterday's vote failed", False, "none"),
    ("", False, "none"),
    ("Some reasoning says no.\n## Answer: Yes", True, "yes"),
    ("<think>no no no</think>Yes", True, "yes"),
    ("It is YES.", True, "yes"),
])
def test_yesno(output: str, correct: bool, verdict: str) -> None:
    v = judge_yesno(item(), output)
    assert (v.correct, v.verdict, v.judge) == (correct, verdict, "yesno")


def test_yesno_gold_no_and_bad_gold() -> None:
    assert judge_yesno(item(gold="No"), "No, never.").correct
    assert not judge_yesno(item(gold="No"), "Yes").correct
    with pytest.raises(SpecError, match="i1"):
        judge_yesno(item(gold="Mara Velez"), "Yes")


# ---- abstention ------------------------------------------------------------------------------

def abstain_item() -> Item:
    return item(family="BoundAbs", gold="No - no record of it", judge="abstain")


@pytest.mark.parametrize("output, correct, strict_correct", [
    ("There is no record of such a resolution.", True, True),
    ("The passages contain insufficient information.", True, True),
    ("That is not mentioned anywhere.", True, True),
    ("I cannot find anything about it.", True, True),
    ("No information about that exists in my notes.", True, True),
    ("No, it did not happen.", True, False),           # E.1's denial rule; strict drops it
    ("The motion passed; no appeal followed.", True, False),  # first yes/no token is "no"
    ("Yes, it was adopted in March.", False, False),
    ("It was adopted in March.", False, False),
    ("Nothing relates to the question.\n## Answer: Unknown", True, True),  # extension
    ("I don\u2019t know.", True, True),               # curly apostrophe, extension phrase
    ("Not sure", True, True),                          # extension phrase
])
def test_abstain(output: str, correct: bool, strict_correct: bool) -> None:
    assert judge_abstain(abstain_item(), output).correct is correct
    assert judge_abstain(abstain_item(), output, strict=True).correct is strict_correct


def test_abstain_paper_list_only_and_window() -> None:
    # The extension off: "Unknown" is no abstention in the paper's list.
    assert not judge_abstain(abstain_item(), "Unknown", extended=False).correct
    assert judge_abstain(abstain_item(), "Unknown").correct
    # A phrase past the first 600 characters does not count.
    late = "The council met. " * 40 + "There is no record of it."
    assert len(late) > 600
    assert not judge_abstain(abstain_item(), late, strict=True).correct
    assert judge_abstain(abstain_item(), late[:580] + " no record of it", strict=True).correct
    # A caller's own list replaces both lists.
    assert judge_abstain(abstain_item(), "Beats me.", phrases=["beats me"]).correct
    assert not judge_abstain(abstain_item(), "Beats me.").correct


# ---- identifiers -----------------------------------------------------------------------------

def code_item(family: str = "RefRes", gold: str = "torch.nn.functional.conv2d") -> Item:
    return item(setting="code", family=family, question="Which function convolves?",
                gold=gold, judge="identifier")


@pytest.mark.parametrize("raw, expected", [
    ("`F.conv2d`", "F.conv2d"),
    ("```python\ntorch.nn.functional.conv2d(x, w)\n```", "torch.nn.functional.conv2d"),
    ("The identifier is numpy.strings.slice.", "numpy.strings.slice"),
    ("'numpy . strings . slice'", "numpy.strings.slice"),
    ("f(g(x), y)", "f"),
    ('"pandas.DataFrame.map";', "pandas.DataFrame.map"),
])
def test_normalize_identifier(raw: str, expected: str) -> None:
    assert normalize_identifier(raw) == expected


@pytest.mark.parametrize("answer, gold, agree", [
    ("F.conv2d", "torch.nn.functional.conv2d", True),
    ("torch.foo", "foo", True),
    ("conv2d()", "torch.nn.functional.conv2d", True),
    ("torch.nn.functional.conv1d", "torch.nn.functional.conv2d", False),
    ("Conv2d", "conv2d", False),  # Python names are case-sensitive
    ("", "conv2d", False),
])
def test_identifiers_agree(answer: str, gold: str, agree: bool) -> None:
    assert identifiers_agree(answer, gold) is agree


@pytest.mark.parametrize("output, correct, verdict", [
    ("F.conv2d", True, "match"),
    ("torch.nn.functional.conv2d(input, weight)", True, "match"),
    ("```\nF.conv2d\n```", True, "match"),
    ("Reasoning about convolutions.\n## Answer: `F.conv2d`", True, "match"),
    ("<think>maybe conv1d</think>F.conv2d", True, "match"),
    ("conv1d", False, "mismatch"),
    ("I think it is torch.nn.functional.conv2d.", True, "match"),
    ("Use `F.conv2d`, i.e. `torch.nn.functional.conv2d`.", True, "match"),  # one leaf
    ("It is either `conv2d` or `conv_transpose2d`.", False, "hedged"),
    ("Could be F.conv2d or F.conv3d", False, "hedged"),
    ("In torch.nn.functional you would call conv_2d_fast()", False, "mismatch"),
    ("I do not know.", False, "none"),
])
def test_identifier_judge(output: str, correct: bool, verdict: str) -> None:
    v = judge_identifier(code_item(), output)
    assert (v.correct, v.verdict) == (correct, verdict), v.detail


def test_asserted_identifiers_drop_namespaces_and_abbreviations() -> None:
    text = "In numpy.strings, e.g. numpy.strings.slice does it"
    assert asserted_identifiers(text) == ["numpy.strings.slice"]
    assert asserted_identifiers("use `a.b` and `c`") == ["a.b", "c"]


@pytest.mark.parametrize("output, correct", [
    ("- numpy.strings.upper\n- numpy.strings.slice\n- numpy.strings.find", True),
    ("The new functions are upper, slice and find.", True),
    ("Answer:\n1. `slice(a, start, stop)` -- substrings\n2. `find`", True),
    ("* `np.strings.slice`: cuts substrings", True),
    ("upper, lower, find", False),
    ("numpy.strings.slicer, numpy.strings.find", False),
    ("", False),
])
def test_list_contains_for_imprel(output: str, correct: bool) -> None:
    v = judge_identifier(code_item("ImpRel", "numpy.strings.slice"), output)
    assert v.correct is correct, v.detail


# ---- choice ----------------------------------------------------------------------------------

def choice_item(gold: str = "B") -> Item:
    return item(setting="persona", family="CompRel", question="Which suits the user?",
                gold=gold, judge="choice", options=["hiking trip", "chess club", "cooking class",
                                                    "none of these"], persona="p1")


@pytest.mark.parametrize("output, correct, verdict", [
    ("## Answer: B", True, "B"),
    ("B", True, "B"),
    ("(B)", True, "B"),
    ("b.", False, "none"),  # a lowercase bare letter is not read as a choice
    ("The answer is (b) chess club", True, "B"),
    ("chess club", True, "B"),  # the one option whose text the answer repeats
    ("chess club or hiking trip", False, "none"),
    ("That is option C.\n## Answer: C", False, "C"),
    ("I cannot tell.", False, "none"),
    ("Answer: H", False, "none"),  # outside the four options
])
def test_choice(output: str, correct: bool, verdict: str) -> None:
    v = judge_choice(choice_item(), output)
    assert (v.correct, v.verdict) == (correct, verdict), v.detail


def test_choice_gold_as_option_text() -> None:
    assert judge_choice(choice_item(gold="Chess club"), "Answer: B").correct
    with pytest.raises(SpecError, match="neither a letter"):
        judge_choice(choice_item(gold="knitting"), "B")


# ---- exact and stale -------------------------------------------------------------------------

def exact_item() -> Item:
    return item(family="TempUpd", question="Who chairs the port authority?",
                gold=["Mara Vélez", "Velez"], gold_before="Tomas Greer", judge="exact")


@pytest.mark.parametrize("output, correct, verdict, stale", [
    ("## Answer: Mara Velez", True, "match", False),
    ("MARA VÉLEZ.", True, "match", False),
    ("The chair is Velez", True, "match", False),      # an accepted synonym
    ("Tomas Greer", False, "stale", True),
    ("Tomas Greer, then Mara Velez", False, "stale", False),  # both named: not the new only
    ("Marav Velezz", False, "mismatch", False),        # no whole-word occurrence
    ("", False, "mismatch", False),
])
def test_exact_and_stale(output: str, correct: bool, verdict: str, stale: bool) -> None:
    v = judge_exact(exact_item(), output)
    assert (v.correct, v.verdict) == (correct, verdict)
    assert is_stale(exact_item(), output) is stale


def test_exact_nested_old_and_new_values() -> None:
    nested = item(family="TempUpd", question="Where is the office?", gold="New Harbor City",
                  gold_before="New Harbor", judge="exact")
    assert judge_exact(nested, "In New Harbor City").correct  # old value only inside the new
    assert not judge_exact(nested, "In New Harbor").correct
    assert is_stale(nested, "In New Harbor")
    assert not is_stale(item(), "Yes")  # no gold_before: never stale


def test_normalize_text() -> None:
    assert normalize_text("The Café, a 1,000-seat hall!") == "cafe 1000 seat hall"


def test_dispatch_rejects_llm() -> None:
    with pytest.raises(SpecError, match="not deterministic"):
        judge_deterministic(item(judge="llm", gold="tea"), "tea")


# ---- LLM judge -------------------------------------------------------------------------------

@pytest.mark.parametrize("reply, label", [
    ("The key fact is present.\nMATCH", "MATCH"),
    ("It names a different person.\nNONMATCH", "NONMATCH"),
    ("MATCH? No: the wrong year.\nNONMATCH", "NONMATCH"),
    ("Not a MATCH.\nNON-MATCH", "NONMATCH"),
    ("NONMATCH at first glance, but on reflection: MATCH", None),  # the last line is no word
    ("The answer says it does not know.\n**REFUSAL**", "REFUSAL"),
    ("It is not a MATCH.", None),
    ("Verdict: MATCH.", "MATCH"),
    ("It does not match.", None),  # lowercase words are no verdict
    ("<think>MATCH</think>", None),
])
def test_parse_llm_verdict(reply: str, label: str | None) -> None:
    assert parse_llm_verdict(reply) == label


def llm_item(family: str = "RefRes", item_id: str = "p1") -> Item:
    return item(item_id=item_id, setting="persona", family=family, persona="u1",
                question="Which pastime does the user enjoy?", gold="crossword puzzles",
                judge="llm")


def test_llm_judge_verdicts_cache_and_refusal(tmp_path: Path) -> None:
    script = {"crosswords": "MATCH", "chess": "NONMATCH", "no idea": "REFUSAL"}
    model = ScriptedJudgeModel(script)
    cache = tmp_path / "judge.jsonl"
    judge = LLMJudge(model, cache)
    pairs = [(llm_item(), "Crosswords, so crosswords"), (llm_item(), "chess"),
             (llm_item(), "no idea"), (llm_item("BoundAbs", "p2"), "no idea"),
             (llm_item("BoundAbs", "p2"), "crosswords"),
             (llm_item(), "Crosswords, so crosswords")]  # repeated: judged once
    verdicts = asyncio.run(judge.judge_many(pairs))
    assert [v.correct for v in verdicts] == [True, False, False, True, False, True]
    assert [v.verdict for v in verdicts] == ["MATCH", "NONMATCH", "REFUSAL", "REFUSAL",
                                             "MATCH", "MATCH"]
    assert all(v.judge_model == "scripted-judge" for v in verdicts)
    assert all(v.judge_prompt_hash == LLM_JUDGE_PROMPT_HASH for v in verdicts)
    assert len(model.requests) == 5
    assert all(r.params.temperature == 0.0 for r in model.requests)
    bound = model.requests[3].messages[-1].content
    assert "crossword puzzles" not in bound  # BoundAbs compares against "nothing answers it"
    records = [json.loads(line) for line in cache.read_text().splitlines()]
    assert len(records) == 5
    assert {r["judge_prompt_hash"] for r in records} == {LLM_JUDGE_PROMPT_HASH}
    # A new judge over the same file answers from the cache, with no call.
    again = ScriptedJudgeModel({})
    replay = asyncio.run(LLMJudge(again, cache).judge_many(pairs))
    assert replay == verdicts
    assert again.requests == []
    # A changed output is a new key.
    asyncio.run(LLMJudge(again, cache).judge(llm_item(), "crosswords!"))
    assert len(again.requests) == 1


def test_llm_judge_failure_is_an_error(tmp_path: Path) -> None:
    judge = LLMJudge(ScriptedJudgeModel({}, fail=True), tmp_path / "c.jsonl")
    with pytest.raises(JudgeError, match="p1"):
        asyncio.run(judge.judge(llm_item(), "chess"))
    assert not (tmp_path / "c.jsonl").exists()


def test_llm_choice_reference_names_the_option() -> None:
    model = ScriptedJudgeModel({"B": "MATCH"})
    mc = choice_item().model_copy(update={"judge": "llm"})
    assert asyncio.run(LLMJudge(model).judge(mc, "B")).correct
    assert "option B: chess club" in model.requests[0].messages[-1].content


# ---- entry point -----------------------------------------------------------------------------

def test_judge_outputs_mixes_judges_in_sample_order() -> None:
    items = [item(), llm_item(), exact_item().model_copy(update={"item_id": "e"})]
    predictions = {"i1": ["Yes", "No", "Not sure"], "p1": ["crosswords", "chess", "x"],
                   "e": ["Mara Velez", "Tomas Greer", "Velez"]}
    # with a judge model, news TempUpd ("e") takes the Y/N judge (App. E.1)
    model = ScriptedJudgeModel({"crosswords": "MATCH", "Velez": "Y", "Greer": "N"})
    got = asyncio.run(judge_outputs(items, predictions, LLMJudge(model)))
    assert list(got) == ["i1", "p1", "e"]
    assert {v.judge for v in got["e"]} == {"yn"} and {v.judge for v in got["i1"]} == {"yesno"}
    assert [[v.correct for v in got[k]] for k in got] == [[True, False, False],
                                                         [True, False, False],
                                                         [True, False, True]]
    with pytest.raises(SpecError, match="'p1'"):
        judge_outputs_sync(items, predictions)
    only = judge_outputs_sync(items, {"i1": ["yes"]})  # llm item without predictions: fine
    assert list(only) == ["i1"]
