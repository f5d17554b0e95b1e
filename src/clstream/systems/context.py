"""The four OAKS context strategies as systems (SPECS §1.2): full, window, rag, rag+window.

Memory is the list of chunks observed so far, in arrival order; the BM25 index grows with
it one chunk per ``observe``. A probe only reads memory. ``respond_batch`` builds every
request of one interval and sends them in a single ``generate`` call, so a server can share
the common prompt prefix (see :mod:`clstream.systems.prompts` for the layout).

Arguments (written ``rag:k=30`` on the command line):

* full: ``budget`` -- prompt token budget, counted with the model's tokenizer; the oldest
  chunks are dropped first. The context is cut so that a fixed question reserve still fits,
  which keeps the context identical for every question of an interval whatever the batch.
* window: ``w`` -- the w most recent chunks.
* rag: ``k`` -- BM25 top-k over all chunks seen (chunk index <= t), shown in chunk order.
  SPECS includes the current chunk (the paper's appendix retrieves from earlier intervals).
* rag+window: ``k``, ``w`` -- the w most recent chunks, plus BM25 top-k over the older
  chunks once t > w; the question carries the head index.

Retrieval is lexical (:class:`~clstream.retrieval.bm25.IncrementalBM25`, queried with the
question text) so the systems run offline; the paper used a dense embedding model.
Defaults are small so the bare names fit short contexts; the paper's runs used k = 30 and
k = 15, w = 15 (``rag:k=30``, ``rag+window:k=15,w=15``).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from clstream.core.contracts import Model
from clstream.core.errors import DataError, SpecError
from clstream.core.events import Chunk, Event
from clstream.core.specs import derive_seed
from clstream.core.types import GenerationRequest, GenerationResult, Query, Response, SamplingParams
from clstream.retrieval.hybrid import RETRIEVERS, Retriever, make_index
from clstream.systems import prompts

# Tokens kept free for the question block (question, options, reminder) under `budget`.
QUESTION_RESERVE = 512


class _ContextSystem(ABC):
    """Shared memory, snapshot and request plumbing; subclasses choose the passages."""

    name: ClassVar[str]
    defaults: ClassVar[dict[str, int]]
    minimums: ClassVar[dict[str, int]]
    retrieves: ClassVar[bool] = False  # rag systems: take retriever=, embedder=, k_rrf=
    # Memory is a pure function of the chunks observed and observing calls no model, so a
    # runner may rebuild it by replaying the stream instead of storing a snapshot per step.
    replayable: ClassVar[bool] = True

    def __init__(
        self,
        model: Model,
        sampling: SamplingParams | None = None,
        seed: int = 0,
        **args: Any,
    ):
        self.model = model
        self.sampling = sampling if sampling is not None else SamplingParams()
        self.seed = seed
        self.retrieval = self._check_retrieval(args)  # pops retriever/embedder/k_rrf
        self.args = self._check_args(args)
        self._chunks: list[Chunk] = []
        self._index = self._new_index()
        self._block_tokens: list[int] = []
        self._shared: str | None = None  # context shared by all questions, for this memory

    @classmethod
    def _check_retrieval(cls, args: dict[str, Any]) -> dict[str, Any]:
        if not cls.retrieves:
            return {}
        out = {"retriever": args.pop("retriever", "bm25"),
               "embedder": str(args.pop("embedder", "minilm")),
               "k_rrf": args.pop("k_rrf", 60)}
        if out["retriever"] not in RETRIEVERS:
            raise SpecError(f"system {cls.name!r}: retriever must be one of {', '.join(RETRIEVERS)}")
        return out

    def _new_index(self) -> Retriever:
        return make_index(**self.retrieval) if self.retrieval else make_index("bm25")

    @classmethod
    def _check_args(cls, args: dict[str, Any]) -> dict[str, int]:
        for key in args:
            if key not in cls.defaults:
                known = ", ".join(sorted(cls.defaults))
                raise SpecError(f"system {cls.name!r}: unknown argument {key!r} (known: {known})")
        out = dict(cls.defaults)
        for key, value in args.items():
            if isinstance(value, bool) or not isinstance(value, int):
                raise SpecError(f"system {cls.name!r}: argument {key!r} must be an integer")
            if value < cls.minimums[key]:
                raise SpecError(
                    f"system {cls.name!r}: argument {key!r} must be >= {cls.minimums[key]}"
                )
            out[key] = value
        return out

    # --- memory ---------------------------------------------------------------------------

    async def reset(self) -> None:
        self._chunks = []
        self._index = self._new_index()
        self._block_tokens = []
        self._shared = None

    def _add(self, chunk: Chunk) -> None:
        position = len(self._chunks)
        self._chunks.append(chunk)
        self._index.add(position, chunk.text)
        self._shared = None

    async def observe(self, event: Event) -> list[GenerationResult]:
        if not isinstance(event, Chunk):
            raise SpecError(f"system {self.name!r} observes chunks, got {type(event).__name__}")
        self._add(event)
        return []

    def snapshot(self) -> dict[str, Any]:
        return {
            "chunks": [
                {"stream_id": c.stream_id, "index": c.index, "text": c.text} for c in self._chunks
            ]
        }

    def restore(self, state: dict[str, Any]) -> None:
        chunks = state.get("chunks") if isinstance(state, dict) else None
        if not isinstance(chunks, list):
            raise DataError("<snapshot>", None, "chunks", "expected a list of chunks")
        parsed = []
        for i, item in enumerate(chunks):
            ok = (
                isinstance(item, dict)
                and isinstance(item.get("stream_id"), str)
                and isinstance(item.get("index"), int)
                and isinstance(item.get("text"), str)
            )
            if not ok:
                raise DataError(
                    "<snapshot>", i, "chunks", "expected {stream_id: str, index: int, text: str}"
                )
            parsed.append(Chunk(item["stream_id"], item["index"], item["text"]))
        self._chunks, self._index, self._block_tokens = [], self._new_index(), []
        self._shared = None
        for chunk in parsed:
            self._add(chunk)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "args": {**self.args, **self.retrieval}}

    # --- answering ------------------------------------------------------------------------

    def _passages(self, positions: Sequence[int]) -> list[tuple[int, str]]:
        return [(self._chunks[p].index, self._chunks[p].text) for p in positions]

    def _retrieve(self, query: Query, k: int, max_position: int | None) -> list[int]:
        hits = self._index.search(query.text, k, max_doc_id=max_position)
        return sorted(doc_id for doc_id, _ in hits)

    @abstractmethod
    def _context(self, query: Query) -> tuple[str, int | None]:
        """The context text for ``query`` and the head index to show (or None)."""

    def _request(self, query: Query) -> tuple[GenerationRequest, float]:
        start = time.perf_counter()
        context, head = self._context(query)
        retrieve_s = time.perf_counter() - start
        params = self.sampling.model_copy(update={"seed": derive_seed(self.seed, query.id)})
        request = GenerationRequest(
            key=query.id, messages=prompts.build_messages(context, query, head), params=params
        )
        return request, retrieve_s

    async def respond(self, query: Query) -> Response:
        return (await self.respond_batch([query]))[0]

    async def respond_batch(self, queries: Sequence[Query]) -> list[Response]:
        built = [self._request(q) for q in queries]
        if not built:
            return []
        start = time.perf_counter()
        results = await self.model.generate([req for req, _ in built])
        generate_s = (time.perf_counter() - start) / len(built)
        if len(results) != len(built):
            raise RuntimeError(
                f"model {self.model.name!r} returned {len(results)} results for {len(built)}"
            )
        return [
            Response(
                query_id=q.id,
                results=[result],
                timings={"retrieve": retrieve_s, "generate": generate_s},
            )
            for q, (_, retrieve_s), result in zip(queries, built, results, strict=True)
        ]


class FullContext(_ContextSystem):
    """All chunks so far; the oldest are dropped when the prompt would exceed ``budget``."""

    name = "full"
    defaults = {"budget": 120_000}
    minimums = {"budget": 1}

    def _fit(self, budget: int) -> str:
        tokenizer = self.model.tokenizer
        for chunk in self._chunks[len(self._block_tokens) :]:  # count each chunk once
            block = prompts.passage_block(chunk.index, chunk.text)
            self._block_tokens.append(tokenizer.count(block))
        fixed = tokenizer.count(prompts.SYSTEM_PROMPT) + tokenizer.count(prompts.CONTEXT_HEADER)
        room = budget - fixed
        used, first = 0, len(self._chunks)
        while first > 0 and used + self._block_tokens[first - 1] <= room:
            first -= 1
            used += self._block_tokens[first]
        passages = self._passages(range(first, len(self._chunks)))
        if first == len(self._chunks) and self._chunks and room > 0:
            newest = self._chunks[-1]
            # Not even the newest chunk fits whole: keep its end, as much as the room allows.
            tag_cost = tokenizer.count(prompts.passage_block(newest.index, ""))
            kept = tokenizer.truncate_left(newest.text, room - tag_cost)
            if kept.strip():
                passages = [(newest.index, kept)]
        return prompts.context_text(passages)

    def _context(self, query: Query) -> tuple[str, int | None]:
        if self._shared is None:
            self._shared = self._fit(self.args["budget"] - QUESTION_RESERVE)
        tokenizer = self.model.tokenizer
        question_tokens = tokenizer.count(prompts.question_text(query))
        if question_tokens <= QUESTION_RESERVE:
            return self._shared, None
        # A question longer than the reserve: cut this prompt further, for this query only.
        return self._fit(self.args["budget"] - question_tokens), None


class RollingWindow(_ContextSystem):
    """The ``w`` most recent chunks."""

    name = "window"
    defaults = {"w": 8}
    minimums = {"w": 1}

    def _context(self, query: Query) -> tuple[str, int | None]:
        if self._shared is None:
            first = max(0, len(self._chunks) - self.args["w"])
            self._shared = prompts.context_text(self._passages(range(first, len(self._chunks))))
        return self._shared, None


class RagSystem(_ContextSystem):
    """BM25 top-``k`` chunks among all seen, presented in chunk order."""

    name = "rag"
    defaults = {"k": 8}
    minimums = {"k": 1}
    retrieves = True

    def _context(self, query: Query) -> tuple[str, int | None]:
        positions = self._retrieve(query, self.args["k"], None)
        return prompts.context_text(self._passages(positions)), None


class RagWindow(_ContextSystem):
    """The ``w`` most recent chunks plus, once t > w, BM25 top-``k`` over the older ones."""

    name = "rag+window"
    defaults = {"k": 4, "w": 4}
    minimums = {"k": 1, "w": 1}
    retrieves = True

    def _context(self, query: Query) -> tuple[str, int | None]:
        n, w = len(self._chunks), self.args["w"]
        recent = self._passages(range(max(0, n - w), n))
        older: list[tuple[int, str]] = []
        if n > w:
            older = self._passages(self._retrieve(query, self.args["k"], n - w - 1))
        head = self._chunks[-1].index if self._chunks else None
        return prompts.split_context_text(recent, older), head
