"""What arrives in a stream. Each protocol feeds its systems one kind of event.

OAKS feeds :class:`Chunk`; SeqMem-Eval feeds :class:`Feedback` after each task; CL-Bench feeds
environment :class:`Observation`; ImprintBench feeds :class:`Document` (the corpus).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Chunk:
    """Chunk ``index`` (0-based) of stream ``stream_id``; interval t = index + 1 (docs/oaks.md §2.1)."""

    stream_id: str
    index: int
    text: str


@dataclass(frozen=True)
class Document:
    doc_id: str
    text: str
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Feedback:
    """The evaluator's verdict on a system's answer to a task (docs/seqmem.md §2.1)."""

    query_id: str
    query_text: str
    answer: str
    score: float
    message: str = ""
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def success(self) -> bool:
        """Success comes from the evaluator's score, never from the feedback text."""
        return self.score >= 1.0


@dataclass(frozen=True)
class Observation:
    """The result of an action in a stateful environment (docs/clbench.md §2.4).

    ``text`` is the environment's feedback on the action. A runner also fills ``query`` (the
    observation the action answered) and ``action`` (the action taken, as text), so a memory
    can keep the whole step; both are '' when unknown.
    """

    instance_id: str
    step: int
    text: str
    reward: float | None = None
    done: bool = False
    query: str = ""
    action: str = ""


Event = Chunk | Document | Feedback | Observation
