"""The flags of the CL-Bench verbs are built without importing the environments, so the task
names they show are written out: they must be the environments' own."""

from __future__ import annotations

import argparse

from clstream.protocols.clbench import arguments, commands
from clstream.protocols.clbench.envs import ENVIRONMENTS


def test_the_task_names_of_the_flags_are_the_environments() -> None:
    assert arguments.TASKS == commands.TASKS == tuple(sorted(ENVIRONMENTS))


def test_every_task_name_is_in_the_help_of_run_and_generate() -> None:
    for add in (arguments.add_run_clbench_arguments, arguments.add_generate_arguments):
        parser = argparse.ArgumentParser(prog="clstream")
        add(parser)
        text = parser.format_help()
        assert all(task in text for task in ENVIRONMENTS), add.__name__
