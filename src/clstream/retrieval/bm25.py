"""An Okapi BM25 index that grows one document at a time (docs/oaks.md §2.2, RAG(k) context strategy).

Streams add a chunk per interval and retrieve after each one, so rebuilding an index per
interval would cost O(T^2) over a stream. Here ``add`` only touches the postings of the new
document's terms and two running totals; ``search`` reads the postings of the query's terms.
Collection statistics (N, average length, document frequency) are those of every document
added so far; ``max_doc_id`` and ``exclude`` only filter the candidates, which is what a
stream needs when it retrieves from the older part of what it has seen.

Scoring (Robertson and Sparck Jones idf with +1 inside the log, so it is never negative)::

    idf(q)      = ln(1 + (N - df(q) + 0.5) / (df(q) + 0.5))
    score(d, Q) = sum over distinct q in Q of  idf(q) * tf * (k1 + 1) / (tf + K(d))
    K(d)        = k1 * (1 - b + b * |d| / avgdl)

Only documents sharing at least one term with the query are returned. Equal scores are
ordered newest first (higher doc id), so in a stream the latest evidence wins a tie.

Search cost grows with the postings of the query's terms, that is with the stream. Past
:data:`VECTOR_FROM` postings a query is scored with numpy over per-term arrays (built on first
use and dropped when the term's postings change): the same IEEE operations in the same order
per document (each term's share computed as the formula above is written, added to the
running score term by term), so scores and ranking are bit-identical to the plain loop's.
numpy is imported on that first use, so a run whose searches stay small (or that never
searches: full context, a window) does not pay for importing it.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

STOPWORDS: frozenset[str] = frozenset(
    """a about above after again all am an and any are as at be been before being below
    between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves
    out over own same she should so some such than that the their theirs them themselves then
    there these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself yourselves""".split()
)


# Candidate postings above which a search is scored with numpy (below, the loop is cheaper).
VECTOR_FROM = 256


def tokenize(text: str) -> list[str]:
    """Lowercase word runs (letters and digits) with English stopwords removed."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


@lru_cache(maxsize=1 << 12)
def query_terms(query: str) -> tuple[str, ...]:
    """The distinct terms of ``query`` in order (:func:`tokenize`), kept for the queries last
    asked: a stream asks the same questions again at every interval."""
    return tuple(dict.fromkeys(tokenize(query)))


