"""Records and run rows: what a protocol writes and what a results store gives back.

They live in ``core`` so that every layer (store, protocols, report) speaks of the same
records without importing the store itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clstream.core.types import Usage


@dataclass(frozen=True)
class Record:
    """One stored record to write: a probe answer, a memory-update call, a task result."""

    kind: str
    key: str
    payload: dict[str, Any]
    stream: str = ""
    t: int = 0
    error: str | None = None
    stage: str = "generate"
    usage: Usage = field(default_factory=Usage)
    cache_hit: bool = False


@dataclass(frozen=True)
class RunRow:
    run_id: str
    protocol: str
    system: str
    model: str
    dataset_sha256: str
    spec: dict[str, Any]
    info: dict[str, Any]
    created_at: float
    wall_s: float
