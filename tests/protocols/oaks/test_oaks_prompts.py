"""The OAKS protocol's rules and question block, and whole OAKS prompts over a context."""

import re

import pytest

from clstream.core import layout
from clstream.core.types import Query
from clstream.protocols.oaks import prompts

OPTS = ("the kitchen", "the garden", "We cannot answer this question at this point")


def test_prompts_system_message_states_the_rules() -> None:
    text = prompts.SYSTEM_PROMPT
    for needle in ("Unknown", "Same", "## Answer:", "latest", "cannot be"):
        assert needle in text
    assert "{" not in text  # nothing left unformatted


def test_prompts_layout_context_first_question_last() -> None:
    context = prompts.context_text([(0, "Mara went to the hall."), (1, "Tobin ran home.")])
    messages = prompts.build_messages(context, Query("q1@2", "Where is Mara?"))
    assert [m.role for m in messages] == ["system", "user"]
    user = messages[1].content
    assert user.startswith(context)
    assert user.index("[chunk index 0]") < user.index("[chunk index 1]") < user.index("Question:")
    assert user.rstrip().endswith("'## Answer: <one or two words>'.")
    assert "Options:" not in user


def test_prompts_options_are_lettered_and_head_index_shown() -> None:
    query = Query("q@3", "Where is\n Mara?", options=OPTS, kind="mc")
    block = prompts.question_text(query, head_index=7)
    assert block.startswith("Current head index: 7\nQuestion: Where is Mara?\n")
    assert "A. the kitchen\nB. the garden\nC. We cannot answer" in block
    assert block.endswith("'## Answer: <letter>'.")


def test_prompts_shared_prefix_identical_across_questions() -> None:
    context = prompts.context_text([(0, "a b c"), (1, "d e f")])
    users = [
        prompts.build_messages(context, q)[1].content
        for q in (Query("x", "Who?"), Query("y", "Where is it?", options=OPTS, kind="mc"))
    ]
    cut = [u.rindex("\nQuestion:") + 1 for u in users]
    assert users[0][: cut[0]] == users[1][: cut[1]] == context
    system = {prompts.build_messages(context, Query("z", "q"))[0].content for _ in range(2)}
    assert system == {prompts.SYSTEM_PROMPT}


def test_prompts_context_grows_by_appending() -> None:
    chunks = [(i, f"chunk text {i}.") for i in range(4)]
    texts = [prompts.context_text(chunks[:t]) for t in range(1, 5)]
    for earlier, later in zip(texts, texts[1:], strict=False):
        assert later.startswith(earlier)


def test_prompts_split_context_puts_window_before_retrieved() -> None:
    text = prompts.split_context_text([(5, "new")], [(1, "old")])
    assert text.index(layout.RECENT_HEADER) < text.index(layout.RETRIEVED_HEADER)
    assert layout.RETRIEVED_HEADER not in prompts.split_context_text([(0, "x")], [])


def test_prompts_parsing_inverts_the_layout() -> None:
    passages = [(3, "First passage.\nSecond line."), (9, "Last one.")]
    context = prompts.split_context_text(passages[1:], passages[:1])
    query = Query("q", "Who holds the lamp?", options=OPTS, kind="mc")
    user = prompts.build_messages(context, query, head_index=9)[1].content
    ctx, block = layout.split_prompt(user)
    assert sorted(layout.parse_passages(ctx)) == passages
    assert layout.parse_question(block) == ("Who holds the lamp?", list(OPTS))


def test_prompts_parsing_untagged_text() -> None:
    ctx, block = layout.split_prompt("Some story here.\n\nWhere is Ada?")
    assert layout.parse_passages(ctx) == [(0, "Some story here.")]
    assert layout.parse_question(block) == ("Where is Ada?", [])
    assert layout.parse_passages("") == []


def test_prompts_fingerprint_tracks_template_text(monkeypatch: pytest.MonkeyPatch) -> None:
    first = prompts.template_fingerprint()
    assert re.fullmatch(r"[0-9a-f]{64}", first)
    assert prompts.template_fingerprint() == first
    monkeypatch.setattr(prompts, "SYSTEM_PROMPT", prompts.SYSTEM_PROMPT + " ")
    assert prompts.template_fingerprint() != first
    assert prompts.PROMPT_TEMPLATE_VERSION


def test_runner_queries_carry_the_rules_and_the_question_block() -> None:
    from clstream.protocols.oaks.runner import make_query

    query = make_query("q7", "Where is\n Mara?", OPTS, 3)
    assert query.id == "q7@3" and query.kind == "mc"
    assert query.instructions == prompts.SYSTEM_PROMPT
    assert query.prompt == prompts.question_text(Query("x", "Where is Mara?", options=OPTS))
    assert layout.instructions_of(query) == prompts.SYSTEM_PROMPT
