"""The entity graph of the ``hipporag`` method (docs/agentic.md "hipporag"): entities as
nodes, extracted triples and synonym links as edges, each node knowing the passages it came
from; personalized PageRank over it ranks passages.

* Names. An entity's node is its normalised name (:func:`normalized`: lowercase, letter and
  digit runs joined by single spaces, leading articles dropped), so "The Kitchen" and
  "kitchen" are one node; the first spelling met is kept for display.
* Triples. Each triple adds its two nodes (when new) and one undirected edge between them
  (weight +1 per triple, the relation kept in the edge's ``relations``); a triple whose two
  names normalise to one node adds the node only. Both nodes remember the passage.
* Synonyms. Each node new in a passage is linked to the nodes whose names share most of its
  words: the :data:`SYNONYM_CANDIDATES` best names of a BM25 index over node names (only names
  sharing a word are candidates), kept when the word-set Jaccard similarity is at least
  ``synonym``. The edge gets the similarity as its ``synonym`` attribute and adds it to its
  weight. Adding a passage thus costs its triples plus one name-index lookup per new node,
  whatever the size of the graph.
* Ranking. :meth:`EntityGraph.ranked` runs personalized PageRank from the query's nodes, each
  weighted by its specificity (1 / the number of passages it came from) and scores a passage
  by the sum of its nodes' PageRank; the best ``k`` passages with a positive score, ties to the
  later passage. The PageRank is :func:`personalized_pagerank`, plain Python with networkx's
  semantics, since networkx's own needs scipy, which the core install lacks.

The triples and synonym links of every passage are kept in order, so a snapshot rebuilds the
same graph by the same operations (:meth:`EntityGraph.add_passage` with ``synonyms`` given).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from clstream.retrieval.bm25 import IncrementalBM25

if TYPE_CHECKING:
    import networkx as nx

Triple = tuple[str, str, str]
Synonym = tuple[str, str, float]  # (node, node, similarity)

SYNONYM_CANDIDATES = 16  # names the synonym search reads per new node
MATCH_CANDIDATES = 64  # names a query's words are matched against
ARTICLES = frozenset({"the", "a", "an"})
_WORD = re.compile(r"[^\W_]+")


def personalized_pagerank(graph: nx.Graph, personalization: Mapping[str, float], alpha: float,
                          nstart: Mapping[str, float] | None = None, weight: str = "weight",
                          max_iter: int = 100, tol: float = 1e-6) -> dict[str, float]:
    """Personalized PageRank by power iteration, as ``networkx.pagerank`` computes it but
    without scipy (a core-install dependency it is not; pyproject's ``clbench`` extra).

    Each undirected edge {u, v} of weight w (1 when unset) is an arc both ways; ``W(u)`` is
    the summed weight of u's arcs, and a node with ``W(u) = 0`` is dangling. With ``p`` the
    personalization and ``x`` the start (``nstart``, else uniform), both normalised to sum 1
    (nodes they omit get 0), one step is

        x'(v) = alpha * (sum_{u ~ v} x(u) * w(u, v) / W(u) + p(v) * sum_{u dangling} x(u))
                + (1 - alpha) * p(v)

    so a dangling node's mass goes back by the personalization. It stops when
    ``sum_v |x'(v) - x(v)| < N * tol`` (N nodes) or after ``max_iter`` steps; there networkx
    raises, and this returns the last ``x'`` (a ranking needs no more, and only ``alpha = 1``
    can fail to converge in 100 steps here). Each step keeps the sum at 1, so the result is
    normalised."""
    nodes = list(graph)
    n = len(nodes)
    if n == 0:
        return {}
    index = {node: i for i, node in enumerate(nodes)}
    p = [float(personalization.get(node, 0.0)) for node in nodes]
    p_total = sum(p)
    if p_total == 0.0:
        raise ValueError("personalized PageRank needs a positive personalization")
    p = [value / p_total for value in p]
    if nstart is None:
        x = [1.0 / n] * n
    else:
        x = [float(nstart.get(node, 0.0)) for node in nodes]
        x_total = sum(x)
        x = [value / x_total for value in x]
    arcs: list[list[tuple[int, float]]] = []
    dangling: list[int] = []
    for i, node in enumerate(nodes):
        out = [(index[other], float(data.get(weight, 1.0)))
               for other, data in graph.adj[node].items()]
        total = sum(w for _, w in out)
        if total == 0.0:
            dangling.append(i)
            arcs.append([])
        else:
            arcs.append([(j, w / total) for j, w in out])
    for _ in range(max_iter):
        back = alpha * sum(x[i] for i in dangling) + (1.0 - alpha)
        following = [back * value for value in p]
        for i, mass in enumerate(x):
            if mass:
                share = alpha * mass
                for j, fraction in arcs[i]:
                    following[j] += share * fraction
        change = sum(abs(a - b) for a, b in zip(following, x, strict=True))
        x = following
        if change < n * tol:
            break
    return dict(zip(nodes, x, strict=True))


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def normalized(name: str) -> str:
    """The node an entity name becomes: lowercase words without leading articles ('' when
    the name has no word)."""
    found = words(name)
    while len(found) > 1 and found[0] in ARTICLES:
        found.pop(0)
    return " ".join(found)


def jaccard(a: str, b: str) -> float:
    """Word-set Jaccard similarity of two normalised names."""
    x, y = set(a.split()), set(b.split())
    union = len(x | y)
    return len(x & y) / union if union else 0.0


class EntityGraph:
    """The graph, the name index and the per-passage record (see the module docstring)."""

    def __init__(self, synonym: float):
        import networkx as nx  # on first use: the builtin model loads this module to reply

        self.synonym = synonym
        self.graph = nx.Graph()
        self._names = IncrementalBM25()
        self._node_ids: dict[str, int] = {}
        self._node_keys: list[str] = []
        self.triples: list[list[Triple]] = []  # per passage position, as given
        self.synonyms: list[list[Synonym]] = []  # per passage position, in the order made

    def __len__(self) -> int:
        return int(self.graph.number_of_nodes())

    def _node(self, name: str, position: int, new: list[str]) -> str:
        key = normalized(name)
        if key not in self._node_ids:
            self._node_ids[key] = len(self._node_keys)
            self._node_keys.append(key)
            self._names.add(self._node_ids[key], key)
            self.graph.add_node(key, name=name.strip(), passages=[])
            new.append(key)
        passages: list[int] = self.graph.nodes[key]["passages"]
        if not passages or passages[-1] != position:
            passages.append(position)
        return key

    def add_passage(self, triples: Sequence[Triple],
                    synonyms: Sequence[Synonym] | None = None) -> list[Synonym]:
        """Add the next passage's triples; link its new nodes to their synonyms, found through
        the name index, or the ``synonyms`` given (a snapshot's). Returns the links made."""
        position = len(self.triples)
        kept = [t for t in triples if normalized(t[0]) and normalized(t[2])]
        new: list[str] = []
        for subject, relation, obj in kept:
            a, b = self._node(subject, position, new), self._node(obj, position, new)
            if a == b:
                continue
            if self.graph.has_edge(a, b):
                data = self.graph.edges[a, b]
                data["weight"] += 1.0
                if relation not in data["relations"]:
                    data["relations"].append(relation)
            else:
                self.graph.add_edge(a, b, weight=1.0, relations=[relation])
        links = list(synonyms) if synonyms is not None else self._find_synonyms(new)
        if not all(a in self.graph and b in self.graph for a, b, _ in links):
            links = []  # links to unknown entities (a damaged snapshot): none is made
        for a, b, similarity in links:
            if self.graph.has_edge(a, b):
                self.graph.edges[a, b]["weight"] += similarity
                self.graph.edges[a, b]["synonym"] = similarity
            else:
                self.graph.add_edge(a, b, weight=similarity, relations=[], synonym=similarity)
        self.triples.append(list(kept))
        self.synonyms.append(links)
        return links

    def _find_synonyms(self, new: Iterable[str]) -> list[Synonym]:
        links: list[Synonym] = []
        seen: set[tuple[str, str]] = set()
        for key in new:
            for node_id, _ in self._names.search(key, SYNONYM_CANDIDATES):
                other = self._node_keys[node_id]
                pair = (min(key, other), max(key, other))
                if other == key or pair in seen or self._linked(key, other):
                    continue
                similarity = jaccard(key, other)
                if similarity >= self.synonym:
                    seen.add(pair)
                    links.append((key, other, similarity))
        return links

    def _linked(self, a: str, b: str) -> bool:
        return self.graph.has_edge(a, b) and "synonym" in self.graph.edges[a, b]

    # --- the query side ------------------------------------------------------------------

    def link(self, name: str) -> str | None:
        """The node a query entity names: its own node, else the name-index's best match
        (None when no node shares a word with it)."""
        key = normalized(name)
        if not key:
            return None
        if key in self._node_ids:
            return key
        best = self._names.search(key, 1)
        return self._node_keys[best[0][0]] if best else None

    def matched(self, text: str) -> list[str]:
        """The nodes every word of whose name occurs in ``text`` (found through the name
        index), in the order of the index's ranking."""
        present = set(words(text))
        found = []
        for node_id, _ in self._names.search(text, MATCH_CANDIDATES):
            key = self._node_keys[node_id]
            if set(key.split()) <= present:
                found.append(key)
        return found

    def pagerank(self, seeds: Iterable[str], damping: float) -> dict[str, float]:
        """Personalized PageRank from ``seeds``, each weighted by its specificity."""
        personalization = {node: 1.0 / max(1, len(self.graph.nodes[node]["passages"]))
                           for node in seeds if node in self.graph}
        if not personalization:
            return {}
        # Starting from the seeds (not uniformly), nodes the seeds cannot reach keep exactly
        # zero, so passages of other components never enter the ranking.
        return personalized_pagerank(self.graph, personalization, alpha=damping,
                                     nstart=personalization, weight="weight")

    def ranked(self, seeds: Iterable[str], damping: float, k: int) -> list[int]:
        """The (up to) ``k`` passage positions with the best positive summed PageRank of their
        nodes, best first, ties to the later passage."""
        totals: dict[int, float] = {}
        for node, score in self.pagerank(seeds, damping).items():
            if score > 0.0:
                for position in self.graph.nodes[node]["passages"]:
                    totals[position] = totals.get(position, 0.0) + score
        best = heapq.nsmallest(k, totals.items(), key=lambda item: (-item[1], -item[0]))
        return [position for position, _ in best]
