"""The flags of the SeqMem-Eval verbs: ``run seqmem``, ``score seqmem`` and ``generate
seqmem-synthetic`` (docs/seqmem.md §2, §3).

They live apart from the verbs themselves (:mod:`clstream.protocols.seqmem.commands`) so that
building a verb's parser, for ``--help`` or before it runs, imports only argparse and the shared
option groups: task loaders, evaluators, runner and store are imported when the verb runs.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from clstream.arguments.groups import (
    add_driver_arguments,
    add_run_arguments,
    count_type,
    seed_value,
)

MOST_SYNTHETIC_TASKS = 100_000
"""The longest synthetic stream ``generate seqmem-synthetic`` writes (tasks and hold-out
each): far beyond any study's T, and a bound, so that a typo does not fill the disk."""

# What ``run seqmem DATA`` can read (--source): the synthetic stream or a task file.
SOURCES = ("synthetic", "humaneval", "math500", "mmlu-pro", "apibench", "apibench-hf")


def add_run_seqmem_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", help="synthetic stream JSON, or a task file (see --source)")
    p.add_argument("--source", choices=SOURCES, default="synthetic",
                   help="what DATA holds (default: synthetic)")
    add_run_arguments(p, "memory method NAME or NAME:key=value,... (repeatable), e.g. exp-rag:k=3")
    p.add_argument("--checkpoints", default=None,
                   help="hold-out checkpoints, tasks processed, e.g. 0,10,20 "
                        "(default: 0 and round(i*T/9), i=1..9)")
    p.add_argument("--horizons", default=None,
                   help="re-evaluation horizons, e.g. 1,2,4 (default: powers of two below T)")
    p.add_argument("--retro-sample", type=float, default=1.0, metavar="F",
                   help="fraction of tasks re-evaluated at each horizon (seeded; default 1)")
    p.add_argument("--holdout", type=count_type(0, 10_000_000), default=None, metavar="N",
                   help="task files: the last N tasks (or a sample, --holdout-mode) are hold-out")
    p.add_argument("--holdout-mode", choices=("last", "sample"), default="last")
    p.add_argument("--holdout-file", default=None, help="task files: hold-out tasks from a file")
    p.add_argument("--api-pool", default=None, help="APIBench API pool (with --source apibench)")
    p.add_argument("--category", action="append", default=None,
                   help="MMLU-Pro category to keep (repeatable)")
    p.add_argument("--reveal-target", action="store_true",
                   help="dataset evaluators add the reference answer to failure feedback")
    p.add_argument("--unsafe-unisolated-code", action="store_true",
                   help="code tasks: where bubblewrap is missing, run model-written code without "
                        "OS isolation instead of refusing (unsafe; recorded in every verdict)")
    add_driver_arguments(p)


@dataclass(frozen=True)
class RunOptions:
    """The flags of ``run seqmem`` that are its own: the stream, its hold-out, the plan of
    probes and the evaluator's settings (:class:`~clstream.driver.request.RunRequest`'s
    ``options``)."""

    data: str
    source: str
    checkpoints: str | None
    horizons: str | None
    retro_sample: float
    holdout: int | None
    holdout_mode: str
    holdout_file: str | None
    api_pool: str | None
    category: list[str] | None
    reveal_target: bool
    unsafe_unisolated_code: bool


def add_score_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("records", help="JSONL of online / holdout / retro records")
    p.add_argument("--json", action="store_true")


def add_generate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=seed_value, default=0)
    p.add_argument("--tasks", type=count_type(1, MOST_SYNTHETIC_TASKS), default=200,
                   help="stream length T")
    p.add_argument("--holdout", type=count_type(0, MOST_SYNTHETIC_TASKS), default=40,
                   help="hold-out tasks")
    p.add_argument("--out", required=True)
    p.add_argument("--force", action="store_true",
                   help="replace an existing file at --out (runs made from it keep their "
                        "stored copy; results stores are never replaced)")

