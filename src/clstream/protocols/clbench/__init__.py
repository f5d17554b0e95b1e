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

from clstream.core.protocol import MatrixData, PackagedProtocol
from clstream.core.registry import names


class ClbenchProtocol(PackagedProtocol):
    """Declared by ``protocol.toml`` beside this module; its brief demonstration is code."""

    # The demonstration's tasks: the ones a core install runs in seconds. Cohort studies need
    # the clbench extra (lifelines) and codebase adaptation the sandbox (bubblewrap); `run
    # clbench --task all` plays all six.
    DEMO_TASKS = ("blind_spectrum_monitoring", "database_exploration", "exploitable_poker",
                  "sales_prediction")
    # The memory methods side by side; mem0 searches with BM25 so that the demonstration takes
    # the same seconds whether or not the embed extra is installed. Seed 0, the seed the tests
    # hold every method to a positive gain on: 15 poker hands are few enough that the builtin
    # opponent modeler loses to the stateless heuristic on some seeds (docs/clbench.md §4.4).
    # memory-free and rag:k=4 run in every protocol's demonstration: the cross-protocol table
    # of `make demo` has full rows.
    DEMO_SYSTEMS = ("memory-free", "icl", "notepad", "mem0:retriever=bm25", "ace", "rag:k=4")

    def demo(self, workdir: Path, results: Path) -> list[list[str]]:
        known = set(names("system"))
        systems = [s for s in self.DEMO_SYSTEMS if s.split(":", 1)[0] in known]
        return [["generate", "clbench", "--schedule", "short", "--seed", "0", "--out",
                 str(workdir / "clbench"), *[a for t in self.DEMO_TASKS for a in ("--task", t)]],
                ["run", "clbench", "--schedule", "short", "--rollouts", "2", "--seed", "0",
                 "--model", "builtin", "--out", str(results), "--no-progress",
                 *[a for t in self.DEMO_TASKS for a in ("--task", t)],
                 *[arg for s in systems for arg in ("--system", s)]]]

    # The matrix's task: the quickest, on the short schedule, two rollouts (seconds a run).
    MATRIX_TASKS = ("sales_prediction",)

    def matrix_data(self, seed: int) -> MatrixData:
        """The short schedule of a quick task for ``run matrix``: the environments are
        generated from the seed by the run itself; the directory holds what ``generate
        clbench`` shows of them."""
        tasks = [a for t in self.MATRIX_TASKS for a in ("--task", t)]
        return MatrixData(
            f"short-seed{seed}",
            lambda path: [["generate", "clbench", "--schedule", "short", "--seed", str(seed),
                           "--out", str(path), *tasks]],
            lambda path: ["--schedule", "short", "--rollouts", "2", *tasks])


PROTOCOL = ClbenchProtocol.declared(__name__)
