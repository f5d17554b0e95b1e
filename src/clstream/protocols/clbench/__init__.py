"""Stateful environments (CL-Bench; docs/clbench.md §2): a system works through a schedule of task
instances whose environment drifts between stages, once statefully (one system across the whole
schedule, several rollouts in permuted orders) and once statelessly (a fresh system per
instance); the difference between the two arms, paired by instance, is what the system learned.

:data:`PROTOCOL` is what the registry names ``clbench``. The package's ``envs`` hold the
environments, ``policies`` their builtin (non-LLM) policies, ``runner`` plays systems through
them, ``records`` reads the docs/clbench.md §3.1 records file, ``metrics`` holds the paper's metrics as
pure functions and the ``score clbench`` JSON, ``summary`` and ``report`` present a stored run,
``materials`` writes what ``generate clbench`` shows, and ``commands`` the command-line verbs.

This module imports none of them: the verbs (their flags in ``arguments``), summary, export
and report are named as ``"module:name"`` targets and imported when used, so that building the
command line (every ``--help``, ``--version``) costs nothing of this protocol's code (docs/design.md
§2.2: a lazy registry).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from clstream.core.protocol import Command, load_target
from clstream.core.registry import names

if TYPE_CHECKING:
    from clstream.core.records import RunRow

_ARGUMENTS = "clstream.protocols.clbench.arguments"
_COMMANDS = "clstream.protocols.clbench.commands"
_RUN_SUMMARY = "clstream.protocols.clbench.run_summary"


class ClbenchProtocol:
    name = "clbench"
    title = "Stateful environments (CL-Bench)"
    summary = ("instances in drifting environments, stateful against stateless; normalized "
               "gain, stability and plasticity")
    run_command = Command("clbench", "stateful environments, stateful and stateless arms "
                          "(CL-Bench)", f"{_ARGUMENTS}:add_run_clbench_arguments",
                          f"{_COMMANDS}:run", plan=f"{_COMMANDS}:plan_run")
    score_command = Command("clbench", "score CL-Bench records (docs/clbench.md §3.1)",
                            f"{_ARGUMENTS}:add_score_arguments", f"{_COMMANDS}:score")
    generators = (Command("clbench", "write a CL-Bench environment's materials for inspection "
                          "(schedule, first observations, data files)",
                          f"{_ARGUMENTS}:add_generate_arguments", f"{_COMMANDS}:generate"),)
    # The builtin (non-LLM) policy of each environment, by task name (registry kind "policy"):
    # the builtin model acts with it when a prompt asks for an action in that environment.
    policies = {
        "blind_spectrum_monitoring": "clstream.protocols.clbench.policies:SpectrumRegistry",
        "sales_prediction": "clstream.protocols.clbench.policies:SalesForecaster",
        "database_exploration": "clstream.protocols.clbench.policies:SchemaExplorer",
    }

    def summarize_run(self, store: Any, run: RunRow) -> dict[str, Any]:
        summary: dict[str, Any] = load_target(f"{_RUN_SUMMARY}:summarize_clbench_run")(store, run)
        return summary

    def summary_lines(self, runs: list[dict[str, Any]]) -> list[str]:
        lines: list[str] = load_target(f"{_RUN_SUMMARY}:text_rows")(runs)
        return lines

    def export_run(self, store: Any, run: RunRow, out: Path) -> int:
        written: int = load_target(f"{_RUN_SUMMARY}:export_clbench")(store, run, out)
        return written

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
