"""Streaming knowledge (OAKS; docs/oaks.md): chunks arrive one by one and the same questions are
asked after every chunk; answers are scored per interval for accuracy, acquisition latency,
distraction susceptibility, phase miss and transition behaviours.

:data:`PROTOCOL` is what the registry names ``oaks``; the package's modules hold the data types
and loader (``data``, ``loader``), the OAKS-BABI generator (``babi*``, ``haystack``), answer
judging and metrics (``answers``, ``metrics``), the runner, summary, report section, export and
command-line verbs.

This module imports none of them (:class:`~clstream.core.protocol.PackagedProtocol`).
"""

from __future__ import annotations

from pathlib import Path

from clstream.core.protocol import PackagedProtocol, ProtocolPackage

_PACKAGE = "clstream.protocols.oaks"


class OaksProtocol(PackagedProtocol):
    name = "oaks"
    title = "Streaming knowledge (OAKS)"
    summary = "chunks arrive in order; the same questions are asked after every chunk"
    run_command, score_command = PackagedProtocol.verbs(
        _PACKAGE, "oaks", "streaming knowledge (OAKS)",
        "score OAKS predictions (docs/oaks.md §3.2)")
    generators = (PackagedProtocol.generator(_PACKAGE, "oaks-babi",
                                    "bAbI-style OAKS stream (docs/oaks.md §6)"),)

    parts = ProtocolPackage(
        summarize_run=f"{_PACKAGE}.summary:summarize_oaks_run",
        summary_lines=f"{_PACKAGE}.summary:text_rows",
        export_run=f"{_PACKAGE}.export:export_oaks",
        report_section=f"{_PACKAGE}.report:render_oaks_section")

    def demo(self, workdir: Path, results: Path) -> list[list[str]]:
        data = workdir / "oaks-babi.json"
        systems = ("full", "window:w=4", "rag:k=4", "rag+window:k=2,w=2")
        return [["generate", "oaks-babi", "--seed", "7", "--docs", "3", "--chunks", "40",
                 "--chunk-tokens", "2000", "--out", str(data)],
                ["run", "oaks", str(data), "--model", "builtin", "--out", str(results),
                 *[arg for s in systems for arg in ("--system", s)]]]


PROTOCOL = OaksProtocol()
