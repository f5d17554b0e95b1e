"""A Mem0-style fact memory (docs/clbench.md §6; Mem0, Chhikara et al. 2025, as CL-Bench runs
it: extraction after every step, top-10 retrieval before every step).

Memory: a list of short facts, each with a stable id, searched by the project's retrievers
(``retriever=bm25`` by default, ``dense`` or ``hybrid`` with ``embedder`` and ``k_rrf``, as
the rag systems); plus the conversation of the instance in progress (turns as in
:mod:`clstream.systems.conversation`, cleared at each instance end, the authors' runs too).

After every observed event -- a step's outcome (request, reply, observation), feedback on a
task (task, answer, verdict), a chunk or a document -- one extraction call (stage ``update``)
lists candidate facts (``FACT: ...`` lines, at most ``max_facts``). For each candidate, in
order:

* a fact already stored word for word (case and spacing aside) changes nothing, no call;
* with no stored fact sharing a term with it (nothing retrieved), it is added, no call;
* else one decision call shows the ``update_k`` most similar stored facts, numbered, and
  reads one operation: ``ADD`` (optionally ``ADD: <text>``), ``UPDATE <n>: <text>`` (fact n
  gets the new text, keeping its id and place), ``DELETE <n>`` (fact n goes; the candidate
  is not stored) or ``NONE``. Anything else -- no operation line, several different ones, a
  number not shown, a failed call -- changes nothing (after a failed call the remaining
  candidates are dropped).

Answering retrieves the ``top_k`` stored facts most similar to the query's text and shows them,
most similar first, before the query's block (after the instance's conversation). Chunks and
documents enter memory only through extraction.

The retrieval index always holds exactly the stored facts in list order (rebuilt after an
update or delete, before the next search), so a restored snapshot searches as the original.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from clstream.core import layout
from clstream.core.events import Chunk, Document, Event, Feedback, Observation
from clstream.core.params import Param
from clstream.core.types import GenerationResult, Query
from clstream.retrieval.hybrid import Retriever, make_index
from clstream.systems import conversation_prompts
from clstream.systems.base import reply_text, snapshot_error
from clstream.systems.context import RETRIEVAL_PARAMS
from clstream.systems.conversation import (
    BUDGET_PARAMS,
    Asked,
    EpisodeMethod,
    event_key,
    int_field,
    outcome_text,
    step_parts,
)

STEP_CHARS = 12_000  # clip of each part of a step shown to extraction (its end is kept)


@dataclass
class Fact:
    id: int
    text: str


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _clip_end(text: str, limit: int = STEP_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-(limit - 3):]


class Mem0(EpisodeMethod):
    """Facts extracted after every event and merged by ADD/UPDATE/DELETE/NONE decisions."""

    name = "mem0"
    summary = "facts extracted after every event, merged by ADD/UPDATE/DELETE; top-k shown"
    params: ClassVar[dict[str, Param]] = {
        "top_k": Param(10, "stored facts shown before each answer (the authors' k)", minimum=1),
        "update_k": Param(10, "similar stored facts shown to each update decision", minimum=1),
        "max_facts": Param(10, "candidate facts taken from one extraction", minimum=1),
        **RETRIEVAL_PARAMS,
        **BUDGET_PARAMS,
    }

    def _clear_method(self) -> None:
        self.facts: list[Fact] = []
        self.next_id = 1
        self._index: Retriever | None = None  # built on first search

    # --- the fact store ----------------------------------------------------------------------

    def _new_index(self) -> Retriever:
        return make_index(self.args["retriever"], self.args["embedder"], self.args["k_rrf"])

    def _search(self, text: str, k: int) -> list[int]:
        """Positions of the (up to) k facts most similar to ``text``, best first."""
        if not self.facts or k <= 0:
            return []
        if self._index is None:
            self._index = self._new_index()
            for position, fact in enumerate(self.facts):
                self._index.add(position, fact.text)
        return [position for position, _ in self._index.search(text, k)]

    def _add(self, text: str) -> None:
        self.facts.append(Fact(self.next_id, text))
        self.next_id += 1
        if self._index is not None:
            self._index.add(len(self.facts) - 1, text)

    def _changed(self) -> None:
        self._index = None  # positions or texts moved: rebuild before the next search

    # --- answering -----------------------------------------------------------------------

    def _sections(self, query: Query) -> list[str]:
        shown = self._search(query.text, self.args["top_k"])
        return [conversation_prompts.section(conversation_prompts.MEMORIES_HEADER,
                                             (f"- {self.facts[p].text}" for p in shown))]

    # --- updating ------------------------------------------------------------------------

    async def _after_step(self, event: Observation | Feedback, asked: Asked | None
                          ) -> list[GenerationResult]:
        return await self._extract(event, self._step_text(event, asked))

    async def _text(self, event: Chunk | Document) -> list[GenerationResult]:
        return await self._extract(event, _clip_end(event.text))

    @staticmethod
    def _step_text(event: Observation | Feedback, asked: Asked | None) -> str:
        if isinstance(event, Feedback):
            answer = asked.answer if asked is not None else event.answer
            return layout.experience_block(layout.Experience(
                event.query_text, answer, event.message, event.success)).strip()
        request, action = step_parts(event, asked)
        parts = []
        if request or action:
            parts += [f"Request:\n{_clip_end(request) or conversation_prompts.NO_REQUEST}",
                      f"Reply:\n{_clip_end(action) or conversation_prompts.NO_REPLY}"]
        return "\n\n".join([*parts, _clip_end(outcome_text(event))])

    async def _extract(self, event: Event, step: str) -> list[GenerationResult]:
        key = event_key(event)
        call = await self._update_call(f"{key}/extract",
                                       conversation_prompts.EXTRACT_PROMPT.format(step=step))
        calls = [call]
        facts = conversation_prompts.parse_facts(reply_text(call), self.args["max_facts"])
        for n, fact in enumerate(facts, 1):
            decision = await self._merge(fact, f"{key}/update{n}")
            if decision is not None:
                calls.append(decision)
                if not decision.ok:  # a failed call: the runner reports it; stop here
                    break
        return calls

    async def _merge(self, fact: str, key: str) -> GenerationResult | None:
        """Store ``fact`` as the rules of the module docstring say; the decision call, if any."""
        if any(_norm(f.text) == _norm(fact) for f in self.facts):
            return None
        similar = self._search(fact, self.args["update_k"])
        if not similar:
            self._add(fact)
            return None
        listed = "\n".join(f"{n}. {self.facts[p].text}" for n, p in enumerate(similar, 1))
        call = await self._update_call(
            key, conversation_prompts.MEMORY_UPDATE_PROMPT.format(memories=listed, fact=fact))
        op = conversation_prompts.parse_memory_op(reply_text(call), len(similar))
        if op is None or op.op == "NONE":
            return call
        if op.op == "ADD":
            text = op.text or fact
            if all(_norm(f.text) != _norm(text) for f in self.facts):
                self._add(text)
        elif op.op == "UPDATE":
            assert op.number is not None
            self.facts[similar[op.number - 1]].text = op.text
            self._changed()
        elif op.op == "DELETE":
            assert op.number is not None
            del self.facts[similar[op.number - 1]]
            self._changed()
        return call

    # --- snapshots -----------------------------------------------------------------------

    def _dump(self) -> dict[str, Any]:
        return {"facts": [{"id": f.id, "text": f.text} for f in self.facts],
                "next_id": self.next_id, **self._dump_episode()}

    def _load(self, memory: dict[str, Any]) -> None:
        items = memory.get("facts")
        if not isinstance(items, list) or not all(
                isinstance(f, dict) and isinstance(f.get("id"), int)
                and not isinstance(f.get("id"), bool) and isinstance(f.get("text"), str)
                for f in items):
            raise snapshot_error("facts", "expected a list of {id: int, text: str}")
        self.facts = [Fact(f["id"], f["text"]) for f in items]
        self.next_id = int_field(memory, "next_id", minimum=1)
        if any(f.id >= self.next_id for f in self.facts):
            raise snapshot_error("next_id", "must exceed every fact id")
        self._index = None
        self._load_episode(memory)
