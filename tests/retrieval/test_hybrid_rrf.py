"""Reciprocal rank fusion, checked by hand, and HybridIndex over BM25 plus a fixed embedder."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from clstream.core.errors import SpecError
from clstream.retrieval.bm25 import IncrementalBM25
from clstream.retrieval.dense import DenseIndex
from clstream.retrieval.hybrid import HybridIndex, Retriever, make_index, reciprocal_rank_fusion


def test_rrf_by_hand() -> None:
    fused = reciprocal_rank_fusion([[3, 1, 2], [1, 4]], k_rrf=60)
    assert [d for d, _ in fused] == [1, 3, 4, 2]
    scores = dict(fused)
    assert scores[1] == 1 / 62 + 1 / 61
    assert scores[3] == 1 / 61 and scores[4] == 1 / 62 and scores[2] == 1 / 63
    assert dict(reciprocal_rank_fusion([[5, 6]], k_rrf=0)) == {5: 1.0, 6: 0.5}


def test_rrf_ties_go_to_the_newest_document() -> None:
    assert [d for d, _ in reciprocal_rank_fusion([[1, 2], [2, 1]])] == [2, 1]
    assert [d for d, _ in reciprocal_rank_fusion([[7], [3]])] == [7, 3]


def test_rrf_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="twice"):
        reciprocal_rank_fusion([[1, 1]])
    with pytest.raises(ValueError, match="k_rrf"):
        reciprocal_rank_fusion([[1]], k_rrf=-1)


class AxisEmbedder:
    """Embeds a text on the axis of the first of 'red', 'green', 'blue' it mentions."""

    name = "axis"
    words = ("red", "green", "blue")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            row = [0.0, 0.0, 0.0, 0.1]
            for i, word in enumerate(self.words):
                if word in text.split():
                    row[i] = 1.0
                    break
            rows.append(row)
        return np.asarray(rows, dtype=np.float32)


DOCS = [
    "the red door opened",  # 0
    "a green field of wheat",  # 1
    "red red red roses",  # 2
    "blue sky over the door",  # 3
    "nothing coloured here at all",  # 4
]


def build(**kwargs: object) -> HybridIndex:
    index = HybridIndex(IncrementalBM25(), DenseIndex(AxisEmbedder()), **kwargs)  # type: ignore[arg-type]
    for doc_id, text in enumerate(DOCS):
        index.add(doc_id, text)
    return index


def test_hybrid_equals_rrf_of_both_rankings() -> None:
    index = build()
    for query, k, max_doc_id in (("red door", 3, None), ("green wheat", 5, None),
                                  ("blue door", 2, 3), ("door", 5, 2)):
        lexical = [d for d, _ in index.bm25.search(query, 99, max_doc_id=max_doc_id)]
        dense = [d for d, _ in index.dense.search(query, 99, max_doc_id=max_doc_id)]
        expected = reciprocal_rank_fusion([lexical, dense], 60)[:k]
        assert index.search(query, k, max_doc_id=max_doc_id) == expected
        assert all(d <= (max_doc_id if max_doc_id is not None else 99)
                   for d, _ in index.search(query, k, max_doc_id=max_doc_id))


def test_hybrid_worked_example() -> None:
    index = build()
    # BM25 for "red door" ranks 0 (both words), then 2 (red x3), then 3 (door); the dense side
    # puts 2 and 0 on the red axis (equal cosine, newest first). So 0 and 2 tie on
    # 1/61 + 1/62 and the newer, 2, comes first; 3 follows with 1/63 + 1/(60 + its dense rank).
    lexical = [d for d, _ in index.bm25.search("red door", 9)]
    dense = [d for d, _ in index.dense.search("red door", 9)]
    assert lexical == [0, 2, 3] and dense[:2] == [2, 0]
    top = index.search("red door", 3)
    assert [d for d, _ in top] == [2, 0, 3]
    assert top[0][1] == top[1][1] == 1 / 61 + 1 / 62
    assert top[2][1] == 1 / 63 + 1 / (60 + dense.index(3) + 1)


def test_document_ranked_by_one_side_only_still_counts() -> None:
    index = build()
    hits = dict(index.search("crimson", 5))  # no BM25 match: the dense ranking alone decides
    assert len(hits) == 5 and max(hits.values()) == pytest.approx(1 / 61)


def test_depth_exclude_and_duplicates() -> None:
    shallow = build(depth=1)  # each side contributes its top 1 (at least k): 0 and 2, tied
    assert shallow.search("red door", 1) == [(2, 1 / 61)]
    assert [d for d, _ in shallow.search("red door", 2)] == [2, 0]
    index = build()
    assert 0 not in dict(index.search("red door", 5, exclude={0}))
    with pytest.raises(ValueError, match="already indexed"):
        index.add(2, "again")
    with pytest.raises(ValueError, match="depth"):
        build(depth=0)
    assert index.search("red", 0) == [] and len(index) == 5


def test_make_index_by_name() -> None:
    bm25 = make_index("bm25")
    assert isinstance(bm25, IncrementalBM25) and isinstance(bm25, Retriever)
    dense = make_index("dense", embedder="openai:some-model")  # nothing is fetched to build it
    assert isinstance(dense, DenseIndex) and dense.embedder.name == "openai:some-model"
    hybrid = make_index("hybrid", embedder="openai:some-model", k_rrf=10)
    assert isinstance(hybrid, HybridIndex) and isinstance(hybrid, Retriever)
    assert hybrid.k_rrf == 10 and hybrid.dense.embedder is dense.embedder  # one shared embedder
    assert isinstance(build(), Retriever) and 3 in build()
    with pytest.raises(SpecError, match="retriever 'splade'"):
        make_index("splade")
    with pytest.raises(SpecError, match="k_rrf"):
        make_index("hybrid", embedder="openai:some-model", k_rrf=-2)
