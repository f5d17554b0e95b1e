"""Streaming knowledge (OAKS; docs/oaks.md): chunks arrive one by one and the same questions are
asked after every chunk; answers are scored per interval for accuracy, acquisition latency,
distraction susceptibility, phase miss and transition behaviours.

:data:`PROTOCOL` is what the registry names ``oaks``; the package's modules hold the data types
and loader (``data``, ``loader``), the OAKS-BABI generator (``babi*``, ``haystack``), answer
judging and metrics (``answers``, ``metrics``), the runner, summary, report section, export and
command-line verbs.

This module imports none of them: ``protocol.toml`` names its verbs and parts
(:class:`~clstream.core.protocol.PackagedProtocol`).
"""

from __future__ import annotations

from pathlib import Path

from clstream.core.protocol import MatrixData, PackagedProtocol


class OaksProtocol(PackagedProtocol):
    """Declared by ``protocol.toml`` beside this module; its brief demonstration is code."""

    answers_feed_back = False
    """OAKS only asks (docs/oaks.md §2): no answer is shown to a system or shapes a later
    event, so ``clstream plan`` needs the replies to a request-planning system's probes only
    to count their tokens, and reads a sample of them (:mod:`clstream.driver.dry_run`)."""

    def demo(self, workdir: Path, results: Path) -> list[list[str]]:
        data = workdir / "oaks-babi.json"
        systems = ("full", "window:w=4", "rag:k=4", "rag+window:k=2,w=2", "memory-free")
        return [["generate", "oaks-babi", "--seed", "7", "--docs", "3", "--chunks", "40",
                 "--chunk-tokens", "2000", "--out", str(data)],
                ["run", "oaks", str(data), "--model", "builtin", "--out", str(results),
                 *[arg for s in systems for arg in ("--system", s)]]]

    def matrix_data(self, seed: int) -> MatrixData:
        """A small bAbI stream (two documents of ten short chunks) for ``run matrix``."""
        return MatrixData(
            f"oaks-babi-seed{seed}.json",
            lambda path: [["generate", "oaks-babi", "--seed", str(seed), "--docs", "2",
                           "--chunks", "10", "--chunk-tokens", "500", "--out", str(path)]],
            lambda path: [str(path)])


PROTOCOL = OaksProtocol.declared(__name__)
