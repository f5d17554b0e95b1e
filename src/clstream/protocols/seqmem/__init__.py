"""Sequential task streams with evolving memory (SeqMem-Eval; docs/seqmem.md): a system answers each
task with its current memory, gets the evaluator's feedback and updates its memory; hold-out
tasks at checkpoints and past tasks at later horizons measure generalization and forgetting.

:data:`PROTOCOL` is what the registry names ``seqmem``; the package's modules hold the task
loaders and synthetic stream (``tasks``, ``synthetic``), the run plan and runner, metrics,
summary, report section, export and command-line verbs.

This module imports none of them (:class:`~clstream.core.protocol.PackagedProtocol`).
"""

from __future__ import annotations

from pathlib import Path

from clstream.core.protocol import PackagedProtocol, ProtocolPackage

_PACKAGE = "clstream.protocols.seqmem"


class SeqMemProtocol(PackagedProtocol):
    name = "seqmem"
    title = "Sequential task streams (SeqMem-Eval)"
    summary = "tasks with feedback update a memory; online, hold-out and backward transfer"
    run_command, score_command = PackagedProtocol.verbs(
        _PACKAGE, "seqmem", "sequential task stream with evolving memory (SeqMem-Eval)",
        "score SeqMem records (docs/seqmem.md §3.1)")
    generators = (PackagedProtocol.generator(
        _PACKAGE, "seqmem-synthetic",
        "procedural SeqMem task stream in which feedback reveals hidden rules"),)

    parts = ProtocolPackage(
        summarize_run=f"{_PACKAGE}.summary:summarize_seqmem_run",
        summary_lines=f"{_PACKAGE}.summary:text_rows",
        export_run=f"{_PACKAGE}.commands:export_seqmem",
        report_section=f"{_PACKAGE}.report:render_seqmem_section")

    def demo(self, workdir: Path, results: Path) -> list[list[str]]:
        data = workdir / "seqmem-synthetic.json"
        systems = ("memory-free", "exp-recent", "exp-rag", "dc-rs", "awm", "expel-st",
                   "expel-mt", "g-memory")
        return [["generate", "seqmem-synthetic", "--seed", "7", "--tasks", "60", "--holdout",
                 "12", "--out", str(data)],
                ["run", "seqmem", str(data), "--model", "builtin", "--out", str(results),
                 *[arg for s in systems for arg in ("--system", s)]]]


PROTOCOL = SeqMemProtocol()
