"""The streaming-knowledge runner (OAKS, docs/oaks.md §2).

For every document and every interval t: the system observes chunk t, then every question of the
document is asked; probes never change memory. All questions of one interval go to the system
together (one batched call), so they share the context prefix on a serving engine.

Request order, for prefix caching (:mod:`clstream.models.prefix_cache_sim` measures it): a
serving engine keeps the blocks of recent prompts and reuses any it sees again at the start of
a new prompt, so the order requests arrive in decides how much prefill is recomputed. Probes
do not change memory, so for a replayable system (memory rebuilt from the chunks alone) the
intervals of a document need not be asked one after another: the runner builds a *pool* of
consecutive intervals, collects every request the pool makes and sends them sorted by prompt
text (ties by request key, so the order is a function of the spec and the data alone, never of
completion timing). One system instance serves the whole document: it observes chunk t once,
and its requests for interval t are built (:class:`~clstream.systems.context.RequestPlanner`)
before chunk t+1 arrives, so a stream of T chunks costs T ``observe`` calls and T index
insertions per document, not the T(T+1)/2 of replaying each interval's prefix into an
instance of its own. In the sorted order each prompt follows the one it shares the
longest prefix with (a depth-first walk of the prompts' prefix tree), so a cache holding one
prompt's worth of blocks recomputes almost nothing twice: for full context it is the interval
order (each interval's context extends the previous one), for window each interval's questions
stay together, and for rag, whose retrieved passages often recur across many intervals, it
puts the recurring prefixes next to each other. A pool holds at most ``POOL_TOKENS`` estimated
prompt tokens (requests are built before any is sent); it is sent in slices of one interval's
size, all queued at once, so a backend that admits requests first come first served (the
OpenAI-compatible one) receives them in sorted order with no pause between slices. An interval
is stored once its last request returns; a run interrupted inside a pool loses that pool's
unstored answers (with ``--cache`` nothing paid for is asked again).

``clstream plan`` asks for the same requests without sending or storing anything
(:func:`walk_prompts`): as prompt parts, in stream order, which an unbounded prefix cache
counts the same (docs/plan.md §2).

Documents in flight: each holds its own prompts in the engine's cache, so at most
``cache budget // largest context`` documents run at once when a cache budget is given
(:func:`docs_for_cache_budget`).

Resume: a probe is keyed ``<question_id>@<t>`` and committed when produced. Systems whose
``observe`` is free and deterministic (``replayable = True``, e.g. the context strategies) are
replayed chunk by chunk on resume; other systems are snapshotted after every observed chunk
(with the model calls that update made, in the same transaction) and restored from there, so no
model call is ever repeated and a failed probe can be retried under the exact state it needs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from clstream.core import layout
from clstream.core.contracts import (
    Model,
    PlannedBatch,
    PromptEstimator,
    RequestPlanner,
    System,
    Tokenizer,
    is_replayable,
    respond_all,
)
from clstream.core.events import Chunk
from clstream.core.specs import RunSpec
from clstream.core.types import GenerationRequest, GenerationResult, Query, Response
from clstream.driver.plan import Cell, Progress
from clstream.driver.record_fields import call_records, finish_reasons, timing_fields
from clstream.models.prompt_parts import PartsPlanner, PromptParts
from clstream.protocols.oaks.data import OaksDataset, OaksDocument
from clstream.protocols.oaks.prompts import SYSTEM_PROMPT, ask
from clstream.store.db import Record, ResultsStore

PROTOCOL = "oaks"

# At most this many estimated prompt tokens in one pool of intervals (about 4 bytes of text
# per token are held at once, since a pool's requests are all built before any is sent). Pools
# are sorted apart, so prefixes shared across a pool boundary are computed again: with 2^24,
# rag:k=8 on 65 chunks of 2k tokens (3 pools per document) computed 1.26x the distinct-token
# lower bound under a cache of 1.5 prompts; with 2^25 (2 pools) 1.16x, for about 80 MiB more.
POOL_TOKENS = 1 << 25


def probe_key(question_id: str, t: int) -> str:
    return f"{question_id}@{t}"


def make_query(question_id: str, text: str, options: tuple[str, ...], t: int) -> Query:
    """The probe of one question at interval t: the OAKS rules and its question block."""
    asked = _asked(text, options)  # the same at every interval
    return Query(id=probe_key(question_id, t), text=text, options=options, kind=asked.kind,
                 meta={"question_id": question_id, "t": t}, instructions=asked.instructions,
                 prompt=asked.prompt)


@lru_cache(maxsize=1 << 12)
def _asked(text: str, options: tuple[str, ...]) -> Query:
    """A question asked (:func:`ask`), but for its id and interval."""
    return ask(Query(id="", text=text, options=options, kind="mc" if options else "open"))


def probe_record(doc: OaksDocument, query: Query, response: Response) -> Record:
    qid, t = query.meta["question_id"], query.meta["t"]
    last = response.results[-1] if response.results else None
    samples = [s.text for s in last.samples] if last and last.ok else []
    payload = {"question_id": qid, "t": t, "output": response.text}
    if last is not None and last.ok and last.samples and last.samples[0].reasoning:
        payload["reasoning"] = last.samples[0].reasoning
    if len(samples) > 1:
        payload["samples"] = samples
    if last is not None and last.ok:
        payload["finish_reasons"] = finish_reasons([last])
        payload.update(timing_fields([last]))
    return Record(
        kind="probe", key=query.id, stream=doc.bid, t=t, payload=payload,
        error=response.error, stage="generate", usage=response.usage,
        cache_hit=bool(response.results) and all(r.cache_hit for r in response.results),
        calls=tuple(response.results),
    )


def context_tokens(system: System, doc: OaksDocument, tokenizer: Tokenizer) -> int:
    """The most tokens one prompt of ``system`` holds for ``doc``: an estimate from its arguments.

    A system that can say (``max_prompt_tokens``, the context systems) is asked, given the
    tokens of each chunk's passage block and of the fixed part (the rules message and the
    passages header); any other system is taken to hold the whole document. The question block
    is not counted.
    """
    blocks = [tokenizer.count(layout.passage_block(i, text)) for i, text in enumerate(doc.chunks)]
    fixed = tokenizer.count(SYSTEM_PROMPT) + tokenizer.count(layout.PASSAGES_HEADER)
    if not isinstance(system, PromptEstimator):
        return fixed + sum(blocks)
    return int(system.max_prompt_tokens(blocks, fixed, tokenizer))


def docs_for_cache_budget(
    budget_tokens: int, dataset: OaksDataset, system: System, tokenizer: Tokenizer
) -> int:
    """Documents in flight so that their contexts fit a cache of ``budget_tokens``:
    max(1, floor(budget / the largest :func:`context_tokens` over the documents)), and no more
    than there are documents."""
    largest = max((context_tokens(system, d, tokenizer) for d in dataset.documents), default=1)
    return max(1, min(len(dataset.documents), budget_tokens // max(1, largest)))


@dataclass
class _Call:
    requests: list[GenerationRequest]
    future: asyncio.Future[list[GenerationResult]]
    results: list[GenerationResult | None]
    left: int


def prompt_order(request: GenerationRequest) -> tuple[tuple[str, ...], str]:
    """The sort key of a pool's requests: the prompt's message texts in order, then the key.

    Message by message rather than the joined prompt text (which sorts the same way unless a
    message is a prefix of another's and the longer goes on with a control character): the
    texts are compared where they lie, with no copy of each prompt made to sort it, so the
    sort's cost is its comparisons alone.
    """
    return tuple(m.content for m in request.messages), request.key


class PromptOrderedModel:
    """The model as the interval tasks of one pool see it (see the module docstring).

    ``generate`` waits until every task of the pool is waiting here or finished; then all the
    waiting requests are sorted by prompt text and handed to the model in slices the size of
    the largest waiting call, all queued at once. Each call returns when its own requests are
    answered. Results are the model's, matched to requests by position, never reordered.
    """

    def __init__(self, model: Model, tasks: int):
        self.model = model
        self.name = model.name
        self.tokenizer: Tokenizer = model.tokenizer
        self._running = tasks
        self._waiting: list[_Call] = []
        self._sending: set[asyncio.Task[None]] = set()

    def describe(self) -> dict[str, Any]:
        return self.model.describe()

    async def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        if not requests:
            return []
        future: asyncio.Future[list[GenerationResult]] = asyncio.get_running_loop().create_future()
        call = _Call(list(requests), future, [None] * len(requests), len(requests))
        self._waiting.append(call)
        self._running -= 1
        try:
            self._maybe_send()
            return await future
        finally:
            self._running += 1

    def leave(self) -> None:
        """One task of the pool is done (or gone)."""
        self._running -= 1
        self._maybe_send()

    async def close(self) -> None:
        """Cancel any sending still under way (after a failure in the pool)."""
        for task in self._sending:
            task.cancel()
        await asyncio.gather(*self._sending, return_exceptions=True)

    def _maybe_send(self) -> None:
        if self._running > 0 or not self._waiting:
            return
        calls, self._waiting = self._waiting, []
        order = sorted(((c, i) for c in calls for i in range(len(c.requests))),
                       key=lambda ci: prompt_order(ci[0].requests[ci[1]]))
        size = max(len(c.requests) for c in calls)
        for start in range(0, len(order), size):
            task = asyncio.ensure_future(self._send(order[start : start + size]))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def _send(self, part: list[tuple[_Call, int]]) -> None:
        try:
            results = await self.model.generate([c.requests[i] for c, i in part])
            if len(results) != len(part):
                raise RuntimeError(
                    f"model {self.name!r} returned {len(results)} results for {len(part)}"
                )
        except Exception as exc:  # the waiting calls raise it; this task has nobody to tell
            for c, _ in part:
                if not c.future.done():
                    c.future.set_exception(exc)
            return
        for (c, i), result in zip(part, results, strict=True):
            c.results[i] = result
            c.left -= 1
            if c.left == 0 and not c.future.done():
                c.future.set_result([r for r in c.results if r is not None])


async def walk_prompts(dataset: OaksDataset, make_system: Callable[[], System],
                       sink: Callable[[list[PromptParts]], None]) -> bool:
    """Every probe's request of a run as its parts (:mod:`clstream.models.prompt_parts`), in
    stream order, nothing sent and nothing stored: per document a fresh system observes chunk
    t, then gives the parts of every question at t to ``sink``, the requests
    :meth:`OaksRunner._run_pools` sends (in another order). Only for a replayable system that
    plans its requests as parts (the context strategies), whose memory no reply changes;
    False, with nothing given to ``sink``, for any other (docs/plan.md §2)."""
    for doc in dataset.documents:
        system = make_system()
        if not (is_replayable(system) and isinstance(system, PartsPlanner)):
            return False
        await system.reset()
        for t in range(1, doc.num_chunks + 1):
            await system.observe(Chunk(doc.bid, t - 1, doc.chunks[t - 1]))
            sink(system.plan_parts([make_query(q.question_id, q.text, q.options, t)
                                    for q in doc.questions]))
    return True


def document_cell(doc: OaksDocument) -> Cell:
    """A document is one cell: its intervals run in order, independently of other documents."""
    return Cell(doc.bid, len(doc.questions) * doc.num_chunks)


class OaksRunner:
    """One spec (one system, one model) over one dataset, opened on a store: each document
    is a cell (:mod:`clstream.driver`; the driver registers the run and runs the cells).

    With ``model`` (the model ``make_system`` builds around), a replayable system is asked in
    prompt-ordered pools (module docstring): its instances are then built from the spec around
    a :class:`PromptOrderedModel` in front of ``model``. Without it, intervals go one by one.
    """

    def __init__(
        self,
        dataset: OaksDataset,
        spec: RunSpec,
        store: ResultsStore,
        make_system: Callable[[], System],
        model: Model | None = None,
    ):
        self.dataset, self.spec, self.store = dataset, spec, store
        self.make_system = make_system
        self.model = model
        self.run_id = spec.run_id
        self._documents = {d.bid: d for d in dataset.documents}

    def cells(self) -> list[Cell]:
        return [document_cell(d) for d in self.dataset.documents]

    def totals(self) -> dict[str, int]:
        return {"probe": sum(c.total for c in self.cells())}

    async def run_cell(self, cell: Cell, progress: Progress) -> None:
        await self._run_document(self._documents[cell.id], progress)

    def _missing(self, doc: OaksDocument, done: set[str], t: int) -> list[Query]:
        return [
            make_query(q.question_id, q.text, q.options, t)
            for q in doc.questions
            if probe_key(q.question_id, t) not in done
        ]

    async def _probe(
        self, doc: OaksDocument, system: System, queries: list[Query], progress: Progress
    ) -> None:
        if not queries:
            return
        responses = await respond_all(system, queries)
        records = [probe_record(doc, q, r) for q, r in zip(queries, responses, strict=True)]
        self.store.put_records(self.run_id, records)
        progress.update(sum(1 for r in records if r.error is None))

    async def _run_document(self, doc: OaksDocument, progress: Progress) -> None:
        done = self.store.done_keys(self.run_id, "probe", stream=doc.bid)
        todo = {t: self._missing(doc, done, t) for t in range(1, doc.num_chunks + 1)}
        if not any(todo.values()):
            return
        system = self.make_system()
        await system.reset()
        if is_replayable(system) and isinstance(system, RequestPlanner) \
                and self.model is not None:
            await self._run_pools(doc, system, todo, progress)
            return
        if is_replayable(system):
            last_needed = max(t for t, qs in todo.items() if qs)
            for t in range(1, last_needed + 1):
                await system.observe(Chunk(doc.bid, t - 1, doc.chunks[t - 1]))
                await self._probe(doc, system, todo[t], progress)
            return
        # Snapshotted systems: redo missing probes of already observed steps from their
        # snapshots, then continue the stream from the latest snapshot.
        stored = self.store.state_steps(self.run_id, doc.bid)
        for t in stored:
            if todo[t]:
                snap = self.store.load_state(self.run_id, doc.bid, t)
                assert snap is not None
                system.restore(snap[1])
                await self._probe(doc, system, todo[t], progress)
        last = stored[-1] if stored else 0
        if last:
            snap = self.store.load_state(self.run_id, doc.bid, last)
            assert snap is not None
            system.restore(snap[1])
        for t in range(last + 1, doc.num_chunks + 1):
            calls = await system.observe(Chunk(doc.bid, t - 1, doc.chunks[t - 1]))
            self.store.save_state(
                self.run_id, doc.bid, t, system.snapshot(),
                call_records(list(calls or []), doc.bid, t, f"{doc.bid}/observe@{t}"),
            )
            await self._probe(doc, system, todo[t], progress)

    async def _run_pools(
        self,
        doc: OaksDocument,
        system: System,
        todo: dict[int, list[Query]],
        progress: Progress,
    ) -> None:
        """Ask ``doc`` in prompt-ordered pools with one system instance (module docstring).

        Each chunk is observed once, in stream order; interval t's requests are built
        (:meth:`RequestPlanner.plan_batch`) right after chunk t, before chunk t+1 changes the
        memory, so a pool's requests exist before any is sent and no prefix is replayed.
        """
        assert self.model is not None and isinstance(system, RequestPlanner)
        intervals = [t for t, queries in todo.items() if queries]
        per_interval = len(doc.questions) * context_tokens(system, doc, self.model.tokenizer)
        size = max(1, POOL_TOKENS // max(1, per_interval))
        observed = 0
        for start in range(0, len(intervals), size):
            pool = intervals[start : start + size]
            planned: list[PlannedBatch] = []
            for t in pool:
                while observed < t:
                    await system.observe(Chunk(doc.bid, observed, doc.chunks[observed]))
                    observed += 1
                planned.append(system.plan_batch(todo[t]))
            gate = PromptOrderedModel(self.model, len(pool))
            try:
                async with asyncio.TaskGroup() as group:
                    for plan in planned:
                        group.create_task(self._pooled_interval(doc, system, gate, plan, progress))
            except ExceptionGroup as failed:  # the first failure, as a sequential run raises it
                raise failed.exceptions[0] from None
            finally:
                await gate.close()

    async def _pooled_interval(
        self,
        doc: OaksDocument,
        system: RequestPlanner,
        gate: PromptOrderedModel,
        planned: PlannedBatch,
        progress: Progress,
    ) -> None:
        try:
            start = time.perf_counter()
            results = await gate.generate(planned.requests)
            responses = system.complete_batch(planned, results, time.perf_counter() - start)
            records = [probe_record(doc, q, r)
                       for q, r in zip(planned.queries, responses, strict=True)]
            self.store.put_records(self.run_id, records)
            progress.update(sum(1 for r in records if r.error is None))
        finally:
            gate.leave()
