"""MemAgent-style fixed-size memory (docs/agentic.md §memagent; MemAgent, Yu et al. 2025, as
the OAKS paper runs it, §5.3 and Appendix C.1.2): one text of at most ``budget`` tokens that
the model rewrites after every event and answers from alone.

Updating. Every event -- a chunk, a document, the feedback on a task, an environment step --
becomes text as the other memories keep it (:func:`clstream.systems.passages.passage_of`: a
chunk's or document's text, an experience block, a step block). One rewrite call (stage
``update``) shows the memory held and that text and asks for the new memory, whole
(:mod:`clstream.systems.memagent.formats`); the reply, cut at ``budget`` tokens with the model's
tokenizer (its start kept), replaces the memory. A text longer than ``chunk`` tokens is read
in pieces (at line, else word, boundaries), one rewrite per piece, in order. A failed call
leaves the memory as it was and is returned with the others, so the run records it; the
event's later pieces are then not read (each would be written against a memory that missed
the piece before it).

Answering. The memory as one section, then the query's block
(:func:`clstream.core.layout.query_messages`): no retrieval, no raw events.

CL-Bench. The method answers from memory only, with no transcript of the instance in
progress (unlike ``mem0``, which keeps one through
:class:`~clstream.systems.conversation.EpisodeMethod`). MemAgent's premise is that the memory
is the only state carried from one piece of the input to the next, and the context of every
call is that memory plus one new piece; a transcript kept beside it would be a second store
growing with the instance, breaking both the fixed size and the flat per-step context. Each
environment step is simply the next piece of the stream; the current observation is in the
query's block, and earlier steps -- of this instance or earlier ones -- reach the answer only
as far as the rewrites kept them. The snapshot is therefore the memory text alone.

Cost. The memory is bounded by ``budget`` and a piece by ``chunk``, so one observe costs at
most ceil(event tokens / ``chunk``) calls of at most budget + chunk + prompt tokens each,
whatever the number of events already seen ("adding event t costs event t").
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, ClassVar

from clstream.core import layout
from clstream.core.events import Event
from clstream.core.params import Param
from clstream.core.types import GenerationResult, Message, Query, Response
from clstream.systems.base import MemorySystem, reply_text, snapshot_error, staged
from clstream.systems.chunked_summary import split_document, truncate_right
from clstream.systems.conversation import event_key, str_field
from clstream.systems.memagent import formats
from clstream.systems.passages import passage_of


def event_text(event: Event) -> str:
    """The text a rewrite reads for ``event`` (the passage the other memories keep)."""
    return passage_of(event, 0).text


class MemAgent(MemorySystem):
    """One bounded memory text, rewritten by the model after every event."""

    name = "memagent"
    summary = "one memory of at most budget tokens, rewritten by the model after every event"
    params: ClassVar[dict[str, Param]] = {
        "budget": Param(1024, "memory size in tokens (model's tokenizer); a rewrite is cut "
                        "there", minimum=16),
        "chunk": Param(2048, "longest piece of an event one rewrite reads, in tokens; a longer "
                       "event is read in pieces", minimum=16),
    }
    # observe calls the model, so a runner keeps snapshots rather than replaying events.
    replayable: ClassVar[bool] = False

    def _empty(self) -> None:
        self.memory = ""

    # --- updating --------------------------------------------------------------------------

    async def observe(self, event: Event) -> list[GenerationResult]:
        text = event_text(event)
        if not text.strip():
            return []
        pieces = split_document(text.strip(), self.args["chunk"], self.model.tokenizer)
        key = f"{event_key(event)}/rewrite"
        calls: list[GenerationResult] = []
        for number, piece in enumerate(pieces):
            call = await self._rewrite(key if len(pieces) == 1 else f"{key}{number}", piece)
            calls.append(call)
            if not call.ok:
                break
        return calls

    async def _rewrite(self, key: str, piece: str) -> GenerationResult:
        """One rewrite of the memory with ``piece``; the memory is replaced only on success."""
        budget = self.args["budget"]
        messages = (Message(role="system", content=formats.REWRITE_SYSTEM),
                    Message(role="user", content=formats.rewrite_prompt(self.memory, piece,
                                                                        budget)))
        request = self._seeded_request(key, messages, stage="update", n=1)
        (result,) = await self._generate([request])
        result = staged(result, "update")
        if result.ok:
            self.memory = self._kept(reply_text(result))
        return result

    def _kept(self, reply: str) -> str:
        """The memory a reply becomes: cut at the budget (start kept); the empty marker is
        no memory."""
        text = reply.strip()
        if text == formats.EMPTY_MEMORY:
            return ""
        return truncate_right(text, self.args["budget"], self.model.tokenizer)

    # --- answering -------------------------------------------------------------------------

    def messages(self, query: Query) -> tuple[Message, ...]:
        """What is sent for ``query``: the memory section, then the query's block."""
        return layout.query_messages(query, [formats.memory_section(self.memory)])

    async def respond_batch(self, queries: Sequence[Query]) -> list[Response]:
        if not queries:
            return []
        requests = [self._seeded_request(q.id, self.messages(q), stage="generate")
                    for q in queries]
        start = time.perf_counter()
        results = await self._generate(requests)
        per_query = round((time.perf_counter() - start) / len(queries), 6)
        return [Response(query_id=q.id, results=[staged(r, "generate")],
                         timings={"retrieve": 0.0, "generate": per_query, "update": 0.0})
                for q, r in zip(queries, results, strict=True)]

    # --- snapshots and description ---------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        return self._enveloped({"text": self.memory})

    def restore(self, state: dict[str, Any]) -> None:
        memory = self._opened(state)
        text = str_field(memory, "text")
        tokens = self.model.tokenizer.count(text)
        if tokens > self.args["budget"]:
            raise snapshot_error("text", f"holds {tokens} tokens, over the budget of "
                                         f"{self.args['budget']}")
        self.memory = text

    def _described(self) -> dict[str, Any]:
        return {"prompt_template_hash": formats.template_fingerprint()}
