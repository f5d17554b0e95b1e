"""The CL-Bench runner: a system through stateful environments, in two arms (docs/clbench.md §2).

For each task of a run (one run is one system with one model over a set of tasks):

* the *stateless* arm, once: every instance in canonical order, each from a fresh system and
  an environment put into the state that instance has in the schedule
  (:meth:`~clstream.core.environment.Environment.reset_to`);
* the *stateful* arm, R rollouts: rollout r plays the instances in
  :func:`~clstream.core.environment.rollout_order` (``schedule, policy, seed, r``), one system
  and one environment through the whole rollout.

A step: the environment's query becomes a :class:`~clstream.core.types.Query`
(:meth:`~clstream.core.environment.EnvQuery.to_query`), the system responds, and the action is
the JSON object its reply holds (:func:`~clstream.core.environment.parse_action`). A reply
holding none gets one repair request: the same query with a short note after the prompt saying
the reply was not a JSON action and quoting the action's schema (a read-only ``respond``, like
any other). If that reply holds none either, its raw text goes to the environment, which counts
it as a malformed action (capped per instance, docs/clbench.md §2.4). The system then observes the result
(:meth:`~clstream.core.environment.StepResult.to_event`, carrying the observation acted on and
the action as text, so a memory can keep the whole step).

Within an instance every system sees the steps it has taken so far (observation, action,
feedback), as the paper's agents do; memory decides only what crosses instances (docs/clbench.md
§2.4). The runner shows them, as step blocks before the step's query block, to every system but
one whose memory already holds the instance in progress as a conversation (a true
``keeps_instance_steps`` attribute: the conversation methods), which would otherwise see them
twice. So ``memory-free`` acts on its own instance's history instead of repeating its first
action.

Failures. A model call that fails (``GenerationResult.error``, in answering, in the repair or
in a memory update) is never an invalid action and is never scored: the instance is abandoned,
an ``instance`` record holding the error is stored under the key its success would have, and
that rollout (or the stateless arm) stops. A rerun retries it; the success then replaces the
error record.

Records. Each step is a ``step`` record (``stream`` = task/instance, ``t`` = step, rollout,
arm; payload: instance id, position, the action sent, the raw reply (and the reply to the
repair request) where it differs from that action, feedback, validity, the finish reason of
each answer, so the summary counts answers cut by the token cap; the usage of its answering
calls), with a ``call`` record for every other model call (memory updates);
each finished instance an ``instance`` record (``score`` = reward, ``t`` = position in the
arm's order; payload: position, instance id, stage, steps, tokens). The tokens of an instance
are those of every call made for it, so a rollout's cost is the sum over its instances
(docs/clbench.md §5.8: tokens offline).

Resume: the simplest correct scheme. An instance is the unit of work: its step records, its
instance record and, in a stateful rollout, the snapshot ``{"system", "env"}`` taken after it
(:mod:`clstream.protocols.clbench.snapshots`, stream ``task/stateful/r``, t = instances done)
are committed in one transaction when it ends. A kill mid-instance therefore leaves nothing of
it, and a rerun restores the latest snapshot and plays the unfinished instance again from its
first step: every step record of an unfinished instance is redone, its model calls included
(with ``--cache`` those answered before are replayed, not paid twice). Nothing is ever stored
twice or half. The stateless arm needs no snapshot: its finished instances are known by their
records, and each instance starts from a fresh system anyway.

Concurrency: the stateless arm and each rollout of each task are independent units, run as
asyncio tasks, at most ``parallel`` at once (``--max-concurrency`` bounds the model requests
in flight). Each unit has its own environment and system and nothing it computes depends on
another, so the same spec and seed give the same records whatever the concurrency.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from clstream.core import layout
from clstream.core.contracts import System
from clstream.core.environment import (
    ActionError,
    Environment,
    StepResult,
    action_text,
    parse_action,
    rollout_order,
)
from clstream.core.errors import StoreError
from clstream.core.specs import RunSpec
from clstream.core.types import GenerationResult, Query, Response, Usage
from clstream.driver.plan import Cell, Progress
from clstream.driver.record_fields import call_records, finish_reasons, timing_fields
from clstream.protocols.clbench.snapshots import load_snapshot
from clstream.store.db import Record, ResultsStore
from clstream.store.snapshots import whole_state

PROTOCOL = "clbench"
STATELESS, STATEFUL = "stateless", "stateful"

REPAIR_NOTE = (
    "Note: your previous reply to this step could not be read as an action ({problem}). "
    "Reply again with exactly one JSON object following this schema, and nothing else:\n"
    "{schema}"
)


def template_fingerprint(texts: Iterable[str] = ()) -> str:
    """sha256 of the runner's repair note, the layout's step and query templates and
    ``texts`` (the environments' instructions and action formats)."""
    parts = [REPAIR_NOTE, layout.step_fingerprint(), layout.template_fingerprint(), *texts]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def instance_key(task: str, arm: str, rollout: int, instance_id: str) -> str:
    return f"{task}/{arm}/{rollout}/{instance_id}"


def arm_stream(task: str, arm: str, rollout: int) -> str:
    """The stream of an arm's snapshots (and the prefix of its record keys)."""
    return f"{task}/{arm}/{rollout}"


def repair_query(query: Query, problem: str) -> Query:
    """``query`` again, with the note asking for a JSON action after its prompt."""
    schema = json.dumps(query.meta.get("action_schema", {}), sort_keys=True)
    note = REPAIR_NOTE.format(problem=problem.rstrip("."), schema=schema)
    return Query(id=f"{query.id}#repair", text=query.text, options=query.options,
                 kind=query.kind, meta={**query.meta, "repair": True},
                 instructions=query.instructions, prompt=f"{query.prompt}\n\n{note}")


def _error(response: Response) -> str | None:
    if not response.results:
        return "the system made no model call"
    return response.error


def _sum(results: Sequence[GenerationResult]) -> Usage:
    total = Usage()
    for r in results:
        total = total + r.usage
    return total


def _tokens(usage: Usage) -> int:
    return usage.prompt_tokens + usage.completion_tokens + usage.reasoning_tokens


def _detached(value: Any) -> Any:
    """A JSON copy (what a resume reads back)."""
    return json.loads(json.dumps(value))


@dataclass(frozen=True)
class Unit:
    """One independent piece of a run: a task's stateless arm, or one stateful rollout."""

    task: str
    arm: str
    rollout: int

    @property
    def stream(self) -> str:
        return arm_stream(self.task, self.arm, self.rollout)


@dataclass
class _Played:
    """One instance played to its end (records to commit), or abandoned (``error``)."""

    records: list[Record]
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    step: int = 0


class ClbenchRunner:
    """One spec (one system, one model) over the tasks of a run, opened on a store: a task's
    stateless arm is one cell and each of its rollouts another (:mod:`clstream.driver`
    registers the run and runs the cells, at most ``--parallel`` at once)."""

    def __init__(
        self,
        spec: RunSpec,
        store: ResultsStore,
        make_system: Callable[[], System],
        make_env: Callable[[str], Environment],
        tasks: Sequence[str],
        rollouts: int,
        view: Mapping[str, Any],
    ):
        self.spec, self.store = spec, store
        self.make_system, self.make_env = make_system, make_env
        self.tasks, self.rollouts = list(tasks), int(rollouts)
        self.view = dict(view)
        self.run_id = spec.run_id
        self._sizes = {t: int(self.view["tasks"][t]["n_instances"]) for t in self.tasks}
        self._units = {u.stream: u for u in self.units}

    @property
    def units(self) -> list[Unit]:
        out = []
        for task in self.tasks:
            out.append(Unit(task, STATELESS, 0))
            out += [Unit(task, STATEFUL, r) for r in range(self.rollouts)]
        return out

    def cells(self) -> list[Cell]:
        return [Cell(u.stream, self._sizes[u.task]) for u in self.units]

    def totals(self) -> dict[str, int]:
        return {"instance": sum(n * (self.rollouts + 1) for n in self._sizes.values())}

    async def run_cell(self, cell: Cell, progress: Progress) -> None:
        await self._unit(self._units[cell.id], progress)

    async def _unit(self, unit: Unit, progress: Progress) -> None:
        env = self.make_env(unit.task)
        try:
            if unit.arm == STATELESS:
                await self._stateless(unit, env, progress)
            else:
                await self._stateful(unit, env, progress)
        finally:
            close = getattr(env, "close", None)
            if callable(close):
                close()

    def _stop(self, unit: Unit, pos: int, instance_id: str, stage: int, played: _Played
              ) -> None:
        """Store the error of an abandoned instance; its arm or rollout stops here."""
        key = instance_key(unit.task, unit.arm, unit.rollout, instance_id)
        self.store.put_records(self.run_id, [Record(
            kind="instance", key=key, stream=unit.task, t=pos, rollout=unit.rollout,
            arm=unit.arm, error=played.error, usage=played.usage,
            payload={"task": unit.task, "arm": unit.arm, "rollout": unit.rollout, "pos": pos,
                     "instance_id": instance_id, "stage": stage, "failed_step": played.step},
        )])

    async def _stateless(self, unit: Unit, env: Environment, progress: Progress) -> None:
        prefix = unit.stream + "/"
        done = {k for k in self.store.done_keys(self.run_id, "instance", stream=unit.task,
                                                  arm=STATELESS) if k.startswith(prefix)}
        for pos, instance_id in enumerate(env.schedule.instance_ids, start=1):
            if instance_key(unit.task, unit.arm, 0, instance_id) in done:
                continue
            env.reset_to(instance_id)
            system = self.make_system()
            await system.reset()
            played = await self._play(unit, env, system, instance_id, pos)
            if played.error is not None:
                self._stop(unit, pos, instance_id, env.schedule.stage_of(instance_id), played)
                return
            self.store.put_records(self.run_id, played.records)
            progress.update(1)

    async def _stateful(self, unit: Unit, env: Environment, progress: Progress) -> None:
        order = rollout_order(env.schedule, env.order_policy, env.seed, unit.rollout)
        steps = self.store.state_steps(self.run_id, unit.stream)
        start = steps[-1] if steps else 0
        if start > len(order):
            raise StoreError(f"{self.store.dir}: {unit.stream} has a snapshot after {start} "
                             f"instances, the rollout has {len(order)}")
        system = self.make_system()
        await system.reset()
        if start:
            restored = load_snapshot(self.store, self.run_id, unit.stream, start)
            system.restore(restored["system"])
            env.restore(restored["env"])
        else:
            env.reset()
        for pos in range(start + 1, len(order) + 1):
            instance_id = order[pos - 1]
            played = await self._play(unit, env, system, instance_id, pos)
            if played.error is not None:
                self._stop(unit, pos, instance_id, env.schedule.stage_of(instance_id), played)
                return
            state = {"system": _detached(system.snapshot()), "env": _detached(env.snapshot())}
            self.store.save_state(self.run_id, unit.stream, pos, whole_state(state),
                                  played.records)
            progress.update(1)

    # -- one instance ----------------------------------------------------------------------------
    async def _play(self, unit: Unit, env: Environment, system: System, instance_id: str,
                    pos: int) -> _Played:
        """Play ``instance_id`` to its end: its step records, then its instance record."""
        query = env.begin(instance_id)
        stage, variant = query.stage, query.variant
        key = instance_key(unit.task, unit.arm, unit.rollout, instance_id)
        stream = f"{unit.task}/{instance_id}"
        records: list[Record] = []
        used = Usage()
        shows_steps = not getattr(system, "keeps_instance_steps", False)
        earlier: list[str] = []
        while True:
            q = query.to_query(earlier if shows_steps else ())
            step = query.step
            response = await system.respond(q)
            results = list(response.results)
            error = _error(response)
            reply = response.text
            repair_reply: str | None = None
            parsed: dict[str, Any] | None = None
            if error is None:
                try:
                    parsed = parse_action(reply)
                except ActionError as exc:
                    repaired = await system.respond(repair_query(q, str(exc)))
                    results += repaired.results
                    error = _error(repaired)
                    repair_reply = repaired.text
                    if error is None:
                        try:
                            parsed = parse_action(repair_reply)
                        except ActionError:
                            parsed = None
            used = used + _sum(results)
            if error is not None:
                return _Played([], f"model call failed at step {step} of instance "
                                   f"{instance_id} ({unit.task}, {unit.arm}"
                                   f"{'' if unit.arm == STATELESS else f' rollout {unit.rollout}'}"
                                   f"): {error}", used, step)
            raw = repair_reply if repair_reply is not None else reply
            sent = action_text(parsed) if parsed is not None else raw
            result = env.step(parsed if parsed is not None else raw)
            calls = list(await system.observe(result.to_event(q.text, sent)) or [])
            used = used + _sum(calls)
            failed = next((c.error for c in calls if c.error), None)
            if failed is not None:
                return _Played([], f"memory update failed after step {step} of instance "
                                   f"{instance_id} ({unit.task}, {unit.arm}): {failed}",
                               used, step)
            records += self._step_records(unit, stream, key, pos, step, results, calls, reply,
                                          repair_reply, sent, result)
            earlier.append(layout.step_block(result.instance_id, step, q.text, sent,
                                             result.feedback))
            if result.instance_complete:
                break
            assert result.next_query is not None
            query = result.next_query
        info = dict(result.info)
        records.append(Record(
            kind="instance", key=key, stream=unit.task, t=pos, rollout=unit.rollout,
            arm=unit.arm, score=float(result.reward if result.reward is not None else 0.0),
            payload={"task": unit.task, "arm": unit.arm, "rollout": unit.rollout, "pos": pos,
                     "instance_id": instance_id, "stage": stage, "variant": variant,
                     "reward": result.reward, "success": result.success,
                     "steps": result.step, "tokens": _tokens(used), "info": info},
        ))
        return _Played(records, None, used, result.step)

    @staticmethod
    def _step_records(unit: Unit, stream: str, key: str, pos: int, step: int,
                      results: list[GenerationResult], calls: list[GenerationResult],
                      reply: str, repair_reply: str | None, sent: str, result: StepResult
                      ) -> list[Record]:
        answer = [r for r in results if r.stage == "generate"]
        other = [r for r in results if r.stage != "generate"]
        payload: dict[str, Any] = {
            "instance_id": result.instance_id, "pos": pos, "step": step, "action": sent,
            "feedback": result.feedback, "valid": result.valid,
            "complete": result.instance_complete, "repaired": repair_reply is not None,
            "finish_reasons": finish_reasons(answer), **timing_fields(answer)}
        if reply != sent:
            payload["reply"] = reply
        if repair_reply is not None and repair_reply != sent:
            payload["repair_reply"] = repair_reply
        step_key = f"{key}/{step}"
        return [
            Record(kind="step", key=step_key, stream=stream, t=step, rollout=unit.rollout,
                   arm=unit.arm, payload=payload, stage="generate", usage=_sum(answer),
                   cache_hit=bool(answer) and all(r.cache_hit for r in answer),
                   calls=tuple(answer)),
            *call_records(other, stream, step, f"{step_key}/respond"),
            *call_records(calls, stream, step, f"{step_key}/observe"),
        ]
