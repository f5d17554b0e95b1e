"""The ImprintBench runner: a method takes in a corpus, then answers held-out items, n samples
each (docs/imprint.md §2; ImprintBench §2, App. C.3).

One run is one system with one model over one dataset and one supervision. Per instance (news
and code: the one corpus; personalization: each persona):

1. *ingest*: a fresh system observes the instance's documents in corpus order as
   :class:`~clstream.core.events.Document` events -- C (articles, feature pages, chat chunks),
   Q (training pairs, each one document ``Q: ...`` / ``A: ...``), or C+Q, which is each C
   document followed by the pairs distilled from it (the paper says only "interleaved"; this
   order is the reading taken here);
2. *finalize*: once, after the last document (:func:`~clstream.core.contracts.finalize_system`):
   chunked summaries, memory scaffolds and training runs build their memory here;
3. *items*: each item of the instance becomes a :class:`~clstream.core.types.Query`; its n
   samples are one request with ``n`` (the prompt is prefilled once). Probes never change
   memory, so the items of an instance are independent: they are asked in batches, several
   batches at once, and each request's seed derives from its item, so the records do not
   depend on batch size or concurrency.

Items placed in the stream. An item with ``after_doc = k`` (PersonaMem's end index; docs/imprint.md
§2) is asked while ingesting, once the events of the instance's first ``k`` corpus documents
are observed, of a memory that has seen nothing later. Ingestion stays one pass: at such a
place the memory is snapshotted, finalized as at the end of a stream, asked, and restored
before the next document (a probe never changes memory). The finalized memory is stored with
its calls (stream ``<instance>/at/<events>``) and the memory before it at that step of the
ingest stream, so a resumed run asks a missing placed item again without a model call.

Records. Each item is one ``item`` record (``stream`` = instance, ``t`` = the item's position
in the instance; payload: the n samples, their finish reasons, the prompt tokens of the
answering request and the tokens the method injected). Model calls made while ingesting or
finalizing are ``call`` records. A method with an artifact (a trained checkpoint) has its
content hash recorded with the instance's memory.

Judging. With a judge model (``--judge``), the items an LLM judge decides
(:func:`~clstream.protocols.imprint.judge_plan.paper_judge`: the paper's judges, and items
judged ``llm``) are judged once answered
(:class:`~clstream.protocols.imprint.llm_judges.LLMJudge`, its replies cached in the results
directory); each item's verdicts are a ``judgment`` record, so the summary reads them instead
of calling the judge again. A sample the judge gave no verdict for makes the item's judgment
an error record, retried by the next run. Every other item is judged deterministically when
the run is summarized.

Resume. The memory after ingestion is stored as a snapshot (stream ``<instance>/ingest``) with
the calls that built it, in one transaction; so are intermediate snapshots after every document
whose observation called the model. A rerun restores the latest snapshot and observes only the
documents after it (documents that call no model are replayed, which costs no call), then
answers only the items with no successful record. A failed item is stored as an error record
(never as a wrong answer) and retried by the next run.

Tokens in context (docs/imprint.md §7.8, the project's reading of the paper): the prompt tokens of the
answering request minus those of the same question sent with no memory at all, counted with the
model's tokenizer; the compression ratio divides the instance's corpus tokens by their mean.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from clstream.core import layout
from clstream.core.contracts import (
    Model,
    System,
    artifact_of,
    finalize_system,
    respond_all,
)
from clstream.core.errors import StoreError
from clstream.core.events import Document
from clstream.core.specs import RunSpec
from clstream.core.types import Query, Response
from clstream.driver.plan import Cell, Progress
from clstream.driver.record_fields import call_records, timing_fields
from clstream.protocols.imprint.judge_plan import judge_errors, judge_outputs, paper_judge
from clstream.protocols.imprint.judging import JudgeError
from clstream.protocols.imprint.llm_judges import LLMJudge
from clstream.protocols.imprint.prompts import DEFAULT_PROMPT_STYLE, query_of
from clstream.protocols.imprint.schema import CorpusDoc, Dataset, Item, QAPair
from clstream.store.db import Record, ResultsStore

PROTOCOL = "imprint"
BATCH = 16  # items asked of one memory state per respond_all call


def documents(data: Dataset, instance: str, supervision: str) -> list[Document]:
    """The events an instance's ingestion feeds, in order (see the module docstring)."""
    corpus = [d for d in data.corpus if d.instance_id == instance]
    pairs: dict[str, list[QAPair]] = {}
    for pair in data.qa:
        if pair.instance_id == instance:
            pairs.setdefault(pair.doc_id, []).append(pair)
    out: list[Document] = []
    for doc in corpus:
        if supervision in ("C", "C+Q"):
            out.append(corpus_event(doc, "C"))
        if supervision in ("Q", "C+Q"):
            out.extend(pair_event(p, doc) for p in pairs.get(doc.doc_id, []))
    return out


