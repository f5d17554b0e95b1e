"""HippoRAG-style graph memory (docs/agentic.md "hipporag"; HippoRAG, Gutierrez et al. 2024,
as the OAKS paper evaluates it): passages kept whole, an entity graph built from triples the
model extracts, personalized PageRank from the question's entities choosing what is shown.

Memory: every observed event as one tagged passage (:mod:`clstream.systems.passages`: a chunk,
a document, an environment step, task feedback), and the graph over them
(:class:`~clstream.systems.hipporag.graph.EntityGraph`).

Observing an event costs one model call (stage ``update``): open information extraction over
the passage (:data:`clstream.systems.hipporag.formats.EXTRACT_PROMPT`), read as ``TRIPLE:`` lines;
the triples go into the graph and the passage's new entities are linked to near-identical
names through the name index. A failed call still keeps the passage (reachable by the lexical
fallback below), with no triples. Nothing else is read or rebuilt, so adding event t costs
event t plus index lookups.

Answering a query (memory unchanged):

1. the query's entities: with ``query_entities=model`` (the default, the paper's way), one
   call per query (stage ``retrieve``, keyed ``<query id>/entities``, all the queries of one
   memory state in one ``generate`` call) lists them as ``ENTITY:`` lines, and each is linked
   to its node (the same name, else the name index's best match); no call is made while the
   graph is empty. With ``query_entities=match`` no call is made: the nodes whose names'
   words all occur in the question, found through the name index;
2. personalized PageRank (``damping``) from those nodes over the whole graph, each passage
   scored by the sum of its nodes' scores; the ``k`` best are shown, in stream order, as
   tagged passages before the query's block (:func:`clstream.core.layout.passages_section`);
3. with no node found, the ``k`` passages BM25 ranks best for the question are shown instead.

The response holds the entity call (when made) and then the answering call, whose samples the
runner reads. Snapshots hold the passages and, per passage, its triples and the synonym links
it made; restoring replays them into a fresh graph, the same operations in the same order.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, ClassVar

from clstream.core import layout
from clstream.core.errors import SpecError
from clstream.core.events import Event
from clstream.core.params import Param
from clstream.core.types import GenerationResult, Query, Response
from clstream.retrieval.hybrid import make_index
from clstream.systems.base import MemorySystem, reply_text, snapshot_error, snapshot_list, staged
from clstream.systems.conversation import event_key
from clstream.systems.hipporag import formats
from clstream.systems.hipporag.graph import EntityGraph, Synonym, Triple
from clstream.systems.passages import PassageStore, passage_of

QUERY_ENTITIES = ("model", "match")


class HippoRag(MemorySystem):
    """Passages, an entity graph from extracted triples, personalized PageRank to recall."""

    name = "hipporag"
    summary = "entity graph from extracted triples; personalized PageRank picks k passages"
    params: ClassVar[dict[str, Param]] = {
        "k": Param(5, "passages shown before each answer", minimum=1),
        "damping": Param(0.5, "PageRank damping: the chance of following an edge at each step "
                         "(at most 1)",
                         minimum=0.0, maximum=1.0),
        "synonym": Param(0.8, "word Jaccard similarity from which two entity names are linked "
                         "as synonyms (at most 1)", minimum=0.0,
                         maximum=1.0),
        "query_entities": Param("model", "how a question's entities are found: a model call "
                                "(model) or its words matched against entity names (match)",
                                choices=QUERY_ENTITIES),
    }
    # Observing calls a model, so memory is kept in snapshots rather than replayed.
    replayable: ClassVar[bool] = False

    def _configure(self) -> None:
        for name in ("damping", "synonym"):
            if self.args[name] > 1.0:
                raise SpecError(f"system {self.name!r}: {name} must be at most 1, "
                                f"got {self.args[name]}")

    def _empty(self) -> None:
        self.store = PassageStore(lambda: make_index("bm25"))
        self.graph = EntityGraph(self.args["synonym"])

    def _described(self) -> dict[str, Any]:
        return {"prompt_template_hash": formats.template_fingerprint()}

    # --- updating ------------------------------------------------------------------------

    async def observe(self, event: Event) -> list[GenerationResult]:
        passage = passage_of(event, self.store.next_index)
        call = await self._call(f"{event_key(event)}/openie",
                                formats.extract_messages(passage.text), "update")
        self.store.add(passage)
        self.graph.add_passage(formats.parse_triples(reply_text(call)))
        return [call]

    # --- answering -----------------------------------------------------------------------

    async def respond_batch(self, queries: Sequence[Query]) -> list[Response]:
        """The entity calls of every query in one ``generate`` call (when made), then every
        answering request in another; memory unchanged."""
        if not queries:
            return []
        start = time.perf_counter()
        entity_calls = await self._entity_calls(queries)
        per_query = (time.perf_counter() - start) / len(queries)
        requests, retrieve_s = [], []
        for n, query in enumerate(queries):
            start = time.perf_counter()
            call = entity_calls[n] if entity_calls else None
            shown = self.shown(query, formats.parse_entities(reply_text(call)) if call else None)
            section = layout.passages_section(self.store.tagged(shown))
            messages = layout.query_messages(query, [section])
            requests.append(self._seeded_request(query.id, messages, stage="generate"))
            retrieve_s.append(per_query + time.perf_counter() - start)
        start = time.perf_counter()
        results = await self._generate(requests)
        generate_s = (time.perf_counter() - start) / len(queries)
        return [Response(query_id=q.id,
                         results=[*([entity_calls[n]] if entity_calls else []),
                                  staged(result, "generate")],
                         timings={"retrieve": round(retrieve_s[n], 6),
                                  "generate": round(generate_s, 6)})
                for n, (q, result) in enumerate(zip(queries, results, strict=True))]

    async def _entity_calls(self, queries: Sequence[Query]) -> list[GenerationResult]:
        """One entity call per query (stage ``retrieve``), none in ``match`` mode or while
        the graph is empty."""
        if self.args["query_entities"] != "model" or not len(self.graph):
            return []
        requests = [self._seeded_request(f"{q.id}/entities", formats.query_messages(q.text),
                                         stage="retrieve") for q in queries]
        return [staged(r, "retrieve") for r in await self._generate(requests)]

    def seeds(self, query: Query, entities: Sequence[str] | None) -> list[str]:
        """The nodes PageRank starts from: the named ``entities`` linked to nodes, or (with
        none given: ``match`` mode) the nodes the question's words name."""
        if entities is None:
            return self.graph.matched(query.text) if len(self.graph) else []
        linked = (self.graph.link(name) for name in entities)
        return list(dict.fromkeys(node for node in linked if node is not None))

    def shown(self, query: Query, entities: Sequence[str] | None) -> list[int]:
        """Positions of the passages shown for ``query``, in stream order."""
        k = self.args["k"]
        seeds = self.seeds(query, entities)
        ranked = self.graph.ranked(seeds, self.args["damping"], k) if seeds else []
        if not ranked:
            ranked = self.store.ranked(query.text, k)
        return sorted(ranked)

    # --- snapshots -----------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        return self._enveloped({
            "passages": self.store.to_json(),
            "triples": [[list(t) for t in ts] for ts in self.graph.triples],
            "synonyms": [[list(s) for s in ss] for ss in self.graph.synonyms],
        })

    def restore(self, state: dict[str, Any]) -> None:
        memory = self._opened(state)
        passages = snapshot_list(memory, "passages", "passages")
        triples = [_triples(item) for item in snapshot_list(memory, "triples", "triple lists")]
        synonyms = [_synonyms(item) for item in snapshot_list(memory, "synonyms",
                                                               "synonym lists")]
        if not len(passages) == len(triples) == len(synonyms):
            raise snapshot_error("triples", "expected one triple list and one synonym list "
                                 "per passage")
        self._empty()
        self.store.load(passages, "passages")
        for ts, ss in zip(triples, synonyms, strict=True):
            if not self.graph.add_passage(ts, ss) == ss:
                raise snapshot_error("synonyms", "a synonym link names an entity no earlier "
                                     "triple holds")


def _triples(item: Any) -> list[Triple]:
    if not isinstance(item, list) or not all(
            isinstance(t, list) and len(t) == 3 and all(isinstance(p, str) for p in t)
            for t in item):
        raise snapshot_error("triples", "expected lists of [subject, relation, object]")
    return [(t[0], t[1], t[2]) for t in item]


def _synonyms(item: Any) -> list[Synonym]:
    if not isinstance(item, list) or not all(
            isinstance(s, list) and len(s) == 3 and isinstance(s[0], str)
            and isinstance(s[1], str) and isinstance(s[2], int | float)
            and not isinstance(s[2], bool) for s in item):
        raise snapshot_error("synonyms", "expected lists of [name, name, similarity]")
    return [(s[0], s[1], float(s[2])) for s in item]
