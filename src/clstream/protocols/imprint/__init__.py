"""Corpus internalization (ImprintBench; docs/imprint.md §2): a method takes in a corpus of new
knowledge -- and optionally training QA pairs distilled from it -- then answers held-out
questions in six capability families, n samples each, scored by Pass@1, Pass@k and
AllCorrect@k.

:data:`PROTOCOL` is what the registry names ``imprint``. The package's ``schema`` holds the
dataset files, ``settings`` the three settings' generators and loaders (``news``, ``code``,
``persona``), ``filters`` the no-context and with-context
filters, ``prompts`` how an item is asked, ``runner`` plays methods over a dataset,
``judging`` holds the judges, ``metrics`` the estimators as pure functions, ``scoring`` the
``score imprint`` JSON, ``summary`` and ``report`` present a stored run, and ``commands`` the
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

_ARGUMENTS = "clstream.protocols.imprint.arguments"
_COMMANDS = "clstream.protocols.imprint.commands"
_RUN_SUMMARY = "clstream.protocols.imprint.run_summary"


class ImprintProtocol:
    name = "imprint"
    title = "Corpus internalization (ImprintBench)"
    summary = ("a corpus taken in, then held-out questions in six families; Pass@1, Pass@k, "
               "AllCorrect@k and compression")
    run_command = Command("imprint", "corpus internalization: methods over a dataset "
                          "(ImprintBench)", f"{_ARGUMENTS}:add_run_imprint_arguments",
                          f"{_COMMANDS}:run", plan=f"{_COMMANDS}:plan_run")
    score_command = Command("imprint", "score ImprintBench predictions (docs/imprint.md §3.3)",
                            f"{_ARGUMENTS}:add_score_arguments", f"{_COMMANDS}:score")
    generators = (Command("imprint", "write an ImprintBench dataset: news, code or persona, "
                          "procedural or from your own files",
                          f"{_ARGUMENTS}:add_generate_arguments", f"{_COMMANDS}:generate"),)

    def summarize_run(self, store: Any, run: RunRow) -> dict[str, Any]:
        summary: dict[str, Any] = load_target(f"{_RUN_SUMMARY}:summarize_imprint_run")(store, run)
        return summary

    def summary_lines(self, runs: list[dict[str, Any]]) -> list[str]:
        lines: list[str] = load_target(f"{_RUN_SUMMARY}:text_rows")(runs)
        return lines

    def export_run(self, store: Any, run: RunRow, out: Path) -> int:
        written: int = load_target(f"{_RUN_SUMMARY}:export_imprint")(store, run, out)
        return written

    def report_section(self, runs: list[dict[str, Any]], labels: list[str], source: object) -> Any:
        return load_target("clstream.protocols.imprint.report:render_imprint_section")(
            runs, labels, source)

    def demo(self, workdir: Path, results: Path) -> list[list[str]]:
        out: list[list[str]] = []
        for setting in ("news", "code", "persona"):
            data = workdir / f"imprint-{setting}"
            out.append(["generate", "imprint", "--setting", setting, "--size", "small",
                        "--seed", "3", "--out", str(data)])
            out.append(["run", "imprint", str(data), "--model", "builtin", "--samples", "2",
                        "--out", str(results), "--no-progress",
                        "--system", "memory-free", "--system", "oracle", "--system",
                        "rag:k=3"])
        return out


PROTOCOL = ImprintProtocol()
