"""The sequential task-stream runner (SeqMem-Eval §3.1; docs/seqmem.md §2, §3.1).

For tau = 1..T the system answers x_tau under its current memory M_tau (the *online* record),
the evaluator scores the answer and its verdict goes back as :class:`Feedback`, and the system
updates its memory. The state after k updates (M_{k+1} in the notation of docs/seqmem.md §2.1) is snapshotted into
the store as step k, in the same transaction as the online record and the update's model
calls, so a SIGKILL loses at most the task in flight and nothing is ever done twice. How
states are stored (deltas) and which probes a run makes (checkpoints, horizons) is in
:mod:`clstream.protocols.seqmem.plan`.

Evaluations under earlier states need no replay: right after step k is stored, the system
holds exactly that state, so the hold-out set is answered there when k is a checkpoint
(k = 0 is the empty memory), and every x_tau with tau + t - 1 = k is re-answered for each
horizon t (``Acc(x_tau; M_{tau+t})``, the *retro* records). On resume, probes still missing
at a stored step are answered after restoring that step's snapshot.

Multi-try systems (ExpeL-MT) expose ``max_tries``: the runner calls respond -> evaluate ->
observe up to that many times online, each feedback carrying its try number. Reading taken:
A(tau) counts a success on any try, since the paper credits ExpeL-MT's online gains to its
repeated attempts; hold-out and retro probes use a single try, as the paper does for hold-out.

Timing: ``Response.timings`` (retrieve / generate / update seconds inside ``respond``) is kept
in each record's payload, the wall time of every ``observe`` in an ``update`` record, and each
model call's tokens in the record of the stage it ran under (``GenerationRequest.stage``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from clstream.core.contracts import System, max_tries, respond_all
from clstream.core.errors import SpecError, StoreError, StreamStopped
from clstream.core.events import Feedback
from clstream.core.secrets import scrub
from clstream.core.specs import RunSpec
from clstream.core.types import GenerationResult, Query, Response, Usage
from clstream.driver.plan import Cell, Progress
from clstream.driver.record_fields import call_records, finish_reasons, timing_fields
from clstream.judges.evaluators import TaskLike, Verdict
from clstream.protocols.seqmem.plan import MEMORY, SeqMemPlan, load_memory
from clstream.protocols.seqmem.prompts import ask
from clstream.store.db import Record, ResultsStore
from clstream.store.snapshots import whole_state

PROTOCOL = "seqmem"
PROBE_BATCH = 32  # probes answered (and committed) together at one state
EVAL_CONCURRENCY = 4  # evaluations (sandboxed programs) running at once


Evaluate = Callable[[TaskLike, str], Verdict]


# --- records ---------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return str(value)


def _sum_usage(results: Sequence[GenerationResult]) -> Usage:
    total = Usage()
    for r in results:
        total = total + r.usage
    return total


def _split(results: Sequence[GenerationResult]) -> tuple[list[GenerationResult], list[GenerationResult]]:
    """(answer calls, other calls): answer calls ran under stage 'generate'."""
    gen = [r for r in results if r.stage == "generate"]
    other = [r for r in results if r.stage != "generate"]
    return gen, other


def _timings(responses: Sequence[Response]) -> dict[str, float]:
    out: dict[str, float] = {}
    for resp in responses:
        for stage, seconds in resp.timings.items():
            out[stage] = out.get(stage, 0.0) + float(seconds)
    return {k: round(v, 6) for k, v in sorted(out.items())}


@dataclass
class _Answer:
    """One probe answered and judged at one state."""

    query: Query
    response: Response
    verdict: Verdict


def _answer_payload(a: _Answer) -> dict[str, Any]:
    return {
        "task_id": a.query.meta["task_id"], "output": a.response.text,
        "score": float(a.verdict.score), "correct": int(a.verdict.score >= 1.0),
        "feedback": a.verdict.feedback, "detail": _jsonable(dict(a.verdict.detail)),
        "timings": _timings([a.response]),
        "finish_reasons": finish_reasons(a.response.results[-1:]),
        **timing_fields(a.response.results[-1:]),
    }


def answer_error(response: Response) -> str | None:
    """The answering call's error; a failed preparatory call (a curator) is only recorded."""
    last = response.results[-1] if response.results else None
    if last is None:
        return "the system made no model call"
    return last.error


def _probe_records(a: _Answer, kind: str, key: str, t: int, payload: dict[str, Any]) -> list[Record]:
    gen, other = _split(a.response.results)
    error = answer_error(a.response)
    main = Record(
        kind=kind, key=key, stream=kind, t=t, payload={**_answer_payload(a), **payload},
        error=error, stage="generate", usage=_sum_usage(gen),
        cache_hit=bool(gen) and all(r.cache_hit for r in gen), calls=tuple(gen),
    )
    return [main, *call_records(other, kind, t, f"{kind}/{key}")]


