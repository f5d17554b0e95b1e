"""Instance-level experience memory for SeqMem-Eval (SeqMem-Eval App. A.3 (1)-(2); SPECS §2.3),
and the base class every SeqMem memory method builds on.

* ``memory-free``: answers with no memory at all (the baseline).
* ``exp-recent`` (k=3): the k most recent records -- task, answer, feedback -- oldest first.
* ``exp-rag`` (k=3): the k past records most similar to the task, shown oldest first.

The paper ranks records by embedding similarity; offline, similarity here is BM25 over the past
task texts (``retriever=bm25``, the only retriever wired so far; the argument is where a dense
or hybrid retriever plugs in).

The base class :class:`SeqMemSystem` holds what all methods share: argument checking, model
calls with a per-request seed derived from the request key, stage tags and timings
(``retrieve`` / ``generate`` / ``update``) on every :class:`Response`, JSON snapshots, and
:class:`ExperiencePool` (records plus an incremental index over their task texts).
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

from clstream.core.contracts import Model
from clstream.core.errors import DataError, SpecError
from clstream.core.events import Event, Feedback
from clstream.core.specs import derive_seed
from clstream.core.types import (
    GenerationRequest,
    GenerationResult,
    Message,
    Query,
    Response,
    SamplingParams,
)
from clstream.retrieval.bm25 import IncrementalBM25
from clstream.systems import memory_prompts as P

SNAPSHOT = "<snapshot>"
RETRIEVERS: dict[str, Callable[[], IncrementalBM25]] = {"bm25": IncrementalBM25}


def snapshot_error(field: str, problem: str) -> DataError:
    return DataError(SNAPSHOT, None, field, problem)


def reply_text(result: GenerationResult) -> str:
    return result.samples[0].text if result.ok and result.samples else ""


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

    def exemplar(self) -> P.Exemplar:
        return P.Exemplar(self.question, self.output, self.feedback, self.success)


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

    def exemplars(self, positions: Sequence[int]) -> list[P.Exemplar]:
        """Records at ``positions`` as exemplars, oldest first."""
        return [self.records[p].exemplar() for p in sorted(positions)]

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


class SeqMemSystem(ABC):
    """Shared plumbing of the SeqMem memory methods (see the module docstring).

    Subclasses set ``name`` and ``defaults`` (argument -> default; the type of the default is
    the type required) and implement ``_clear``, ``_sections``, ``_update``, ``_dump`` and
    ``_load``. ``respond`` never changes memory; only ``observe`` does.
    """

    name: ClassVar[str]
    defaults: ClassVar[dict[str, Any]] = {}
    minimums: ClassVar[dict[str, int]] = {}
    max_tries: int = 1

    def __init__(self, model: Model, sampling: SamplingParams | None = None, seed: int = 0,
                 **args: Any):
        self.model = model
        self.sampling = sampling if sampling is not None else SamplingParams()
        self.seed = seed
        self.args = self._check_args(args)
        self._clear()

    @classmethod
    def _check_args(cls, args: dict[str, Any]) -> dict[str, Any]:
        out = dict(cls.defaults)
        for key, value in args.items():
            if key not in cls.defaults:
                known = ", ".join(sorted(cls.defaults)) or "none"
                raise SpecError(f"system {cls.name!r}: unknown argument {key!r} (known: {known})")
            want = type(cls.defaults[key])
            if isinstance(value, bool) or not isinstance(value, want):
                raise SpecError(f"system {cls.name!r}: argument {key!r} must be "
                                f"{'an integer' if want is int else 'a string'}, got {value!r}")
            if want is int and value < cls.minimums.get(key, 1):
                raise SpecError(f"system {cls.name!r}: argument {key!r} must be >= "
                                f"{cls.minimums.get(key, 1)}, got {value}")
            out[key] = value
        if "retriever" in out and out["retriever"] not in RETRIEVERS:
            raise SpecError(f"system {cls.name!r}: unknown retriever {out['retriever']!r} "
                            f"(known: {', '.join(sorted(RETRIEVERS))})")
        return out

    # --- the System contract -------------------------------------------------------------

    async def reset(self) -> None:
        self._clear()

    async def observe(self, event: Event) -> list[GenerationResult]:
        if not isinstance(event, Feedback):
            raise SpecError(f"system {self.name!r} observes task feedback, "
                            f"got {type(event).__name__}")
        return await self._update(event)

    async def respond(self, query: Query) -> Response:
        timings = {"retrieve": 0.0, "generate": 0.0, "update": 0.0}
        results: list[GenerationResult] = []
        sections = await self._sections(query, timings, results)
        messages = P.solver_messages(sections, query)
        results.append(await self._call(query.id, messages, "generate", timings))
        return Response(query_id=query.id, results=results,
                        timings={k: round(v, 6) for k, v in timings.items()})

    async def respond_batch(self, queries: Sequence[Query]) -> list[Response]:
        """Probes of one memory state, sent together so a backend can run them concurrently."""
        return list(await asyncio.gather(*(self.respond(q) for q in queries)))

    def snapshot(self) -> dict[str, Any]:
        return {"method": self.name, "memory": self._dump()}

    def restore(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict) or not isinstance(state.get("memory"), dict):
            raise snapshot_error("memory", "expected an object holding the memory")
        if state.get("method") != self.name:
            raise snapshot_error("method", f"snapshot of {state.get('method')!r}, "
                                           f"this system is {self.name!r}")
        self._clear()
        self._load(state["memory"])

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "args": dict(self.args), "max_tries": self.max_tries,
                "prompt_template_hash": P.template_fingerprint()}

    # --- shared by the methods ----------------------------------------------------------

    @contextmanager
    def _timed(self, timings: dict[str, float] | None, stage: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            if timings is not None:
                timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - start

    async def _call(self, key: str, messages: tuple[Message, ...], stage: str,
                    timings: dict[str, float] | None = None) -> GenerationResult:
        params = self.sampling.model_copy(update={"seed": derive_seed(self.seed, key)})
        request = GenerationRequest(key=key, messages=messages, params=params, stage=stage)
        with self._timed(timings, stage):
            (result,) = await self.model.generate([request])
        if result.stage != stage:
            result = result.model_copy(update={"stage": stage})
        return result

    async def _update_call(self, key: str, prompt: str) -> GenerationResult:
        return await self._call(key, P.update_messages(prompt), "update")

    def _pool(self) -> ExperiencePool:
        return ExperiencePool(self.args.get("retriever", "bm25"))

    # --- what subclasses provide ---------------------------------------------------------

    @abstractmethod
    def _clear(self) -> None:
        """Empty the memory (and any state held between ``respond`` and ``observe``)."""

    async def _sections(self, query: Query, timings: dict[str, float],
                        results: list[GenerationResult]) -> list[str]:
        return []

    async def _update(self, fb: Feedback) -> list[GenerationResult]:
        return []

    def _dump(self) -> dict[str, Any]:
        return {}

    def _load(self, memory: dict[str, Any]) -> None:
        return None


class MemoryFree(SeqMemSystem):
    """Answers every task with no memory (SeqMem-Eval's baseline)."""

    name = "memory-free"

    def _clear(self) -> None:
        return None


class ExpRecent(SeqMemSystem):
    """The k most recent records: task, answer and feedback."""

    name = "exp-recent"
    defaults = {"k": 3}

    def _clear(self) -> None:
        self.pool = ExperiencePool()

    async def _sections(self, query: Query, timings: dict[str, float],
                        results: list[GenerationResult]) -> list[str]:
        with self._timed(timings, "retrieve"):
            shown = self.pool.exemplars(self.pool.recent(self.args["k"]))
        return [P.exemplars_section(shown)]

    async def _update(self, fb: Feedback) -> list[GenerationResult]:
        self.pool.add(ExperienceRecord.from_feedback(fb))
        return []

    def _dump(self) -> dict[str, Any]:
        return {"records": self.pool.to_json()}

    def _load(self, memory: dict[str, Any]) -> None:
        self.pool = ExperiencePool.from_json(memory.get("records"), "records", "bm25")


class ExpRag(SeqMemSystem):
    """The k past records most similar to the task (BM25 over task texts by default)."""

    name = "exp-rag"
    defaults = {"k": 3, "retriever": "bm25"}

    def _clear(self) -> None:
        self.pool = self._pool()

    async def _sections(self, query: Query, timings: dict[str, float],
                        results: list[GenerationResult]) -> list[str]:
        with self._timed(timings, "retrieve"):
            hits = self.pool.similar(query.text, self.args["k"])
            shown = self.pool.exemplars([p for p, _ in hits])
        return [P.exemplars_section(shown)]

    async def _update(self, fb: Feedback) -> list[GenerationResult]:
        self.pool.add(ExperienceRecord.from_feedback(fb))
        return []

    def _dump(self) -> dict[str, Any]:
        return {"records": self.pool.to_json()}

    def _load(self, memory: dict[str, Any]) -> None:
        self.pool = ExperiencePool.from_json(memory.get("records"), "records",
                                             self.args["retriever"])