def event_cuts(data: Dataset, instance: str, supervision: str) -> list[int]:
    """``cuts[k]``: how many of :func:`documents`'s events come from the instance's first
    ``k`` corpus documents -- where an item with ``after_doc = k`` is asked."""
    pairs = Counter(p.doc_id for p in data.qa if p.instance_id == instance)
    cuts = [0]
    for doc in (d for d in data.corpus if d.instance_id == instance):
        fed = (supervision in ("C", "C+Q")) + (pairs[doc.doc_id] if supervision != "C" else 0)
        cuts.append(cuts[-1] + fed)
    return cuts


def document_text(doc: CorpusDoc) -> str:
    """A corpus document as a method sees it: title and date lines, then the text."""
    head = [f"Title: {doc.title}"] if doc.title else []
    if doc.date:
        head.append(f"Date: {doc.date}")
    return "\n".join([*head, "", doc.text]) if head else doc.text


def corpus_event(doc: CorpusDoc, supervision: str) -> Document:
    return Document(doc.doc_id, document_text(doc),
                    meta={"date": doc.date, "kind": doc.kind, "title": doc.title,
                          "instance_id": doc.instance_id, "supervision": supervision})


def pair_event(pair: QAPair, doc: CorpusDoc) -> Document:
    return Document(f"{pair.qa_id}", f"Q: {pair.question}\nA: {pair.answer}",
                    meta={"date": doc.date, "kind": "qa", "title": doc.title,
                          "instance_id": pair.instance_id, "supervision": "Q",
                          "source_doc_id": doc.doc_id})


def artifact_hash(path: str) -> str:
    """sha256 over an artifact's files (relative path and bytes, in sorted order)."""
    root = Path(path)
    digest = hashlib.sha256()
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for file in files:
        digest.update(str(file.relative_to(root) if file != root else file.name).encode())
        digest.update(b"\x00")
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


