"""The SeqMem prompt layout, the parsers of update replies, and reading exemplars back."""

from __future__ import annotations

from clstream.core.types import Query
from clstream.systems import memory_prompts as P


def _ex(question: str, output: str, feedback: str, success: bool) -> P.Exemplar:
    return P.Exemplar(question, output, feedback, success)


def _prompt(exemplars: list[P.Exemplar], question: str) -> str:
    messages = P.solver_messages([P.exemplars_section(exemplars)],
                                 Query(id="q", text=question, kind="synthetic"))
    assert [m.role for m in messages] == ["system", "user"]
    return messages[1].content


def test_solver_layout_puts_memory_first_and_the_question_last() -> None:
    query = Query(id="q1", text="Which is heavier?", options=("a feather", "a stone"), kind="mc")
    sections = [P.list_section(P.RULES_HEADER, ["Check units first."]), ""]
    user = P.solver_messages(sections, query)[1].content
    assert user.index(P.RULES_HEADER) < user.index("Question: Which is heavier?")
    assert "A. a feather\nB. a stone\n" in user
    assert user.rstrip().endswith(P.KIND_INSTRUCTIONS["mc"])
    bare = P.solver_messages([], Query(id="q2", text="2+2?", kind="math"))[1].content
    assert bare.startswith("Question: 2+2?") and "\\boxed" in bare
    assert P.solver_messages([], Query(id="q3", text="x", kind="other"))[1].content.endswith(
        P.DEFAULT_INSTRUCTION)


def test_exemplar_block_shows_the_final_answer_and_puts_feedback_last() -> None:
    block = P.exemplar_block(_ex("What is  the code\nof Tiro?", "Reasoning 'quoted Tiro'.\n## Answer: 12",
                                 "Incorrect. The code of Tiro is 47. Correct answer: 47.", False))
    lines = block.strip().splitlines()
    assert lines[0] == "Past task: What is  the code" or lines[0].startswith("Past task:")
    assert [ln.split(":")[0] for ln in lines[-3:]] == ["Answer given", "Outcome", "Feedback"]
    assert "Answer given: 12" in block and "Outcome: wrong" in block and "quoted" not in block
    code = P.exemplar_block(_ex("def f():\n    pass", "```python\ndef f():\n    return 1\n```",
                                "Correct: the program passed all tests.", True))
    assert "```python\ndef f():\n    return 1\n```" in code and "Outcome: correct" in code


def test_clip_and_final_answer_text() -> None:
    assert P.clip("x" * 50, 10) == "x" * 7 + "..."
    assert P.final_answer_text("think\n**Answer**: B\nmore") == "B"
    assert P.final_answer_text("no marker here") == "no marker here"
    assert P.final_answer_text("## Answer:\n") == "## Answer:"


def test_update_reply_parsers() -> None:
    assert P.parse_cheatsheet("x <cheatsheet> a\nb </cheatsheet> <cheatsheet></cheatsheet>") == "a\nb"
    assert P.parse_cheatsheet("## Answer: Unknown") is None
    assert P.parse_workflows("WORKFLOW: find :: a; b\n- workflow: two :: c\n## Answer: x") == [
        "find :: a; b", "two :: c"]
    assert P.parse_reflection("Closest statement.\n## Answer: 4") is None
    assert P.parse_reflection("REFLECTION: check the unit.") == "check the unit."
    assert P.parse_insights("INSIGHT: a\n* insight: b\nnot one") == ["a", "b"]


def test_rule_operations_parse_only_well_formed_lines() -> None:
    reply = (
        "ADD: Read the question twice.\n"
        "- EDIT 2: Prefer exact units.\n"
        "3. REMOVE 1\n"
        "AGREE rule #4\n"
        "EDIT: missing number\n"
        "REMOVE\n"
        "## Answer: ADD\n"
        "Closest statement (chunk index 0): 'ADD: not a line start'.\n"
    )
    ops = P.parse_rule_ops(reply)
    assert ops == [
        P.RuleOp("ADD", None, "Read the question twice."),
        P.RuleOp("EDIT", 2, "Prefer exact units."),
        P.RuleOp("REMOVE", 1, ""),
        P.RuleOp("AGREE", 4, ""),
    ]
    assert P.parse_rule_ops("## Answer: Unknown") == []


def test_parse_exemplars_round_trips_the_layout() -> None:
    shown = [_ex("What is the code of Tiro?", "## Answer: 12", "Incorrect. Correct answer: 47.", False),
             _ex("def f():\n    pass", "def f():\n    return 2", "Correct.", True)]
    parsed = P.parse_exemplars(_prompt(shown, "What is the code of Tiro?"))
    assert [(p.question, p.answer, p.success) for p in parsed] == [
        ("What is the code of Tiro?", "12", False),
        ("def f():\n    pass", "def f():\n    return 2", True)]
    assert parsed[0].feedback == "Incorrect. Correct answer: 47."


def test_stated_answer() -> None:
    assert P.stated_answer("Incorrect. The code of Tiro is 47. Correct answer: 47.") == "47"
    assert P.stated_answer("Incorrect: 3 is wrong. The correct answer is 3.5.") == "3.5"
    assert P.stated_answer("Correct. The word means river. Correct answer: river.") == "river"
    assert P.stated_answer("Correct.") is None


def test_recall_answer_uses_the_matching_exemplar_only() -> None:
    shown = [
        _ex("What is the vault code of Tirovan?", "## Answer: Unknown",
            "Incorrect. The vault code of Tirovan is 4721. Correct answer: 4721.", False),
        _ex("What is the vault code of Bresk?", "## Answer: Unknown",
            "Incorrect. The vault code of Bresk is 1111. Correct answer: 1111.", False),
        _ex("How many zaps make 3 brous?", "## Answer: 12", "Correct.", True),
    ]
    assert P.recall_answer(_prompt(shown, "What is the vault code of Tirovan?")) == "4721"
    assert P.recall_answer(_prompt(shown, "Tell me the vault code that belongs to Bresk.")) == "1111"
    assert P.recall_answer(_prompt(shown, "How many zaps make 3 brous?")) == "12"
    # a different number, a different name, or nothing shown: no recall
    assert P.recall_answer(_prompt(shown, "How many zaps make 4 brous?")) is None
    assert P.recall_answer(_prompt(shown, "What is the vault code of Quill?")) is None
    assert P.recall_answer(_prompt([], "What is the vault code of Tirovan?")) is None
    # a wrong attempt that states no answer is skipped for an older one that does
    later = [*shown, _ex("What is the vault code of Tirovan?", "## Answer: 9", "Incorrect.", False)]
    assert P.recall_answer(_prompt(later, "What is the vault code of Tirovan?")) == "4721"


def test_template_fingerprint_is_stable_and_sensitive() -> None:
    first = P.template_fingerprint()
    assert first == P.template_fingerprint() and len(first) == 64
    saved = P.SOLVER_SYSTEM
    try:
        P.SOLVER_SYSTEM = saved + " "
        assert P.template_fingerprint() != first
    finally:
        P.SOLVER_SYSTEM = saved
