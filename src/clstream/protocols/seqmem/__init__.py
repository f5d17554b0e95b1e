"""Sequential task streams with evolving memory (SeqMem-Eval; docs/seqmem.md): a system answers each
task with its current memory, gets the evaluator's feedback and updates its memory; hold-out
tasks at checkpoints and past tasks at later horizons measure generalization and forgetting.

:data:`PROTOCOL` is what the registry names ``seqmem``; the package's modules hold the task
loaders and synthetic stream (``tasks``, ``synthetic``), the run plan and runner, metrics,
summary, report section, export and command-line verbs.

This module imports none of them: ``protocol.toml`` names its verbs and parts
(:class:`~clstream.core.protocol.PackagedProtocol`).
"""

from __future__ import annotations

from pathlib import Path

from clstream.core.protocol import MatrixData, PackagedProtocol


class SeqMemProtocol(PackagedProtocol):
    """Declared by ``protocol.toml`` beside this module; its brief demonstration is code."""

    def demo(self, workdir: Path, results: Path) -> list[list[str]]:
        data = workdir / "seqmem-synthetic.json"
        systems = ("memory-free", "exp-recent", "exp-rag", "dc-rs", "awm", "expel-st",
                   "expel-mt", "g-memory", "rag:k=4")
        return [["generate", "seqmem-synthetic", "--seed", "7", "--tasks", "60", "--holdout",
                 "12", "--out", str(data)],
                ["run", "seqmem", str(data), "--model", "builtin", "--out", str(results),
                 *[arg for s in systems for arg in ("--system", s)]]]

    def matrix_data(self, seed: int) -> MatrixData:
        """A short synthetic stream (24 tasks, 6 held out) for ``run matrix``."""
        return MatrixData(
            f"seqmem-synthetic-seed{seed}.json",
            lambda path: [["generate", "seqmem-synthetic", "--seed", str(seed), "--tasks",
                           "24", "--holdout", "6", "--out", str(path)]],
            lambda path: [str(path)])


PROTOCOL = SeqMemProtocol.declared(__name__)
