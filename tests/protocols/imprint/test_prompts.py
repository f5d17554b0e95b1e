"""How items are asked: the bare question by default (ImprintBench App. C.3), abstention
coaching only when asked for, and the style recorded in the run spec (docs/imprint.md §2)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from clstream.cli import main
from clstream.core import layout
from clstream.protocols.imprint import arguments
from clstream.protocols.imprint.prompts import PROMPT_STYLES, query_of
from clstream.protocols.imprint.schema import Item


def item(**fields: Any) -> Item:
    base: dict[str, Any] = {"item_id": "i1", "setting": "news", "family": "BoundAbs",
                            "question": "Did the council ban kite flying in March 2030?",
                            "gold": "No", "judge": "abstain"}
    return Item(**{**base, **fields})


def test_the_flag_offers_the_prompt_styles() -> None:
    assert arguments.PROMPT_STYLES == PROMPT_STYLES
    parser = argparse.ArgumentParser(prog="clstream")
    arguments.add_run_imprint_arguments(parser)
    args = parser.parse_args(["data", "--system", "oracle", "--out", "results"])
    assert args.prompt == "bare"
    assert parser.parse_args(["data", "--system", "oracle", "--out", "r", "--prompt",
                              "coached"]).prompt == "coached"
    with pytest.raises(SystemExit):
        parser.parse_args(["data", "--system", "oracle", "--out", "r", "--prompt", "x"])


def test_the_bare_prompt_is_the_question_without_coaching() -> None:
    query = query_of(item())
    assert query.prompt == layout.QUESTION_TEMPLATE.format(question=item().question).rstrip()
    text = (query.instructions + query.prompt).lower()
    assert "no record" not in text and "rather than guess" not in text
    assert "## answer" not in text


def test_the_coached_prompt_coaches_abstention_and_an_answer_line() -> None:
    query = query_of(item(), "coached")
    assert "no record of it rather than guessing" in query.instructions
    assert query.prompt.endswith("(for a yes/no question, Yes or No).")


@pytest.mark.parametrize(("fields", "bare_line"), [
    ({"setting": "persona", "family": "CompRel", "judge": "choice", "gold": "B",
      "options": ["tea", "coffee"]}, "Reply with the letter of one option."),
    ({"setting": "code", "family": "CompRel", "judge": "identifier", "gold": "np.unstack"},
     "Reply with only the Python identifier, without call parentheses, code fences or "
     "explanation."),
])
def test_reply_shapes_the_paper_prescribes_stay_in_the_bare_prompt(
        fields: dict[str, Any], bare_line: str) -> None:
    query = query_of(item(**fields))
    assert query.prompt.endswith(bare_line)
    if fields["judge"] == "choice":
        assert "A. tea\nB. coffee" in query.prompt


def test_an_unknown_style_is_refused() -> None:
    with pytest.raises(ValueError, match="prompt style 'loud'"):
        query_of(item(), "loud")


def test_the_style_is_in_the_run_spec_and_tells_the_summary_rows_apart(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, out = tmp_path / "data", tmp_path / "res"
    assert main(["generate", "imprint", "--setting", "news", "--size", "small", "--out",
                 str(data)]) == 0
    for style in PROMPT_STYLES:
        assert main(["run", "imprint", str(data), "--model", "builtin", "--samples", "1",
                     "--no-progress", "--out", str(out), "--system", "oracle", "--prompt",
                     style]) == 0
    capsys.readouterr()
    assert main(["summary", str(out), "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert sorted(r["meta"]["spec"]["params"]["prompt"] for r in runs) == ["bare", "coached"]
    assert len({r["run_id"] for r in runs}) == 2
    assert main(["summary", str(out)]) == 0
    rows = [line.split()[0:2] for line in capsys.readouterr().out.splitlines()
            if line.startswith("oracle")]
    assert sorted(rows) == [["oracle", "[coached]"], ["oracle", "news"]]
