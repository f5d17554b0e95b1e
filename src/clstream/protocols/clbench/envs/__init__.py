"""The CL-Bench environments, one module each, procedural from one seed (docs/clbench.md §4).

:data:`ENVIRONMENTS` maps a task name to its environment class; every class takes
``(seed, schedule="default" | "short")``.
"""

from __future__ import annotations

from clstream.protocols.clbench.envs.base import EnvironmentBase
from clstream.protocols.clbench.envs.database import DatabaseEnv
from clstream.protocols.clbench.envs.sales import SalesEnv
from clstream.protocols.clbench.envs.spectrum import SpectrumEnv

ENVIRONMENTS: dict[str, type[EnvironmentBase]] = {
    SpectrumEnv.name: SpectrumEnv,
    SalesEnv.name: SalesEnv,
    DatabaseEnv.name: DatabaseEnv,
}

__all__ = ["ENVIRONMENTS", "DatabaseEnv", "SalesEnv", "SpectrumEnv"]
