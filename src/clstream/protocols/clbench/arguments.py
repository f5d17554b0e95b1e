"""The flags of the CL-Bench verbs: ``generate clbench``, ``run clbench`` and ``score clbench``
(docs/clbench.md §2, §3).

They live apart from the verbs themselves (:mod:`clstream.protocols.clbench.commands`) so that
building a verb's parser, for ``--help`` or before it runs, imports only argparse and the shared
option groups, not the environments (numpy, their data generators), runner or store. The task
names shown in the help are therefore written out here; a test checks them against
:data:`clstream.protocols.clbench.envs.ENVIRONMENTS`.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from clstream.arguments.groups import (
    add_driver_arguments,
    add_run_arguments,
    seed_value,
)

# The environments' task names, sorted (the keys of ENVIRONMENTS).
TASKS = ("blind_spectrum_monitoring", "codebase_adaptation", "cohort_studies",
         "database_exploration", "exploitable_poker", "sales_prediction")
SCHEDULES = ("default", "short")


@dataclass(frozen=True)
class RunOptions:
    """The flags of ``run clbench`` that are its own: the tasks, their schedule and options,
    rollouts, parallel cells and the reference S_ext
    (:class:`~clstream.driver.request.RunRequest`'s ``options``)."""

    task: list[str] | None
    rollouts: int
    schedule: str
    env_option: list[str] | None
    parallel: int
    reference: str | None


def add_score_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("records", help="JSONL of task and instance records (docs/clbench.md §3.1)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--allow-missing", action="store_true",
                   help="score incomplete records instead of failing, by --missing-rule; "
                        "what was left out is printed on stderr")
    p.add_argument("--missing-rule", choices=("instance", "rollout"), default="instance",
                   help="with --allow-missing: leave an instance missing anywhere out of both "
                        "arms (instance, the default), or leave out every stateful rollout "
                        "missing an instance, as the authors' analysis does (rollout); "
                        "docs/clbench.md §7")
    p.add_argument("--t-multiplier", action="store_true",
                   help="95%% intervals with the t quantile for R - 1 degrees of freedom "
                        "(R: the fewest rollouts of any task) instead of the paper's 1.96")


def add_generate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", action="append", default=None, metavar="NAME|all",
                   help=f"task (repeatable; default all): {', '.join(TASKS)}")
    p.add_argument("--seed", type=seed_value, default=0)
    p.add_argument("--schedule", choices=SCHEDULES, default="default")
    p.add_argument("--env-option", action="append", default=None, metavar="[TASK:]NAME=VALUE",
                   help="an environment option other than the paper's setting (repeatable), "
                        "e.g. feedback=rich, database_exploration:notice=on, "
                        "database_exploration:size=paper; docs/clbench.md §4")
    p.add_argument("--out", required=True, help="directory; one subdirectory per task")


def add_run_clbench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", action="append", default=None, metavar="NAME|all",
                   help=f"task (repeatable; default all): {', '.join(TASKS)}")
    add_run_arguments(p, "memory method NAME or NAME:key=value,... (repeatable), e.g. full")
    p.add_argument("--rollouts", type=int, default=5,
                   help="stateful rollouts R per task (default 5; the stateless arm runs once)")
    p.add_argument("--schedule", choices=SCHEDULES, default="default",
                   help="the paper's schedules, or short ones for tests and demos")
    p.add_argument("--env-option", action="append", default=None, metavar="[TASK:]NAME=VALUE",
                   help="an environment option other than the paper's setting (repeatable), "
                        "e.g. feedback=rich, database_exploration:notice=on, "
                        "database_exploration:size=paper; docs/clbench.md §4")
    p.add_argument("--parallel", type=int, default=4, metavar="N",
                   help="rollouts (and stateless arms) played at once (default 4)")
    p.add_argument("--reference", default=None, metavar="TASK=NUMBER,...|RUN_ID",
                   help="S_ext for the normalized reward: per-task numbers, or the id of a run "
                        "in the same results directory whose stateless arm gives each task's "
                        "(recorded with the run)")
    add_driver_arguments(p)

