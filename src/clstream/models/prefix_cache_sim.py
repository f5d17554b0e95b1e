"""A simulated block prefix cache, to check that a run's request order suits a serving engine.

Serving engines such as vLLM keep the attention keys and values of earlier prompts in fixed-size
blocks and reuse them when a new prompt starts with the same tokens (automatic prefix caching).
How much prefill work a run costs therefore depends on the *order* in which prompts arrive, not
only on the prompts. docs/design.md §3.2 asks that systems talk to such servers; docs/oaks.md §2 has every
question of a document asked at every interval, so the same long context recurs many times and
the harness should send it in an order the cache can exploit. This module replays an arrival
order through a model of that cache and reports the prefill work, so the order can be measured
without a GPU (``benchmarks/bench_prefix_cache.py``).

The model:

* a prompt is a sequence of tokens, cut into blocks of ``block_size`` tokens; only full blocks
  are cached, the partial tail of a prompt is always computed;
* a full block is identified by a chained hash of its parent block's hash and its own tokens,
  so the same tokens at another position, or after a different prefix, are a different block;
* lookup walks the blocks from the start and stops at the first one not cached: every block
  from there on is computed, even if a later one happens to be cached (the engine's rule);
* while a prompt runs, its blocks (hit or new) are in use and cannot be evicted; new blocks
  take the room of the least recently used others. Afterwards its blocks are released tail
  first and head last, so under memory pressure a prompt's tail is evicted before its head
  (the engine frees blocks in reverse order for the same reason). The capacity is in blocks;
  a prompt larger than the whole cache keeps only its head blocks.

Two figures per replay: ``computed_tokens`` (blocks missed x block size + tails) and
``lower_bound_tokens`` (distinct blocks x block size + tails: what a cache that never evicts
would compute for the same prompts, in any order).

Tokens: any hashable items (token ids from a real tokenizer), or text, which is cut into the
pieces of the offline approximate tokenizer (:mod:`clstream.models.tokenizers`, ``approx-v1``)
so that the token count of a text here equals that tokenizer's count. Block identity uses
Python's built-in hash of (parent hash, block tokens); with 64-bit hashes a collision among a
few million blocks has odds below one in a million, and a collision could only make the
simulated cache look better by one block.
"""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

_PIECE = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_PARAGRAPHS = re.compile(r"(\n\s*\n)")
# approx-v1 costs a word run of length L as 1 + (L-1)//5 tokens, i.e. one token per 5 characters.
_WORD_PIECE = 5
_SPACE = "\u2581"  # marks a piece preceded by whitespace, so "a.b" and "a . b" differ



@dataclass(frozen=True)
class BlockedPrompt:
    """A prompt as the cache sees it, without its tokens: the chained hashes of its full blocks
    (in ``pieces``, runs of consecutive blocks that other prompts may share as objects, so a
    long context recurring in many prompts is held once) and its length in tokens."""

    pieces: tuple[tuple[int, ...], ...]
    n_tokens: int

    def __len__(self) -> int:
        return self.n_tokens

    def blocks(self) -> list[int]:
        return [block for piece in self.pieces for block in piece]


Prompt = str | Sequence[Hashable] | BlockedPrompt


_MARKED_PIECE = re.compile(rf"(\s*)(\w{{1,{_WORD_PIECE}}}|[^\w\s])", re.UNICODE)
"""A piece with the whitespace before it: a word run is cut from its start into parts of
:data:`_WORD_PIECE` characters (the greedy repeat does it), a symbol is a piece of its own."""


@lru_cache(maxsize=1 << 16)
def _paragraph_tokens(text: str, after_space: bool) -> tuple[str, ...]:
    """The pieces of ``text``, each marked with :data:`_SPACE` where whitespace comes before it
    (at the start: where ``after_space``), cut by the regex engine, one match per piece."""
    found = _MARKED_PIECE.findall(text)
    out = [_SPACE + piece if space else piece for space, piece in found]
    if found and after_space and not found[0][0]:
        out[0] = _SPACE + out[0]
    return tuple(out)


def approx_tokens(text: str, after_space: bool = False) -> list[str]:
    """``text`` as the pieces of the approx-v1 tokenizer (``len`` equals its ``count``);
    ``after_space``: the text follows whitespace, so its first piece is marked as such (the
    pieces of a text cut at whitespace are then the pieces of its parts).

    Text is tokenized paragraph by paragraph with a memo, so contexts that recur across many
    prompts are cut once; a paragraph break is whitespace, so the pieces are the same as for
    the whole text at once.
    """
    tokens: list[str] = []
    for part in _PARAGRAPHS.split(text):
        if not part:
            continue
        if part.isspace():
            after_space = True
            continue
        tokens.extend(_paragraph_tokens(part, after_space))
        after_space = part[-1].isspace()
    return tokens


def render_chat(messages: Iterable[Mapping[str, str]]) -> str:
    """A chat request as one text, as a chat template would lay it out before tokenizing.

    The markers are generic; what matters for caching is that equal message prefixes give
    equal text prefixes, which holds for the templates of real chat models too.
    """
    parts = [f"<|{m['role']}|>\n{m['content']}\n<|end|>\n" for m in messages]
    return "".join(parts) + "<|assistant|>\n"


@dataclass(frozen=True)
class ReplayStats:
    """What one replay cost. ``hit_rate`` is the share of prompt tokens served from cache."""

    requests: int
    prompt_tokens: int
    computed_tokens: int
    lower_bound_tokens: int
    block_size: int
    capacity_blocks: int

    @property
    def cached_tokens(self) -> int:
        return self.prompt_tokens - self.computed_tokens

    @property
    def hit_rate(self) -> float:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def ratio(self) -> float:
        """Computed tokens over the lower bound (1.0 = as good as a cache that never evicts)."""
        if self.lower_bound_tokens == 0:
            return 1.0 if self.computed_tokens == 0 else math.inf
        return self.computed_tokens / self.lower_bound_tokens


UNBOUNDED = 1 << 62
"""A capacity in blocks no run reaches: a cache this large never evicts, and serves a
:class:`BlockedPrompt` without keeping an LRU order (:meth:`PrefixCacheSim.add`)."""


