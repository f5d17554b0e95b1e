"""The simulated block prefix cache on hand-computed cases, plus properties on random prompts."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clstream.models.prefix_cache_sim import (
    START,
    UNBOUNDED,
    BlockedPrompt,
    BlockHasher,
    PrefixCacheSim,
    TemplateMarker,
    approx_tokens,
    render_chat,
    replay,
)
from clstream.models.tokenizers import approx_tokenizer


def costs(sim: PrefixCacheSim, prompts: list[list[int]]) -> list[int]:
    return [sim.add(p) for p in prompts]


def test_shared_prefix_hits_and_tails_are_always_computed() -> None:
    stats = replay([[1, 2, 3, 4, 5], [1, 2, 3, 4, 6, 7, 8]], capacity_blocks=10, block_size=2)
    # first: blocks (1,2) (3,4) + tail 5 -> 5; second: two hits, block (6,7) + tail 8 -> 3
    assert stats.requests == 2
    assert stats.prompt_tokens == 12
    assert stats.computed_tokens == 8
    assert stats.cached_tokens == 4
    assert stats.hit_rate == pytest.approx(4 / 12)
    # three distinct blocks (6 tokens) plus two one-token tails
    assert stats.lower_bound_tokens == 8
    assert stats.ratio == 1.0


def test_chained_hash_same_block_elsewhere_does_not_hit() -> None:
    sim = PrefixCacheSim(capacity_blocks=100, block_size=2)
    assert costs(sim, [[1, 2, 3, 4], [3, 4], [9, 9, 3, 4], [1, 2, 3, 4]]) == [4, 2, 4, 0]
    # (1,2) (1,2)->(3,4) (3,4) (9,9) (9,9)->(3,4): five distinct blocks
    assert sim.stats().lower_bound_tokens == 10


def test_a_miss_in_the_middle_stops_reuse() -> None:
    sim = PrefixCacheSim(capacity_blocks=100, block_size=2)
    assert costs(sim, [[1, 2, 3, 4, 5, 6], [1, 2, 7, 7, 5, 6]]) == [6, 4]


def test_lru_eviction_order() -> None:
    sim = PrefixCacheSim(capacity_blocks=2, block_size=2)
    a, b, c = [1, 2], [3, 4], [5, 6]
    # a, b fill the cache; a is touched (hit); c evicts b, the least recently used;
    # b then misses and evicts a; a misses.
    assert costs(sim, [a, b, a, c, b, a]) == [2, 2, 0, 2, 2, 2]
    assert sim.stats().lower_bound_tokens == 6


def test_tail_blocks_are_evicted_before_the_head() -> None:
    sim = PrefixCacheSim(capacity_blocks=3, block_size=2)
    # [1,2,3,4] leaves head (1,2) and tail (1,2)->(3,4); two one-block prompts push one
    # block out: the tail, so the head still hits and only the tail is recomputed.
    assert costs(sim, [[1, 2, 3, 4], [5, 6], [7, 8], [1, 2], [1, 2, 3, 4]]) == [4, 2, 2, 0, 2]


def test_hit_blocks_are_not_evicted_by_their_own_prompt() -> None:
    sim = PrefixCacheSim(capacity_blocks=3, block_size=2)
    # cache: (1,2) then (5,6) and (7,8) more recent. [1,2,9,9] hits (1,2), which is the least
    # recently used block, and must stay: its new block evicts (5,6) instead.
    assert costs(sim, [[1, 2], [5, 6], [7, 8], [1, 2, 9, 9], [1, 2], [7, 8], [5, 6]]) == [
        2, 2, 2, 2, 0, 0, 2,
    ]


def test_a_prompt_larger_than_the_cache_keeps_its_head() -> None:
    sim = PrefixCacheSim(capacity_blocks=2, block_size=2)
    assert costs(sim, [[1, 2, 3, 4, 5, 6], [1, 2, 3, 4], [1, 2, 3, 4, 5, 6]]) == [6, 0, 2]


def test_text_prompts_use_the_approx_tokenizer_pieces() -> None:
    texts = [
        "Mary went to the kitchen.",
        "Extraordinarily long words split, every five characters: antidisestablishment!",
        "a.b a . b\n\n\nNew paragraph, after blank lines.\n\n  indented one\n\nlast",
        "",
        "   \n\n  ",
    ]
    tok = approx_tokenizer()
    for text in texts:
        assert len(approx_tokens(text)) == tok.count(text)
    assert approx_tokens("a.b") != approx_tokens("a . b")  # whitespace is part of identity
    head = "Context first.\n\n[chunk index 0]\nsome passage text here\n\n"
    whole = approx_tokens(head + "Question: where?")
    assert whole[: len(approx_tokens(head))] == approx_tokens(head)
    stats = replay([head + "Question: where?", head + "Question: who?"], 100, block_size=4)
    assert stats.computed_tokens < stats.prompt_tokens


def test_render_chat_keeps_message_prefixes() -> None:
    system = {"role": "system", "content": "rules"}
    one = render_chat([system, {"role": "user", "content": "context A\n\nQuestion: x"}])
    two = render_chat([system, {"role": "user", "content": "context A\n\nQuestion: y"}])
    assert os.path.commonprefix([one, two]) == one[: one.rindex("x")]
    assert one.startswith("<|system|>\nrules\n") and one.endswith("<|assistant|>\n")


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="capacity_blocks"):
        PrefixCacheSim(0)
    with pytest.raises(ValueError, match="block_size"):
        PrefixCacheSim(4, block_size=0)


prompt_lists = st.lists(st.lists(st.integers(0, 3), max_size=14), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(prompts=prompt_lists, capacity=st.integers(1, 6), block=st.integers(1, 3))
def test_bounds_hold_for_any_order(prompts: list[list[int]], capacity: int, block: int) -> None:
    stats = replay(prompts, capacity, block)
    assert stats.lower_bound_tokens <= stats.computed_tokens <= stats.prompt_tokens
    assert replay(list(reversed(prompts)), capacity, block).lower_bound_tokens == (
        stats.lower_bound_tokens
    )
    # a cache that can hold everything computes exactly the lower bound
    big = replay(prompts, 10_000, block)
    assert big.computed_tokens == big.lower_bound_tokens == stats.lower_bound_tokens


def _text(tokens: list[int]) -> str:
    """A text whose approximate pieces stand for ``tokens`` one to one ("w3", " w0", ...)."""
    return " ".join(f"w{t}" for t in tokens)


MARKERS = [TemplateMarker("<|user|>"), TemplateMarker("<|sep|>")]


def _blocked(tokens: list[int], block: int, cuts: list[int], marked: bool) -> BlockedPrompt:
    """The text of ``tokens`` hashed as segments cut before the pieces at ``cuts`` (so each
    segment but the first opens with whitespace), after the template markers where
    ``marked``, through one hasher's memo."""
    hasher, pieces, state = BlockHasher(block), [], START
    count = 0
    if marked:
        blocks, state = hasher.fold(state, MARKERS)
        pieces += [blocks] if blocks else []
        count += len(MARKERS)
    text = _text(tokens)
    at = sorted({c % (len(tokens) + 1) for c in cuts} - {0, len(tokens)})
    offsets = [0, *(len(_text(tokens[:c])) for c in at), len(text)]
    for start, end in zip(offsets, offsets[1:], strict=False):
        blocks, n, state = hasher.segment(state, text[start:end])
        pieces += [blocks] if blocks else []
        count += n
    return BlockedPrompt(tuple(pieces), count)


