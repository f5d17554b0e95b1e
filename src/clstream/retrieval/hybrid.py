"""Hybrid retrieval: reciprocal rank fusion of a lexical and a dense ranking (docs/imprint.md §8).

docs/imprint.md §8 names "hybrid RAG (lexical + dense)" without fixing how the two are combined; the
reading taken here is reciprocal rank fusion (Cormack et al., 2009), which needs no score
calibration between BM25 and cosine::

    fused(d) = sum over rankings r that contain d of 1 / (k_rrf + rank_r(d))   (rank 1-based)

Each ranking is the full candidate list of its index under the same filters (``max_doc_id``,
``exclude``), or its top ``depth`` when a depth is given. BM25 ranks only documents sharing a
term with the query; a document it does not rank contributes nothing from that side. Equal
fused scores are ordered newest first (higher doc id), the tie rule of both underlying indexes.
Both indexes grow together through :meth:`HybridIndex.add`.

:func:`make_index` builds any of the three retrievers (``bm25``, ``dense``, ``hybrid``) behind
the one interface a system needs (:class:`Retriever`), so a RAG system chooses by name. The
dense side (numpy, embedders) is imported only when a dense or hybrid index is made, so a
system that only names this module (a context window, BM25 retrieval) starts without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from clstream.core.errors import SpecError
from clstream.retrieval.bm25 import IncrementalBM25

if TYPE_CHECKING:
    from clstream.retrieval.dense import DenseIndex

RETRIEVERS = ("bm25", "dense", "hybrid")


@runtime_checkable
class Retriever(Protocol):
    """What BM25, dense and hybrid indexes share: grow one document at a time, change one
    in place (``replace``, given the text it holds), search."""

    def __len__(self) -> int: ...

    def __contains__(self, doc_id: object) -> bool: ...

    def add(self, doc_id: int, text: str) -> None: ...

    def replace(self, doc_id: int, old_text: str, text: str) -> None: ...

    def search(
        self, query: str, k: int, max_doc_id: int | None = None, exclude: set[int] | None = None
    ) -> list[tuple[int, float]]: ...


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[int]], k_rrf: float = 60.0
) -> list[tuple[int, float]]:
    """(doc_id, fused score) for every ranked document, best first, higher id first on ties."""
    if k_rrf < 0:
        raise ValueError(f"k_rrf must be >= 0, got {k_rrf}")
    fused: dict[int, float] = {}
    for ranking in rankings:
        seen: set[int] = set()
        for rank, doc_id in enumerate(ranking, start=1):
            if doc_id in seen:
                raise ValueError(f"document {doc_id} appears twice in one ranking")
            seen.add(doc_id)
            fused[doc_id] = fused.get(doc_id, 0.0) + 1.0 / (k_rrf + rank)
    return sorted(fused.items(), key=lambda item: (-item[1], -item[0]))


class HybridIndex:
    """BM25 and dense indexes over the same documents, searched together with RRF."""

    def __init__(
        self,
        bm25: IncrementalBM25,
        dense: DenseIndex,
        k_rrf: float = 60.0,
        depth: int | None = None,
    ):
        if k_rrf < 0:
            raise ValueError(f"k_rrf must be >= 0, got {k_rrf}")
        if depth is not None and depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        self.bm25 = bm25
        self.dense = dense
        self.k_rrf = k_rrf
        self.depth = depth

    def __len__(self) -> int:
        return len(self.dense)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self.dense

    def add(self, doc_id: int, text: str) -> None:
        """Index ``text`` in both halves."""
        if doc_id in self.bm25 or doc_id in self.dense:
            raise ValueError(f"document {doc_id} is already indexed")
        self.dense.add(doc_id, text)
        self.bm25.add(doc_id, text)

    def replace(self, doc_id: int, old_text: str, text: str) -> None:
        """Index ``text`` in place of ``old_text`` in both halves."""
        self.bm25.replace(doc_id, old_text, text)
        self.dense.replace(doc_id, old_text, text)

    def search(
        self,
        query: str,
        k: int,
        max_doc_id: int | None = None,
        exclude: set[int] | None = None,
    ) -> list[tuple[int, float]]:
        """The ``k`` best (doc_id, fused score) pairs, best first."""
        if k <= 0 or not len(self.dense):
            return []
        depth = self.depth if self.depth is not None else len(self.dense)
        depth = max(depth, k)
        lexical = self.bm25.search(query, depth, max_doc_id=max_doc_id, exclude=exclude)
        dense = self.dense.search(query, depth, max_doc_id=max_doc_id, exclude=exclude)
        fused = reciprocal_rank_fusion(
            [[d for d, _ in lexical], [d for d, _ in dense]], self.k_rrf
        )
        return fused[:k]


def make_index(retriever: str = "bm25", embedder: str = "minilm", k_rrf: int = 60) -> Retriever:
    """A fresh, empty index of the named kind; ``embedder`` is a :func:`load_embedder` spec."""
    if retriever not in RETRIEVERS:
        raise SpecError(f"retriever {retriever!r}: expected one of {', '.join(RETRIEVERS)}")
    if retriever == "bm25":
        return IncrementalBM25()
    if isinstance(k_rrf, bool) or not isinstance(k_rrf, int) or k_rrf < 0:
        raise SpecError(f"k_rrf must be a whole number >= 0, got {k_rrf!r}")
    from clstream.retrieval.dense import DenseIndex, load_embedder

    dense = DenseIndex(load_embedder(str(embedder)))
    return dense if retriever == "dense" else HybridIndex(IncrementalBM25(), dense, k_rrf)
