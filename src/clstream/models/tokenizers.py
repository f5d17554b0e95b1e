"""Token counting: exact with a model's own tokenizer, else a deterministic approximation.

The approximation (``approx-v1``) splits text into word runs (letters/digits/underscore) and
single non-space symbols. A word run of length L counts 1 + (L-1)//5 tokens, a symbol counts
1, whitespace counts 0. On English prose this lands within about 10-15% of BPE tokenizers such as
GPT-NeoX's (which the OAKS paper used for its 2k-token chunks), and it never changes, so chunk
budgets and context budgets are reproducible on any machine.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clstream.core.errors import DataError

if TYPE_CHECKING:
    from clstream.core.types import Message

_PIECE = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_WORD = re.compile(r"\w+")
_SYMBOL = re.compile(r"[^\w\s]")
# Inside a word run, each full 5 characters after its first: a run of length L holds
# (L - 1) // 5 of them (the scan starts only where a word character precedes, and a run's
# first character has none before it).
_EXTRA = re.compile(r"(?<=\w)\w{5}")


_ASCII_CLASSES = bytes.maketrans(
    bytes(range(128)),
    bytes(b"a"[0] if _WORD.match(chr(c)) else b"."[0] if _SYMBOL.match(chr(c)) else b" "[0]
          for c in range(128)))
"""Each ASCII character as its class, as the regexes above tell it: ``a`` a word character,
``.`` a symbol, a space whitespace."""


def _ascii_count(text: str) -> int:
    """:meth:`ApproxTokenizer.count` of ASCII ``text``, by byte operations at C speed. With
    every character mapped to its class, a word run of length L is a run of ``a``; its pieces
    of five are its ``aaaaa`` (L // 5 of them, found left to right without overlap and never
    across a run, which other bytes end) and, where L % 5 is not 0, the run left once those
    are removed: 1 + (L - 1) // 5 = L // 5 + (L % 5 > 0). Removing ``aaaaa`` merges no runs,
    since the bytes between runs stay."""
    classes = text.encode("ascii").translate(_ASCII_CLASSES)
    rest = classes.replace(b"aaaaa", b"")
    runs_left = rest.count(b" a") + rest.count(b".a") + rest.startswith(b"a")
    return classes.count(b".") + classes.count(b"aaaaa") + runs_left


def _piece_cost(length: int, is_word: bool) -> int:
    return 1 + (length - 1) // 5 if is_word else 1


class ApproxTokenizer:
    """The offline approximation described in the module docstring."""

    name = "approx-v1"
    exact = False

    def count(self, text: str) -> int:
        """Symbols + word runs + each run's (L - 1) // 5: the same sum as over
        :func:`_piece_cost` of every piece, without a Python step per piece. ASCII text (a
        stream's passages) is counted by byte operations (:func:`_ascii_count`), other text
        by the regex engine."""
        if text.isascii():
            return _ascii_count(text)
        return (len(_SYMBOL.findall(text)) + len(_WORD.findall(text))
                + len(_EXTRA.findall(text)))

    def _cumulative(self, text: str) -> tuple[list[int], list[int]]:
        starts: list[int] = []
        cum: list[int] = []
        total = 0
        for m in _PIECE.finditer(text):
            piece = m.group()
            total += _piece_cost(len(piece), piece[0].isalnum() or piece[0] == "_")
            starts.append(m.start())
            cum.append(total)
        return starts, cum

    def truncate_left(self, text: str, budget: int) -> str:
        """The longest suffix of ``text`` starting at a piece boundary with <= budget tokens."""
        starts, cum = self._cumulative(text)
        if not cum or cum[-1] <= budget:
            return text  # whitespace alone costs no token, so it fits even a budget of 0
        if budget <= 0:
            return ""
        drop = cum[-1] - budget  # tokens to drop from the front
        i = bisect.bisect_left(cum, drop)  # pieces 0..i cover >= drop tokens
        return text[starts[i + 1]:] if i + 1 < len(starts) else ""

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "exact": self.exact}


class HFTokenizer:
    """A Hugging Face tokenizer loaded from a local directory (never the hub)."""

    exact = True

    def __init__(self, path: str):
        from transformers import AutoTokenizer  # optional extra, imported lazily

        if not Path(path).is_dir():  # a file, a device, a hub name: never read, one line
            raise DataError(path, None, None, "not a tokenizer directory (a local directory "
                                              "with tokenizer files is needed)")
        try:
            self._tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
        except (OSError, ValueError) as exc:
            problem = " ".join(str(exc).split())[:200]
            raise DataError(path, None, None, f"cannot load a tokenizer: {problem}") from None
        self.name = f"hf:{path}"

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False, verbose=False))

    def truncate_left(self, text: str, budget: int) -> str:
        """A suffix of ``text`` with at most ``budget`` tokens.

        Fast tokenizers report character offsets, so the cut is made in the original text (a
        true suffix, nothing re-spelled by decoding); re-tokenizing a suffix can merge tokens
        differently at its start, so the cut moves right until the count fits.
        """
        if budget <= 0:
            return ""
        try:
            enc = self._tok(
                text, add_special_tokens=False, return_offsets_mapping=True, verbose=False
            )
            ids, offsets = enc["input_ids"], enc["offset_mapping"]
        except (NotImplementedError, ValueError, TypeError, KeyError):
            ids, offsets = self._tok.encode(text, add_special_tokens=False, verbose=False), None
        if len(ids) <= budget:
            return text
        if offsets is None:
            # decode is typed to return str | list[str]; ids of one text give one str
            return str(self._tok.decode(ids[-budget:]))
        for first in range(len(ids) - budget, len(ids)):
            cut = text[offsets[first][0]:]
            if self.count(cut) <= budget:
                return cut
        return ""

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "exact": self.exact}

    @property
    def has_chat_template(self) -> bool:
        return bool(getattr(self._tok, "chat_template", None))

    def chat_ids(self, messages: Sequence[Message]) -> list[int]:
        """The token ids a server feeds the model for ``messages``: the chat template applied
        with the assistant's turn opened, or the message texts one after another when the
        tokenizer has no template (docs/plan.md §2)."""
        if not self.has_chat_template:
            return [i for m in messages
                    for i in self._tok.encode(m.content, add_special_tokens=False,
                                              verbose=False)]
        encoded: Any = self._tok.apply_chat_template(
            [{"role": m.role, "content": m.content} for m in messages],
            add_generation_prompt=True, tokenize=True)
        ids = encoded["input_ids"] if hasattr(encoded, "keys") else encoded  # a BatchEncoding
        return [int(i) for i in ids]


@lru_cache(maxsize=1)
def approx_tokenizer() -> ApproxTokenizer:
    return ApproxTokenizer()


def longest_prefix(text: str, budget: int, count: Callable[[str], int]) -> int:
    """The length of the longest prefix of ``text`` holding at most ``budget`` tokens as
    ``count`` counts them (binary search: token counts grow with the prefix)."""
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(text[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo
