"""The streaming-knowledge runner (OAKS, SPECS §1.2).

For every document and every interval t: the system observes chunk t, then every question of the
document is asked; probes never change memory. All questions of one interval go to the system
together (one batched call), so they share the context prefix on a serving engine.

Resume: a probe is keyed ``<question_id>@<t>`` and committed when produced. Systems whose
``observe`` is free and deterministic (``replayable = True``, e.g. the context strategies) are
replayed chunk by chunk on resume; other systems are snapshotted after every observed chunk
(with the model calls that update made, in the same transaction) and restored from there, so no
model call is ever repeated and a failed probe can be retried under the exact state it needs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from clstream.benchmarks.oaks_data import OaksDataset, OaksDocument, gold_view
from clstream.core.events import Chunk
from clstream.core.protocols import System, respond_all
from clstream.core.specs import RunSpec
from clstream.core.types import Query, Response
from clstream.store.db import Record, ResultsStore

from .common import call_records, progress_bar

PROTOCOL = "oaks"


def probe_key(question_id: str, t: int) -> str:
    return f"{question_id}@{t}"


def make_query(question_id: str, text: str, options: tuple[str, ...], t: int) -> Query:
    return Query(
        id=probe_key(question_id, t), text=text, options=options,
        kind="mc" if options else "open", meta={"question_id": question_id, "t": t},
    )


def probe_record(doc: OaksDocument, query: Query, response: Response) -> Record:
    qid, t = query.meta["question_id"], query.meta["t"]
    last = response.results[-1] if response.results else None
    samples = [s.text for s in last.samples] if last and last.ok else []
    payload = {"question_id": qid, "t": t, "output": response.text}
    if last is not None and last.ok and last.samples and last.samples[0].reasoning:
        payload["reasoning"] = last.samples[0].reasoning
    if len(samples) > 1:
        payload["samples"] = samples
    return Record(
        kind="probe", key=query.id, stream=doc.bid, t=t, payload=payload,
        error=response.error, stage="generate", usage=response.usage,
        cache_hit=bool(response.results) and all(r.cache_hit for r in response.results),
    )


@dataclass
class OaksRunResult:
    run_id: str
    probes_total: int
    probes_done: int
    errors: int
    wall_s: float


class OaksRunner:
    """Runs one spec (one system, one model) over one dataset into a store."""

    def __init__(
        self,
        dataset: OaksDataset,
        spec: RunSpec,
        store: ResultsStore,
        make_system: Callable[[], System],
        docs_in_flight: int = 1,
        show_progress: bool = True,
    ):
        self.dataset, self.spec, self.store = dataset, spec, store
        self.make_system = make_system
        self.docs_in_flight = max(1, docs_in_flight)
        self.show_progress = show_progress
        self.run_id = spec.run_id

    def register(self, info: dict) -> bool:
        """Record the run (idempotent); returns True when this is a resume."""
        self.store.put_dataset(self.dataset.sha256, self.dataset.path, gold_view(self.dataset))
        return self.store.ensure_run(
            self.run_id, PROTOCOL, self.spec.system.label, self.spec.model.label,
            self.dataset.sha256, self.spec.model_dump(mode="json"), info,
        )

    @property
    def probes_total(self) -> int:
        return sum(len(d.questions) * d.num_chunks for d in self.dataset.documents)

    async def run(self) -> OaksRunResult:
        start = time.perf_counter()
        done_before = self.store.count(self.run_id, "probe", errors=False)
        bar = progress_bar(self.probes_total, done_before, self.spec.system.label) \
            if self.show_progress else None
        sem = asyncio.Semaphore(self.docs_in_flight)

        async def one(doc: OaksDocument) -> None:
            async with sem:
                await self._run_document(doc, bar)

        try:
            await asyncio.gather(*(one(d) for d in self.dataset.documents))
        finally:
            if bar is not None:
                bar.close()
            self.store.add_wall_time(self.run_id, time.perf_counter() - start)
        return OaksRunResult(
            run_id=self.run_id,
            probes_total=self.probes_total,
            probes_done=self.store.count(self.run_id, "probe", errors=False),
            errors=self.store.count(self.run_id, "probe", errors=True),
            wall_s=time.perf_counter() - start,
        )

    def _missing(self, doc: OaksDocument, done: set[str], t: int) -> list[Query]:
        return [
            make_query(q.question_id, q.text, q.options, t)
            for q in doc.questions
            if probe_key(q.question_id, t) not in done
        ]

    async def _probe(self, doc: OaksDocument, system: System, queries: list[Query], bar) -> None:
        if not queries:
            return
        responses = await respond_all(system, queries)
        records = [probe_record(doc, q, r) for q, r in zip(queries, responses, strict=True)]
        self.store.put_records(self.run_id, records)
        if bar is not None:
            bar.update(sum(1 for r in records if r.error is None))

    async def _run_document(self, doc: OaksDocument, bar) -> None:
        done = self.store.done_keys(self.run_id, "probe", stream=doc.bid)
        todo = {t: self._missing(doc, done, t) for t in range(1, doc.num_chunks + 1)}
        if not any(todo.values()):
            return
        system = self.make_system()
        await system.reset()
        if getattr(system, "replayable", False):
            last_needed = max(t for t, qs in todo.items() if qs)
            for t in range(1, last_needed + 1):
                await system.observe(Chunk(doc.bid, t - 1, doc.chunks[t - 1]))
                await self._probe(doc, system, todo[t], bar)
            return
        # Snapshotted systems: redo missing probes of already observed steps from their
        # snapshots, then continue the stream from the latest snapshot.
        stored = self.store.state_steps(self.run_id, doc.bid)
        for t in stored:
            if todo[t]:
                snap = self.store.load_state(self.run_id, doc.bid, t)
                assert snap is not None
                system.restore(snap[1])
                await self._probe(doc, system, todo[t], bar)
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
            await self._probe(doc, system, todo[t], bar)
