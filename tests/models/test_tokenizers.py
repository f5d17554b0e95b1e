"""The offline approximate tokenizer (``approx-v1``, src/clstream/models/tokenizers.py): its
count is the sum of its pieces' costs (a word run of length L costs 1 + (L - 1) // 5, a symbol
1, whitespace 0), whatever the text, and truncation keeps a suffix within the budget."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from clstream.models.tokenizers import _PIECE, ApproxTokenizer, _piece_cost

TOKENIZER = ApproxTokenizer()


def by_pieces(text: str) -> int:
    return sum(_piece_cost(len(m.group()), m.group()[0].isalnum() or m.group()[0] == "_")
               for m in _PIECE.finditer(text))


@given(st.text(alphabet=st.sampled_from("ab_09 \n\t.,;!?-éßΩ中𝒜\u0301'\"()"), max_size=80))
def test_the_count_is_the_sum_of_the_pieces(text: str) -> None:
    assert TOKENIZER.count(text) == by_pieces(text)


@given(st.text(max_size=60))
def test_the_count_is_the_sum_of_the_pieces_on_any_text(text: str) -> None:
    assert TOKENIZER.count(text) == by_pieces(text)


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=120))
def test_the_count_of_ascii_text_is_the_sum_of_the_pieces(text: str) -> None:
    """ASCII text is counted by byte operations, not by the regex engine: the same sum,
    control characters and long word runs included."""
    assert TOKENIZER.count(text) == by_pieces(text)
    assert TOKENIZER.count(text + "aaaaaaaaaaa" + text) == by_pieces(text + "aaaaaaaaaaa" + text)


def test_hand_counted() -> None:
    assert TOKENIZER.count("") == 0 and TOKENIZER.count(" \n\t") == 0
    assert TOKENIZER.count("abcde") == 1 and TOKENIZER.count("abcdef") == 2
    assert TOKENIZER.count("abcdefghijk") == 3  # 1 + 10 // 5
    assert TOKENIZER.count("Mary went to the kitchen.") == 7  # "kitchen" is 2
    assert TOKENIZER.count("a,b") == 3 and TOKENIZER.count("__init__") == 2
    assert TOKENIZER.count("the cat sat.") == 4
    assert TOKENIZER.count("extraordinarily") == 1 + (15 - 1) // 5


@given(st.text(max_size=300), st.integers(min_value=0, max_value=80))
def test_truncation_keeps_a_suffix_within_the_budget(text: str, budget: int) -> None:
    kept = TOKENIZER.truncate_left(text, budget)
    assert text.endswith(kept) and TOKENIZER.count(kept) <= budget
    if TOKENIZER.count(text) <= budget:
        assert kept == text
