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
so that the token count of a text here equals that tokenizer's count. A piece keeps the
whitespace written before it, so the pieces of a text joined are the text (but for trailing
whitespace), and a block of string tokens is identified by its text, the tokens joined: a
text is cut into pieces one way, so two blocks with the same text have the same pieces
(:func:`block_key`). That lets :class:`BlockHasher` hash a long text a block at a time, by
the regex engine, without a Python step per token. Block identity uses Python's built-in hash
of (parent hash, block text or tokens); with 64-bit hashes a collision among a few million
blocks has odds below one in a million, and a collision could only make the simulated cache
look better by one block.
"""

from __future__ import annotations

import math
import re
from array import array
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from typing import cast


@dataclass(frozen=True)
class BlockedPrompt:
    """A prompt as the cache sees it, without its tokens: the chained hashes of its full blocks
    (in ``pieces``, non-empty runs of consecutive blocks that other prompts may share as
    objects, so a long context recurring in many prompts is held once) and its length in
    tokens."""

    pieces: tuple[tuple[int, ...], ...]
    n_tokens: int

    def __len__(self) -> int:
        return self.n_tokens

    def blocks(self) -> list[int]:
        return [block for piece in self.pieces for block in piece]


Prompt = str | Sequence[Hashable] | BlockedPrompt


_PIECE_SOURCE = r"\s*(?:\w{1,5}|[^\w\s])"
"""A piece with the whitespace written before it: a word run is cut from its start into parts
of at most 5 characters (approx-v1 costs a run of length L as 1 + (L-1)//5 tokens, one per 5
characters; the greedy repeat cuts it so), a symbol is a piece of its own."""
_PIECE = re.compile(_PIECE_SOURCE, re.UNICODE)
_PARAGRAPH_CUT = re.compile(r"(?<=\S)(?=[^\S\n]*\n\s*\n)")
"""Where a text is cut into paragraphs: after the last non-space character before a
paragraph break, so each paragraph but the first opens with the break (its first piece's
whitespace)."""


@lru_cache(maxsize=1 << 16)
def _paragraph_tokens(text: str) -> tuple[str, ...]:
    """The pieces of one paragraph, cut by the regex engine, one match per piece."""
    return tuple(_PIECE.findall(text))


def approx_tokens(text: str) -> list[str]:
    """``text`` as the pieces of the approx-v1 tokenizer (``len`` equals its ``count``), each
    with the whitespace written before it, so that the pieces of a text cut at whitespace are
    the pieces of its parts.

    Text is tokenized paragraph by paragraph with a memo, so contexts that recur across many
    prompts are cut once; a paragraph is cut after a non-space character, where a piece
    ends, so the pieces are the same as for the whole text at once.
    """
    tokens: list[str] = []
    for part in _PARAGRAPH_CUT.split(text):
        tokens.extend(_paragraph_tokens(part))
    return tokens


class TemplateMarker(str):
    """A chat template's token (a role marker, a delimiter) among a prompt's string tokens:
    one token, and never the text of a message, even where a message writes its characters."""

    __slots__ = ()


def block_key(block: Sequence[Hashable]) -> Hashable:
    """What identifies a block beside its parent: the text of a block of string tokens (the
    approximate tokenizer's pieces), with where its template markers stand, if any
    (:class:`TemplateMarker`); the tokens themselves otherwise.

    Joining loses nothing for pieces: a text is cut into pieces one way from any piece
    boundary, so two blocks of pieces with the same text are the same pieces. A marker's
    characters could also be a message's text, so the markers' places are part of the key.
    (Where a message ends without whitespace and the next opens without a marker between
    them, which only the builtin model's prompts do, the two messages' pieces are keyed by
    their text as one.)"""
    if block and isinstance(block[0], str):
        text = "".join(cast("Sequence[str]", block))
        if TemplateMarker not in map(type, block):
            return text
        return text, tuple((i, token) for i, token in enumerate(block)
                           if type(token) is TemplateMarker)
    return tuple(block)


def block_hashes(tokens: Sequence[Hashable], block_size: int) -> list[int]:
    """Chained hashes of the full blocks of ``tokens``, in order."""
    parent, out = 0, []
    for start in range(0, len(tokens) - block_size + 1, block_size):
        parent = hash((parent, block_key(tokens[start : start + block_size])))
        out.append(parent)
    return out


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
        """Chained hashes of the full blocks of ``tokens``, in order (:func:`block_hashes`)."""
        return block_hashes(tokens, self.block_size)

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
        seen of a prompt are a prefix of it. So a run whose last block was seen was seen whole,
        as were the runs before it: the first run not seen whole is found by bisection over
        the runs' last blocks, its first block not seen by bisection within it, and only new
        blocks are stored, so a prompt costs the logarithm of its runs and its new blocks,
        not its length. (A :class:`BlockedPrompt`'s runs are never empty.)"""
        seen, pieces = self._seen, prompt.pieces
        lo, hi = 0, len(pieces)  # pieces[hi] is the first run whose last block is not seen
        while lo < hi:
            mid = (lo + hi) // 2
            if pieces[mid][-1] in seen:
                lo = mid + 1
            else:
                hi = mid
        hit = sum(map(len, pieces[:lo]))
        n_blocks = hit
        if lo < len(pieces):
            piece = pieces[lo]
            first, last = 0, len(piece) - 1  # piece[last] is not seen; find the first not seen
            while first < last:
                mid = (first + last) // 2
                if piece[mid] in seen:
                    first = mid + 1
                else:
                    last = mid
            hit += first
            seen.update(piece[first:])
            n_blocks += len(piece)
            for piece in pieces[lo + 1:]:
                seen.update(piece)
                n_blocks += len(piece)
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


Marks = tuple[tuple[int, "TemplateMarker"], ...]
TextState = tuple[int, str, int, Marks]
"""Where a prompt of string tokens stands after some of it: the hash of its last full block
(0 at the start), the text after that block (the pieces of the partial block and the
whitespace after them), how many pieces that text holds, and where the template markers
among them stand (:func:`block_key`)."""
START: TextState = (0, "", 0, ())


def message_ended(state: TextState) -> TextState:
    """``state`` at the end of a message: the whitespace after its last piece is no token's
    (the next message's first piece or marker comes right after the last piece)."""
    parent, carry, held, marks = state
    return (parent, carry.rstrip(), held, marks)


class BlockHasher:
    """Chained block hashes of prompts given as segments of text and template markers,
    memoized by segment; the hashes are :func:`block_hashes` of the prompt's tokens.

    A block of pieces is identified by its text (:func:`block_key`), so a segment's blocks are
    slices of it: where its pieces end is found once per text (:meth:`_ends`, the regex
    engine's pieces and their lengths summed, :attr:`MEMO_MAX` texts kept), and the blocks
    after a state are the slices between every ``block_size``-th end, the first completing
    the partial block the state holds. A segment's hashes depend on the state too; they are
    kept per (state, text) for texts of :attr:`MEMO_MIN_CHARS` or more, so a long segment met
    again in the same state (the same context before another question) is looked up, not
    hashed again.
    """

    MEMO_MIN_CHARS = 256
    """Segments shorter than this are hashed each time: a lookup would cost about as much."""
    MEMO_MAX = 4096
    """Entries each memo keeps at most; past that it starts afresh, which only costs time."""

    def __init__(self, block_size: int):
        self.block_size = block_size
        self._ends_of: dict[str, array[int]] = {}
        self._hashed: dict[tuple[TextState, str],
                           tuple[tuple[int, ...], int, TextState]] = {}

    def fold(self, state: TextState, markers: Sequence[TemplateMarker]
             ) -> tuple[tuple[int, ...], TextState]:
        """The full blocks template ``markers`` complete after ``state``, and the state
        after them."""
        parent, carry, held, marks = state
        out = []
        for marker in markers:
            carry += marker
            marks += ((held, marker),)
            held += 1
            if held == self.block_size:
                parent = hash((parent, (carry, marks)))
                out.append(parent)
                carry, held, marks = "", 0, ()
        return tuple(out), (parent, carry, held, marks)

    def segment(self, state: TextState, text: str) -> tuple[tuple[int, ...], int, TextState]:
        """The full blocks of ``text``'s pieces after ``state``, its token count, and the
        state after it. ``text`` starts where a piece may start: with whitespace, or after
        whitespace or the end of a message (never inside a word the state's text ends in)."""
        if len(text) < self.MEMO_MIN_CHARS:
            return self._segment(state, text)
        key = (state, text)
        found = self._hashed.get(key)
        if found is None:
            if len(self._hashed) >= self.MEMO_MAX:
                self._hashed.clear()
            found = self._hashed[key] = self._segment(state, text)
        return found

    def _segment(self, state: TextState, text: str) -> tuple[tuple[int, ...], int, TextState]:
        parent, carry, held, marks = state
        ends = self._ends(text)
        count, need = len(ends), self.block_size - held
        if count < need:  # less than the partial block needs: all of it joins that block
            return (), count, (parent, carry + text, held + count, marks)
        cuts = ends[need - 1 :: self.block_size]
        start = cuts[0]
        first = carry + text[:start]
        parent = hash((parent, (first, marks) if marks else first))
        out = [parent]
        for end in cuts[1:]:
            parent = hash((parent, text[start:end]))
            out.append(parent)
            start = end
        return tuple(out), count, (parent, text[start:], (count - need) % self.block_size, ())

    def _ends(self, text: str) -> array[int]:
        """Where each piece of ``text`` ends (its length in pieces is the token count)."""
        ends = self._ends_of.get(text)
        if ends is None:
            if len(self._ends_of) >= self.MEMO_MAX:
                self._ends_of.clear()
            ends = self._ends_of[text] = array("L", accumulate(map(len, _PIECE.findall(text))))
        return ends


def replay(
    prompts: Iterable[Prompt],
    capacity_blocks: int,
    block_size: int = 16,
    tokenize: Callable[[str], Sequence[Hashable]] = approx_tokens,
) -> ReplayStats:
    """Replay ``prompts`` through a fresh :class:`PrefixCacheSim`."""
    return PrefixCacheSim(capacity_blocks, block_size, tokenize).replay(prompts)
