from hypothesis import given
from hypothesis import strategies as st

from clstream.models.tokenizers import ApproxTokenizer


def test_counts_words_and_symbols() -> None:
    tok = ApproxTokenizer()
    assert tok.count("") == 0
    assert tok.count("the cat sat.") == 4
    assert tok.count("extraordinarily") == 1 + (15 - 1) // 5


@given(st.text(max_size=300), st.integers(min_value=0, max_value=80))
def test_truncate_left_fits_and_is_suffix(text: str, budget: int) -> None:
    tok = ApproxTokenizer()
    cut = tok.truncate_left(text, budget)
    assert text.endswith(cut)
    assert tok.count(cut) <= budget
    if tok.count(text) <= budget:
        assert cut == text
