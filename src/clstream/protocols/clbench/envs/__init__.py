"""The CL-Bench environments, procedural from one seed (docs/clbench.md §4).

One package per environment holds its environment class (``environment.py``), what generates
its instances and its builtin policy (``policy.py``); spectrum, small enough, is one module
with its policy in :mod:`..policies`. :mod:`.base` is what they share.

:data:`ENVIRONMENTS` maps a task name to its environment class; every class takes
``(seed, schedule="default" | "short")``.
"""

from __future__ import annotations

from typing import Protocol

from clstream.protocols.clbench.envs.base import EnvironmentBase
from clstream.protocols.clbench.envs.codebase.environment import CodebaseEnv
from clstream.protocols.clbench.envs.cohort.environment import CohortEnv
from clstream.protocols.clbench.envs.database.environment import DatabaseEnv
from clstream.protocols.clbench.envs.poker.environment import PokerEnv
from clstream.protocols.clbench.envs.sales.environment import SalesEnv
from clstream.protocols.clbench.envs.spectrum import SpectrumEnv


class EnvironmentClass(Protocol):
    """An environment class as :data:`ENVIRONMENTS` holds it: built from a seed and the name of
    a schedule (the base class itself takes a built schedule, so ``type[EnvironmentBase]`` would
    not say how the classes are called)."""

    def __call__(self, seed: int = ..., schedule: str = ..., max_invalid: int = ...
                 ) -> EnvironmentBase: ...


ENVIRONMENTS: dict[str, EnvironmentClass] = {
    SpectrumEnv.name: SpectrumEnv,
    SalesEnv.name: SalesEnv,
    DatabaseEnv.name: DatabaseEnv,
    PokerEnv.name: PokerEnv,
    CodebaseEnv.name: CodebaseEnv,
    CohortEnv.name: CohortEnv,
}

__all__ = ["ENVIRONMENTS", "CodebaseEnv", "CohortEnv", "DatabaseEnv", "EnvironmentClass",
           "PokerEnv", "SalesEnv", "SpectrumEnv"]
