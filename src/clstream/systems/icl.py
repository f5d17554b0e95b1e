"""Full-context in-context learning (docs/clbench.md §6, the CL-Bench ``icl`` baseline).

Memory is the whole run as one conversation (the turns of :mod:`clstream.systems.conversation`):
every step's request, the system's reply and what came back -- an environment's observation,
an evaluator's verdict -- plus every chunk or document read, as a tagged passage. Nothing is
summarized or cleared at instance boundaries. A probe is never reported back, so it never
enters the conversation.

Each answer sends the query's instructions as the system message, the conversation, and the
query's block last. Context limit (the authors' rule, FIFO at the model's context with a
margin): the oldest turns are dropped once the conversation would exceed ``budget - reserve``
tokens (the model's tokenizer). Memory drops them for good when the conversation alone
exceeds that; each request leaves out as many more of the oldest as its instructions and
block need.

Per protocol: CL-Bench gives step request, action, observation, next step request, ... across
all instances; OAKS gives the chunks of the document in order, so an answer sees the passages
like ``full`` does; SeqMem gives task, answer, verdict per task.
"""

from __future__ import annotations

from typing import Any

from clstream.core.events import Chunk, Document, Event, Feedback, Observation
from clstream.core.types import GenerationResult
from clstream.systems.conversation import BUDGET_PARAMS, Asked, ConversationMethod, int_field


class Icl(ConversationMethod):
    """The whole run as one conversation (see the module docstring)."""

    name = "icl"
    summary = "the whole run as one conversation, the oldest turns dropped past a token budget"
    params = dict(BUDGET_PARAMS)

    def _clear(self) -> None:
        self._total = 0  # tokens held by the turns

    async def _observe(self, event: Event, asked: Asked | None) -> list[GenerationResult]:
        if isinstance(event, Observation):
            new = self._step_turns(event, asked)
        elif isinstance(event, Feedback):
            new = self._feedback_turns(event, asked)
        elif isinstance(event, Chunk | Document):
            new = [self._passage_turn(event)]
        else:  # pragma: no cover - the Event union is closed
            raise TypeError(f"not an event: {type(event).__name__}")
        self.turns += new
        self._total += sum(t.tokens for t in new)
        self._trim()
        return []

    def _trim(self) -> None:
        """Drop the oldest turns while the conversation alone exceeds the room."""
        room = self.args["budget"] - self.args["reserve"]
        drop = 0
        while drop < len(self.turns) and self._total > room:
            self._total -= self.turns[drop].tokens
            drop += 1
        if drop:
            del self.turns[:drop]

    def _dump(self) -> dict[str, Any]:
        return {"turns": [t.to_json() for t in self.turns], "next_index": self.next_index}

    def _load(self, memory: dict[str, Any]) -> None:
        self.turns = self._load_turns(memory.get("turns"), "turns")
        self.next_index = int_field(memory, "next_index")
        self._total = sum(t.tokens for t in self.turns)
