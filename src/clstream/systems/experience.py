"""Instance-level experience memory (SeqMem-Eval App. A.3 (1)-(2); docs/seqmem.md §6), and the base
class every experience method builds on.

* ``memory-free``: answers with no memory at all (the baseline); it ignores every event.
* ``exp-recent`` (k=3): the k most recent records -- task, answer, feedback -- oldest first.
* ``exp-rag`` (k=3): the k past records most similar to the task, shown oldest first.

The paper ranks records by embedding similarity; offline, similarity here is BM25 over the past
task texts (``retriever=bm25``, the only retriever wired so far; the argument is where a dense
or hybrid retriever plugs in).

The base class :class:`ExperienceSystem` holds what all methods share, on top of what every
memory method shares (:class:`clstream.systems.base.MemorySystem`: declared arguments, model
calls with a per-request seed derived from the request key, stage tags): timings
(``retrieve`` / ``generate`` / ``update``) on every :class:`Response`, JSON snapshots, and
:class:`ExperiencePool` (records plus an incremental index over their task texts). It also
makes every method handle every event: feedback goes to the method's own update; a chunk, a
document or an observation is kept as an experience of kind *text* -- a passage with no task
and no outcome (:mod:`clstream.systems.passages`), in memory's ``texts``. When answering, the
k texts most similar to the question (the k most recent for ``exp-recent``) are shown as
tagged passages in a section of their own, last before the question, the place a context
system gives its passages. No model call is made for a text event, and text never enters a
method's learning from successes and failures.
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from clstream.core import layout
from clstream.core.errors import SpecError
from clstream.core.events import Event, Feedback
from clstream.core.params import Param
from clstream.core.types import GenerationResult, Query, Response
from clstream.retrieval.bm25 import IncrementalBM25
from clstream.systems import memory_prompts
from clstream.systems.base import MemorySystem, snapshot_error
from clstream.systems.passages import PassageStore

RETRIEVERS: dict[str, Callable[[], IncrementalBM25]] = {"bm25": IncrementalBM25}


def k_param(default: int = 3, what: str = "past records shown") -> Param:
    return Param(default, what, minimum=1)


RETRIEVER_PARAM = Param("bm25", "similarity search over past task texts",
                        choices=tuple(RETRIEVERS))


@dataclass
class ExperienceRecord:
    """One finished task as memory keeps it."""

    task_id: str
    question: str
    output: str
    feedback: str
    success: bool

    def to_json(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "question": self.question, "output": self.output,
                "feedback": self.feedback, "success": self.success}

    @classmethod
    def from_json(cls, item: Any, field: str) -> ExperienceRecord:
        ok = isinstance(item, dict) and all(
            isinstance(item.get(k), str) for k in ("task_id", "question", "output", "feedback")
        ) and isinstance(item.get("success"), bool)
        if not ok:
            raise snapshot_error(field, "expected {task_id, question, output, feedback: str, "
                                        "success: bool}")
        return cls(item["task_id"], item["question"], item["output"], item["feedback"],
                   item["success"])

    @classmethod
    def from_feedback(cls, fb: Feedback) -> ExperienceRecord:
        task_id = str(fb.meta.get("task_id", fb.query_id))
        return cls(task_id, fb.query_text, fb.answer, fb.message, fb.success)

    def experience(self) -> layout.Experience:
        return layout.Experience(self.question, self.output, self.feedback, self.success)


class ExperiencePool:
    """Records in arrival order, indexed by their task text for similarity search."""

    def __init__(self, retriever: str = "bm25"):
        self.retriever = retriever
        self.records: list[ExperienceRecord] = []
        self._index = RETRIEVERS[retriever]()

    def __len__(self) -> int:
        return len(self.records)

    def add(self, record: ExperienceRecord) -> int:
        position = len(self.records)
        self.records.append(record)
        self._index.add(position, record.question)
        return position

    def recent(self, k: int) -> list[int]:
        return list(range(max(0, len(self.records) - k), len(self.records)))

    def similar(self, text: str, k: int, keep: Callable[[ExperienceRecord], bool] | None = None
                ) -> list[tuple[int, float]]:
        """Up to k (position, score) pairs, best first; ``keep`` filters records."""
        if k <= 0 or not self.records:
            return []
        depth = k if keep is None else len(self.records)
        hits = self._index.search(text, depth)
        if keep is not None:
            hits = [(p, s) for p, s in hits if keep(self.records[p])]
        return hits[:k]

    def experiences(self, positions: Sequence[int]) -> list[layout.Experience]:
        """Records at ``positions`` as shown in prompts, oldest first."""
        return [self.records[p].experience() for p in sorted(positions)]

    def to_json(self) -> list[dict[str, Any]]:
        return [r.to_json() for r in self.records]

    @classmethod
    def from_json(cls, items: Any, field: str, retriever: str) -> ExperiencePool:
        if not isinstance(items, list):
            raise snapshot_error(field, "expected a list of records")
        pool = cls(retriever)
        for i, item in enumerate(items):
            pool.add(ExperienceRecord.from_json(item, f"{field}[{i}]"))
        return pool


class ExperienceSystem(MemorySystem):
    """Shared plumbing of the experience methods (see the module docstring).

    Subclasses set ``name``, ``summary`` and ``params`` and implement ``_clear``, and as
    needed ``_sections``, ``_update``, ``_dump`` and ``_load``. ``respond`` never changes
    memory; only ``observe`` does.
    """

    max_tries: int = 1
    keeps_text: ClassVar[bool] = True  # keep chunks, documents and observations as texts
    texts_by_recency: ClassVar[bool] = False  # show the most recent texts, not the most similar

    def _checked(self, args: dict[str, Any]) -> dict[str, Any]:
        retriever = args.get("retriever")
        if "retriever" in self.params and isinstance(retriever, str) \
                and retriever not in RETRIEVERS:
            raise SpecError(f"system {self.name!r}: unknown retriever {retriever!r} "
                            f"(known: {', '.join(sorted(RETRIEVERS))})")
        return super()._checked(args)

    def _empty(self) -> None:
        self.texts = PassageStore(RETRIEVERS[self.args.get("retriever", "bm25")])
        self._clear()

    # --- the System contract -------------------------------------------------------------

    async def observe(self, event: Event) -> list[GenerationResult]:
        if isinstance(event, Feedback):
            return await self._update(event)
        if self.keeps_text:
            self.texts.observe(event)
        return []

    async def respond(self, query: Query) -> Response:
        timings = {"retrieve": 0.0, "generate": 0.0, "update": 0.0}
        results: list[GenerationResult] = []
        sections = await self._sections(query, timings, results)
        with self._timed(timings, "retrieve"):
            sections.append(self._texts_section(query))
        messages = layout.query_messages(query, sections)
        results.append(await self._call(query.id, messages, "generate", timings))
        return Response(query_id=query.id, results=results,
                        timings={k: round(v, 6) for k, v in timings.items()})

    async def respond_batch(self, queries: Sequence[Query]) -> list[Response]:
        """Probes of one memory state, sent together so a backend can run them concurrently."""
        return list(await asyncio.gather(*(self.respond(q) for q in queries)))

    def snapshot(self) -> dict[str, Any]:
        memory = self._dump()
        if self.keeps_text:
            memory = {**memory, "texts": self.texts.to_json()}
        return self._enveloped(memory)

    def restore(self, state: dict[str, Any]) -> None:
        memory = self._opened(state)
        self._empty()
        if self.keeps_text:
            self.texts.load(memory.get("texts", []), "texts")
        self._load(memory)

    def _described(self) -> dict[str, Any]:
        return {"max_tries": self.max_tries,
                "prompt_template_hash": memory_prompts.template_fingerprint()}

    # --- shared by the methods ----------------------------------------------------------

    async def _update_call(self, key: str, prompt: str) -> GenerationResult:
        return await self._call(key, memory_prompts.update_messages(prompt), "update")

    def _pool(self) -> ExperiencePool:
        return ExperiencePool(self.args.get("retriever", "bm25"))

    def _texts_section(self, query: Query) -> str:
        """The texts shown for ``query`` as tagged passages, or '' when there are none."""
        if not self.keeps_text or not self.texts:
            return ""
        k = self.args["k"]
        recent = self.texts_by_recency
        positions = self.texts.recent(k) if recent else self.texts.similar(query.text, k)
        return layout.passages_section(self.texts.tagged(positions)) if positions else ""

    # --- what subclasses provide ---------------------------------------------------------

    @abstractmethod
    def _clear(self) -> None:
        """Empty the method's memory (and any state held between ``respond`` and ``observe``)."""

    async def _sections(self, query: Query, timings: dict[str, float],
                        results: list[GenerationResult]) -> list[str]:
        return []

    async def _update(self, fb: Feedback) -> list[GenerationResult]:
        return []

    def _dump(self) -> dict[str, Any]:
        return {}

    def _load(self, memory: dict[str, Any]) -> None:
        return None


