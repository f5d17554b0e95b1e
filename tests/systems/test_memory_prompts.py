"""The memory methods' own prompts: parsers of update replies and the method fingerprint."""

from __future__ import annotations

from clstream.systems import memory_prompts


def test_update_reply_parsers() -> None:
    assert memory_prompts.parse_cheatsheet(
        "x <cheatsheet> a\nb </cheatsheet> <cheatsheet></cheatsheet>") == "a\nb"
    assert memory_prompts.parse_cheatsheet("## Answer: Unknown") is None
    assert memory_prompts.parse_workflows(
        "WORKFLOW: find :: a; b\n- workflow: two :: c\n## Answer: x"
    ) == ["find :: a; b", "two :: c"]
    assert memory_prompts.parse_reflection("Closest statement.\n## Answer: 4") is None
    assert memory_prompts.parse_reflection("REFLECTION: check the unit.") == "check the unit."
    assert memory_prompts.parse_insights("INSIGHT: a\n* insight: b\nnot one") == ["a", "b"]


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
    ops = memory_prompts.parse_rule_ops(reply)
    assert ops == [
        memory_prompts.RuleOp("ADD", None, "Read the question twice."),
        memory_prompts.RuleOp("EDIT", 2, "Prefer exact units."),
        memory_prompts.RuleOp("REMOVE", 1, ""),
        memory_prompts.RuleOp("AGREE", 4, ""),
    ]
    assert memory_prompts.parse_rule_ops("## Answer: Unknown") == []


def test_method_prompts_name_no_protocol_and_fingerprint_tracks_them() -> None:
    texts = [getattr(memory_prompts, name) for name in memory_prompts._TEMPLATE_NAMES]
    assert not any("OAKS" in t or "SeqMem" in t for t in texts)
    first = memory_prompts.template_fingerprint()
    saved = memory_prompts.CURATOR_PROMPT
    try:
        memory_prompts.CURATOR_PROMPT = saved + " "
        assert memory_prompts.template_fingerprint() != first
    finally:
        memory_prompts.CURATOR_PROMPT = saved
