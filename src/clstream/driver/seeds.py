"""``--seeds 0,1,2``: every system once per seed, into one results directory (docs/design.md
§11.6).

Each seed's runs are planned exactly as ``--seed N`` plans them (the same flags with that
seed), so each has the run spec and run id the single-seed command gives it and a rerun
resumes only what is missing. All seeds go through one driver, and the model backend is built
once for all of them (:func:`~clstream.driver.assemble.shared_models`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from clstream.driver.assemble import shared_models
from clstream.driver.execute import drive
from clstream.driver.flags import seed_list
from clstream.driver.plan import RunJob


def per_seed(args: argparse.Namespace) -> list[argparse.Namespace]:
    """``args`` once per seed of ``--seeds`` (each with ``--seed`` set to it and ``--seeds``
    cleared), or ``[args]`` alone without ``--seeds``."""
    seeds = seed_list(args)
    if seeds is None:
        return [args]
    return [argparse.Namespace(**{**vars(args), "seed": seed, "seeds": None}) for seed in seeds]


def plan_seeds(args: argparse.Namespace, plan: Callable[[argparse.Namespace], RunJob]
               ) -> list[RunJob]:
    """One run job per seed (one without ``--seeds``), the model built once."""
    runs = per_seed(args)
    if len(runs) == 1 and runs[0] is args:
        return [plan(args)]
    with shared_models():
        return [plan(one) for one in runs]


def drive_seeds(args: argparse.Namespace, plan: Callable[[argparse.Namespace], RunJob]) -> int:
    """A protocol's ``run`` verb: its runs for every seed through one driver."""
    return drive(plan_seeds(args, plan))
