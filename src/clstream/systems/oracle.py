"""Oracle RAG (ImprintBench §3.1, Tables 1-3; docs/imprint.md §8 "Oracle RAG"), and the request plumbing
the in-context ImprintBench methods share.

The oracle keeps every observed document by its id and, for each question, shows the documents
the item was written from -- the ids the protocol passes in ``query.meta["source_doc_ids"]``
(docs/imprint.md §2; only this method reads them) -- as tagged passages in corpus order. It is
the upper bound of retrieval: the right context, and only it.

Readings taken here (the paper says only "the exact context used to generate the item"):

* under supervision Q or C+Q, a training pair (a ``kind="qa"`` document) counts as part of
  the context of the corpus document it was distilled from (its ``meta["source_doc_id"]``),
  so the oracle over Q shows the pairs of the item's source documents;
* an item that names no source (a news BoundAbs item) is shown nothing, as is a named id that
  was never observed;
* on protocols that name no sources (OAKS, SeqMem, CL-Bench) every query names none, so the
  oracle is the memory-free baseline there. Only documents are kept; other events (chunks,
  observations, feedback) are not memory for this method.

A probe reads memory only; memory is a pure function of the documents observed and observing
calls no model, so a runner may rebuild it by replaying the stream.

The method base (:class:`MethodBase`, :class:`InContextMethod`) is a systems piece, not an
ImprintBench one: the oracle, the chunked summary, the memory scaffold and agentic RAG build on
it, each runs on every protocol, and systems never import a protocol (docs/design.md §2.1).
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from clstream.core import layout
from clstream.core.errors import DataError
from clstream.core.events import Document, Event
from clstream.core.params import Param
from clstream.core.types import GenerationRequest, GenerationResult, Query, Response
from clstream.systems import corpus_prompts
from clstream.systems.base import SNAPSHOT, MemorySystem, snapshot_list

ALL_SUPERVISIONS: tuple[str, ...] = ("C", "Q", "C+Q")


class MethodBase(MemorySystem):
    """What every in-context ImprintBench method records besides what every memory method
    shares (:class:`clstream.systems.base.MemorySystem`): the supervisions it reads and the
    hash of the ImprintBench prompts."""

    # ImprintBench supervision (docs/imprint.md §2): every in-context method can read C, Q or both.
    supervisions: ClassVar[tuple[str, ...]] = ALL_SUPERVISIONS

    def _described(self) -> dict[str, Any]:
        return {"supervisions": list(self.supervisions),
                "prompts": corpus_prompts.template_fingerprint()}


class InContextMethod(MethodBase):
    """A method that answers each query with one request: the memory sections it chooses,
    then the query's block (:mod:`clstream.core.layout`), n samples from the run's sampling
    parameters, the seed derived from the query id so batching never changes an answer."""

    @abstractmethod
    def _sections(self, query: Query) -> list[str]:
        """The memory sections shown before ``query``'s block (maybe none)."""

    def _request(self, query: Query) -> GenerationRequest:
        return self._seeded_request(query.id, layout.query_messages(query, self._sections(query)))

    async def respond_batch(self, queries: Sequence[Query]) -> list[Response]:
        """Every query's request under the memory held now, sent in one ``generate`` call."""
        if not queries:
            return []
        start = time.perf_counter()
        requests = [self._request(q) for q in queries]
        built_s = (time.perf_counter() - start) / len(requests)
        start = time.perf_counter()
        results = await self._generate(requests)
        generate_s = (time.perf_counter() - start) / len(requests)
        return [Response(query_id=q.id, results=[r],
                         timings={"retrieve": built_s, "generate": generate_s})
                for q, r in zip(queries, results, strict=True)]


@dataclass(frozen=True)
class KeptDocument:
    """An observed document: its id, the corpus document it was distilled from (training
    pairs only, else ''), its running tag index and its text."""

    doc_id: str
    source_doc_id: str
    index: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "source_doc_id": self.source_doc_id,
                "index": self.index, "text": self.text}

    @classmethod
    def from_json(cls, item: Any, at: int) -> KeptDocument:
        ok = (isinstance(item, dict)
              and all(isinstance(item.get(k), str) for k in ("doc_id", "source_doc_id", "text"))
              and isinstance(item.get("index"), int) and not isinstance(item.get("index"), bool))
        if not ok:
            raise DataError(SNAPSHOT, at, "documents", "expected {doc_id: str, source_doc_id: "
                            "str, index: int, text: str}")
        return cls(item["doc_id"], item["source_doc_id"], item["index"], item["text"])


def named_sources(query: Query) -> frozenset[str]:
    """The document ids ``query.meta["source_doc_ids"]`` names (none when absent or not a
    list of strings)."""
    ids = query.meta.get("source_doc_ids") if isinstance(query.meta, dict) else None
    if not isinstance(ids, list | tuple):
        return frozenset()
    return frozenset(i for i in ids if isinstance(i, str))


class Oracle(InContextMethod):
    """The documents each item was written from, as tagged passages in corpus order."""

    name = "oracle"
    summary = "the documents each question was written from (ImprintBench oracle RAG)"
    params: ClassVar[dict[str, Param]] = {}
    replayable: ClassVar[bool] = True

    def _empty(self) -> None:
        self._documents: list[KeptDocument] = []

    async def observe(self, event: Event) -> list[GenerationResult]:
        if isinstance(event, Document):
            source = event.meta.get("source_doc_id") if isinstance(event.meta, dict) else None
            self._documents.append(KeptDocument(
                event.doc_id, source if isinstance(source, str) else "",
                len(self._documents), event.text))
        return []

    def shown(self, query: Query) -> list[KeptDocument]:
        """The kept documents ``query`` names, directly or as their source, in corpus order."""
        named = named_sources(query)
        if not named:
            return []
        return [d for d in self._documents if d.doc_id in named or d.source_doc_id in named]

    def _sections(self, query: Query) -> list[str]:
        shown = self.shown(query)
        if not shown:
            return []
        return [layout.passages_section([(d.index, d.text) for d in shown])]

    def snapshot(self) -> dict[str, Any]:
        return {"documents": [d.to_json() for d in self._documents]}

    def restore(self, state: dict[str, Any]) -> None:
        items = snapshot_list(state, "documents", "documents")
        self._documents = [KeptDocument.from_json(item, at) for at, item in enumerate(items)]
