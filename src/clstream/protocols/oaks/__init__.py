"""Streaming knowledge (OAKS; docs/oaks.md): chunks arrive one by one and the same questions are
asked after every chunk; answers are scored per interval for accuracy, acquisition latency,
distraction susceptibility, phase miss and transition behaviours.

:data:`PROTOCOL` is what the registry names ``oaks``; the package's modules hold the data types
and loader (``data``, ``loader``), the OAKS-BABI generator (``babi*``, ``haystack``), answer
judging and metrics (``answers``, ``metrics``), the runner, summary, report section, export and
command-line verbs.

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

_ARGUMENTS = "clstream.protocols.oaks.arguments"
_COMMANDS = "clstream.protocols.oaks.commands"


class OaksProtocol:
    name = "oaks"
    title = "Streaming knowledge (OAKS)"
    summary = "chunks arrive in order; the same questions are asked after every chunk"
    run_command = Command("oaks", "streaming knowledge (OAKS)",
                          f"{_ARGUMENTS}:add_run_oaks_arguments",
                          f"{_COMMANDS}:run", plan=f"{_COMMANDS}:plan_run")
    score_command = Command("oaks", "score OAKS predictions (docs/oaks.md §3.2)",
                            f"{_ARGUMENTS}:add_score_arguments", f"{_COMMANDS}:score")
    generators = (Command("oaks-babi", "bAbI-style OAKS stream (docs/oaks.md §6)",
                          f"{_ARGUMENTS}:add_generate_arguments", f"{_COMMANDS}:generate"),)

    def summarize_run(self, store: Any, run: RunRow) -> dict[str, Any]:
        summary: dict[str, Any] = load_target(
            "clstream.protocols.oaks.run_summary:summarize_oaks_run")(store, run)
        return summary

    def summary_lines(self, runs: list[dict[str, Any]]) -> list[str]:
        lines: list[str] = load_target("clstream.protocols.oaks.run_summary:text_rows")(runs)
        return lines

    def export_run(self, store: Any, run: RunRow, out: Path) -> int:
        written: int = load_target("clstream.protocols.oaks.export:export_oaks")(store, run, out)
        return written

    def report_section(self, runs: list[dict[str, Any]], labels: list[str], source: object) -> Any:
        return load_target("clstream.protocols.oaks.report:render_oaks_section")(
            runs, labels, source)

    def demo(self, workdir: Path, results: Path) -> list[list[str]]:
        data = workdir / "oaks-babi.json"
        systems = ("full", "window:w=4", "rag:k=4", "rag+window:k=2,w=2")
        return [["generate", "oaks-babi", "--seed", "7", "--docs", "3", "--chunks", "40",
                 "--chunk-tokens", "2000", "--out", str(data)],
                ["run", "oaks", str(data), "--model", "builtin", "--out", str(results),
                 *[arg for s in systems for arg in ("--system", s)]]]


PROTOCOL = OaksProtocol()
