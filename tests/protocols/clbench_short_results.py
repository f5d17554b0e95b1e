"""One short CL-Bench run of ``full`` and ``memory-free`` with the builtin model (seed 3, two
rollouts), made once per test session: the CL-Bench end-to-end tests read it, and the summary
schema test copies it next to the other protocols' runs, instead of each playing the same
schedule again (docs/clbench.md §6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clstream.cli import main

SEED = "3"
# Three questions a half and one forecast a stage are too few for the builtin policy to make
# up an unannounced migration or to pool sales without the revealed actuals (the paper's
# settings, which the environments' own tests play): the shared run announces the migration
# and gives sales the rich feedback, so that keeping past steps gains on every task.
OPTIONS = ("--env-option", "database_exploration:notice=on",
           "--env-option", "sales_prediction:feedback=rich")
_made: dict[int, Path] = {}


def run_argv(out: Path, *systems: str, extra: tuple[str, ...] = ()) -> list[str]:
    argv = ["run", "clbench", "--schedule", "short", "--rollouts", "2", "--seed", SEED,
            "--out", str(out), "--no-progress", *OPTIONS, *extra]
    for s in systems:
        argv += ["--system", s]
    return argv


def full_and_memory_free(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The results directory of the shared run; read it, never write into it."""
    key = id(tmp_path_factory)
    if key not in _made:
        out = tmp_path_factory.mktemp("clbench-short") / "results"
        assert main(run_argv(out, "full", "memory-free")) == 0
        _made[key] = out
    return _made[key]
