"""Cohort studies (docs/clbench.md §4.5): the environment (:mod:`.environment`), the population
and its studies (:mod:`.population`), the cohorts and the score (:mod:`.scoring`) and the builtin
policy (:mod:`.policy`).

Modules inside the package import one another by their full module path, never through this
``__init__`` (the protocol's import contract: no cycle through a package's ``__init__``).
"""

from __future__ import annotations

from clstream.protocols.clbench.envs.cohort.environment import CohortEnv

__all__ = ["CohortEnv"]
