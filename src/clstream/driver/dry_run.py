"""A dry run: the real run of a command line, with planning models, into a scratch directory
(docs/plan.md §2).

``clstream plan`` takes the arguments of ``clstream run`` and plans each of its runs as the
run itself would be planned (:meth:`~clstream.core.protocol.Command.planned`), except that
every model is a :class:`~clstream.models.planning.PlanningModel` (it answers as the builtin
reader does and records each request) and that parametric methods train nothing. The runs go
through the driver's own :func:`~clstream.driver.execute.run_planned`, one after another as
:func:`~clstream.driver.execute.drive` runs them, into a temporary results directory that is
deleted afterwards: the results directory the arguments name is neither created nor read.

Where a run's requests cannot depend on the replies (a protocol whose answers feed nothing
back, ``answers_feed_back = False``, and a system that builds its requests apart from sending
them, replayable and trying once), only a bounded sample of the replies is read
(:class:`~clstream.models.planning.ReplySample`): the counts of requests and prompt tokens
and the prefix-cache figures are those of every request, the expected completion tokens an
estimate from the sample.

Such a run is not run at all where it can be *walked* (``walk=True``): its protocol gives its
requests without running it (:attr:`~clstream.driver.plan.PlannedRun.walk`, OAKS), its system
gives them as prompt parts (:class:`~clstream.models.prompt_parts.PartsPlanner`, the context
strategies) and its model counts prompts from their parts (the approximate count). Then no
driver, runner, store or prompt is involved: the stream is walked, each prompt counted and
hashed from its parts (:meth:`~clstream.models.planning.ChatTokens.blocked_parts`), and only
the sampled requests are built and read (:meth:`~clstream.models.planning.PlanningModel.
record_parts`). The requests come in stream order rather than the run's send order, which
changes no figure of an unbounded prefix cache (a cache that never evicts computes each
distinct block once, in any order), so the caller walks only then; the sample is taken in
that order, so the expected completion tokens (an estimate) may differ from a dry run's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import tempfile
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clstream.core.contracts import Model, RequestPlanner, System, is_replayable, max_tries
from clstream.core.jsonio import gc_paused
from clstream.core.protocol import StreamProtocol
from clstream.core.specs import ComponentSpec
from clstream.driver.components import built_with
from clstream.driver.plan import PlannedRun, PromptWalk, first_of_each_run
from clstream.driver.request import RunRequest
from clstream.models.planning import PlannedRequest, PlanningModel, ReplySample, RequestLog
from clstream.models.prompt_parts import PartsPlanner, PromptParts

if TYPE_CHECKING:  # a walked plan runs nothing: the driver and store load when a run is run
    from clstream.store.db import ResultsStore

ModelMaker = Callable[[ComponentSpec, RequestLog], Model]
REPLY_SAMPLE = 128
"""At most this many replies read per run where a sample is enough (module docstring)."""
WALKED_REPLY_SAMPLE = 32
"""At most this many replies read per walked run (module docstring): spread without a period
(:func:`~clstream.models.planning.spread_sample`), fewer are needed than with a stride, and
the reads are most of a walked plan's time (docs/plan.md §3 gives the estimate's error)."""


@dataclass
class DryRun:
    """One run of the plan: what it is, and its requests in send order."""

    protocol: str
    system: str
    model: str
    run_id: str
    requests: list[PlannedRequest]
    training_skipped: bool = False
    max_tries: int = 1
    replies_read: int | None = None
    """How many replies the expected completion tokens come from, where only a sample was
    read (None: every reply)."""
    seed: int = 0
    """The run's seed (``--seeds`` plans one run per seed, as ``run`` runs them)."""


@dataclass
class _Hooks:
    make_model: ModelMaker
    log: RequestLog

    def model(self, spec: ComponentSpec) -> Model:
        return self.make_model(spec, self.log)

    def system(self, system: System) -> System:
        if getattr(system, "answers_with_weights", False):
            setattr(system, "train_weights", False)  # noqa: B010 - a parametric method's flag
        return system


