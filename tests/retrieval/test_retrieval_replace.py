"""Changing one document in place: BM25 ends as a fresh build with the new text would (both
scoring paths), a wrong old text changes nothing, dense overwrites one row, hybrid both."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from clstream.retrieval import bm25 as bm25_module
from clstream.retrieval.bm25 import IncrementalBM25
from clstream.retrieval.dense import DenseIndex
from clstream.retrieval.hybrid import HybridIndex

DOCS = ["the red door opens with the brass key", "mara keeps the lantern in the cellar",
        "the cellar floods every spring", "rain makes the red door stick",
        "the vault code of tirovan is 4721"]
QUERIES = ["red door", "cellar lantern spring", "tirovan vault key", "rain stick"]


def built(texts: Sequence[str]) -> IncrementalBM25:
    index = IncrementalBM25()
    for doc_id, text in enumerate(texts):
        index.add(doc_id, text)
    return index


@pytest.mark.parametrize("vector_from", [10**9, 0])  # the plain loop, then numpy throughout
def test_bm25_replace_equals_a_fresh_build(vector_from: int,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bm25_module, "VECTOR_FROM", vector_from)
    index = built(DOCS)
    for query in QUERIES:  # fill the per-term array cache before changing anything
        index.search(query, 5)
    changed = list(DOCS)
    changed[1] = "mara hides the lantern under the stairs with the key"
    changed[3] = "rain"
    index.replace(1, DOCS[1], changed[1])
    index.replace(3, DOCS[3], changed[3])
    fresh = built(changed)
    assert len(index) == len(fresh) and index._total_length == fresh._total_length
    assert {t: dict(p) for t, p in index._postings.items()} == \
        {t: dict(p) for t, p in fresh._postings.items()}
    for query in [*QUERIES, "stairs", "floods"]:
        assert index.search(query, 5) == fresh.search(query, 5)


def test_bm25_replace_with_a_wrong_old_text_changes_nothing() -> None:
    index = built(DOCS)
    before = index.search("red door cellar", 5)
    for old in ["the red door opens", DOCS[1], DOCS[0] + " twice"]:
        with pytest.raises(ValueError, match="old text"):
            index.replace(0, old, "something else")
    with pytest.raises(ValueError):
        index.replace(9, "", "new")
    assert index.search("red door cellar", 5) == before and len(index) == len(DOCS)


class AxisEmbedder:
    """Text 'a' / 'b' / 'c' to a unit axis."""

    name = "axes"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = {"a": [1.0, 0.0, 0.0], "b": [0.0, 1.0, 0.0], "c": [0.0, 0.0, 1.0]}
        return np.asarray([rows[t] for t in texts], dtype=np.float32)


def test_dense_and_hybrid_replace_one_document() -> None:
    dense = DenseIndex(AxisEmbedder())
    for doc_id, text in enumerate(["a", "b", "c"]):
        dense.add(doc_id, text)
    dense.replace(1, "b", "a")
    assert [d for d, _ in dense.search("a", 2)] == [1, 0] and len(dense) == 3
    with pytest.raises(ValueError):
        dense.replace(7, "a", "b")
    hybrid = HybridIndex(IncrementalBM25(), DenseIndex(AxisEmbedder()))
    for doc_id, text in enumerate(["a", "b", "c"]):
        hybrid.add(doc_id, text)
    hybrid.replace(2, "c", "a")
    assert [d for d, _ in hybrid.search("a", 3)][:2] == [2, 0]
    with pytest.raises(ValueError):  # the BM25 half refuses first; nothing changes
        hybrid.replace(0, "b", "c")
    assert [d for d, _ in hybrid.dense.search("b", 1)] == [1]
