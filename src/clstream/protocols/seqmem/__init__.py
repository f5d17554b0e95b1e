"""Sequential task streams with evolving memory (SeqMem-Eval; docs/seqmem.md): a system answers each
task with its current memory, gets the evaluator's feedback and updates its memory; hold-out
tasks at checkpoints and past tasks at later horizons measure generalization and forgetting.

:data:`PROTOCOL` is what the registry names ``seqmem``; the package's modules hold the task
loaders and synthetic stream (``tasks``, ``synthetic``), the run plan and runner, metrics,
summary, report section, export and command-line verbs.

This module imports none of them: the verbs (their flags in ``arguments``), summary, export
and report are named as ``"module:name"`` targets and imported when used, so that building the
command line (every ``--help``, ``--version``) costs nothing of this protocol's code (docs/design.md
§2.2: a lazy registry).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from clstream.core.protocol import Command, load_target

if TYPE_CHECKING:
    from clstream.core.records import RunRow

_ARGUMENTS = "clstream.protocols.seqmem.arguments"
_COMMANDS = "clstream.protocols.seqmem.commands"


class SeqMemProtocol:
    name = "seqmem"
    title = "Sequential task streams (SeqMem-Eval)"
    summary = "tasks with feedback update a memory; online, hold-out and backward transfer"
    run_command = Command("seqmem", "sequential task stream with evolving memory (SeqMem-Eval)",
                          f"{_ARGUMENTS}:add_run_seqmem_arguments",
                          f"{_COMMANDS}:run", plan=f"{_COMMANDS}:plan_run")
    score_command = Command("seqmem", "score SeqMem records (docs/seqmem.md §3.1)",
                            f"{_ARGUMENTS}:add_score_arguments", f"{_COMMANDS}:score")
    generators = (Command("seqmem-synthetic",
                          "procedural SeqMem task stream in which feedback reveals hidden rules",
                          f"{_ARGUMENTS}:add_generate_arguments", f"{_COMMANDS}:generate"),)

    def summarize_run(self, store: Any, run: RunRow) -> dict[str, Any]:
        summary: dict[str, Any] = load_target(
            "clstream.protocols.seqmem.run_summary:summarize_seqmem_run")(store, run)
        return summary

    def summary_lines(self, runs: list[dict[str, Any]]) -> list[str]:
        lines: list[str] = load_target("clstream.protocols.seqmem.run_summary:text_rows")(runs)
        return lines

    def export_run(self, store: Any, run: RunRow, out: Path) -> int:
        written: int = load_target(f"{_COMMANDS}:export_seqmem")(store, run, out)
        return written

    def report_section(self, runs: list[dict[str, Any]], labels: list[str], source: object) -> Any:
        return load_target("clstream.protocols.seqmem.report:render_seqmem_section")(
            runs, labels, source)

    def demo(self, workdir: Path, results: Path) -> list[list[str]]:
        data = workdir / "seqmem-synthetic.json"
        systems = ("memory-free", "exp-recent", "exp-rag", "dc-rs", "awm", "expel-st",
                   "expel-mt", "g-memory")
        return [["generate", "seqmem-synthetic", "--seed", "7", "--tasks", "60", "--holdout",
                 "12", "--out", str(data)],
                ["run", "seqmem", str(data), "--model", "builtin", "--out", str(results),
                 *[arg for s in systems for arg in ("--system", s)]]]


PROTOCOL = SeqMemProtocol()
