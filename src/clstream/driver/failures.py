"""How a run that left work undone ends: one line and exit status 3.

When any run ended with work that failed and a resume would retry, :func:`finish` raises
:class:`RunFailed`: one line with the count of failed units, the first error message (quoted,
shortened) and the exact command that resumes the run. An error is never a wrong answer: the
failed units stay as error records, and the rerun retries them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from clstream.core.errors import ClstreamError
from clstream.core.reader import ResultsReader

ERROR_CHARS = 160  # of the first error message quoted in the line


class RunFailed(ClstreamError):
    """A run ended with failed work that a rerun of the same command retries."""

    exit_code = 3


@dataclass
class Failure:
    """One run's unfinished work, out of ``total`` units (probes, records): ``failed`` ones
    ended in an error, ``missing`` ones were never done (a stream stopped before them);
    ``first_error`` is the first error message."""

    label: str
    run_id: str
    failed: int
    missing: int
    total: int
    first_error: str | None


def first_error(store: ResultsReader, run_id: str, kinds: tuple[str, ...]) -> str | None:
    """The first stored error message of the run among records of ``kinds``."""
    for kind in kinds:
        for row in store.iter_records(run_id, kind, errors=True):
            return str(row["error"])
    return None


def _shorten(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= ERROR_CHARS else one[: ERROR_CHARS - 3] + "..."


def failure_line(protocol: str | None, unit: str, failures: list[Failure], resume: str) -> str:
    """One line: how much failed in which runs, the first error, and the resume command
    (``unit``: what is counted, singular; ``protocol``: None for runs of several protocols)."""
    failed, missing = sum(f.failed for f in failures), sum(f.missing for f in failures)
    per_run = "; ".join(
        f"{f.label} ({f.run_id}): {f.failed} failed" + (f", {f.missing} not done" if f.missing
                                                        else "") + f" of {f.total}"
        for f in failures)
    line = f"run {protocol + ' ' if protocol else ''}ended with {failed} failed {unit}{'' if failed == 1 else 's'}"
    if missing:
        line += f" and {missing} not done"
    line += f" ({per_run})"
    first = next((f for f in failures if f.first_error), None)
    if first is not None and first.first_error is not None:
        line += f"; first error: {json.dumps(_shorten(first.first_error), ensure_ascii=False)}"
    return f"{line}; resume with: {resume}"


def finish(protocol: str | None, unit: str, failures: list[Failure], resume: str) -> None:
    """Raise :class:`RunFailed` with :func:`failure_line` when any run failed."""
    if failures:
        raise RunFailed(failure_line(protocol, unit, failures, resume))
