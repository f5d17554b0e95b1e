"""Database exploration (docs/clbench.md §4.2): the environment (:mod:`.environment`), the
generated database, its migration and question bank (:mod:`.generator`) and the builtin policy
(:mod:`.policy`).

Modules inside the package import one another by their full module path, never through this
``__init__`` (the protocol's import contract: no cycle through a package's ``__init__``).
"""

from __future__ import annotations

from clstream.protocols.clbench.envs.database.environment import DatabaseEnv

__all__ = ["DatabaseEnv"]
