import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clstream.retrieval.bm25 import STOPWORDS, IncrementalBM25, tokenize

DOCS = [
    "Mara went to the kitchen and picked up the apple.",
    "The storm raged over the harbour all night.",
    "Tobin journeyed to the garden. Tobin dropped the apple in the garden.",
    "Apples, apples everywhere: the apple harvest was large.",
    "Nothing of note happened in the hallway.",
]


def brute_force(docs: dict[int, str], query: str, k1: float = 1.5,
                b: float = 0.75) -> list[tuple[int, float]]:
    """BM25 recomputed from scratch for every document, with no shared state."""
    tokenized = {d: [w for w in text.lower().replace(",", " ").split()] for d, text in docs.items()}
    tokenized = {
        d: ["".join(c for c in w if c.isalnum()) for w in words] for d, words in tokenized.items()
    }
    tokenized = {
        d: [w for w in words if w and w not in STOPWORDS] for d, words in tokenized.items()
    }
    n = len(docs)
    avgdl = sum(len(t) for t in tokenized.values()) / n
    terms = list(dict.fromkeys(w for w in tokenize(query)))
    scores: dict[int, float] = {}
    for d, words in tokenized.items():
        tf = Counter(words)
        score = 0.0
        for term in terms:
            if tf[term] == 0:
                continue
            df = sum(1 for other in tokenized.values() if term in other)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            denom = tf[term] + k1 * (1 - b + b * len(words) / avgdl)
            score += idf * tf[term] * (k1 + 1) / denom
        if score > 0:
            scores[d] = score
    return sorted(scores.items(), key=lambda item: (-item[1], -item[0]))


def build(docs: dict[int, str]) -> IncrementalBM25:
    index = IncrementalBM25()
    for d, text in docs.items():
        index.add(d, text)
    return index


def test_bm25_tokenize_lowercases_and_drops_stopwords() -> None:
    assert tokenize("The Apple, and THE pear!") == ["apple", "pear"]


@pytest.mark.parametrize("query", ["apple", "Tobin garden apple", "the harbour storm", "kitchen"])
def test_bm25_matches_brute_force(query: str) -> None:
    docs = dict(enumerate(DOCS))
    got = build(docs).search(query, k=10)
    want = brute_force(docs, query)
    assert [d for d, _ in got] == [d for d, _ in want]
    for (_, s1), (_, s2) in zip(got, want, strict=True):
        assert s1 == pytest.approx(s2)


def test_bm25_top_k_limit_filters_and_ties() -> None:
    docs = {0: "red fox", 1: "red fox", 2: "red fox", 3: "blue whale"}
    index = build(docs)
    assert [d for d, _ in index.search("fox", k=2)] == [2, 1]  # equal scores: newest first
    assert [d for d, _ in index.search("fox", k=5, max_doc_id=1)] == [1, 0]
    assert [d for d, _ in index.search("fox", k=5, exclude={2})] == [1, 0]
    assert index.search("fox", k=0) == []
    assert index.search("the of and", k=3) == []
    assert index.search("unseen", k=3) == []


def test_bm25_idf_is_never_negative() -> None:
    index = build({i: "common word" for i in range(10)})
    assert index.idf("common") > 0
    assert all(score > 0 for _, score in index.search("common", k=10))


def test_bm25_rejects_duplicate_ids_and_bad_params() -> None:
    index = build({0: "x"})
    with pytest.raises(ValueError):
        index.add(0, "again")
    with pytest.raises(ValueError):
        IncrementalBM25(b=1.5)
    assert len(index) == 1 and 0 in index and 1 not in index


words = st.sampled_from("apple pear kitchen garden mara tobin storm the of red blue".split())
texts = st.lists(words, min_size=0, max_size=12).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(st.lists(texts, min_size=1, max_size=8), st.lists(words, min_size=1, max_size=4))
def test_bm25_incremental_equals_batch_and_brute_force(docs: list[str],
                                                       query_words: list[str]) -> None:
    query = " ".join(query_words)
    incremental = IncrementalBM25()
    for i, text in enumerate(docs):
        incremental.add(i, text)
        # Searching along the way must not disturb later results.
        incremental.search(query, k=3)
    batch = build(dict(enumerate(docs)))
    got = incremental.search(query, k=len(docs))
    assert got == batch.search(query, k=len(docs))
    want = brute_force(dict(enumerate(docs)), query)
    assert [d for d, _ in got] == [d for d, _ in want]
    for (_, s1), (_, s2) in zip(got, want, strict=True):
        assert s1 == pytest.approx(s2)
