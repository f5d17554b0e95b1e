"""Context strategies as systems (docs/oaks.md §2.2): full, window, rag, rag+window.

Memory is the list of passages observed so far, in arrival order: a chunk as it came, and a
document, an observation or task feedback as a further passage with a running index
(:mod:`clstream.systems.passages`); the retrieval index grows with it, one passage per
``observe``. A probe only reads memory. The query brings the protocol's rules and question
block; the system shows its passages before it, in the layout of :mod:`clstream.core.layout`.
``respond_batch`` builds every request of one memory state and sends them in a single
``generate`` call, so a server can share the common prompt prefix. The two halves are public
(:class:`RequestPlanner`): :meth:`plan_batch` builds the requests of the memory state held now
and :meth:`complete_batch` turns the model's results into responses, so a runner can observe
chunk t+1 into the same instance while the requests of interval t wait to be sent, instead of
rebuilding a separate instance per interval by replaying chunks 1..t.

Each request is built from its parts (:class:`~clstream.models.prompt_parts.PromptParts`,
:meth:`plan_parts`): the memory sections as a header and one segment per passage, each
passage's segment one string held by the memory (:meth:`PassageStore.block`), and a section
every question of a memory state shows (full context, the window, rag+window's recent
passages) made once per state. ``clstream plan`` counts those parts without building the
prompts (docs/plan.md §2); the run sends :meth:`request_of` the same parts.

Arguments (written ``rag:k=30`` on the command line):

* full: ``budget`` -- prompt token budget, counted with the model's tokenizer; the oldest
  passages are dropped first. The context is cut so that a fixed question reserve still fits,
  which keeps the context identical for every question of an interval whatever the batch.
* window: ``w`` -- the w most recent passages.
* rag: ``k`` -- top-k over all passages seen (chunk index <= t), shown in chunk order.
  docs/oaks.md §2.2 includes the current chunk (the paper's appendix retrieves from earlier intervals).
  ``dedupe`` (0 = off): a candidate whose word-set Jaccard similarity with a passage already
  chosen is at least ``dedupe`` is skipped and the next best taken, so near-copies of one
  passage (a stream that repeats itself) do not fill all k places.
* rag+window: ``k``, ``w`` -- the w most recent passages, plus top-k over the older ones once
  t > w; the question carries the head index (the newest passage's index).

Retrieval is lexical by default (:class:`~clstream.retrieval.bm25.IncrementalBM25`, queried
with the question text) so the systems run offline; ``retriever=dense|hybrid`` (with
``embedder`` and ``k_rrf``) plugs in the paper's dense retrieval. Defaults are small so the
bare names fit short contexts; the paper's runs used k = 30 and k = 15, w = 15
(``rag:k=30``, ``rag+window:k=15,w=15``).
"""

from __future__ import annotations

import re
import time
from abc import abstractmethod
from collections.abc import Sequence
from functools import partial
from typing import Any, ClassVar

from clstream.core import layout
from clstream.core.contracts import PlannedBatch, Tokenizer
from clstream.core.events import Event
from clstream.core.params import Param
from clstream.core.types import GenerationRequest, GenerationResult, Query, Response
from clstream.models.prompt_parts import PromptParts, Section, messages_of, parts_of
from clstream.retrieval.hybrid import RETRIEVERS, make_index
from clstream.systems.base import MemorySystem, snapshot_list
from clstream.systems.passages import Passage, PassageStore

# Tokens kept free for the question block (question, options, reminder) under `budget`.
QUESTION_RESERVE = 512

RETRIEVAL_PARAMS = {
    "retriever": Param("bm25", "retrieval index over the passages", choices=RETRIEVERS),
    "embedder": Param("minilm", "embedding model for dense and hybrid retrieval"),
    "k_rrf": Param(60, "reciprocal rank fusion constant of hybrid retrieval", minimum=0),
}