def make_query(task: TaskLike, query_id: str, phase: str, **meta: Any) -> Query:
    """The query for one answer to ``task``: the solver rules and the task block."""
    options = tuple(str(o) for o in (task.meta.get("options") or ()))
    return ask(Query(id=query_id, text=task.prompt, options=options, kind=task.kind,
                     meta={"task_id": task.id, "phase": phase, **meta}))


# --- the runner ------------------------------------------------------------------------------


STREAM_CELL = "stream"  # a task stream is one cell: every step depends on the one before


class SeqMemRunner:
    """One spec (one system, one model) over one task stream, opened on a store: the whole
    stream is one cell (:mod:`clstream.driver` registers the run and runs it)."""

    def __init__(
        self,
        tasks: Sequence[TaskLike],
        holdout: Sequence[TaskLike],
        spec: RunSpec,
        store: ResultsStore,
        make_system: Callable[[], System],
        evaluate: Evaluate,
        plan: SeqMemPlan,
    ):
        if plan.n_tasks != len(tasks):
            raise SpecError(f"plan is for {plan.n_tasks} tasks, the stream has {len(tasks)}")
        ids = [t.id for t in holdout]
        if len(set(ids)) != len(ids):
            raise SpecError("hold-out task ids must be unique")
        self.tasks, self.holdout = list(tasks), list(holdout)
        self.spec, self.store, self.plan = spec, store, plan
        self.make_system, self.evaluate = make_system, evaluate
        self.run_id = spec.run_id
        self._eval_sem: asyncio.Semaphore | None = None
        self._progress: Progress | None = None
        self._done: dict[str, set[str]] = {"holdout": set(), "retro": set()}

    # -- counting ------------------------------------------------------------------------------
    def cells(self) -> list[Cell]:
        return [Cell(STREAM_CELL, sum(self.totals().values()))]

    def totals(self) -> dict[str, int]:
        retro = sum(len(self.plan.retro_at(k)) for k in range(self.plan.n_tasks + 1))
        return {"online": self.plan.n_tasks,
                "holdout": len(self.holdout) * len(self.plan.checkpoints) if self.holdout else 0,
                "retro": retro}

    # -- main loop -----------------------------------------------------------------------------
    async def run_cell(self, cell: Cell, progress: Progress) -> None:
        self._progress = progress
        await self._run()

    async def _run(self) -> None:
        self._eval_sem = asyncio.Semaphore(EVAL_CONCURRENCY)  # bound to this run's event loop
        self._done = {k: self.store.done_keys(self.run_id, k) for k in ("holdout", "retro")}
        system = self.make_system()
        await system.reset()
        steps = self.store.state_steps(self.run_id, MEMORY)
        if not steps:
            empty = json.loads(json.dumps(system.snapshot()))
            self.store.save_state(self.run_id, MEMORY, 0, whole_state(empty))
            steps = [0]
        # Probes still missing at stored states (a run stopped during them, or failed calls).
        for k in steps:
            if self._missing_probes(k):
                system.restore(self._memory(k))
                await self._probes(system, k)
        last = steps[-1]
        system.restore(self._memory(last))
        for tau in range(last + 1, self.plan.n_tasks + 1):
            await self._online_step(system, tau)
            await self._probes(system, tau)

    def _memory(self, k: int) -> dict[str, Any]:
        state = load_memory(self.store, self.run_id, k)
        if state is None:
            raise StoreError(f"{self.store.dir}: the memory snapshot of step {k} is missing")
        return state

    def _missing_probes(self, k: int) -> bool:
        return bool(self._missing_holdout(k) or self._missing_retro(k))

    def _missing_holdout(self, k: int) -> list[TaskLike]:
        if k not in self.plan.checkpoints or not self.holdout:
            return []
        return [t for t in self.holdout if f"{k}/{t.id}" not in self._done["holdout"]]

    def _missing_retro(self, k: int) -> list[tuple[int, int]]:
        return [(tau, h) for tau, h in self.plan.retro_at(k)
                if f"{tau}@{h}" not in self._done["retro"]]

    def _commit(self, records: list[Record]) -> None:
        self.store.put_records(self.run_id, records)
        ok = [r for r in records if r.kind in self._done and r.error is None]
        for r in ok:
            self._done[r.kind].add(r.key)
        self._tick(len(ok))

    # -- evaluation ----------------------------------------------------------------------------
    async def _judge(self, task: TaskLike, output: str) -> Verdict:
        assert self._eval_sem is not None
        async with self._eval_sem:
            return await asyncio.to_thread(self.evaluate, task, output)

    async def _answer(self, system: System, pairs: list[tuple[TaskLike, Query]]) -> list[_Answer]:
        responses = await respond_all(system, [q for _, q in pairs])
        verdicts = await asyncio.gather(*(
            self._judge(task, resp.text) for (task, _), resp in zip(pairs, responses, strict=True)
        ))
        return [_Answer(q, r, v) for (_, q), r, v in zip(pairs, responses, verdicts, strict=True)]

    def _tick(self, n: int) -> None:
        if self._progress is not None and n:
            self._progress.update(n)

    # -- the online step -----------------------------------------------------------------------
    async def _online_step(self, system: System, tau: int) -> None:
        task = self.tasks[tau - 1]
        tries = max_tries(system)
        records: list[Record] = []
        attempts: list[dict[str, Any]] = []
        answers: list[_Answer] = []
        update_s = 0.0
        update_calls = 0
        for z in range(1, tries + 1):
            qid = f"online/{tau}" if z == 1 else f"online/{tau}#try{z}"
            query = make_query(task, qid, "online", tau=tau, attempt=z)
            (answer,) = await self._answer(system, [(task, query)])
            error = answer_error(answer.response)
            if error:
                raise StreamStopped(f"model call failed on online task {tau} ({task.id}): "
                                    f"{error}; rerun the same command to resume")
            answers.append(answer)
            success = answer.verdict.score >= 1.0
            final = success or z == tries
            # The verdict goes back into the model's prompt: never with a secret in it (an
            # evaluator may quote an environment's or a server's text).
            feedback = Feedback(
                query_id=query.id, query_text=query.text, answer=scrub(answer.response.text),
                score=float(answer.verdict.score), message=scrub(answer.verdict.feedback),
                meta={"task_id": task.id, "tau": tau, "attempt": z, "final": final,
                      "kind": task.kind},
            )
            started = time.perf_counter()
            calls = list(await system.observe(feedback) or [])
            update_s += time.perf_counter() - started
            update_calls += len(calls)
            _, other = _split(answer.response.results)
            records += call_records(other, "online", tau, f"online/{tau}/try{z}")
            records += call_records(calls, "update", tau, f"update/{tau}/try{z}")
            attempts.append({"output": answer.response.text, "score": float(answer.verdict.score),
                             "feedback": answer.verdict.feedback})
            if final:
                break
        last = answers[-1]
        gen = [r for a in answers for r in _split(a.response.results)[0]]
        correct = int(any(a.verdict.score >= 1.0 for a in answers))
        payload = {**_answer_payload(last), "tau": tau, "correct": correct,
                   "tries": len(answers), "timings": _timings([a.response for a in answers])}
        if len(answers) > 1:
            payload["attempts"] = attempts
        records.insert(0, Record(
            kind="online", key=str(tau), stream="online", t=tau, payload=payload,
            stage="generate", usage=_sum_usage(gen),
            cache_hit=bool(gen) and all(r.cache_hit for r in gen), calls=tuple(gen),
        ))
        records.append(Record(
            kind="update", key=str(tau), stream="update", t=tau, stage="update",
            payload={"tau": tau, "time_s": round(update_s, 6), "calls": update_calls},
        ))
        state = json.loads(json.dumps(system.snapshot()))  # detached, as a resume reads it
        self.store.save_state(self.run_id, MEMORY, tau, whole_state(state), records)
        self._tick(1)

    # -- probes at one state -------------------------------------------------------------------
    async def _probes(self, system: System, k: int) -> None:
        holdout = self._missing_holdout(k)
        for i in range(0, len(holdout), PROBE_BATCH):
            batch = holdout[i:i + PROBE_BATCH]
            pairs = [(t, make_query(t, f"holdout/{t.id}@{k}", "holdout", checkpoint=k))
                     for t in batch]
            records: list[Record] = []
            for a in await self._answer(system, pairs):
                item = a.query.meta["task_id"]
                records += _probe_records(a, "holdout", f"{k}/{item}", k,
                                          {"checkpoint": k, "item": item})
            self._commit(records)
        retro = self._missing_retro(k)
        for i in range(0, len(retro), PROBE_BATCH):
            batch_r = retro[i:i + PROBE_BATCH]
            pairs = [(self.tasks[tau - 1],
                      make_query(self.tasks[tau - 1], f"retro/{tau}@{h}", "retro",
                                 tau=tau, horizon=h))
                     for tau, h in batch_r]
            records = []
            for a in await self._answer(system, pairs):
                tau, h = a.query.meta["tau"], a.query.meta["horizon"]
                records += _probe_records(a, "retro", f"{tau}@{h}", k,
                                          {"tau": tau, "horizon": h})
            self._commit(records)
