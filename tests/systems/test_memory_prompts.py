"""The memory methods' own prompts: parsers of update replies and the method fingerprint."""

from __future__ import annotations

from clstream.systems import memory_prompts as P


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


def test_method_prompts_name_no_protocol_and_fingerprint_tracks_them() -> None:
    texts = [getattr(P, name) for name in P._TEMPLATE_NAMES]
    assert not any("OAKS" in t or "SeqMem" in t for t in texts)
    first = P.template_fingerprint()
    saved = P.CURATOR_PROMPT
    try:
        P.CURATOR_PROMPT = saved + " "
        assert P.template_fingerprint() != first
    finally:
        P.CURATOR_PROMPT = saved