class ImprintRunner:
    """Runs one system over one dataset (see the module docstring)."""

    def __init__(self, spec: RunSpec, store: ResultsStore, make_system: Callable[[], System],
                 data: Dataset, supervision: str, model: Model | None = None, *,
                 batch: int = BATCH, parallel: int = 4, judge: LLMJudge | None = None,
                 prompt_style: str = DEFAULT_PROMPT_STYLE):
        self.spec, self.store, self.make_system = spec, store, make_system
        self.data, self.supervision, self.model = data, supervision, model
        self.batch, self.parallel = batch, parallel
        self.judge = judge
        self.prompt_style = prompt_style
        self.run_id = spec.run_id
        self._progress: Progress | None = None
        self._artifacts: dict[str, str] = {}

    def instances(self) -> list[str]:
        """Instances that have items, in dataset order."""
        with_items = {i.instance_id for i in self.data.items}
        return [i for i in self.data.instances() if i in with_items]

    def items_of(self, instance: str) -> list[Item]:
        return [i for i in self.data.items if i.instance_id == instance]

    def cells(self) -> list[Cell]:
        """One cell per instance with items (the one corpus of news and code; each persona):
        a fresh system ingests the instance's documents, then answers its items."""
        counts = Counter(i.instance_id for i in self.data.items)
        return [Cell(instance, counts[instance]) for instance in self.instances()]

    def totals(self) -> dict[str, int]:
        return {"item": len(self.data.items)}

    async def run_cell(self, cell: Cell, progress: Progress) -> None:
        self._progress = progress
        await self._instance(cell.id)

    async def _instance(self, instance: str) -> None:
        items = self.items_of(instance)
        done = self.store.done_keys(self.run_id, "item", stream=instance)
        todo = [(pos, item) for pos, item in enumerate(items, start=1)
                if item.item_id not in done]
        if todo:
            probes, last = self._positions(instance, todo)
            system = await self._ingested(instance, probes)
            if system is None:  # ingestion failed: the error is stored, the items wait
                return
            await self._answer_items(instance, system, last)
        await self._judge(instance, items)

    async def _answer_items(self, instance: str, system: System,
                            todo: list[tuple[int, Item]]) -> None:
        batches = [todo[i:i + self.batch] for i in range(0, len(todo), self.batch)]
        for wave in range(0, len(batches), self.parallel):
            await asyncio.gather(*(self._answer(instance, system, chunk)
                                   for chunk in batches[wave:wave + self.parallel]))

    async def _judge(self, instance: str, items: list[Item]) -> None:
        """LLM verdicts for the answered items an LLM judge decides that have none yet,
        stored as ``judgment`` records (the judge model and prompt hash in each verdict)."""
        if self.judge is None:
            return
        wanted = [i for i in items if paper_judge(i) is not None]
        if not wanted:
            return
        judged = self.store.done_keys(self.run_id, "judgment", stream=instance)
        answers = {r.key: r for r in self.store.read_records(self.run_id, "item",
                                                              stream=instance, errors=False)}
        todo = [i for i in wanted if i.item_id in answers and i.item_id not in judged]
        if not todo:
            return
        samples = {i.item_id: [str(s) for s in answers[i.item_id].payload["samples"]]
                   for i in todo}
        try:
            verdicts = await judge_outputs(todo, samples, self.judge)
        except JudgeError as exc:
            self.store.put_records(self.run_id, [
                Record(kind="judgment", key=i.item_id, stream=instance, payload={},
                       error=str(exc), stage="judge") for i in todo])
            return
        errors = judge_errors(verdicts)
        self.store.put_records(self.run_id, [
            Record(kind="judgment", key=i.item_id, stream=instance, stage="judge",
                   payload={"item_id": i.item_id,
                            "verdicts": [v.to_json() for v in verdicts[i.item_id]]},
                   error=errors.get(i.item_id))
            for i in todo])

    async def _answer(self, instance: str, system: System,
                      chunk: list[tuple[int, Item]]) -> None:
        """One batch of items asked of the instance's memory; stored when it returns."""
        queries = [query_of(item, self.prompt_style) for _, item in chunk]
        responses = await respond_all(system, queries)
        bare = self._bare_tokens(queries)
        records = [self._item_record(instance, pos, item, response, bare_tokens)
                   for (pos, item), response, bare_tokens
                   in zip(chunk, responses, bare, strict=True)]
        self.store.put_records(self.run_id, records)
        if self._progress is not None:
            self._progress.update(sum(r.error is None for r in records))

    # -- ingestion ------------------------------------------------------------------------
    def _ingest_stream(self, instance: str) -> str:
        return f"{instance}/ingest"

    def _positions(self, instance: str, todo: list[tuple[int, Item]]
                   ) -> tuple[dict[int, list[tuple[int, Item]]], list[tuple[int, Item]]]:
        """The items asked inside the stream, by the number of events observed before them
        (``Item.after_doc``), and the items asked after all of it."""
        probes: dict[int, list[tuple[int, Item]]] = {}
        last: list[tuple[int, Item]] = []
        if all(item.after_doc is None for _, item in todo):
            return probes, todo
        cuts = event_cuts(self.data, instance, self.supervision)
        for pos, item in todo:
            cut = None if item.after_doc is None else cuts[min(item.after_doc, len(cuts) - 1)]
            if cut is None or cut == cuts[-1]:
                last.append((pos, item))
            else:
                probes.setdefault(cut, []).append((pos, item))
        return probes, last

    async def _probe(self, instance: str, system: System, cut: int,
                     todo: list[tuple[int, Item]]) -> None:
        """Answer items placed after ``cut`` events from the memory at that point, which the
        probe leaves as it found it: the memory is snapshotted (and stored at step ``cut`` so
        a retry can start there), finalized as at the end of a stream, asked, and restored.
        The finalized memory is stored with the calls that built it (stream
        ``<instance>/at/<cut>``), so a resumed run asks it again without a model call."""
        before = system.snapshot()
        stream = f"{instance}/at/{cut}"
        finalized = self.store.load_state(self.run_id, stream)
        if finalized is not None:
            system.restore(finalized[1]["system"])
        else:
            if self.store.load_state(self.run_id, self._ingest_stream(instance), cut) is None:
                self.store.save_state(self.run_id, self._ingest_stream(instance), cut,
                                      {"system": before})
            results = await finalize_system(system)
            records = call_records(results, stream, 1, f"{instance}/finalize/{cut}")
            failed = next((r.error for r in results if r.error), None)
            if failed is not None:
                self.store.put_records(self.run_id, records)
                self._ingest_error(instance, failed, todo)
                system.restore(before)
                return
            self.store.save_state(self.run_id, stream, 1, {"system": system.snapshot()},
                                  records)
        await self._answer_items(instance, system, todo)
        system.restore(before)

    async def _probe_passed(self, instance: str, cut: int,
                            todo: list[tuple[int, Item]]) -> None:
        """A probe whose place a resumed ingestion has already passed: asked of a fresh
        system restored to the memory stored at that place."""
        system = self.make_system()
        await system.reset()
        stored = self.store.load_state(self.run_id, self._ingest_stream(instance), cut)
        if stored is None and self.store.load_state(self.run_id, f"{instance}/at/{cut}") is None:
            raise StoreError(f"run {self.run_id}, instance {instance}: no memory stored after "
                             f"{cut} documents to ask the items placed there; remove the run "
                             f"('clstream runs rm {self.store.dir} {self.run_id}') to rebuild it")
        if stored is not None:
            system.restore(stored[1]["system"])
        await self._probe(instance, system, cut, todo)

    async def _ingested(self, instance: str,
                        probes: dict[int, list[tuple[int, Item]]] | None = None
                        ) -> System | None:
        """The system holding the instance's memory: restored from the latest snapshot and
        brought up to the end of ingestion and finalization; on the way, the items placed
        inside the stream (``probes``, by events observed) are asked (:meth:`_probe`)."""
        probes = probes or {}
        events = documents(self.data, instance, self.supervision)
        ready = len(events) + 1  # snapshot step after finalization
        stream = self._ingest_stream(instance)
        system = self.make_system()
        await system.reset()
        latest = self.store.load_state(self.run_id, stream)
        seen = 0
        if latest is not None:
            seen, stored = latest
            for cut in sorted(c for c in probes if c < seen):
                await self._probe_passed(instance, cut, probes[cut])
            system.restore(stored["system"])
            if seen == ready:
                self._note_artifact(instance, system, stored)
                return system
        for index in range(seen, len(events)):
            if index in probes:
                await self._probe(instance, system, index, probes[index])
            results = await system.observe(events[index])
            if results:
                records = call_records(results, stream, index + 1, f"{instance}/observe/{index}")
                failed = next((r.error for r in results if r.error), None)
                if failed is not None:
                    self.store.put_records(self.run_id, records)
                    self._ingest_error(instance, failed)
                    return None
                self.store.save_state(self.run_id, stream, index + 1,
                                      {"system": system.snapshot()}, records)
        results = await finalize_system(system)
        records = call_records(results, stream, ready, f"{instance}/finalize")
        failed = next((r.error for r in results if r.error), None)
        if failed is not None:
            self.store.put_records(self.run_id, records)
            self._ingest_error(instance, failed)
            return None
        state: dict[str, Any] = {"system": system.snapshot()}
        artifact = artifact_of(system)
        if artifact is not None:
            state["artifact"] = {"path": artifact.path, "kind": artifact.kind,
                                 "meta": artifact.meta, "sha256": artifact_hash(artifact.path)}
        self.store.save_state(self.run_id, stream, ready, state, records)
        self._note_artifact(instance, system, state)
        return system

    def _note_artifact(self, instance: str, system: System, state: dict[str, Any]) -> None:
        stored = state.get("artifact")
        if stored is None:
            return
        artifact = artifact_of(system)
        if artifact is not None and artifact_hash(artifact.path) != stored["sha256"]:
            raise StoreError(f"run {self.run_id}, instance {instance}: the artifact at "
                             f"{artifact.path} changed since it was recorded; remove the run "
                             f"('clstream runs rm {self.store.dir} {self.run_id}') to rebuild it")
        self._artifacts[instance] = stored["sha256"]

    def _ingest_error(self, instance: str, error: str,
                      todo: list[tuple[int, Item]] | None = None) -> None:
        """Every unanswered item of the instance (of ``todo`` when given) gets an error record
        naming the failure."""
        done = self.store.done_keys(self.run_id, "item", stream=instance)
        waiting = todo if todo is not None else list(enumerate(self.items_of(instance),
                                                                start=1))
        records = [Record(kind="item", key=item.item_id, stream=instance, t=pos,
                          payload={"item_id": item.item_id, "samples": []},
                          error=f"building memory failed: {error}")
                   for pos, item in waiting if item.item_id not in done]
        self.store.put_records(self.run_id, records)

    # -- answers --------------------------------------------------------------------------
    def _bare_tokens(self, queries: Sequence[Query]) -> list[int | None]:
        """Prompt tokens of each question sent with no memory (the tokens-in-context base)."""
        if self.model is None:
            return [None] * len(queries)
        tokenizer = self.model.tokenizer
        # A backend that renders prompts itself (hf:) counts them as its usage does, chat
        # template included, so a question asked bare puts 0 tokens in context.
        counter = getattr(self.model, "count_prompt_tokens", None)
        out: list[int | None] = []
        for q in queries:
            messages = layout.query_messages(q, [])
            out.append(int(counter(messages)) if callable(counter)
                       else sum(tokenizer.count(m.content) for m in messages))
        return out

    def _item_record(self, instance: str, pos: int, item: Item, response: Response,
                     bare_tokens: int | None) -> Record:
        error = response.error if response.results else "the system made no model call"
        last = response.results[-1] if response.results else None
        samples = [s.text for s in last.samples] if last is not None and last.ok else []
        if error is None and not samples:
            error = "the answering call returned no sample"
        prompt_tokens = last.usage.prompt_tokens if last is not None else 0
        payload: dict[str, Any] = {
            "item_id": item.item_id, "samples": samples,
            "finish_reasons": [s.finish_reason for s in last.samples] if last else [],
            "prompt_tokens": prompt_tokens, "calls": len(response.results),
            **timing_fields(response.results),
        }
        if bare_tokens is not None and error is None:
            payload["injected_tokens"] = max(0, prompt_tokens - bare_tokens)
        return Record(kind="item", key=item.item_id, stream=instance, t=pos, payload=payload,
                      error=error, usage=response.usage,
                      cache_hit=all(r.cache_hit for r in response.results) if response.results
                      else False, calls=tuple(response.results))
