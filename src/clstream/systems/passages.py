"""Observed text as memory: every method keeps what it reads as tagged passages.

Whatever the stream, a system may be handed text to remember: a chunk of a long text, a
document of a corpus, an environment observation, and (for methods that keep no structured
experience) the feedback on a task. :func:`passage_of` turns each into a :class:`Passage`,
shown in prompts as ``[chunk index i]`` plus its text (:mod:`clstream.core.layout`):

* a chunk keeps its own index;
* any other event gets a running index, one more than the largest index held so far, so a
  larger index always means later in the stream;
* feedback is kept as the text of an experience block (task, answer given, outcome, feedback);
* an environment observation that carries the action it answers is kept as a step block (the
  observation shown, the action taken, the feedback received), so the step history shows in
  prompts; one without an action keeps just the environment's feedback text.

:class:`PassageStore` holds passages in arrival order with a retrieval index over their text
that grows one passage at a time; context systems and experience methods share it. The index
is filled on the first search and then kept up to date, each passage inserted exactly once, so
a method that never retrieves (full context, a window) inserts nothing, and a stream of T
passages costs T insertions whatever the number of searches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from clstream.core import layout
from clstream.core.errors import DataError
from clstream.core.events import Chunk, Document, Event, Feedback, Observation
from clstream.retrieval.hybrid import Retriever

CHUNK = "chunk"
KINDS = (CHUNK, "document", "observation", "feedback")


@dataclass(frozen=True)
class Passage:
    """One piece of observed text: its kind, where it came from, its tag index and text."""

    kind: str
    source: str
    index: int
    text: str

    def to_json(self) -> dict[str, Any]:
        if self.kind == CHUNK:  # the form chunk snapshots have always had
            return {"stream_id": self.source, "index": self.index, "text": self.text}
        return {"kind": self.kind, "source": self.source, "index": self.index, "text": self.text}

    @classmethod
    def from_json(cls, item: Any, field: str, at: int | None = None) -> Passage:
        kind = item.get("kind", CHUNK) if isinstance(item, dict) else ""
        source_key = "stream_id" if kind == CHUNK else "source"
        ok = (
            isinstance(kind, str) and kind in KINDS
            and isinstance(item.get(source_key), str)
            and isinstance(item.get("index"), int)
            and not isinstance(item.get("index"), bool)
            and isinstance(item.get("text"), str)
        )
        if not ok:
            raise DataError("<snapshot>", at, field, "expected {stream_id: str, index: int, "
                            "text: str} or {kind, source: str, index: int, text: str}")
        return cls(kind, item[source_key], item["index"], item["text"])


def feedback_text(fb: Feedback) -> str:
    """Feedback kept as text: the experience block of the task, answer, outcome and feedback."""
    return layout.experience_block(
        layout.Experience(fb.query_text, fb.answer, fb.message, fb.success)).rstrip("\n")


def observation_text(obs: Observation) -> str:
    """An observation kept as text: a step block when it carries its action, else the
    environment's feedback alone."""
    if not obs.action:
        return obs.text
    return layout.step_block(obs.instance_id, obs.step, obs.query, obs.action, obs.text)


def passage_of(event: Event, next_index: int) -> Passage:
    """The passage an event becomes; ``next_index`` is the running index for non-chunks."""
    if isinstance(event, Chunk):
        return Passage(CHUNK, event.stream_id, event.index, event.text)
    if isinstance(event, Document):
        return Passage("document", event.doc_id, next_index, event.text)
    if isinstance(event, Observation):
        return Passage("observation", f"{event.instance_id}#{event.step}", next_index,
                       observation_text(event))
    if isinstance(event, Feedback):
        return Passage("feedback", event.query_id, next_index, feedback_text(event))
    raise TypeError(f"not an event: {type(event).__name__}")


class PassageStore:
    """Passages in arrival order, indexed by their text for similarity search.

    The (empty) index is made with the store, so a bad retriever setting fails at once; it is
    filled by the first search and catches up with the passages added since the previous one,
    one ``add`` per passage in arrival order: the calls an index fed at every ``add`` would have
    seen, so search results do not depend on when the passages were inserted.
    """

    def __init__(self, new_index: Callable[[], Retriever]):
        self._new_index = new_index
        self.passages: list[Passage] = []
        self._index = new_index()
        self._indexed = 0  # passages[:_indexed] are in the index
        self.next_index = 0  # the running index the next non-chunk passage gets
        self._blocks: list[str] = []  # blocks[:len] are the shown forms of those passages

    def __len__(self) -> int:
        return len(self.passages)

    def add(self, passage: Passage) -> int:
        position = len(self.passages)
        self.passages.append(passage)
        self.next_index = max(self.next_index, passage.index + 1)
        return position

    def observe(self, event: Event) -> Passage:
        passage = passage_of(event, self.next_index)
        self.add(passage)
        return passage

    def recent(self, k: int) -> list[int]:
        return list(range(max(0, len(self.passages) - k), len(self.passages)))

    @property
    def index(self) -> Retriever:
        """The retrieval index over every passage held (brought up to date here)."""
        for position in range(self._indexed, len(self.passages)):
            self._index.add(position, self.passages[position].text)
        self._indexed = len(self.passages)
        return self._index

    def ranked(self, text: str, k: int, max_position: int | None = None) -> list[int]:
        """Positions of the (up to) k passages most similar to ``text``, best first."""
        if k <= 0 or not self.passages:
            return []
        return [doc_id for doc_id, _ in self.index.search(text, k, max_doc_id=max_position)]

    def similar(self, text: str, k: int, max_position: int | None = None) -> list[int]:
        """Positions of the (up to) k passages most similar to ``text``, in arrival order."""
        return sorted(self.ranked(text, k, max_position))

    def block(self, position: int) -> str:
        """The passage at ``position`` as a prompt shows it (``layout.passage_block``), made
        once: every prompt that shows the passage holds the same string, so a plan counts it
        once per prefix it follows (:mod:`clstream.models.prompt_parts`)."""
        for p in self.passages[len(self._blocks) : position + 1]:
            self._blocks.append(layout.passage_block(p.index, p.text))
        return self._blocks[position]

    def tagged(self, positions: Any) -> list[tuple[int, str]]:
        """(tag index, text) of the passages at ``positions``, in the order given."""
        return [(self.passages[p].index, self.passages[p].text) for p in positions]

    def to_json(self) -> list[dict[str, Any]]:
        return [p.to_json() for p in self.passages]

    def load(self, items: Any, field: str) -> None:
        """Replace the contents with a snapshot's list (all checked before anything changes)."""
        if not isinstance(items, list):
            raise DataError("<snapshot>", None, field, "expected a list of passages")
        parsed = [Passage.from_json(item, field, i) for i, item in enumerate(items)]
        self.passages, self._index, self._indexed, self.next_index = [], self._new_index(), 0, 0
        self._blocks = []
        for passage in parsed:
            self.add(passage)