@settings(max_examples=200, deadline=None)
@given(prompts=prompt_lists, capacity=st.integers(1, 6), block=st.integers(1, 3),
       cuts=st.lists(st.integers(0, 20), max_size=4), marked=st.booleans())
def test_blocked_prompts_cost_what_their_tokens_cost(
        prompts: list[list[int]], capacity: int, block: int, cuts: list[int],
        marked: bool) -> None:
    tokens = [[*(MARKERS if marked else []), *approx_tokens(_text(p))] for p in prompts]
    blocked = [_blocked(p, block, cuts, marked) for p in prompts]
    for p, t, b in zip(prompts, tokens, blocked, strict=True):
        assert len(t) == len(b) == len(p) + (len(MARKERS) if marked else 0)
        assert b.blocks() == PrefixCacheSim(1, block).block_hashes(t)
    for size in (capacity, UNBOUNDED):
        tokens_sim, blocked_sim = PrefixCacheSim(size, block), PrefixCacheSim(size, block)
        assert [tokens_sim.add(t) for t in tokens] == [blocked_sim.add(b) for b in blocked]
        assert tokens_sim.stats() == blocked_sim.stats()


def test_a_block_of_pieces_is_its_text_and_a_marker_is_no_text() -> None:
    """Blocks of pieces are identified by their text (a text is cut into pieces one way), so
    equal texts are equal blocks and unequal pieces unequal ones; a template marker is a
    token no text becomes, not even the marker's own characters written in a message."""
    sim = PrefixCacheSim(1, 4)
    same = "Mary went to the hallway"
    assert sim.block_hashes(approx_tokens(same)) == sim.block_hashes(approx_tokens(same))
    assert sim.block_hashes(approx_tokens("ab cd.ef gh")) != sim.block_hashes(
        approx_tokens("ab cd .ef gh"))
    user, sep = TemplateMarker("<|user|>"), TemplateMarker("<|sep|>")
    marked = sim.block_hashes([user, *approx_tokens("a b c d e f g")])
    written = sim.block_hashes(approx_tokens("<|user|>a b c d e f g"))
    assert len(marked) == 2 and len(written) == 3 and not set(marked) & set(written)
    # A marker and a written marker traded places: the same text, the same token count.
    traded = sim.block_hashes([user, *approx_tokens("<|sep|>x y")])
    other = sim.block_hashes([*approx_tokens("<|user|>"), sep, *approx_tokens("x y")])
    assert "".join([user, *approx_tokens("<|sep|>x y")]) == "".join(
        [*approx_tokens("<|user|>"), sep, *approx_tokens("x y")])
    assert len(traded) == len(other) == 2 and traded[0] != other[0]
    hasher = BlockHasher(4)
    blocks, state = hasher.fold(START, [user])
    more, _, _ = hasher.segment(state, "a b c d e f g")
    assert [*blocks, *more] == marked


