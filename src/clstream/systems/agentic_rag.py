"""Agentic RAG (ImprintBench §3.1, Tables 1-4; docs/imprint.md §8 "Agentic RAG"): the model searches the
corpus itself, up to ``k`` times, then answers.

Memory is every observed text as a tagged passage (:mod:`clstream.systems.passages`: documents,
chunks, observations, feedback) with the retrieval index the ``rag`` system uses
(:func:`clstream.retrieval.hybrid.make_index`: ``retriever=bm25`` by default, ``dense`` or
``hybrid`` with ``embedder`` and ``k_rrf``). Observing calls no model, so memory can be rebuilt
by replaying the stream.

Answering a query is two phases (the project's reading of "up to k retriever calls, each
returning one unseen document"; ImprintBench §3.1):

1. *search*: at most ``k`` decision calls (stage ``search``, one sample each, seeded from the
   query id and step). Each shows the question, the documents found so far (tagged passages in
   corpus order) and a log of the searches made, and offers the search. A reply that searches
   spends one of the ``k`` searches per query it makes; each search returns the best-ranked
   document not shown yet for that query (or nothing, when none matches), and the next decision
   call shows it. A reply that answers instead ends the phase, as does the ``k``-th search.
2. *answer*: one call with the run's sampling (its ``n`` samples) showing the documents found,
   in the layout of a RAG prompt (no search offered). The runner takes the samples of this
   last call; every call of both phases is in the response, in order.

Two ways to offer the search (``calling``):

* ``tools`` -- the OpenAI function tool ``search(query)`` is put on the request
  (:data:`clstream.systems.corpus_prompts.SEARCH_TOOL`); each call it makes is one search;
* ``text`` -- the rules ask for a line ``SEARCH: <words>``; each such line written before any
  answer marker is one search;
* ``auto`` (default) -- ``tools`` when the model says it carries tool calls
  (``describe()["tools"] is True``, as the ``openai`` backend does), else ``text``.

Searches beyond the budget in one reply are dropped. A tool call with unreadable arguments
searches for its raw argument text. The n samples share one search trajectory: the decision
calls draw one sample each, and only the answering call draws n (the paper does not say whether
samples search independently).

``search_first=true`` makes the first search the system's own, with the question text, before
the model is asked (it counts toward ``k``). Off by default: the paper gives the model the
choice. A model that never searches (the builtin reader answers at once) then answers with no
documents, like the base model; with ``search_first`` it always sees at least one.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from clstream.core import layout
from clstream.core.contracts import Model
from clstream.core.events import Event
from clstream.core.params import Param
from clstream.core.types import GenerationRequest, GenerationResult, Query, Response
from clstream.retrieval.hybrid import Retriever, make_index
from clstream.systems import corpus_prompts
from clstream.systems.base import snapshot_list
from clstream.systems.context import RETRIEVAL_PARAMS
from clstream.systems.oracle import MethodBase
from clstream.systems.passages import Passage, passage_of

CALLING = ("auto", "tools", "text")
TITLE_CHARS = 80  # of a found document's first line shown in the search log


def supports_tools(model: Model) -> bool:
    """Whether ``model`` declares that it carries tool calls (``describe()["tools"]``)."""
    try:
        return model.describe().get("tools") is True
    except Exception:  # noqa: BLE001 - a model that cannot describe itself takes no tools
        return False


@dataclass
class Search:
    """One search: the query written, the passage position it returned (None: nothing)."""

    query: str
    position: int | None
    problem: str = ""


@dataclass
class Trajectory:
    """The search phase of one query: its searches and model calls so far."""

    query: Query
    searches: list[Search] = field(default_factory=list)
    calls: list[GenerationResult] = field(default_factory=list)
    done: bool = False

    @property
    def found(self) -> list[int]:
        return [s.position for s in self.searches if s.position is not None]


def _title(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if first.lower().startswith("title:"):
        first = first[len("title:"):].strip()
    return first if len(first) <= TITLE_CHARS else first[: TITLE_CHARS - 3].rstrip() + "..."


class AgenticRag(MethodBase):
    """The model searches the corpus up to k times (one unseen document each), then answers."""

    name = "agentic-rag"
    summary = "the model searches the corpus up to k times (one unseen document each), then answers"
    params: ClassVar[dict[str, Param]] = {
        "k": Param(3, "searches allowed per question (the paper: 3, 5, 10)", minimum=1),
        "calling": Param("auto", "how the search is offered: OpenAI tool calls, a SEARCH: line, "
                         "or tools when the model declares them", choices=CALLING),
        "search_first": Param(False, "the system makes the first search, with the question"),
        **RETRIEVAL_PARAMS,
    }
    replayable: ClassVar[bool] = True

    def _configure(self) -> None:
        calling = self.args["calling"]
        self.use_tools = calling == "tools" or (calling == "auto"
                                                and supports_tools(self.model))

    def _new_index(self) -> Retriever:
        return make_index(self.args["retriever"], self.args["embedder"], self.args["k_rrf"])

    # --- memory ----------------------------------------------------------------------------

    def _empty(self) -> None:
        self._passages: list[Passage] = []
        self._index: Retriever = self._new_index()
        self._next_index = 0

    def _add(self, passage: Passage) -> None:
        self._index.add(len(self._passages), passage.text)
        self._passages.append(passage)
        self._next_index = max(self._next_index, passage.index + 1)

    async def observe(self, event: Event) -> list[GenerationResult]:
        self._add(passage_of(event, self._next_index))
        return []

    def snapshot(self) -> dict[str, Any]:
        return {"passages": [p.to_json() for p in self._passages]}

    def restore(self, state: dict[str, Any]) -> None:
        items = snapshot_list(state, "passages", "passages")
        parsed = [Passage.from_json(item, "passages", at) for at, item in enumerate(items)]
        self._empty()
        for passage in parsed:
            self._add(passage)

    def _described(self) -> dict[str, Any]:
        return {**super()._described(), "calling_used": "tools" if self.use_tools else "text"}

    # --- searching -------------------------------------------------------------------------

    def search(self, text: str, exclude: set[int]) -> int | None:
        """The position of the best-ranked passage for ``text`` outside ``exclude``, or None."""
        if not text.strip() or len(exclude) >= len(self._passages):
            return None
        hits = self._index.search(text, 1, exclude=set(exclude))
        return hits[0][0] if hits else None

    def _run_search(self, trajectory: Trajectory, text: str, problem: str = "") -> None:
        position = self.search(text, set(trajectory.found))
        trajectory.searches.append(Search(text, position, problem))

    def _found_section(self, trajectory: Trajectory) -> list[str]:
        found = sorted(trajectory.found)
        if not found:
            return []
        shown = [(self._passages[p].index, self._passages[p].text) for p in found]
        return [layout.passages_section(shown, corpus_prompts.FOUND_HEADER)]

    def _log_section(self, trajectory: Trajectory) -> str:
        k = self.args["k"]
        lines = [corpus_prompts.SEARCH_LOG_HEADER.format(used=len(trajectory.searches), k=k)]
        for n, s in enumerate(trajectory.searches, 1):
            query = " ".join(s.query.split())
            if s.position is None:
                lines.append(corpus_prompts.SEARCH_NOTHING.format(n=n, query=query))
            else:
                passage = self._passages[s.position]
                title = _title(passage.text)
                lines.append(corpus_prompts.SEARCH_FOUND.format(
                    n=n, query=query, index=passage.index, title=f" ({title})" if title else ""))
        return "\n".join(lines) + "\n"

    def _decision_request(self, trajectory: Trajectory, step: int) -> GenerationRequest:
        query = trajectory.query
        instructions = (layout.instructions_of(query) + "\n\n"
                        + corpus_prompts.search_rules(self.args["k"], self.use_tools))
        # The log goes first: text before the first passage tag is not read as a passage.
        sections = [self._log_section(trajectory) if trajectory.searches else "",
                    *self._found_section(trajectory)]
        messages = layout.build_messages(instructions, sections, layout.prompt_of(query))
        tools = (corpus_prompts.SEARCH_TOOL,) if self.use_tools else ()
        return self._seeded_request(f"{query.id}/search{step}", messages, stage="search",
                                    tools=tools, n=1)

    def _take_reply(self, trajectory: Trajectory, result: GenerationResult) -> None:
        """Run the searches a decision reply asks for; mark the phase done when it asks none
        (an answer), fails, or spends the budget."""
        trajectory.calls.append(result)
        if not result.ok or not result.samples:
            trajectory.done = True
            return
        sample = result.samples[0]
        room = self.args["k"] - len(trajectory.searches)
        asked: list[tuple[str, str]] = []
        if self.use_tools:
            for call in sample.tool_calls:
                if call.get("name") == corpus_prompts.SEARCH_TOOL_NAME:
                    asked.append(corpus_prompts.tool_query(call))
        else:
            asked = [(q, "") for q in corpus_prompts.parse_search_lines(sample.text)]
        for text, problem in asked[:room]:
            self._run_search(trajectory, text, problem)
        if not asked or len(trajectory.searches) >= self.args["k"]:
            trajectory.done = True

    # --- answering -------------------------------------------------------------------------

    def _answer_request(self, trajectory: Trajectory) -> GenerationRequest:
        query = trajectory.query
        return self._seeded_request(query.id,
                                    layout.query_messages(query, self._found_section(trajectory)))

    async def respond_batch(self, queries: Sequence[Query]) -> list[Response]:
        """The two phases for every query; the queries' calls of one step go in one
        ``generate`` call."""
        if not queries:
            return []
        start = time.perf_counter()
        trajectories = [Trajectory(q) for q in queries]
        if self.args["search_first"]:
            for t in trajectories:
                self._run_search(t, t.query.text)
                t.done = len(t.searches) >= self.args["k"]
        step = 0
        while True:
            active = [t for t in trajectories if not t.done]
            if not active:
                break
            step += 1
            results = await self._generate([self._decision_request(t, step) for t in active])
            for t, result in zip(active, results, strict=True):
                self._take_reply(t, result)
        answerable = [t for t in trajectories if all(c.ok for c in t.calls)]
        answers = await self._generate([self._answer_request(t) for t in answerable])
        for t, answer in zip(answerable, answers, strict=True):
            t.calls.append(answer)
        each = (time.perf_counter() - start) / len(queries)
        return [Response(query_id=t.query.id, results=t.calls,
                         timings={"generate": each})
                for t in trajectories]
