"""The numpy scoring path of IncrementalBM25 returns exactly what the plain loop returns: the
same documents, in the same order, with bit-identical scores (so a run's prompts do not depend
on which path a search took)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clstream.retrieval import bm25
from clstream.retrieval.bm25 import IncrementalBM25

WORDS = "apple kitchen garden storm harbour lantern mara tobin bell dusk road gate".split()


def both(index: IncrementalBM25, query: str, k: int, max_doc_id: int | None,
         exclude: set[int] | None, monkeypatch: pytest.MonkeyPatch
         ) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    monkeypatch.setattr(bm25, "VECTOR_FROM", 10**9)
    loop = index.search(query, k, max_doc_id=max_doc_id, exclude=exclude)
    monkeypatch.setattr(bm25, "VECTOR_FROM", 0)
    vector = index.search(query, k, max_doc_id=max_doc_id, exclude=exclude)
    return loop, vector


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), docs=st.integers(1, 60), k=st.integers(1, 12),
       cut=st.one_of(st.none(), st.integers(-1, 70)), drop=st.integers(0, 5))
def test_vector_path_matches_the_loop(seed: int, docs: int, k: int, cut: int | None,
                                      drop: int) -> None:
    rng = random.Random(seed)
    index = IncrementalBM25()
    ids = rng.sample(range(1000), docs)  # ids need not be dense or ordered
    for doc_id in ids:
        index.add(doc_id, " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 30))))
    query = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))
    exclude = set(rng.sample(ids, min(drop, len(ids)))) or None
    max_doc_id = None if cut is None else sorted(ids)[min(max(cut, 0), len(ids) - 1)]
    with pytest.MonkeyPatch.context() as mp:
        loop, vector = both(index, query, k, max_doc_id, exclude, mp)
    assert loop == vector  # floats compared exactly


def test_arrays_follow_new_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    index = IncrementalBM25()
    index.add(0, "apple apple garden")
    first = both(index, "apple", 5, None, None, monkeypatch)
    index.add(1, "apple kitchen")  # the cached arrays of "apple" must be rebuilt
    second = both(index, "apple", 5, None, None, monkeypatch)
    assert first[0] == first[1] and second[0] == second[1]
    assert [d for d, _ in second[1]] == [0, 1]
    assert both(index, "storm", 5, None, None, monkeypatch) == ([], [])
