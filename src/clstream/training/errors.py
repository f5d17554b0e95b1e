"""The one error training raises (docs/parametric.md §3): a one-line failure that stops the
stream being trained (a cell), as a failed online answer does: the run goes on with its other
cells and ends with exit status 3 and the command that resumes it."""

from __future__ import annotations

from clstream.core.errors import StreamStopped


class TrainingError(StreamStopped):
    """Training could not produce the weights a parametric method asked for (bad base model
    directory, start weights of the wrong kind, a failure inside the trainer)."""
