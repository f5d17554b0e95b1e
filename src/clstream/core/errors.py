"""Errors a user can act on.

Every error raised for bad input is a :class:`ClstreamError` whose message is one line naming
the file, the record and the field. The CLI prints it and exits non-zero, with no traceback.
"""

from __future__ import annotations


class ClstreamError(Exception):
    """A user-facing error: printed as one line by the CLI, exit status 2."""

    exit_code = 2


class DataError(ClstreamError):
    """A data, predictions or records file is malformed."""

    def __init__(self, path: object, record: object | None, field: str | None, problem: str):
        parts = [str(path)]
        if record is not None:
            parts.append(f"record {record}")
        if field is not None:
            parts.append(f"field {field!r}")
        self.path, self.record, self.field, self.problem = path, record, field, problem
        super().__init__(": ".join([", ".join(parts), problem]))


class SpecError(ClstreamError):
    """A run spec, component name (``rag:k=30``) or flag is invalid."""


class StoreError(ClstreamError):
    """The results directory cannot be used (locked by another writer, wrong format, ...)."""


class StreamStopped(ClstreamError):
    """A cell of a run stopped before its end because a step it depends on failed (an online
    answer of a task stream); the run goes on with its other cells and ends with exit status 3
    and the resume line."""


class Interrupted(KeyboardInterrupt):
    """A command stopped by SIGINT or SIGTERM (``signum``) after keeping its committed work;
    ``resume`` is the command that resumes it (None: rerun the same command). The CLI exits
    with 128 + ``signum``, as a shell reports a process the signal ended."""

    def __init__(self, signum: int, resume: str | None = None) -> None:
        super().__init__(signum, resume)
        self.signum, self.resume = int(signum), resume