class MemoryFree(ExperienceSystem):
    """Answers every query with no memory (SeqMem-Eval's baseline)."""

    name = "memory-free"
    summary = "no memory at all: every query is answered on its own (the baseline)"
    keeps_text = False

    def _clear(self) -> None:
        return None


class _RecordMemory(ExperienceSystem):
    """Past records, all kept; subclasses choose which k to show (``_pick``)."""

    def _clear(self) -> None:
        self.pool = self._pool()

    @abstractmethod
    def _pick(self, query: Query) -> list[int]:
        """Positions of the records shown for ``query``."""

    async def _sections(self, query: Query, timings: dict[str, float],
                        results: list[GenerationResult]) -> list[str]:
        with self._timed(timings, "retrieve"):
            shown = self.pool.experiences(self._pick(query))
        return [layout.experiences_section(shown)]

    async def _update(self, fb: Feedback) -> list[GenerationResult]:
        self.pool.add(ExperienceRecord.from_feedback(fb))
        return []

    def _dump(self) -> dict[str, Any]:
        return {"records": self.pool.to_json()}

    def _load(self, memory: dict[str, Any]) -> None:
        self.pool = ExperiencePool.from_json(memory.get("records"), "records",
                                             self.args.get("retriever", "bm25"))


class ExpRecent(_RecordMemory):
    """The k most recent records: task, answer and feedback."""

    name = "exp-recent"
    summary = "the k most recent past tasks with their answers and feedback"
    params = {"k": k_param()}
    texts_by_recency = True

    def _pick(self, query: Query) -> list[int]:
        return self.pool.recent(self.args["k"])


class ExpRag(_RecordMemory):
    """The k past records most similar to the task (BM25 over task texts by default)."""

    name = "exp-rag"
    summary = "the k past tasks most similar to the query, with their answers and feedback"
    params = {"k": k_param(), "retriever": RETRIEVER_PARAM}

    def _pick(self, query: Query) -> list[int]:
        return [p for p, _ in self.pool.similar(query.text, self.args["k"])]
