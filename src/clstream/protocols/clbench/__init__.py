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

This module imports none of them (:class:`~clstream.core.protocol.PackagedProtocol`).
"""

from __future__ import annotations

from pathlib import Path

from clstream.core.protocol import PackagedProtocol, ProtocolPackage
from clstream.core.registry import names

_PACKAGE = "clstream.protocols.clbench"


class ClbenchProtocol(PackagedProtocol):
    name = "clbench"
    title = "Stateful environments (CL-Bench)"
    summary = ("instances in drifting environments, stateful against stateless; normalized "
               "gain, stability and plasticity")
    run_command, score_command = PackagedProtocol.verbs(
        _PACKAGE, "clbench", "stateful environments, stateful and stateless arms (CL-Bench)",
        "score CL-Bench records (docs/clbench.md §3.1)")
    generators = (PackagedProtocol.generator(
        _PACKAGE, "clbench", "write a CL-Bench environment's materials for inspection "
        "(schedule, first observations, data files)"),)
    # The builtin (non-LLM) policy of each environment, by task name (registry kind "policy"):
    # the builtin model acts with it when a prompt asks for an action in that environment.
    policies = {
        "blind_spectrum_monitoring": "clstream.protocols.clbench.policies:SpectrumRegistry",
        "sales_prediction": "clstream.protocols.clbench.policies:SalesForecaster",
        "database_exploration": "clstream.protocols.clbench.policies:SchemaExplorer",
    }

    parts = ProtocolPackage(
        summarize_run=f"{_PACKAGE}.summary:summarize_clbench_run",
        summary_lines=f"{_PACKAGE}.summary:text_rows",
        export_run=f"{_PACKAGE}.summary:export_clbench",
        report_section=f"{_PACKAGE}.report:render_clbench_section")

    def demo(self, workdir: Path, results: Path) -> list[list[str]]:
        systems = ["memory-free", "full"] + (["icl"] if "icl" in names("system") else [])
        return [["generate", "clbench", "--schedule", "short", "--seed", "7", "--out",
                 str(workdir / "clbench")],
                ["run", "clbench", "--schedule", "short", "--rollouts", "2", "--seed", "7",
                 "--model", "builtin", "--out", str(results), "--no-progress",
                 *[arg for s in systems for arg in ("--system", s)]]]


PROTOCOL = ClbenchProtocol()
