"""``--env-option [TASK:]NAME=VALUE``: the named environment options of a CL-Bench run
(docs/clbench.md §4), such as ``feedback=rich`` or ``database_exploration:size=paper``.

Every option has the paper's setting as its default, so a run without the flag is the
paper's. An option without a task applies to every task of the run that has it; one the
run's tasks lack, an unknown value, or the same option given twice for a task is a usage
error naming the flag. The options in force are part of each environment's parameters and so
of the run's dataset hash and run id; the ones given are also recorded in the run's
parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from clstream.core.errors import SpecError
from clstream.protocols.clbench.envs import ENVIRONMENTS

FLAG = "--env-option"


def declared(task: str) -> Mapping[str, tuple[str, ...]]:
    """The options ``task``'s environment has: name -> values, the default first."""
    cls: Any = ENVIRONMENTS[task]
    options: Mapping[str, tuple[str, ...]] = cls.OPTIONS
    return options


def parse_env_options(given: Sequence[str] | None, tasks: Sequence[str]
                      ) -> dict[str, dict[str, str]]:
    """task -> the options given for it (tasks given none are left out)."""
    out: dict[str, dict[str, str]] = {}
    for text in given or ():
        where, colon, setting = text.strip().rpartition(":")
        name, eq, value = (part.strip() for part in setting.partition("="))
        if not eq or not name or not value:
            raise SpecError(f"flag {FLAG}: expected [TASK:]NAME=VALUE, got {text.strip()!r}")
        if colon and where not in tasks:
            raise SpecError(f"flag {FLAG}: {where!r} is not a task of this run "
                            f"(tasks: {', '.join(tasks)})")
        targets = [t for t in ((where,) if colon else tasks) if name in declared(t)]
        if not targets:
            known = sorted({f"{t}:{n}" for t in ((where,) if colon else tasks)
                            for n in declared(t)})
            raise SpecError(f"flag {FLAG}: no task of this run has an option {name!r} "
                            f"(options: {', '.join(known) or 'none'})")
        for task in targets:
            values = declared(task)[name]
            if value not in values:
                raise SpecError(f"flag {FLAG}: {task}: option {name} must be one of "
                                f"{', '.join(values)}, got {value!r}")
            if name in out.get(task, {}):
                raise SpecError(f"flag {FLAG}: {task}: option {name} given twice")
            out.setdefault(task, {})[name] = value
    return out
