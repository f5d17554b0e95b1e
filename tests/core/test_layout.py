"""The one prompt structure: placement of sections, the generic query fallback, the shared
memory-entry formats (tagged passages, experience blocks) and reading them back."""

from __future__ import annotations

import re

import pytest

from clstream.core import layout
from clstream.core.types import Query

OPTS = ("the kitchen", "the garden", "We cannot answer this question at this point")


def _ex(question: str, output: str, feedback: str, success: bool) -> layout.Experience:
    return layout.Experience(question, output, feedback, success)


def test_messages_are_instructions_then_sections_then_the_block() -> None:
    query = Query("q", "Which?", instructions="RULES", prompt="Question: Which?\nEnd.")
    system, user = layout.query_messages(query, ["Memory A:\nx\n", "", "  \n", "B\n\n"])
    assert (system.role, system.content) == ("system", "RULES")
    assert user.role == "user"
    assert user.content == "Memory A:\nx\n\nB\n\nQuestion: Which?\nEnd."
    _, bare = layout.query_messages(query, [])
    assert bare.content == "Question: Which?\nEnd."
    _, headed = layout.query_messages(query, ["M\n"], head_index=4)
    assert headed.content == "M\n\nCurrent head index: 4\nQuestion: Which?\nEnd."


def test_a_section_ending_in_a_blank_line_is_kept_byte_for_byte() -> None:
    empty_last = layout.passages_section([(0, "a"), (1, "  ")])
    assert empty_last.endswith("[chunk index 1]\n\n\n")
    assert layout.user_text([empty_last], "Q") == empty_last + "Q"
    assert layout.placed("x  \n") == "x\n\n"


def test_a_query_without_its_own_prompt_gets_the_generic_one() -> None:
    open_q = Query("q", "  Where is\nMara?  ")
    assert layout.instructions_of(open_q) == layout.DEFAULT_INSTRUCTIONS
    assert layout.prompt_of(open_q) == (
        "Question: Where is\nMara?\n" + layout.DEFAULT_OPEN_FORMAT)
    mc = Query("q", "Where?", options=OPTS, kind="mc")
    assert layout.prompt_of(mc) == (
        "Question: Where?\nOptions:\nA. the kitchen\nB. the garden\n"
        "C. We cannot answer this question at this point\n" + layout.DEFAULT_CHOICE_FORMAT)
    own = Query("q", "x", instructions="I", prompt="P")
    assert (layout.instructions_of(own), layout.prompt_of(own)) == ("I", "P")


def test_passages_are_tagged_and_read_back() -> None:
    passages = [(3, "First passage.\nSecond line."), (9, "Last one.")]
    memory = (layout.passages_section(passages[1:], layout.RECENT_HEADER)
              + layout.passages_section(passages[:1], layout.RETRIEVED_HEADER))
    query = Query("q", "Who holds the lamp?", options=OPTS, kind="mc")
    _, user = layout.query_messages(query, [memory], head_index=9)
    found, block = layout.split_prompt(user.content)
    assert sorted(layout.parse_passages(found)) == passages
    assert layout.parse_question(block) == ("Who holds the lamp?", list(OPTS))
    assert [int(m.group(1)) for m in layout.TAG_PATTERN.finditer(memory)] == [9, 3]


def test_text_before_the_first_tag_is_not_a_passage() -> None:
    memory = (layout.experiences_section([_ex("What is x?", "## Answer: 1", "Correct.", True)])
              + "\n\n" + layout.passages_section([(2, "Ada went to the mill.")]))
    assert layout.parse_passages(memory) == [(2, "Ada went to the mill.")]
    assert layout.parse_passages("Some story here.\n\n") == [(0, "Some story here.")]
    assert layout.parse_passages("") == []


def test_experience_block_shows_the_final_answer_and_puts_feedback_last() -> None:
    block = layout.experience_block(_ex(
        "What is  the code\nof Tiro?", "Reasoning 'quoted Tiro'.\n## Answer: 12",
        "Incorrect. The code of Tiro is 47. Correct answer: 47.", False))
    lines = block.strip().splitlines()
    assert lines[0].startswith("Past task:")
    assert [ln.split(":")[0] for ln in lines[-3:]] == ["Answer given", "Outcome", "Feedback"]
    assert "Answer given: 12" in block and "Outcome: wrong" in block and "quoted" not in block
    code = layout.experience_block(_ex("def f():\n    pass", "```python\ndef f():\n    return 1\n```",
                                       "Correct: the program passed all tests.", True))
    assert "```python\ndef f():\n    return 1\n```" in code and "Outcome: correct" in code
    assert layout.experiences_section([]) == ""


def test_clip_and_final_answer_text() -> None:
    assert layout.clip("x" * 50, 10) == "x" * 7 + "..."
    assert layout.final_answer_text("think\n**Answer**: B\nmore") == "B"
    assert layout.final_answer_text("no marker here") == "no marker here"
    assert layout.final_answer_text("## Answer:\n") == "## Answer:"


def test_experiences_are_read_back_in_sections_and_in_passages() -> None:
    shown = [_ex("What is the code of Tiro?", "## Answer: 12", "Incorrect. Correct answer: 47.",
                 False),
             _ex("def f():\n    pass", "def f():\n    return 2", "Correct.", True)]
    _, user = layout.query_messages(Query("q", "What is the code of Tiro?"),
                                    [layout.experiences_section(shown)])
    parsed = layout.parse_experiences(user.content)
    assert [(p.question, p.answer, p.success) for p in parsed] == [
        ("What is the code of Tiro?", "12", False),
        ("def f():\n    pass", "def f():\n    return 2", True)]
    assert parsed[0].feedback == "Incorrect. Correct answer: 47."
    as_passages = layout.passages_section(
        [(i, layout.experience_block(e)) for i, e in enumerate(shown)])
    assert layout.parse_experiences(as_passages) == parsed
    assert layout.current_question(user.content) == "What is the code of Tiro?"
    assert layout.current_question("no label") == ""


def test_fingerprints_track_template_text(monkeypatch: pytest.MonkeyPatch) -> None:
    first = layout.template_fingerprint()
    assert re.fullmatch(r"[0-9a-f]{64}", first)
    combined = layout.fingerprint(["A=1"])
    monkeypatch.setattr(layout, "PASSAGES_HEADER", layout.PASSAGES_HEADER + " ")
    assert layout.template_fingerprint() != first
    assert layout.fingerprint(["A=1"]) != combined