class ContextSystem(MemorySystem):
    """Shared memory, snapshot and request plumbing; subclasses choose the passages."""

    # Memory is a pure function of the events observed and observing calls no model, so a
    # runner may rebuild it by replaying the stream instead of storing a snapshot per step.
    replayable: ClassVar[bool] = True

    def _configure(self) -> None:
        self.retrieval = {k: self.args[k] for k in RETRIEVAL_PARAMS if k in self.args}

    # --- memory ---------------------------------------------------------------------------

    def _empty(self) -> None:
        # The store makes its index from the arguments, not through a method of this system:
        # no reference cycle, so a plan's request log (which the model holds) is freed as soon
        # as the plan drops it.
        self._memory = PassageStore(partial(make_index, **self.retrieval) if self.retrieval
                                    else partial(make_index, "bm25"))
        self._block_tokens: list[int] = []
        # Sections shared by all questions of this memory state (full: per instructions text).
        self._shared: dict[str, Section] = {}

    async def observe(self, event: Event) -> list[GenerationResult]:
        self._memory.observe(event)
        self._shared = {}
        return []

    def snapshot(self) -> dict[str, Any]:
        return {"chunks": self._memory.to_json()}

    def restore(self, state: dict[str, Any]) -> None:
        self._memory.load(snapshot_list(state, "chunks", "passages"), "chunks")
        self._block_tokens, self._shared = [], {}

    def max_prompt_tokens(self, blocks: Sequence[int], fixed: int, tokenizer: Tokenizer) -> int:
        """The most tokens one prompt holds for a stream whose passage blocks cost ``blocks``
        tokens each, with ``fixed`` tokens of instructions and header (question excluded):
        an estimate from the arguments. By default the whole stream."""
        return fixed + sum(blocks)

    # --- answering ------------------------------------------------------------------------

    @property
    def _passages(self) -> list[Passage]:
        return self._memory.passages

    def _retrieve(self, query: Query, k: int, max_position: int | None) -> list[int]:
        return self._memory.similar(query.text, k, max_position)

    def _section(self, positions: Sequence[int] | range,
                 header: str = layout.PASSAGES_HEADER) -> Section:
        """The passages at ``positions`` under ``header``: ``layout.passages_section`` of
        them, as the header and each passage's block."""
        return Section((header, *(self._memory.block(p) for p in positions)))

    @abstractmethod
    def _sections(self, query: Query) -> tuple[list[Section], int | None]:
        """The memory sections for ``query`` and the head index to show (or None)."""

    def _parts(self, query: Query) -> PromptParts:
        sections, head = self._sections(query)
        return parts_of(query, sections, head, self.sampling.max_tokens, self.sampling.n)

    def plan_parts(self, queries: Sequence[Query]) -> list[PromptParts]:
        """The parts of the requests of ``queries`` under the memory held now (module
        docstring): what :meth:`plan_batch` sends, not built."""
        return [self._parts(q) for q in queries]

    def request_of(self, parts: PromptParts) -> GenerationRequest:
        """The request sent for ``parts``."""
        return self._seeded_request(parts.query.id, messages_of(parts))

    def _request(self, query: Query) -> tuple[GenerationRequest, float]:
        start = time.perf_counter()
        parts = self._parts(query)
        retrieve_s = time.perf_counter() - start
        return self.request_of(parts), retrieve_s

    def plan_batch(self, queries: Sequence[Query]) -> PlannedBatch:
        """The requests of ``queries`` under the memory held now (nothing is sent)."""
        built = [self._request(q) for q in queries]
        return PlannedBatch(tuple(queries), tuple(req for req, _ in built),
                            tuple(seconds for _, seconds in built))

    def complete_batch(
        self, planned: PlannedBatch, results: Sequence[GenerationResult], generate_s: float
    ) -> list[Response]:
        """One response per planned query from the model's results (``generate_s``: the wall
        time of the call that produced them, shared evenly among its requests)."""
        self._check_count(results, len(planned.requests))
        each = generate_s / len(planned.requests) if planned.requests else 0.0
        return [
            Response(
                query_id=q.id,
                results=[result],
                timings={"retrieve": retrieve_s, "generate": each},
            )
            for q, retrieve_s, result in zip(
                planned.queries, planned.retrieve_s, results, strict=True
            )
        ]

    async def respond_batch(self, queries: Sequence[Query]) -> list[Response]:
        planned = self.plan_batch(queries)
        if not planned.requests:
            return []
        start = time.perf_counter()
        results = await self._generate(planned.requests)
        return self.complete_batch(planned, results, time.perf_counter() - start)


