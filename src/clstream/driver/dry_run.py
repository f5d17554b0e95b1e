"""A dry run: the real run of a command line, with planning models, into a scratch directory
(docs/plan.md §2).

``clstream plan`` takes the arguments of ``clstream run`` and plans each of its runs as the
run itself would be planned (:meth:`~clstream.core.protocol.Command.planned`), except that
every model is a :class:`~clstream.models.planning.PlanningModel` (it answers as the builtin
reader does and records each request) and that parametric methods train nothing. The runs go
through the driver's own :func:`~clstream.driver.execute.run_planned`, one after another as
:func:`~clstream.driver.execute.drive` runs them, into a temporary results directory that is
deleted afterwards: the results directory the arguments name is neither created nor read.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from clstream.core.contracts import Model, System, max_tries
from clstream.core.protocol import StreamProtocol
from clstream.core.specs import ComponentSpec
from clstream.driver.components import built_with
from clstream.driver.execute import run_planned
from clstream.driver.plan import first_of_each_run
from clstream.models.planning import PlannedRequest, RequestLog
from clstream.store.db import ResultsStore

ModelMaker = Callable[[ComponentSpec, RequestLog], Model]


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


def dry_run(entries: Sequence[tuple[StreamProtocol, argparse.Namespace]],
            make_model: ModelMaker) -> list[DryRun]:
    """Every run of ``entries`` (a protocol and its parsed ``run`` flags each), planned and run
    with the models ``make_model`` builds, in the order ``clstream run`` runs them."""
    hooks = _Hooks(make_model, RequestLog())
    out: list[DryRun] = []
    with tempfile.TemporaryDirectory(prefix="clstream-plan-") as scratch, built_with(hooks):
        jobs = []
        for protocol, args in entries:
            scratch_args: Any = argparse.Namespace(**{**vars(args), "out": scratch,
                                                      "no_progress": True})
            jobs.append(protocol.run_command.planned(scratch_args))
        jobs = first_of_each_run(jobs)  # one run named twice is run once (run --spec)
        with ResultsStore(scratch, writer=True) as store:
            for job in jobs:
                for planned in job.runs:
                    start = len(hooks.log.requests)
                    run_planned(planned, store, job.model, show_progress=False)
                    system = planned.make_system()
                    out.append(DryRun(job.protocol, planned.label, planned.spec.model.label,
                                      planned.spec.run_id, hooks.log.requests[start:],
                                      bool(getattr(system, "answers_with_weights", False)),
                                      max_tries(system)))
    return out
