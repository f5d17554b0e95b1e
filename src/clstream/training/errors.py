"""The one error training raises (docs/parametric.md §3): a user-facing, one-line failure."""

from __future__ import annotations

from clstream.core.errors import ClstreamError


class TrainingError(ClstreamError):
    """Training could not produce the weights a parametric method asked for (bad base model
    directory, start weights of the wrong kind, a failure inside the trainer)."""