class FullContext(ContextSystem):
    """All passages so far; the oldest are dropped when the prompt would exceed ``budget``."""

    name = "full"
    summary = "every passage observed so far, the oldest dropped past a token budget"
    params = {"budget": Param(120_000, "prompt token budget (model's tokenizer)", minimum=1)}

    def _configure(self) -> None:
        super()._configure()
        self._counted: dict[str, int] = {}  # question block -> tokens (_question_tokens)

    def _fit(self, budget: int, instructions: str) -> Section:
        tokenizer = self.model.tokenizer
        passages = self._passages
        for position in range(len(self._block_tokens), len(passages)):  # each passage once
            self._block_tokens.append(tokenizer.count(self._memory.block(position)))
        fixed = tokenizer.count(instructions) + tokenizer.count(layout.PASSAGES_HEADER)
        room = budget - fixed
        used, first = 0, len(passages)
        while first > 0 and used + self._block_tokens[first - 1] <= room:
            first -= 1
            used += self._block_tokens[first]
        if first == len(passages) and passages and room > 0:
            newest = passages[-1]
            # Not even the newest passage fits whole: keep its end, as much as the room allows.
            tag_cost = tokenizer.count(layout.passage_block(newest.index, ""))
            kept = tokenizer.truncate_left(newest.text, room - tag_cost)
            if kept.strip():
                return Section((layout.PASSAGES_HEADER, layout.passage_block(newest.index, kept)))
        return self._section(range(first, len(passages)))

    def _sections(self, query: Query) -> tuple[list[Section], int | None]:
        instructions = layout.instructions_of(query)
        if instructions not in self._shared:
            self._shared[instructions] = self._fit(self.args["budget"] - QUESTION_RESERVE,
                                                   instructions)
        question_tokens = self._question_tokens(layout.prompt_of(query))
        if question_tokens <= QUESTION_RESERVE:
            return [self._shared[instructions]], None
        # A question longer than the reserve: cut this prompt further, for this query only.
        return [self._fit(self.args["budget"] - question_tokens, instructions)], None

    def _question_tokens(self, prompt: str) -> int:
        """The tokens of a question block, counted once: a stream asks the same questions at
        every interval."""
        counted = self._counted.get(prompt)
        if counted is None:
            if len(self._counted) >= 1 << 12:
                self._counted.clear()
            counted = self._counted[prompt] = self.model.tokenizer.count(prompt)
        return counted

    def max_prompt_tokens(self, blocks: Sequence[int], fixed: int, tokenizer: Tokenizer) -> int:
        budget: int = self.args["budget"]
        return min(budget, fixed + sum(blocks))


class RollingWindow(ContextSystem):
    """The ``w`` most recent passages."""

    name = "window"
    summary = "the w most recent passages"
    params = {"w": Param(8, "passages shown, newest last", minimum=1)}

    def _sections(self, query: Query) -> tuple[list[Section], int | None]:
        if "" not in self._shared:
            self._shared[""] = self._section(self._memory.recent(self.args["w"]))
        return [self._shared[""]], None

    def max_prompt_tokens(self, blocks: Sequence[int], fixed: int, tokenizer: Tokenizer) -> int:
        w = self.args["w"]
        return fixed + max(sum(blocks[i : i + w]) for i in range(max(1, len(blocks) - w + 1)))


