"""Corpus internalization (ImprintBench; docs/imprint.md §2): a method takes in a corpus of new
knowledge -- and optionally training QA pairs distilled from it -- then answers held-out
questions in six capability families, n samples each, scored by Pass@1, Pass@k and
AllCorrect@k.

:data:`PROTOCOL` is what the registry names ``imprint``. The package's ``schema`` holds the
dataset files, ``settings`` the three settings' generators and loaders (``news``, ``code``,
``persona``), ``filters`` the no-context and with-context
filters, ``prompts`` how an item is asked, ``runner`` plays methods over a dataset,
``judging`` holds the deterministic judges, ``llm_judges`` the paper's LLM judges,
``judge_plan`` which judge decides each family, ``metrics`` the estimators as pure
functions, ``scoring`` the ``score imprint`` JSON, ``summary`` and ``report`` present a stored run, and ``commands`` the
command-line verbs.

This module imports none of them: ``protocol.toml`` names its verbs and parts
(:class:`~clstream.core.protocol.PackagedProtocol`).
"""

from __future__ import annotations

from pathlib import Path

from clstream.core.protocol import MatrixData, PackagedProtocol


class ImprintProtocol(PackagedProtocol):
    """Declared by ``protocol.toml`` beside this module; its brief demonstration is code."""

    def demo(self, workdir: Path, results: Path) -> list[list[str]]:
        out: list[list[str]] = []
        for setting in ("news", "code", "persona"):
            data = workdir / f"imprint-{setting}"
            out.append(["generate", "imprint", "--setting", setting, "--size", "small",
                        "--seed", "3", "--out", str(data)])
            out.append(["run", "imprint", str(data), "--model", "builtin", "--samples", "2",
                        "--out", str(results), "--no-progress",
                        "--system", "memory-free", "--system", "oracle", "--system",
                        "rag:k=4"])
        return out

    def matrix_data(self, seed: int) -> MatrixData:
        """The small news setting for ``run matrix``."""
        return MatrixData(
            f"news-small-seed{seed}",
            lambda path: [["generate", "imprint", "--setting", "news", "--size", "small",
                           "--seed", str(seed), "--out", str(path)]],
            lambda path: [str(path)])


PROTOCOL = ImprintProtocol.declared(__name__)
