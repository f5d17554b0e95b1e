"""Codebase adaptation (docs/clbench.md §4.6): the environment (:mod:`.environment`), its two
generated repositories (:mod:`.tablib`, :mod:`.retry`) and the paper's real ones (:mod:`.real`),
where bugs are seeded (:mod:`.sites`, :mod:`.bugs`), the agent's shell and sandbox
(:mod:`.shell`, :mod:`.sandbox`) and the builtin policy (:mod:`.policy`, :mod:`.repair`).

Modules inside the package import one another by their full module path, never through this
``__init__`` (the protocol's import contract: no cycle through a package's ``__init__``).
"""

from __future__ import annotations

from clstream.protocols.clbench.envs.codebase.environment import CodebaseEnv

__all__ = ["CodebaseEnv"]
