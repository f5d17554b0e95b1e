"""CL-Bench verbs: ``generate clbench``, ``run clbench`` and ``score clbench`` over a docs/clbench.md §3.1
records file (docs/clbench.md §2, §3); the verbs' flags are in
:mod:`clstream.protocols.clbench.arguments`."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import sqlite3
import sys
from functools import partial
from pathlib import Path
from typing import Any

from clstream.arguments.requests import seed_requests
from clstream.core.data_kinds import load_checked
from clstream.core.errors import SpecError, StoreError
from clstream.core.files import WriteError, os_error_cause, sqlite_disk_cause
from clstream.core.jsonio import dumps_finite
from clstream.core.outputs import claim_directory
from clstream.driver.assemble import plan_job, run_basics, shared_models
from clstream.driver.execute import drive
from clstream.driver.flags import (
    MOST_IN_FLIGHT,
    MOST_ROLLOUTS,
    positive,
)
from clstream.driver.plan import RunJob, StoredDataset
from clstream.driver.request import RunRequest
from clstream.protocols.clbench.arguments import (
    RunOptions,
    add_generate_arguments,
    add_run_clbench_arguments,
    add_score_arguments,
)
from clstream.protocols.clbench.envs import ENVIRONMENTS
from clstream.protocols.clbench.envs.base import EnvironmentBase
from clstream.protocols.clbench.materials import write_materials
from clstream.protocols.clbench.metrics import ci_multiplier, score_clbench
from clstream.protocols.clbench.options import parse_env_options
from clstream.protocols.clbench.records import ClbenchRecords, load_clbench_records
from clstream.protocols.clbench.run_summary import stateless_sums
from clstream.protocols.clbench.runner import ClbenchRunner, template_fingerprint
from clstream.store.db import ResultsStore

__all__ = ["add_generate_arguments", "add_run_clbench_arguments", "add_score_arguments",
           "generate", "run", "score"]

TASKS = tuple(sorted(ENVIRONMENTS))


def _missing_note(records: ClbenchRecords) -> str | None:
    parts = []
    for name, task in records.tasks.items():
        if task.n_missing:
            parts.append(f"{name}: {task.n_missing} of {task.n_declared}")
    if not parts:
        return None
    count = records.n_missing
    noun = "instance" if count == 1 else "instances"
    return (f"clstream: left out {count} {noun} missing from an arm "
            f"({', '.join(parts)} declared)")


def _rollouts_note(records: ClbenchRecords) -> str | None:
    parts = [f"{name}: {', '.join(map(str, task.rollouts_left_out))}"
             for name, task in records.tasks.items() if task.rollouts_left_out]
    if not parts:
        return None
    count = records.n_rollouts_left_out
    noun = "rollout" if count == 1 else "rollouts"
    return f"clstream: left out {count} incomplete stateful {noun} ({'; '.join(parts)})"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _stat(value: Any) -> str:
    if isinstance(value, dict):
        spread = value.get("se", value.get("ci95"))
        text = _num(value["mean"])
        return text if spread is None else f"{text} ± {_num(spread)}"
    return _num(value)


_ROWS = (("reward", "reward"), ("stateless_reward", "stateless reward"), ("gain", "gain"),
         ("normalized_gain", "normalized gain"), ("normalized_reward", "normalized reward"),
         ("stability", "stability"), ("plasticity", "plasticity"), ("cost", "cost"))


def score(args: argparse.Namespace) -> int:
    records = load_checked(args.records, "clbench-records", lambda: load_clbench_records(
        args.records, allow_missing=args.allow_missing, missing_rule=args.missing_rule))
    for note in (_rollouts_note(records), _missing_note(records)):
        if note:
            print(note, file=sys.stderr)
    result = score_clbench(records, t_multiplier=args.t_multiplier)
    if args.json:
        print(dumps_finite(result, indent=2))
        return 0
    for name, task in result["tasks"].items():
        unit = records.tasks[name].cost_unit
        print(f"task {name}  (N {task['n_instances']}, R {task['rollouts']}; ± SE)")
        for key, label in _ROWS:
            if key in task:
                suffix = f"  ({unit})" if key == "cost" else ""
                print(f"  {label:<19}{_stat(task[key])}{suffix}")
    agg = result["aggregate"]
    multiplier = ci_multiplier(records, args.t_multiplier)
    print(f"aggregate over {len(result['tasks'])} tasks  (± 95% CI, multiplier "
          f"{multiplier:.3f})")
    for key, label in _ROWS:
        if key in agg:
            print(f"  {label:<19}{_stat(agg[key])}")
    return 0


# -- tasks and environments -------------------------------------------------------------------
def task_names(given: list[str] | None) -> list[str]:
    """The tasks named by ``--task`` (repeatable; ``all`` or none: every task), in the
    registry's order, each once."""
    wanted = given or ["all"]
    out: list[str] = []
    for name in wanted:
        for task in (TASKS if name == "all" else (name,)):
            if task not in ENVIRONMENTS:
                raise SpecError(f"flag --task: unknown task {task!r} (known: all, "
                                f"{', '.join(TASKS)})")
            if task not in out:
                out.append(task)
    return [t for t in TASKS if t in out]


