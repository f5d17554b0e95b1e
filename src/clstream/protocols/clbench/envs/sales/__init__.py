"""Sales prediction (docs/clbench.md §4.3): the environment (:mod:`.environment`), the builtin
policy (:mod:`.policy`) and the forecasting program it keeps in its workspace (:mod:`.program`).

Modules inside the package import one another by their full module path, never through this
``__init__`` (the protocol's import contract: no cycle through a package's ``__init__``).
"""

from __future__ import annotations

from clstream.protocols.clbench.envs.sales.environment import SalesEnv

__all__ = ["SalesEnv"]