class IncrementalBM25:
    """Okapi BM25 over documents identified by integer ids, added one at a time."""

    def __init__(self, k1: float = 1.5, b: float = 0.75):
        if k1 < 0 or not 0.0 <= b <= 1.0:
            raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        self.k1 = k1
        self.b = b
        self._postings: dict[str, dict[int, int]] = {}
        self._lengths: dict[int, int] = {}
        self._total_length = 0
        # Per term: doc ids, term frequencies and document lengths as arrays (search cache).
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        # Per term: each document's share of the score, while the index stays as it is.
        self._shares: dict[str, list[tuple[int, float]]] = {}

    def __len__(self) -> int:
        return len(self._lengths)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._lengths

    def add(self, doc_id: int, text: str) -> None:
        """Index ``text`` under ``doc_id``; O(len(text)), no rebuild."""
        if doc_id in self._lengths:
            raise ValueError(f"document {doc_id} is already indexed")
        terms = tokenize(text)
        self._shares.clear()  # idf and the mean length change with every document
        self._lengths[doc_id] = len(terms)
        self._total_length += len(terms)
        for term, tf in Counter(terms).items():
            self._postings.setdefault(term, {})[doc_id] = tf
            self._arrays.pop(term, None)

    def replace(self, doc_id: int, old_text: str, text: str) -> None:
        """Index ``text`` under ``doc_id`` in place of ``old_text``, the text it holds: the old
        postings and length are taken out, then ``text`` goes in as :meth:`add` puts it, in
        O(len(old_text) + len(text)). The index is then the one a fresh build with the new
        text would hold, since scores do not depend on the order documents were added. The
        old text is checked against the index first (its terms and length), so a wrong one
        changes nothing and raises ``ValueError``."""
        old = Counter(tokenize(old_text))
        if self._lengths.get(doc_id) != sum(old.values()) or any(
                self._postings.get(term, {}).get(doc_id) != tf for term, tf in old.items()):
            raise ValueError(f"document {doc_id} does not hold the text given as its old text")
        self._total_length -= self._lengths.pop(doc_id)
        for term in old:
            postings = self._postings[term]
            del postings[doc_id]
            if not postings:
                del self._postings[term]
            self._arrays.pop(term, None)
        self.add(doc_id, text)

    def idf(self, term: str) -> float:
        df = len(self._postings.get(term, ()))
        n = len(self._lengths)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def search(
        self,
        query: str,
        k: int,
        max_doc_id: int | None = None,
        exclude: set[int] | None = None,
    ) -> list[tuple[int, float]]:
        """The ``k`` best (doc_id, score) pairs, best first; ties go to the higher doc id."""
        if k <= 0 or not self._lengths:
            return []
        avgdl = self._total_length / len(self._lengths) or 1.0
        terms = [t for t in query_terms(query) if self._postings.get(t)]
        if sum(len(self._postings[t]) for t in terms) >= VECTOR_FROM:
            return self._search_arrays(terms, k, avgdl, max_doc_id, exclude)
        scores: dict[int, float] = {}
        for term in terms:
            shares = self._shares.get(term)
            if shares is None:
                shares = self._shares[term] = self._term_shares(term, avgdl)
            for doc_id, share in shares:
                if max_doc_id is not None and doc_id > max_doc_id:
                    continue
                if exclude and doc_id in exclude:
                    continue
                scores[doc_id] = scores.get(doc_id, 0.0) + share
        best = heapq.nsmallest(k, scores.items(), key=lambda item: (-item[1], -item[0]))
        return [(doc_id, score) for doc_id, score in best]

    def _term_shares(self, term: str, avgdl: float) -> list[tuple[int, float]]:
        """Each document's share of the score for ``term`` (:meth:`search`), kept until the
        index changes: a stream asks many questions of one index, and they share terms."""
        k1, b, lengths = self.k1, self.b, self._lengths
        idf = self.idf(term)
        return [(doc_id, idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * lengths[doc_id]
                                                               / avgdl)))
                for doc_id, tf in self._postings[term].items()]

    def _term_arrays(self, term: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        arrays = self._arrays.get(term)
        if arrays is None:
            import numpy as np

            postings = self._postings[term]
            ids = np.fromiter(postings.keys(), dtype=np.int64, count=len(postings))
            tfs = np.fromiter(postings.values(), dtype=np.float64, count=len(postings))
            lengths = np.fromiter((self._lengths[d] for d in postings), dtype=np.float64,
                                  count=len(postings))
            arrays = self._arrays[term] = (ids, tfs, lengths)
        return arrays

    def _search_arrays(
        self,
        terms: list[str],
        k: int,
        avgdl: float,
        max_doc_id: int | None,
        exclude: set[int] | None,
    ) -> list[tuple[int, float]]:
        """:meth:`search` with numpy (module docstring): same scores, same order."""
        import numpy as np

        k1, b = self.k1, self.b
        parts = []
        for term in terms:
            ids, tfs, lengths = self._term_arrays(term)
            keep = None
            if max_doc_id is not None:
                keep = ids <= max_doc_id
            if exclude:
                outside = ~np.isin(ids, np.fromiter(exclude, dtype=np.int64, count=len(exclude)))
                keep = outside if keep is None else keep & outside
            if keep is not None:
                ids, tfs, lengths = ids[keep], tfs[keep], lengths[keep]
            norm = k1 * (1.0 - b + b * lengths / avgdl)
            parts.append((ids, self.idf(term) * tfs * (k1 + 1.0) / (tfs + norm)))
        if not parts:
            return []
        every = np.unique(np.concatenate([ids for ids, _ in parts]))
        if every.size == 0:
            return []
        scores = np.zeros(every.size, dtype=np.float64)
        for ids, share in parts:  # term by term, as the loop adds them
            scores[np.searchsorted(every, ids)] += share
        order = np.lexsort((-every, -scores))[:k]  # last key first: score, then newest
        return [(int(every[i]), float(scores[i])) for i in order]
