"""Structured memories built by extra model calls: DC-RS and AWM (SeqMem-Eval App. D, Alg. 1-2;
docs/seqmem.md §6).

``dc-rs`` (k=3), Dynamic Cheatsheet, retrieval-and-synthesis variant. Before answering x_i it
retrieves the k past records most similar to x_i, a curator call (stage ``update``) rewrites
the cheatsheet from the current one, those records and x_i, and the generator answers with the
new cheatsheet. Memory is the cheatsheet plus the history of records. Because the curator runs
inside ``respond``, its cheatsheet is held aside and becomes memory only when ``observe``
receives the feedback of that same query, so probes (hold-out, re-evaluation) leave memory
unchanged. When the curator reply holds no cheatsheet, the retrieved records stand in (docs/seqmem.md
§6) next to the previous cheatsheet, which memory keeps. Reading taken: the history keeps the
feedback with each (task, answer) pair, since the SeqMem protocol hands feedback to every
update (paper eq. 1), and the curator sees it.

``awm`` (k=3), Agent Workflow Memory. After a success (decided by the evaluator's score), one
induction call (stage ``update``) turns the solved task into workflows (``WORKFLOW:`` lines);
the entry keeps them with the solved task as its exemplar. Answers show the workflows of the k
entries most similar to the task plus those entries' exemplars. A reply with no workflow line
still stores the solved task, as an exemplar without workflows.

Both keep chunks, documents and observations as texts, shown as tagged passages (the base
class in :mod:`clstream.systems.experience`); only feedback reaches the curator or induction.
"""

from __future__ import annotations

from typing import Any

from clstream.core import layout
from clstream.core.events import Feedback
from clstream.core.types import GenerationResult, Query
from clstream.systems import memory_prompts
from clstream.systems.base import reply_text, snapshot_error
from clstream.systems.experience import (
    RETRIEVER_PARAM,
    ExperiencePool,
    ExperienceRecord,
    ExperienceSystem,
    k_param,
)


class DcRs(ExperienceSystem):
    """Dynamic Cheatsheet with retrieval and synthesis (see the module docstring)."""

    name = "dc-rs"
    summary = "a cheatsheet rewritten before each task from the k most similar past tasks"
    params = {"k": k_param(), "retriever": RETRIEVER_PARAM}

    def _clear(self) -> None:
        self.cheatsheet = ""
        self.history = self._pool()
        self._pending: tuple[str, str | None] | None = None  # (query id, new cheatsheet)

    async def _sections(self, query: Query, timings: dict[str, float],
                        results: list[GenerationResult]) -> list[str]:
        with self._timed(timings, "retrieve"):
            hits = self.history.similar(query.text, self.args["k"])
            retrieved = self.history.experiences([p for p, _ in hits])
        prompt = memory_prompts.CURATOR_PROMPT.format(
            cheatsheet=self.cheatsheet or "(empty)",
            examples=layout.experiences_section(retrieved) or "No similar past tasks yet.\n",
            question=query.text.strip(),
        )
        curated = await self._call(f"{query.id}/curate", memory_prompts.update_messages(prompt),
                                    "update", timings)
        results.append(curated)
        new = memory_prompts.parse_cheatsheet(reply_text(curated))
        self._pending = (query.id, new)
        if new is not None:
            return [memory_prompts.text_section(memory_prompts.CHEATSHEET_HEADER, new)]
        return [memory_prompts.text_section(memory_prompts.CHEATSHEET_HEADER, self.cheatsheet),
                layout.experiences_section(retrieved)]

    async def _update(self, fb: Feedback) -> list[GenerationResult]:
        if self._pending is not None and self._pending[0] == fb.query_id:
            if self._pending[1] is not None:
                self.cheatsheet = self._pending[1]
        self._pending = None
        self.history.add(ExperienceRecord.from_feedback(fb))
        return []

    def _dump(self) -> dict[str, Any]:
        return {"cheatsheet": self.cheatsheet, "history": self.history.to_json()}

    def _load(self, memory: dict[str, Any]) -> None:
        if not isinstance(memory.get("cheatsheet"), str):
            raise snapshot_error("cheatsheet", "expected a string")
        self.cheatsheet = memory["cheatsheet"]
        self.history = ExperiencePool.from_json(memory.get("history"), "history",
                                                self.args["retriever"])


class Awm(ExperienceSystem):
    """Agent Workflow Memory: workflows induced from solved tasks (see the module docstring)."""

    name = "awm"
    summary = "workflows induced from solved tasks; shows those of the k most similar"
    params = {"k": k_param(3, "similar solved tasks whose workflows are shown"),
              "retriever": RETRIEVER_PARAM}

    def _clear(self) -> None:
        self.solved = self._pool()  # the solved tasks, one per entry
        self.workflows: list[list[str]] = []  # workflows induced from each entry

    async def _sections(self, query: Query, timings: dict[str, float],
                        results: list[GenerationResult]) -> list[str]:
        with self._timed(timings, "retrieve"):
            positions = sorted(p for p, _ in self.solved.similar(query.text, self.args["k"]))
        flows: list[str] = []
        for p in positions:
            flows += [w for w in self.workflows[p] if w not in flows]
        return [memory_prompts.list_section(memory_prompts.WORKFLOWS_HEADER, flows),
                layout.experiences_section(self.solved.experiences(positions))]

    async def _update(self, fb: Feedback) -> list[GenerationResult]:
        if not fb.success:
            return []
        record = ExperienceRecord.from_feedback(fb)
        prompt = memory_prompts.INDUCTION_PROMPT.format(
            example=layout.experience_block(record.experience()))
        call = await self._update_call(f"{fb.query_id}/induce", prompt)
        self.solved.add(record)
        self.workflows.append(memory_prompts.parse_workflows(reply_text(call)))
        return [call]

    def _dump(self) -> dict[str, Any]:
        return {"solved": self.solved.to_json(), "workflows": [list(f) for f in self.workflows]}

    def _load(self, memory: dict[str, Any]) -> None:
        self.solved = ExperiencePool.from_json(memory.get("solved"), "solved",
                                               self.args["retriever"])
        flows = memory.get("workflows")
        if not (isinstance(flows, list) and len(flows) == len(self.solved)
                and all(isinstance(f, list) and all(isinstance(w, str) for w in f)
                        for f in flows)):
            raise snapshot_error("workflows", "expected one list of strings per solved task")
        self.workflows = [list(f) for f in flows]