def make_env(task: str, seed: int, schedule: str,
             options: dict[str, dict[str, str]] | None = None) -> EnvironmentBase:
    """A fresh environment of ``task`` (every class takes ``(seed, schedule)``; one with
    options takes those given for it, :mod:`.options`)."""
    cls: Any = ENVIRONMENTS[task]
    given = (options or {}).get(task)
    env: EnvironmentBase = cls(seed, schedule, options=given) if given else cls(seed, schedule)
    return env


def task_view(envs: dict[str, EnvironmentBase]) -> dict[str, Any]:
    """What the store keeps about the tasks of a run: enough to summarize and export it."""
    return {"tasks": {name: {**env.describe(), "n_instances": len(env.schedule),
                             "instance_ids": list(env.schedule.instance_ids)}
                      for name, env in envs.items()}}


def view_hash(view: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(view, sort_keys=True).encode()).hexdigest()


def _close(envs: dict[str, EnvironmentBase]) -> None:
    for env in envs.values():
        close = getattr(env, "close", None)
        if callable(close):
            close()


# -- generate ---------------------------------------------------------------------------------
def generate(args: argparse.Namespace) -> int:
    """Each task's materials in ``OUT/<task>``, all or nothing per task: written into a hidden
    staging directory beside it, then renamed into place, so a full or read-only disk leaves
    no partial task directory (and no ``OUT`` this command created)."""
    tasks = task_names(args.task)
    options = parse_env_options(args.env_option, tasks)
    out = Path(args.out)
    claim_directory(out, role="dataset")  # a new or empty directory: never over a dataset
    created = not out.exists()
    for task in tasks:
        env = make_env(task, args.seed, args.schedule, options)
        stage = out / f".{task}.partial-{os.getpid()}"
        try:
            paths = write_materials(env, stage)
            if (out / task).is_dir():
                shutil.rmtree(out / task)
            os.replace(stage, out / task)
        except (OSError, sqlite3.Error, WriteError) as error:
            shutil.rmtree(stage, ignore_errors=True)
            if created:
                shutil.rmtree(out, ignore_errors=True)
            if isinstance(error, WriteError):
                raise WriteError(out / task, error.cause) from None
            cause = (sqlite_disk_cause(error, stage / "x") if isinstance(error, sqlite3.Error)
                     else os_error_cause(error))
            if cause is None:
                raise
            raise WriteError(out / task, cause) from None
        finally:
            _close({task: env})
        print(f"{task}: {len(paths)} files in {out / task}", file=sys.stderr)
    print(out)
    return 0


# -- run --------------------------------------------------------------------------------------
def _reference_numbers(text: str, tasks: list[str]) -> dict[str, Any]:
    s_ext: dict[str, float] = {}
    for part in text.split(","):
        name, sep, number = (x.strip() for x in part.partition("="))
        if not sep or not name:
            raise SpecError(f"flag --reference: expected TASK=NUMBER, got {part.strip()!r}")
        if name not in tasks:
            raise SpecError(f"flag --reference: {name!r} is not a task of this run "
                            f"(tasks: {', '.join(tasks)})")
        try:
            value = float(number)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise SpecError(f"flag --reference: {name}: not a finite number: {number!r}")
        if name in s_ext:
            raise SpecError(f"flag --reference: task {name!r} given twice")
        s_ext[name] = value
    return {"source": "numbers", "s_ext": s_ext}