def dry_run(entries: Sequence[tuple[StreamProtocol, RunRequest[Any]]],
            make_model: ModelMaker, *, sample: bool = True, walk: bool = False
            ) -> list[DryRun]:
    """Every run of ``entries`` (a protocol and one seed's ``run`` request each), planned and
    run with the models ``make_model`` builds, in the order ``clstream run`` runs them.
    ``sample``: read only a sample of the replies where they cannot shape the requests;
    ``walk``: count such runs without running them, where they can be walked (module
    docstring; only where the order of requests does not matter)."""
    hooks = _Hooks(make_model, RequestLog())
    out: list[DryRun] = []
    with tempfile.TemporaryDirectory(prefix="clstream-plan-") as scratch, built_with(hooks), \
            ExitStack() as stack:
        # What the walks set aside (:func:`_walked`), given back at the end; where objects
        # were frozen before (by the caller), nothing is set aside, nor given back.
        freeze = gc.get_freeze_count() == 0
        if freeze:
            stack.callback(gc.unfreeze)
        jobs, protocols = [], []
        for protocol, request in entries:
            scratch_request = dataclasses.replace(request, out=scratch, show_progress=False)
            jobs.append(protocol.run_command.planned(scratch_request))
            protocols.append(protocol)
        kept = first_of_each_run(jobs)  # one run named twice is run once (run --spec)
        protocols = [p for p, job in zip(protocols, jobs, strict=True)
                     if any(job is k for k in kept)]
        jobs = kept
        store: ResultsStore | None = None  # opened for the first run that is run
        for job, protocol in zip(jobs, protocols, strict=True):
            for planned in job.runs:
                start = len(hooks.log.requests)
                system = planned.make_system()
                fixed = not _replies_shape_requests(protocol, system)
                read = None
                if walk and fixed and planned.walk is not None \
                        and isinstance(job.model, PlanningModel) \
                        and isinstance(system, PartsPlanner) and job.model.tokens.counts_parts:
                    read = _walked(planned.walk, system, job.model, freeze)
                if read is None:
                    if store is None:
                        from clstream.store.db import ResultsStore

                        store = stack.enter_context(ResultsStore(scratch, writer=True))
                    read = _run(planned, store, job.model, hooks.log, sample and fixed)
                requests = hooks.log.requests[start:]
                out.append(DryRun(job.protocol, planned.label, planned.spec.model.label,
                                  planned.spec.run_id, requests,
                                  bool(getattr(system, "answers_with_weights", False)),
                                  max_tries(system),
                                  read if read < len(requests) else None,
                                  seed=planned.spec.seed))
    return out


def _run(planned: PlannedRun, store: ResultsStore, model: Model, log: RequestLog,
         sample: bool) -> int:
    """Run ``planned`` into the scratch ``store``, reading a sample of its replies where
    ``sample``; returns how many replies were read."""
    from clstream.driver.execute import run_planned

    start = len(log.requests)
    if sample:
        log.sample = ReplySample(sum(planned.open(store).totals().values()), REPLY_SAMPLE)
    try:
        run_planned(planned, store, model, show_progress=False)
    finally:
        log.sample = None
    return sum(r.expected_completion_tokens is not None for r in log.requests[start:])


def _walked(walk: PromptWalk, system: PartsPlanner, model: PlanningModel, freeze: bool
            ) -> int | None:
    """The requests of a run walked (module docstring) and recorded by ``model``, with a
    sample of at most :data:`WALKED_REPLY_SAMPLE` replies read; returns how many were read, or
    None (nothing recorded) where the run cannot be walked. A walk makes many small objects and
    no reference cycles, so the cyclic collector is paused: it would rescan them, for nothing;
    and where ``freeze``, what is left of them is then frozen out of its sight (``gc.freeze``)
    until the plan ends."""
    parts: list[PromptParts] = []

    async def walked() -> int | None:
        if not await walk(parts.extend):
            return None
        return await model.record_parts(parts, system.request_of, WALKED_REPLY_SAMPLE)

    with gc_paused():
        read = asyncio.run(walked())
        # What the walk made and the plan keeps (its request log) is set aside from the
        # cyclic collector until the plan ends (:func:`dry_run`): otherwise the collection
        # that follows the pause would go over every one of those objects, each walk.
        parts.clear()
        if freeze:
            gc.freeze()
    return read


def _replies_shape_requests(protocol: StreamProtocol, system: System) -> bool:
    """Whether a reply may change what ``system`` asks next under ``protocol`` (module
    docstring): unless the protocol says its answers feed nothing back and the system plans
    its requests before any is sent, from memory no model call changes, in one try."""
    return bool(getattr(protocol, "answers_feed_back", True)) or not (
        is_replayable(system) and isinstance(system, RequestPlanner) and max_tries(system) == 1)
