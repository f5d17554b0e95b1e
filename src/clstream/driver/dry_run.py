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
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from clstream.core.contracts import Model, RequestPlanner, System, is_replayable, max_tries
from clstream.core.protocol import StreamProtocol
from clstream.core.specs import ComponentSpec
from clstream.driver.components import built_with
from clstream.driver.execute import run_planned
from clstream.driver.plan import first_of_each_run
from clstream.driver.request import RunRequest
from clstream.models.planning import PlannedRequest, ReplySample, RequestLog
from clstream.store.db import ResultsStore

ModelMaker = Callable[[ComponentSpec, RequestLog], Model]
REPLY_SAMPLE = 128
"""At most this many replies read per run where a sample is enough (module docstring)."""


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
            make_model: ModelMaker) -> list[DryRun]:
    """Every run of ``entries`` (a protocol and one seed's ``run`` request each), planned and
    run with the models ``make_model`` builds, in the order ``clstream run`` runs them."""
    hooks = _Hooks(make_model, RequestLog())
    out: list[DryRun] = []
    with tempfile.TemporaryDirectory(prefix="clstream-plan-") as scratch, built_with(hooks):
        jobs, protocols = [], []
        for protocol, request in entries:
            scratch_request = dataclasses.replace(request, out=scratch, show_progress=False)
            jobs.append(protocol.run_command.planned(scratch_request))
            protocols.append(protocol)
        kept = first_of_each_run(jobs)  # one run named twice is run once (run --spec)
        protocols = [p for p, job in zip(protocols, jobs, strict=True)
                     if any(job is k for k in kept)]
        jobs = kept
        with ResultsStore(scratch, writer=True) as store:
            for job, protocol in zip(jobs, protocols, strict=True):
                for planned in job.runs:
                    start = len(hooks.log.requests)
                    system = planned.make_system()
                    if not _replies_shape_requests(protocol, system):
                        units = sum(planned.open(store).totals().values())
                        hooks.log.sample = ReplySample(units, REPLY_SAMPLE)
                    try:
                        run_planned(planned, store, job.model, show_progress=False)
                    finally:
                        sample, hooks.log.sample = hooks.log.sample, None
                    requests = hooks.log.requests[start:]
                    read = sum(r.expected_completion_tokens is not None for r in requests)
                    out.append(DryRun(job.protocol, planned.label, planned.spec.model.label,
                                      planned.spec.run_id, requests,
                                      bool(getattr(system, "answers_with_weights", False)),
                                      max_tries(system),
                                      read if sample is not None and read < len(requests)
                                      else None, seed=planned.spec.seed))
    return out


def _replies_shape_requests(protocol: StreamProtocol, system: System) -> bool:
    """Whether a reply may change what ``system`` asks next under ``protocol`` (module
    docstring): unless the protocol says its answers feed nothing back and the system plans
    its requests before any is sent, from memory no model call changes, in one try."""
    return bool(getattr(protocol, "answers_feed_back", True)) or not (
        is_replayable(system) and isinstance(system, RequestPlanner) and max_tries(system) == 1)
