"""A-Mem-style linked notes (docs/agentic.md, "amem"; A-Mem, Xu et al. 2025, as the OAKS paper
evaluates it among the agentic memory systems).

Memory is a list of notes, one per observed event, in the order they came (a note's
``timestamp``). A note's content is the event's text as every method keeps it
(:func:`clstream.systems.passages.passage_of`: a chunk's text, a document, a step block for an
environment step, an experience block for task feedback) and its tag index is that passage's
(a chunk keeps its index, any other event takes a running one). Besides the content, a note
holds keywords, tags, one sentence of context, and links: the ids of related notes, in the
order they were linked, always both ways.

Observing an event costs two calls (stage ``update``) and one index search:

1. note construction: the content is shown and the reply gives the keywords, tags and context
   (:func:`clstream.systems.amem.formats.parse_note`; a field the reply gets wrong stays empty);
2. the ``k`` stored notes most similar to the new note (content, keywords, tags and context
   together, searched with the project's retrievers, BM25 by default) are shown with it, and
   the link call decides which of them to link to the new note and may give linked ones new
   tags or context (memory evolution; :func:`~clstream.systems.amem.formats.parse_links`). With no
   note stored yet there is nothing to link and no second call.

The new note and its links enter memory after the link reply is read; each evolved neighbour
is re-indexed in place (:meth:`Retriever.replace`), so the work of one observe is the two
calls, one search and at most ``k`` small index updates, whatever the number of notes.

A failed call is returned as it came (the run records it) and memory stays whole: a failed
note construction stores the note with its content alone and makes no link call; a failed
link call stores the note unlinked and evolves nothing.

Answering retrieves the ``top_k`` notes most similar to the query's text, adds the notes they
link to (following each retrieved note's links in link order, retrieved notes best first) up
to ``top_k`` more, and shows all of them as tagged passages in stream order: each opens with
its keywords, tags and context on one line, then its content, so every reader of
:mod:`clstream.core.layout` still finds the passages, step blocks and experience blocks.

Snapshots hold the notes (with their links) and the running tag index; the retrieval index is
rebuilt from the notes on restore, which gives the index the running system held.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from clstream.core import layout
from clstream.core.events import Event
from clstream.core.params import Param
from clstream.core.types import GenerationResult, Message, Query, Response
from clstream.retrieval.hybrid import Retriever, make_index
from clstream.systems.amem import formats as amem_format
from clstream.systems.base import MemorySystem, reply_text, snapshot_error, staged
from clstream.systems.context import RETRIEVAL_PARAMS
from clstream.systems.conversation import event_key
from clstream.systems.passages import passage_of


@dataclass
class Note:
    """One memory note (the module docstring); ``id`` is its position, its timestamp."""

    id: int
    index: int
    content: str
    keywords: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    context: str = ""
    links: list[int] = field(default_factory=list)

    def indexed_text(self) -> str:
        """What retrieval reads: the content, then keywords, tags and context."""
        return "\n".join([self.content, " ".join(self.keywords), " ".join(self.tags),
                          self.context])

    def shown(self) -> str:
        """The note as a passage's text: its description line, then its content. A context
        the content already holds word for word is not repeated (a reader would otherwise
        take the sentence as said twice)."""
        context = self.context
        if " ".join(context.split()) in " ".join(self.content.split()):
            context = ""
        return f"{amem_format.note_line('Note', self.keywords, self.tags, context)}\n" \
               f"{self.content.strip()}"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "index": self.index, "content": self.content,
                "keywords": list(self.keywords), "tags": list(self.tags),
                "context": self.context, "links": list(self.links)}


def _strings(item: dict[str, Any], key: str) -> tuple[str, ...] | None:
    value = item.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    return tuple(value)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def note_from_json(item: Any, at: int) -> Note:
    """A stored note, checked field by field (its id must be its position ``at``)."""
    problem = "expected {id, index: int, content, context: str, keywords, tags: [str], " \
              "links: [int]}"
    if not isinstance(item, dict):
        raise snapshot_error(f"notes[{at}]", problem)
    keywords, tags = _strings(item, "keywords"), _strings(item, "tags")
    links = item.get("links")
    if (keywords is None or tags is None or not _whole(item.get("index"))
            or not isinstance(item.get("content"), str) or not isinstance(item.get("context"), str)
            or not isinstance(links, list) or not all(_whole(v) for v in links)):
        raise snapshot_error(f"notes[{at}]", problem)
    if item.get("id") != at:
        raise snapshot_error(f"notes[{at}].id", f"expected {at}, the note's position")
    return Note(at, item["index"], item["content"], keywords, tags, item["context"], list(links))


class AMem(MemorySystem):
    """Linked notes with memory evolution (see the module docstring)."""

    name = "amem"
    summary = "A-Mem-style notes (keywords, tags, context) linked to similar notes, which evolve"
    params: ClassVar[dict[str, Param]] = {
        "k": Param(5, "similar stored notes shown to each link decision", minimum=1),
        "top_k": Param(5, "notes retrieved for a question (their linked notes added, as many "
                       "more at most)", minimum=1),
        **RETRIEVAL_PARAMS,
    }

    def _empty(self) -> None:
        self.notes: list[Note] = []
        self.next_index = 0  # the running tag index of the next note that is not a chunk
        self._index: Retriever = make_index(self.args["retriever"], self.args["embedder"],
                                            self.args["k_rrf"])

    def _described(self) -> dict[str, Any]:
        return {"prompt_template_hash": amem_format.template_fingerprint()}

    # --- updating ------------------------------------------------------------------------

    async def observe(self, event: Event) -> list[GenerationResult]:
        passage = passage_of(event, self.next_index)
        key = event_key(event)
        note = Note(len(self.notes), passage.index, passage.text)
        built = await self._update(f"{key}/note", amem_format.note_prompt(note.content))
        calls = [built]
        if built.ok:
            fields = amem_format.parse_note(reply_text(built))
            note.keywords, note.tags, note.context = fields.keywords, fields.tags, fields.context
            neighbours = self._search(note.indexed_text(), self.args["k"])
            if neighbours:
                linked = await self._update(f"{key}/link", self._link_prompt(note, neighbours))
                calls.append(linked)
                if linked.ok:
                    self._evolve(note, neighbours,
                                 amem_format.parse_links(reply_text(linked), len(neighbours)))
        self._store(note)
        return calls

    async def _update(self, key: str, prompt: str) -> GenerationResult:
        messages = (Message(role="system", content=amem_format.SYSTEM),
                    Message(role="user", content=prompt))
        return await self._call(key, messages, "update")

    def _link_prompt(self, note: Note, neighbours: Sequence[int]) -> str:
        shown = [amem_format.shown_note(f"[{n}]", self.notes[i].keywords, self.notes[i].tags,
                                        self.notes[i].context, self.notes[i].content)
                 for n, i in enumerate(neighbours, 1)]
        new = amem_format.shown_note(amem_format.NEW_NOTE_LABEL, note.keywords, note.tags,
                                     note.context, note.content)
        return amem_format.link_prompt(new, shown)

    def _evolve(self, note: Note, neighbours: Sequence[int],
                decision: amem_format.Evolution) -> None:
        """Links both ways and the linked neighbours' new tags and context, re-indexed."""
        for number in decision.links:
            neighbour = self.notes[neighbours[number - 1]]
            note.links.append(neighbour.id)
            neighbour.links.append(note.id)
            tags = decision.tags.get(number, neighbour.tags)
            context = decision.contexts.get(number, neighbour.context)
            if (tags, context) != (neighbour.tags, neighbour.context):
                old = neighbour.indexed_text()
                neighbour.tags, neighbour.context = tags, context
                self._index.replace(neighbour.id, old, neighbour.indexed_text())

    def _store(self, note: Note) -> None:
        self.notes.append(note)
        self.next_index = max(self.next_index, note.index + 1)
        self._index.add(note.id, note.indexed_text())

    def _search(self, text: str, k: int) -> list[int]:
        """Ids of the (up to) k notes most similar to ``text``, best first."""
        if not self.notes:
            return []
        return [doc_id for doc_id, _ in self._index.search(text, k)]

    # --- answering -----------------------------------------------------------------------

    def shown_notes(self, text: str) -> list[int]:
        """Ids of the notes shown for a question ``text``, in stream order: the ``top_k``
        most similar and up to ``top_k`` more that they link to."""
        top_k = self.args["top_k"]
        retrieved = self._search(text, top_k)
        chosen = set(retrieved)
        added = 0
        for note_id in retrieved:
            for linked in self.notes[note_id].links:
                if added == top_k:
                    break
                if linked not in chosen:
                    chosen.add(linked)
                    added += 1
        return sorted(chosen)

    def _section(self, query: Query) -> str:
        shown = self.shown_notes(query.text)
        if not shown:
            return ""
        return layout.passages_section(((self.notes[i].index, self.notes[i].shown())
                                        for i in shown), amem_format.MEMORY_HEADER)

    async def respond_batch(self, queries: Sequence[Query]) -> list[Response]:
        built = []
        for query in queries:
            start = time.perf_counter()
            messages = layout.query_messages(query, [self._section(query)])
            built.append((self._seeded_request(query.id, messages, stage="generate"),
                          time.perf_counter() - start))
        if not built:
            return []
        start = time.perf_counter()
        results = await self._generate([request for request, _ in built])
        each = (time.perf_counter() - start) / len(built)
        return [Response(query_id=query.id, results=[staged(result, "generate")],
                         timings={"retrieve": round(retrieve_s, 6), "generate": round(each, 6)})
                for query, (_, retrieve_s), result in zip(queries, built, results, strict=True)]

    # --- snapshots -----------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        return self._enveloped({"notes": [note.to_json() for note in self.notes],
                                "next_index": self.next_index})

    def restore(self, state: dict[str, Any]) -> None:
        memory = self._opened(state)
        items = memory.get("notes")
        if not isinstance(items, list):
            raise snapshot_error("notes", "expected a list of notes")
        notes = [note_from_json(item, at) for at, item in enumerate(items)]
        for note in notes:
            for linked in note.links:
                if not 0 <= linked < len(notes) or note.id not in notes[linked].links:
                    raise snapshot_error(f"notes[{note.id}].links",
                                         f"link to {linked} is not a stored note linking back")
        next_index = memory.get("next_index")
        if not isinstance(next_index, int) or isinstance(next_index, bool) or next_index < 0:
            raise snapshot_error("next_index", "expected an integer >= 0")
        self._empty()
        for note in notes:
            self._store(note)
        self.next_index = next_index