def test_a_segment_met_again_in_the_same_state_is_looked_up() -> None:
    hasher = BlockHasher(4)
    context = "passage " * 100
    first = hasher.segment(START, context)
    assert hasher.segment(START, context) is first  # looked up, not hashed again
    assert first[1] == len(approx_tokens(context))
    other = hasher.segment((1, "", 0, ()), context)  # another state: other hashes
    assert other[1] == first[1] and not set(other[0]) & set(first[0])
    shifted = hasher.segment((0, "x", 1, ()), context)  # a partial block before: other cuts
    assert shifted[1] == first[1] and shifted[2][2] == (1 + first[1]) % 4
    assert len(shifted[0]) == (1 + first[1]) // 4


def test_pieces_keep_the_whitespace_before_them_so_a_text_cut_there_adds_up() -> None:
    text = "Mary went to the kitchenette.\n\n[chunk index 3]\nJohn_Smith took it. 12345678"
    cut = text.index("\n\n")
    assert approx_tokens(text[:cut]) + approx_tokens(text[cut:]) == approx_tokens(text)
    assert "".join(approx_tokens(text + "  \n")) == text
    assert approx_tokens("word")[0] == "word"
    assert approx_tokens(" \n word")[0] == " \n word"
    # Word runs are cut into parts of 5 characters; only the first has the whitespace.
    assert approx_tokens("x abcdefghijk.") == ["x", " abcde", "fghij", "k", "."]