class PrefixCacheSim:
    """An LRU block prefix cache; feed prompts in arrival order with :meth:`replay`."""

    def __init__(
        self,
        capacity_blocks: int,
        block_size: int = 16,
        tokenize: Callable[[str], Sequence[Hashable]] = approx_tokens,
    ):
        for name, value in (("capacity_blocks", capacity_blocks), ("block_size", block_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
        self.capacity_blocks = capacity_blocks
        self.block_size = block_size
        self.tokenize = tokenize
        self._lru: OrderedDict[int, None] = OrderedDict()
        self._seen: set[int] = set()
        self.requests = 0
        self.prompt_tokens = 0
        self.computed_tokens = 0
        self.tail_tokens = 0

    def block_hashes(self, tokens: Sequence[Hashable]) -> list[int]:
        """Chained hashes of the full blocks of ``tokens``, in order."""
        size, parent, out = self.block_size, 0, []
        for start in range(0, len(tokens) - size + 1, size):
            parent = hash((parent, tuple(tokens[start : start + size])))
            out.append(parent)
        return out

    def __contains__(self, block: int) -> bool:
        return block in (self._seen if self.capacity_blocks >= UNBOUNDED else self._lru)

    def add(self, prompt: Prompt) -> int:
        """Serve one prompt; returns the prefill tokens it cost."""
        if isinstance(prompt, BlockedPrompt):
            if self.capacity_blocks >= UNBOUNDED:
                return self._add_unbounded(prompt)
            blocks = prompt.blocks()
            n_tokens = prompt.n_tokens
        else:
            tokens = self.tokenize(prompt) if isinstance(prompt, str) else prompt
            blocks = self.block_hashes(tokens)
            n_tokens = len(tokens)
        tail = n_tokens - len(blocks) * self.block_size
        hit = 0
        while hit < len(blocks) and blocks[hit] in self._lru:
            hit += 1
        computed = (len(blocks) - hit) * self.block_size + tail
        # While the prompt runs its blocks are in use: only other blocks can be evicted.
        for block in blocks:
            self._lru.pop(block, None)
        while self._lru and len(self._lru) + len(blocks) > self.capacity_blocks:
            self._lru.popitem(last=False)
        # Then they are released tail first, head last, so the head is evicted last.
        for block in reversed(blocks):
            self._lru[block] = None
        while len(self._lru) > self.capacity_blocks:
            self._lru.popitem(last=False)
        self._seen.update(blocks)
        self.requests += 1
        self.prompt_tokens += n_tokens
        self.computed_tokens += computed
        self.tail_tokens += tail
        return computed

    def _add_unbounded(self, prompt: BlockedPrompt) -> int:
        """:meth:`add` for a cache that never fills: nothing is evicted, so the cached blocks
        are the blocks seen, and since a block's hash is chained on its parent's, the blocks
        seen of a prompt are a prefix of it. The first block not seen is found run by run
        (a run whose last block was seen was seen whole), and only new blocks are stored, so
        a prompt costs its runs and its new blocks, not its length."""
        seen, hit, n_blocks, missed = self._seen, 0, 0, False
        for piece in prompt.pieces:
            n_blocks += len(piece)
            if not piece:
                continue
            if missed:
                seen.update(piece)
            elif piece[-1] in seen:
                hit += len(piece)
            else:
                lo, hi = 0, len(piece) - 1  # piece[hi] is not seen; find the first not seen
                while lo < hi:
                    mid = (lo + hi) // 2
                    if piece[mid] in seen:
                        lo = mid + 1
                    else:
                        hi = mid
                hit += lo
                seen.update(piece[lo:])
                missed = True
        tail = prompt.n_tokens - n_blocks * self.block_size
        computed = (n_blocks - hit) * self.block_size + tail
        self.requests += 1
        self.prompt_tokens += prompt.n_tokens
        self.computed_tokens += computed
        self.tail_tokens += tail
        return computed

    def stats(self) -> ReplayStats:
        return ReplayStats(
            requests=self.requests,
            prompt_tokens=self.prompt_tokens,
            computed_tokens=self.computed_tokens,
            lower_bound_tokens=len(self._seen) * self.block_size + self.tail_tokens,
            block_size=self.block_size,
            capacity_blocks=self.capacity_blocks,
        )

    def replay(self, prompts: Iterable[Prompt]) -> ReplayStats:
        """Serve ``prompts`` in order (after whatever was served before) and return the totals."""
        for prompt in prompts:
            self.add(prompt)
        return self.stats()


class BlockHasher:
    """Chained block hashes of prompts given as segments of tokens, memoized by segment.

    A prompt is a sequence of segments (a message's template markers, the paragraphs before
    its last paragraph break, the rest); the state after a segment is the last full block's
    hash and the tokens of the partial block after it. The new blocks of a segment depend only
    on that state and the segment, so a segment met again in the same state (the same context
    before another question) is looked up, not tokenized and hashed again. The hashes are
    those of :meth:`PrefixCacheSim.block_hashes` on the joined tokens.
    """

    MEMO_MIN_CHARS = 256
    """Segments shorter than this are hashed each time: a lookup would cost about as much."""
    MEMO_MAX = 4096
    """Segments remembered at most; past that the memo starts afresh, which only costs time."""

    def __init__(self, block_size: int):
        self.block_size = block_size
        self._memo: dict[tuple[int, tuple[Hashable, ...], Hashable, str],
                         tuple[tuple[int, ...], int, tuple[Hashable, ...]]] = {}

    def fold(self, state: tuple[int, tuple[Hashable, ...]], tokens: Sequence[Hashable]
             ) -> tuple[tuple[int, ...], tuple[int, tuple[Hashable, ...]]]:
        """The full blocks ``tokens`` complete after ``state``, and the state after them."""
        parent, carry = state
        joined = (*carry, *tokens) if carry else tokens
        size, out = self.block_size, []
        end = len(joined) - len(joined) % size
        for start in range(0, end, size):
            parent = hash((parent, tuple(joined[start : start + size])))
            out.append(parent)
        return tuple(out), (parent, tuple(joined[end:]))

    def segment(self, state: tuple[int, tuple[Hashable, ...]], text: str,
                tokenize: Callable[[str], Sequence[Hashable]], variant: Hashable = None
                ) -> tuple[tuple[int, ...], int, tuple[int, tuple[Hashable, ...]]]:
        """:meth:`fold` of ``tokenize(text)``, memoized; also the segment's token count.
        ``variant`` tells apart the ways ``tokenize`` may cut one text (the approximate
        tokenizer marks a first piece that follows whitespace), so it is part of the key."""
        if len(text) < self.MEMO_MIN_CHARS:
            tokens = tokenize(text)
            blocks, after = self.fold(state, tokens)
            return blocks, len(tokens), after
        key = (state[0], state[1], variant, text)
        hit = self._memo.get(key)
        if hit is None:
            tokens = tokenize(text)
            blocks, after = self.fold(state, tokens)
            if len(self._memo) >= self.MEMO_MAX:
                self._memo.clear()
            hit = self._memo[key] = (blocks, len(tokens), after[1])
            return blocks, len(tokens), after
        blocks, count, carry = hit
        return blocks, count, (blocks[-1] if blocks else state[0], carry)


def replay(
    prompts: Iterable[Prompt],
    capacity_blocks: int,
    block_size: int = 16,
    tokenize: Callable[[str], Sequence[Hashable]] = approx_tokens,
) -> ReplayStats:
    """Replay ``prompts`` through a fresh :class:`PrefixCacheSim`."""
    return PrefixCacheSim(capacity_blocks, block_size, tokenize).replay(prompts)
