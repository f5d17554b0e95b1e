"""Exploitable poker (docs/clbench.md §4.4): the environment (:mod:`.environment`), one hand
over pokerkit (:mod:`.game`), the named opponents (:mod:`.opponents`), the clairvoyant ceiling
(:mod:`.ceiling`, §4.7) and the builtin policies (:mod:`.policy`).

Modules inside the package import one another by their full module path, never through this
``__init__`` (the protocol's import contract: no cycle through a package's ``__init__``).
"""

from __future__ import annotations

from clstream.protocols.clbench.envs.poker.environment import PokerEnv

__all__ = ["PokerEnv"]
