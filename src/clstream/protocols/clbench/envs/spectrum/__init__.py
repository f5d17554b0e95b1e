"""Blind spectrum monitoring (docs/clbench.md §4.1): the environment (:mod:`.environment`) and
the builtin policy (:mod:`.policy`).

Modules inside the package import one another by their full module path, never through this
``__init__`` (the protocol's import contract: no cycle through a package's ``__init__``).
"""

from __future__ import annotations

from clstream.protocols.clbench.envs.spectrum.environment import SpectrumEnv

__all__ = ["SpectrumEnv"]
