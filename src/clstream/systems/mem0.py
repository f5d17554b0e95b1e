"""A Mem0-style fact memory (docs/clbench.md §6; Mem0, Chhikara et al. 2025, as CL-Bench runs
it: extraction after every step, top-10 retrieval before every step).

Memory: a list of short facts, each with a stable id, searched by the project's retrievers
(``retriever=bm25`` by default, ``dense`` or ``hybrid`` with ``embedder`` and ``k_rrf``, as
the rag systems); plus the conversation of the instance in progress (turns as in
:mod:`clstream.systems.conversation`, cleared at each instance end, the authors' runs too).

After every observed event -- a step's outcome (request, reply, observation), feedback on a
task (task, answer, verdict), a chunk or a document -- one extraction call (stage ``update``)
lists candidate facts (``FACT: ...`` lines, at most ``max_facts``). A candidate already stored
word for word (case and spacing aside) is dropped; no other fact is stored without a decision:
one batched decision call (stage ``update``) shows the ``update_k`` stored facts most similar
to each remaining candidate, merged into one numbered list (``(none stored yet)`` when the
store is empty), and the candidates, numbered, and reads one line per candidate, ``FACT <i>:
<operation>``: ``ADD`` (optionally ``ADD: <text>``), ``UPDATE <n>: <text>`` (memory n gets
the new text, keeping its id and place), ``DELETE <n>`` (memory n goes) or ``NONE``. The
operations are applied in candidate order; a candidate with no well-formed line, or with
lines that differ, changes nothing, and so does a malformed line or a number not shown (a
memory already deleted by an earlier line is left alone).

Answering retrieves the ``top_k`` stored facts most similar to the search key and shows them,
most similar first, before the query's block (after the instance's conversation). The key is
the query's text followed by the previous step (its request, reply and outcome, as extraction
saw it), as the authors search with the last exchange and the current prompt; the previous
step is kept across instance ends and in snapshots. The current query comes first so an
embedder that reads only the start of a long key still reads it. Chunks and documents enter
memory only through extraction and never become the previous step.

Retriever: ``retriever=auto`` (the default) resolves when the system is built, to ``dense``
(the packaged MiniLM embedder) when the ``embed`` extra is installed, else ``bm25``; the
resolved name is the argument a run records (and so part of its spec and run id), so two
machines never share a run id with different retrievers.

The retrieval index always holds exactly the stored facts in list order (rebuilt after an
update or delete, before the next search), so a restored snapshot searches as the original.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any, ClassVar

from clstream.core import layout
from clstream.core.events import Chunk, Document, Event, Feedback, Observation
from clstream.core.params import Param
from clstream.core.types import GenerationResult, Query
from clstream.retrieval.dense import packaged_minilm_path
from clstream.retrieval.hybrid import RETRIEVERS, Retriever, make_index
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
    str_field,
)
from clstream.systems.conversation import prompts as conversation_prompts

STEP_CHARS = 12_000  # clip of each part of a step shown to extraction (its end is kept)


@dataclass
class Fact:
    id: int
    text: str


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def installed_retriever() -> str:
    """The retriever ``auto`` resolves to: ``dense`` when the ``embed`` extra (the
    sentence-transformers runtime and the packaged MiniLM model) is installed, else ``bm25``."""
    runtime = importlib.util.find_spec("sentence_transformers") is not None
    return "dense" if runtime and packaged_minilm_path() is not None else "bm25"


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
        "retriever": Param("auto", "retrieval index over the facts: auto resolves to dense "
                           "with the embed extra installed, else bm25", choices=("auto", *RETRIEVERS)),
        **BUDGET_PARAMS,
    }

    @classmethod
    def spec_args(cls, args: dict[str, Any]) -> dict[str, Any]:
        """The arguments as a run records them: ``retriever=auto`` resolved on this machine."""
        if args.get("retriever", "auto") == "auto":
            return {**args, "retriever": installed_retriever()}
        return args

    def _checked(self, args: dict[str, Any]) -> dict[str, Any]:
        return super()._checked(self.spec_args(args))

    def _clear_method(self) -> None:
        self.facts: list[Fact] = []
        self.next_id = 1
        self._index: Retriever | None = None  # built on first search
        self.last_step = ""  # the previous step's text, part of the search key

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
        key = f"{query.text}\n\n{self.last_step}" if self.last_step else query.text
        shown = self._search(key, self.args["top_k"])
        return [conversation_prompts.section(conversation_prompts.MEMORIES_HEADER,
                                             (f"- {self.facts[p].text}" for p in shown))]

    # --- updating ------------------------------------------------------------------------

    async def _after_step(self, event: Observation | Feedback, asked: Asked | None
                          ) -> list[GenerationResult]:
        step = self._step_text(event, asked)
        self.last_step = step
        return await self._extract(event, step)

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
            parts += [f"{conversation_prompts.STEP_REQUEST_LABEL}\n"
                      f"{_clip_end(request) or conversation_prompts.NO_REQUEST}",
                      f"{conversation_prompts.STEP_REPLY_LABEL}\n"
                      f"{_clip_end(action) or conversation_prompts.NO_REPLY}"]
        return "\n\n".join([*parts, _clip_end(outcome_text(event))])

    async def _extract(self, event: Event, step: str) -> list[GenerationResult]:
        key = event_key(event)
        call = await self._update_call(f"{key}/extract",
                                       conversation_prompts.EXTRACT_PROMPT.format(step=step))
        if not call.ok:
            return [call]
        facts = [f for f in conversation_prompts.parse_facts(reply_text(call),
                                                              self.args["max_facts"])
                 if all(_norm(s.text) != _norm(f) for s in self.facts)]
        if not facts:
            return [call]
        return [call, await self._decide(facts, f"{key}/update")]

    async def _decide(self, facts: list[str], key: str) -> GenerationResult:
        """One decision call for all ``facts``; its operations applied as the module docstring
        says."""
        shown: list[int] = []  # fact ids, in the order listed
        for fact in facts:
            for position in self._search(fact, self.args["update_k"]):
                if self.facts[position].id not in shown:
                    shown.append(self.facts[position].id)
        by_id = {f.id: f for f in self.facts}
        listed = "\n".join(f"{n}. {by_id[i].text}" for n, i in enumerate(shown, 1))
        prompt = conversation_prompts.MEMORY_UPDATE_PROMPT.format(
            memories=listed or conversation_prompts.NO_MEMORIES,
            facts="\n".join(f"{n}. {fact}" for n, fact in enumerate(facts, 1)))
        call = await self._update_call(key, prompt)
        ops = conversation_prompts.parse_memory_ops(reply_text(call), len(facts), len(shown))
        for n, fact in enumerate(facts, 1):
            op = ops.get(n)
            if op is None or op.op == "NONE":
                continue
            if op.op == "ADD":
                text = op.text or fact
                if all(_norm(f.text) != _norm(text) for f in self.facts):
                    self._add(text)
                continue
            assert op.number is not None
            target = shown[op.number - 1]
            at = next((p for p, f in enumerate(self.facts) if f.id == target), None)
            if at is None:  # deleted by an earlier line
                continue
            if op.op == "UPDATE":
                self.facts[at].text = op.text
            else:
                del self.facts[at]
            self._changed()
        return call

    # --- snapshots -----------------------------------------------------------------------

    def _dump(self) -> dict[str, Any]:
        return {"facts": [{"id": f.id, "text": f.text} for f in self.facts],
                "next_id": self.next_id, "last_step": self.last_step, **self._dump_episode()}

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
        self.last_step = str_field(memory, "last_step")
        self._load_episode(memory)