def _reference_run(out: str, run_id: str, tasks: list[str],
                   view: dict[str, Any]) -> dict[str, Any]:
    try:
        with ResultsStore(out) as store:
            ref = store.get_run(run_id)
            if ref.protocol != "clbench":
                raise SpecError(f"flag --reference: run {run_id} is a {ref.protocol} run, "
                                "not clbench")
            ref_view = (store.get_dataset(ref.dataset_sha256)[1].get("tasks") or {})
            sums = stateless_sums(store, ref)
    except StoreError as exc:
        raise SpecError(f"flag --reference: {exc}") from None
    for task in tasks:
        ids = (ref_view.get(task) or {}).get("instance_ids")
        if ids != view["tasks"][task]["instance_ids"]:
            raise SpecError(f"flag --reference: run {run_id} did not play the instances of "
                            f"task {task} that this run plays (same tasks, schedule, seed)")
        if task not in sums:
            raise SpecError(f"flag --reference: run {run_id} has no complete stateless arm "
                            f"for task {task}")
    return {"source": "run", "run_id": run_id, "system": ref.system, "model": ref.model,
            "s_ext": {task: sums[task] for task in tasks}}


def parse_reference(text: str | None, out: str, tasks: list[str],
                    view: dict[str, Any]) -> dict[str, Any] | None:
    """What ``--reference`` gives, as recorded in the run's info: S_ext per task and where it
    came from (the numbers given, or the run whose stateless arm summed to them)."""
    if text is None:
        return None
    text = text.strip()
    if not text:
        raise SpecError("flag --reference: empty")
    reference = (_reference_numbers(text, tasks) if "=" in text
                 else _reference_run(out, text, tasks, view))
    for task, s_ext in reference["s_ext"].items():
        ceiling = view["tasks"][task]["n_instances"] * view["tasks"][task]["r_max"]
        if s_ext >= ceiling:  # the normalized reward's denominator would not be positive
            raise SpecError(f"flag --reference: {task}: S_ext {s_ext:g} must be below the "
                            f"task's ceiling N * r_max = {ceiling:g}")
    return reference


def _check_reference(store: ResultsStore, run_id: str, reference: dict[str, Any] | None) -> None:
    """A run's reference is fixed when it is first made: a resume must give the same one."""
    stored = [r for r in store.runs("clbench") if r.run_id == run_id]
    if stored and stored[0].info.get("reference") != reference:
        raise SpecError(f"flag --reference: run {run_id} was made with reference "
                        f"{json.dumps(stored[0].info.get('reference'))}; resume it with the "
                        "same one")


def run(args: argparse.Namespace) -> int:
    """``run clbench``: the runs of every seed, the model built once, through one driver."""
    requests = seed_requests(args, "clbench", add_run_clbench_arguments, RunOptions)
    with shared_models():
        jobs = [plan_run(request) for request in requests]
    return drive(jobs)


def plan_run(request: RunRequest[RunOptions]) -> RunJob:
    """``run clbench``: one planned run per system; each task's stateless arm and each of its
    rollouts is a cell, ``--parallel`` of them at once."""
    own = request.options
    positive("--rollouts", own.rollouts, MOST_ROLLOUTS)
    positive("--parallel", own.parallel, MOST_IN_FLIGHT)
    tasks = task_names(own.task)
    options = parse_env_options(own.env_option, tasks)
    basics = run_basics(request)
    envs = {task: make_env(task, request.seed, own.schedule, options) for task in tasks}
    try:
        view = task_view(envs)
    finally:
        _close(envs)
    reference = parse_reference(own.reference, request.out, tasks, view)
    texts = [t for env in envs.values() for t in (env.instructions, env.action_format)]
    info: dict[str, Any] = {"prompt_template_hash": template_fingerprint(texts),
                            "tasks": tasks, "schedule": own.schedule}
    params: dict[str, Any] = {"tasks": tasks, "schedule": own.schedule,
                              "rollouts": own.rollouts}
    if options:  # absent when none is given: the paper's settings, as before options existed
        info["env_options"] = params["env_options"] = options
    if reference is not None:
        info["reference"] = reference
    return plan_job(
        request, basics, protocol="clbench", unit="instance",
        dataset=StoredDataset(view_hash(view), f"clbench:{','.join(tasks)}", view),
        params=params,
        info=info, units={"instance": "instances"}, error_kinds=("instance",),
        cells_at_once=own.parallel,
        before_register=lambda spec: partial(_check_reference, run_id=spec.run_id,
                                             reference=reference),
        open_runner=lambda spec, make: partial(
            ClbenchRunner, spec, make_system=make,
            make_env=partial(make_env, seed=request.seed, schedule=own.schedule,
                             options=options), tasks=tasks,
            rollouts=own.rollouts, view=view))
