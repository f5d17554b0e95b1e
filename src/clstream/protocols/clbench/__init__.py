"""Stateful environments (CL-Bench; docs/clbench.md §2): a system works through a schedule of task
instances whose environment drifts between stages, once statefully (one system across the whole
schedule, several rollouts in permuted orders) and once statelessly (a fresh system per
instance); the difference between the two arms, paired by instance, is what the system learned.

:data:`PROTOCOL` is what the registry names ``clbench``. The package's ``envs`` hold the
environments, ``policies`` their builtin (non-LLM) policies, ``runner`` plays systems through
them, ``records`` reads the records file (docs/clbench.md §3.1), ``metrics`` holds the paper's
metrics as
pure functions and the ``score clbench`` JSON, ``summary`` and ``report`` present a stored run,
``materials`` writes what ``generate clbench`` shows, and ``commands`` the command-line verbs.

This module imports none of them: ``protocol.toml`` names its verbs and parts
(:class:`~clstream.core.protocol.PackagedProtocol`).
"""

from __future__ import annotations

from pathlib import Path

from clstream.core.protocol import PackagedProtocol
from clstream.core.registry import names


class ClbenchProtocol(PackagedProtocol):
    """Declared by ``protocol.toml`` beside this module; its brief demonstration is code."""

    def demo(self, workdir: Path, results: Path) -> list[list[str]]:
        systems = ["memory-free", "full"] + (["icl"] if "icl" in names("system") else [])
        return [["generate", "clbench", "--schedule", "short", "--seed", "7", "--out",
                 str(workdir / "clbench")],
                ["run", "clbench", "--schedule", "short", "--rollouts", "2", "--seed", "7",
                 "--model", "builtin", "--out", str(results), "--no-progress",
                 *[arg for s in systems for arg in ("--system", s)]]]


PROTOCOL = ClbenchProtocol.declared(__name__)