_WORD = re.compile(r"[^\W_]+")


def word_set(text: str) -> frozenset[str]:
    """The distinct lowercase words (letter and digit runs) of ``text``."""
    return frozenset(_WORD.findall(text.lower()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a & b| / |a | b|; two empty sets are identical (1.0)."""
    union = len(a | b)
    return len(a & b) / union if union else 1.0


class RagSystem(ContextSystem):
    """Top-``k`` passages among all seen, presented in chunk order."""

    name = "rag"
    summary = "the k passages most similar to the question, in stream order"
    params = {
        "k": Param(8, "passages retrieved", minimum=1),
        "dedupe": Param(0.0, "skip a passage whose word Jaccard similarity with one already "
                             "chosen is at least this (0 = off)", minimum=0.0),
        **RETRIEVAL_PARAMS,
    }

    def _empty(self) -> None:
        super()._empty()
        self._words: dict[int, frozenset[str]] = {}  # word sets by position, for dedupe

    def _described_args(self) -> dict[str, Any]:
        """The arguments, ``dedupe`` left out while it is off (so a run without it records
        what runs recorded before the option existed)."""
        args = dict(self.args)
        if not args.get("dedupe"):
            args.pop("dedupe", None)
        return args

    def _passage_words(self, position: int) -> frozenset[str]:
        words = self._words.get(position)
        if words is None:
            words = self._words[position] = word_set(self._passages[position].text)
        return words

    def _distinct(self, query: Query, k: int, threshold: float) -> list[int]:
        """The k best passages, best first, skipping near-copies of one already chosen."""
        chosen: list[int] = []
        for position in self._memory.ranked(query.text, len(self._passages)):
            words = self._passage_words(position)
            if all(jaccard(words, self._passage_words(c)) < threshold for c in chosen):
                chosen.append(position)
                if len(chosen) == k:
                    break
        return sorted(chosen)

    def restore(self, state: dict[str, Any]) -> None:
        super().restore(state)
        self._words = {}

    def _sections(self, query: Query) -> tuple[list[Section], int | None]:
        threshold = float(self.args["dedupe"])
        if threshold > 0:
            positions = self._distinct(query, self.args["k"], threshold)
        else:
            positions = self._retrieve(query, self.args["k"], None)
        return [self._section(positions)], None

    def max_prompt_tokens(self, blocks: Sequence[int], fixed: int, tokenizer: Tokenizer) -> int:
        return fixed + sum(sorted(blocks, reverse=True)[: self.args["k"]])


class RagWindow(ContextSystem):
    """The ``w`` most recent passages plus, once t > w, top-``k`` over the older ones."""

    name = "rag+window"
    summary = "the w most recent passages plus the k older ones most similar to the question"
    params = {
        "k": Param(4, "older passages retrieved", minimum=1),
        "w": Param(4, "recent passages shown", minimum=1),
        **RETRIEVAL_PARAMS,
    }

    def _sections(self, query: Query) -> tuple[list[Section], int | None]:
        n, w = len(self._passages), self.args["w"]
        if "" not in self._shared:
            self._shared[""] = self._section(range(max(0, n - w), n), layout.RECENT_HEADER)
        sections = [self._shared[""]]
        if n > w:
            older = self._retrieve(query, self.args["k"], n - w - 1)
            if older:
                sections.append(self._section(older, layout.RETRIEVED_HEADER))
        head = self._passages[-1].index if self._passages else None
        return sections, head

    def max_prompt_tokens(self, blocks: Sequence[int], fixed: int, tokenizer: Tokenizer) -> int:
        largest = sorted(blocks, reverse=True)
        held = sum(largest[: self.args["k"] + self.args["w"]])
        return fixed + held + tokenizer.count(layout.RETRIEVED_HEADER)
