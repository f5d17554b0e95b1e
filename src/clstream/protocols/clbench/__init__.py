"""Stateful environments (CL-Bench; SPECS §3): a system works through a schedule of task
instances whose environment drifts between stages, once statefully (one system across the whole
schedule, several rollouts in permuted orders) and once statelessly (a fresh system per
instance); the difference between the two arms, paired by instance, is what the system learned.

:data:`PROTOCOL` is what the registry names ``clbench``. The package's ``envs`` hold the
environments, ``policies`` their builtin (non-LLM) policies, ``runner`` plays systems through
them, ``records`` reads the SPECS §5 records file, ``metrics`` holds the paper's metrics as
pure functions and the ``score clbench`` JSON, ``summary`` and ``report`` present a stored run,
``materials`` writes what ``generate clbench`` shows, and ``commands`` the command-line verbs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clstream.core.protocol import Command, load_target
from clstream.core.reader import ResultsReader
from clstream.core.records import RunRow
from clstream.core.registry import names
from clstream.protocols.clbench import commands
from clstream.protocols.clbench.summary import export_clbench, summarize_clbench_run, text_rows


class ClbenchProtocol:
    name = "clbench"
    title = "Stateful environments (CL-Bench)"
    summary = ("instances in drifting environments, stateful against stateless; normalized "
               "gain, stability and plasticity")
    run_command = Command("clbench", "stateful environments, stateful and stateless arms "
                          "(CL-Bench)", commands.add_run_clbench_arguments, commands.run)
    score_command = Command("clbench", "score CL-Bench records (SPECS 5)",
                            commands.add_score_arguments, commands.score)
    generators = (Command("clbench", "write a CL-Bench environment's materials for inspection "
                          "(schedule, first observations, data files)",
                          commands.add_generate_arguments, commands.generate),)

    def summarize_run(self, store: ResultsReader, run: RunRow) -> dict[str, Any]:
        return summarize_clbench_run(store, run)

    def summary_lines(self, runs: list[dict[str, Any]]) -> list[str]:
        return text_rows(runs)

    def export_run(self, store: ResultsReader, run: RunRow, out: Path) -> int:
        return export_clbench(store, run, out)

    def report_section(self, runs: list[dict[str, Any]], labels: list[str], source: object) -> Any:
        return load_target("clstream.protocols.clbench.report:render_clbench_section")(
            runs, labels, source)

    def demo(self, workdir: Path, results: Path) -> list[list[str]]:
        systems = ["memory-free", "full"] + (["icl"] if "icl" in names("system") else [])
        return [["generate", "clbench", "--schedule", "short", "--seed", "7", "--out",
                 str(workdir / "clbench")],
                ["run", "clbench", "--schedule", "short", "--rollouts", "2", "--seed", "7",
                 "--model", "builtin", "--out", str(results), "--no-progress",
                 *[arg for s in systems for arg in ("--system", s)]]]


PROTOCOL = ClbenchProtocol()
