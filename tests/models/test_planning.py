"""The planning model's counts (docs/plan.md §2): a local tokenizer's chat template, or the
approximate tokenizer with its per-message template tokens; builtin replies; send order."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from clstream.core.types import GenerationRequest, Message, SamplingParams
from clstream.models.planning import (
    APPROX_TOKENS_PER_MESSAGE,
    BLOCK_SIZE,
    PARAGRAPH_RUN,
    ChatTokens,
    PlannedRequest,
    PlanningModel,
    ReplySample,
    RequestLog,
    planning_tokens,
)
from clstream.models.prefix_cache_sim import PrefixCacheSim
from clstream.models.tokenizers import approx_tokenizer

MESSAGES = (Message(role="system", content="You answer briefly."),
            Message(role="user", content="Where is the red ball now?"))


def _word_tokenizer(folder: Path, template: str | None) -> Path:
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.train_from_iterator([" ".join(m.content for m in MESSAGES)],
                            tokenizers.trainers.WordLevelTrainer(special_tokens=["<unk>", "<s>"]))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")
    if template is not None:
        fast.chat_template = template
    fast.save_pretrained(folder)
    return folder


def test_the_approximation_adds_template_tokens_per_message() -> None:
    tokens = planning_tokens("openai", "m", None)
    expected = sum(approx_tokenizer().count(m.content) + APPROX_TOKENS_PER_MESSAGE
                   for m in MESSAGES)
    assert len(tokens(MESSAGES)) == expected
    assert len(planning_tokens("builtin", None, None)(MESSAGES)) == \
        expected - 2 * APPROX_TOKENS_PER_MESSAGE
    # Equal message prefixes give equal token prefixes (what prefix caching needs).
    longer = tokens((*MESSAGES, Message(role="assistant", content="In the garden.")))
    assert longer[:expected] == tokens(MESSAGES)


def test_a_local_tokenizer_counts_its_chat_template(tmp_path: Path) -> None:
    template = ("{% for m in messages %}<s> {{ m['role'] }} {{ m['content'] }} {% endfor %}"
                "{% if add_generation_prompt %}<s> assistant{% endif %}")
    folder = _word_tokenizer(tmp_path / "tok", template)
    tokens = planning_tokens("openai", "m", str(folder))
    assert tokens.describe()["chat_template"] == "the model's own"
    plain = 4 + 7  # words and punctuation: "You answer briefly ." and "Where ... now ?"
    assert len(tokens(MESSAGES)) == plain + 2 * 2 + 2  # <s> role per message, <s> assistant
    assert len(tokens.blocked(MESSAGES)) == len(tokens(MESSAGES))
    bare = planning_tokens("hf", str(_word_tokenizer(tmp_path / "bare", None)), None)
    assert len(bare(MESSAGES)) == plain


def test_requests_are_answered_as_the_builtin_does_and_logged_in_order() -> None:
    log = RequestLog()
    model = PlanningModel("openai:m", planning_tokens("openai", "m", None), log)
    params = SamplingParams(max_tokens=40, n=2)
    requests = [GenerationRequest(key=f"q{i}", messages=MESSAGES, params=params,
                                  stage="update" if i else "generate") for i in range(3)]
    results = asyncio.run(model.generate(requests))
    assert [r.stage for r in log.requests] == ["generate", "update", "update"]
    assert all(r.max_completion_tokens == 80 for r in log.requests)
    text = results[0].samples[0].text
    assert "## Answer:" in text
    assert log.requests[0].expected_completion_tokens == 2 * approx_tokenizer().count(text)
    assert results[0].usage.prompt_tokens == log.requests[0].prompt_tokens


def test_blocked_prompts_hash_the_tokens_of_the_whole_prompt() -> None:
    tokens = planning_tokens("openai", "m", None)
    context = "".join(f"[chunk index {i}]\nMary went to room {i}.\n\n" for i in range(40))
    for question in ("Question: where is Mary?", "\n\nQuestion: who?\n\nAnswer briefly."):
        messages = (MESSAGES[0], Message(role="user", content=context + question))
        whole = tokens(messages)
        blocked = tokens.blocked(messages)
        assert len(blocked) == len(whole)
        assert blocked.blocks() == PrefixCacheSim(1, BLOCK_SIZE).block_hashes(whole)


def test_whitespace_at_a_message_end_is_no_token_before_the_next() -> None:
    """A message's trailing whitespace belongs to no piece; the next message's marker or
    first piece comes right after its last piece, in the blocks as in the tokens."""
    for overhead in (0, 3):
        tokens = ChatTokens(approx_tokenizer(), overhead)
        for system in ("Answer briefly.", "Answer briefly. \n\n", "  Answer\tbriefly.\n"):
            for user in ("Where is Mary?", "\n\nWhere is Mary?  ", "Where\n\nis Mary?\n"):
                messages = (Message(role="system", content=system * 5),
                            Message(role="user", content=user * 7))
                whole = tokens(messages)
                blocked = tokens.blocked(messages)
                assert len(blocked) == len(whole)
                assert blocked.blocks() == PrefixCacheSim(1, BLOCK_SIZE).block_hashes(whole)


def test_a_kept_head_is_reused_only_for_the_same_context() -> None:
    tokens = planning_tokens("openai", "m", None)
    context = "".join(f"[chunk index {i}]\nMary went to room {i}.\n\n" for i in range(40))
    other = "J" + context[1:]  # as long, and equal but for its first character
    for text in (context + "Q: where?", context + "Q: who?", other + "Q: who?",
                 context[:-40] + "Q: who?", context + "Q: where?"):
        messages = (MESSAGES[0], Message(role="user", content=text))
        assert tokens.blocked(messages).blocks() == PrefixCacheSim(1, BLOCK_SIZE).block_hashes(
            tokens(messages))


def test_a_reply_sample_is_bounded_and_evenly_spread() -> None:
    log = RequestLog()
    sample = ReplySample(expected=1000, most=128)
    assert sample.stride == 8
    for position in range(1000):
        read = sample.take()
        log.requests.append(PlannedRequest("m", "generate", (1,), 1, 1 if read else None))
        if read:
            sample.keep(position, log)
    read_at = [i for i, r in enumerate(log.requests) if r.expected_completion_tokens is not None]
    assert read_at == list(range(0, 1000, 8))
    # A run longer than expected: the sample is thinned to twice the stride, never over 128.
    for position in range(1000, 3000):
        read = sample.take()
        log.requests.append(PlannedRequest("m", "generate", (1,), 1, 1 if read else None))
        if read:
            sample.keep(position, log)
    read_at = [i for i, r in enumerate(log.requests) if r.expected_completion_tokens is not None]
    assert len(read_at) <= 128 and sample.stride == 32
    assert read_at == list(range(0, 3000, 32))


def test_outside_the_sample_the_reply_is_empty_and_not_counted() -> None:
    log = RequestLog(sample=ReplySample(expected=4, most=2))
    model = PlanningModel("openai:m", planning_tokens("openai", "m", None), log)
    requests = [GenerationRequest(key=f"q{i}", messages=MESSAGES, params=SamplingParams())
                for i in range(4)]
    results = asyncio.run(model.generate(requests))
    assert [r.expected_completion_tokens is not None for r in log.requests] == [
        True, False, True, False]
    assert results[1].samples[0].text == "" and "## Answer:" in results[0].samples[0].text
    assert all(r.prompt_tokens == log.requests[0].prompt_tokens for r in log.requests)


def test_a_long_context_is_cut_into_runs_at_paragraph_breaks_the_same_way_each_time() -> None:
    from clstream.models.planning import _paragraph_runs

    chunks = [f"[chunk index {i}]\n" + " ".join(f"Mary went to room {i}-{j}." for j in range(30))
              + "\n\n" for i in range(30)]
    short, longer = "".join(chunks[:20]), "".join(chunks)
    runs = _paragraph_runs(longer)
    assert "".join(runs) == longer and len(runs) > 3
    assert all(len(r) >= PARAGRAPH_RUN for r in runs[:-1])
    assert all(r.startswith("\n\n") for r in runs[1:])
    assert _paragraph_runs(short)[:-1] == runs[:len(_paragraph_runs(short)) - 1]
    tokens = planning_tokens("openai", "m", None)
    for context in (short, longer, short):  # the next interval's context, then back
        for question in ("Q: where is Mary?", "Q: who?"):
            messages = (MESSAGES[0], Message(role="user", content=context + question))
            assert tokens.blocked(messages).blocks() == PrefixCacheSim(
                1, BLOCK_SIZE).block_hashes(tokens(messages))
            assert len(tokens.blocked(messages)) == len(tokens(messages))


def test_prompt_parts_are_counted_as_the_messages_they_make() -> None:
    """``blocked_parts`` counts and hashes a prompt from its parts exactly as ``blocked``
    does the messages the run sends from them (docs/plan.md §2): shared sections, a section
    placed by the layout's rule, blank sections, a head line, and a section met again."""
    from clstream.core import layout
    from clstream.models.prompt_parts import Section, messages_of, parts_of
    from clstream.protocols.oaks.runner import make_query

    tokens = planning_tokens("openai", "m", None)
    blocks = [layout.passage_block(i, f"Mary went to room {i}. " * (i * 7 % 50 + 1))
              for i in range(30)]
    context = Section((layout.PASSAGES_HEADER, *blocks))
    unplaced = Section(("A header with no blank line", " and its tail"))
    cases: list[tuple[list[Section], int | None]] = [
        ([context], None), ([context], None),  # the same section object again
        ([Section((layout.RECENT_HEADER, *blocks[:3])),
          Section((layout.RETRIEVED_HEADER, blocks[5], blocks[9]))], 7),
        ([unplaced, Section(("  ",)), context], 2), ([], None)]
    for sections, head in cases:
        for query in (make_query("q1", "Where is Mary?", (), 3),
                      make_query("q2", "Which is it?", ("a b", "c"), 3)):
            parts = parts_of(query, sections, head, 10, 1)
            messages = messages_of(parts)
            assert messages == layout.query_messages(query, [s.text for s in sections], head)
            whole = tokens(messages)
            counted = tokens.blocked_parts(parts)
            assert len(counted) == len(whole)
            assert counted.blocks() == PrefixCacheSim(1, BLOCK_SIZE).block_hashes(whole)
    builtin = planning_tokens("builtin", None, None)  # no template tokens: the same holds
    parts = parts_of(make_query("q1", "Where?", (), 1), [context], None, 10, 1)
    assert builtin.blocked_parts(parts).blocks() == PrefixCacheSim(
        1, BLOCK_SIZE).block_hashes(builtin(messages_of(parts)))


def test_a_local_tokenizer_does_not_count_from_parts(tmp_path: Path) -> None:
    """A chat template is applied to whole messages, so a plan with one runs every run."""
    folder = _word_tokenizer(tmp_path / "tok", None)
    assert not planning_tokens("hf", str(folder), None).counts_parts
    assert planning_tokens("openai", "m", None).counts_parts


def test_a_spread_sample_has_no_period() -> None:
    """Requests walked in stream order repeat the same 40 questions at every interval: the
    sample reaches most of them, where a stride of 38 keeps landing on even ones."""
    from clstream.models.planning import spread_sample

    assert spread_sample(20, 32) == list(range(20))
    picked = spread_sample(4800, 32)
    assert len(picked) == len(set(picked)) >= 30 and all(0 <= i < 4800 for i in picked)
    assert picked == sorted(picked) and picked == spread_sample(4800, 32)  # deterministic
    assert len({i % 40 for i in picked}) >= 20
    assert len({i // 40 for i in picked}) >= 25  # and most intervals
