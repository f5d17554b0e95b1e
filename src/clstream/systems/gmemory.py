"""G-Memory for a single solver: an experience graph plus scored insights (SeqMem-Eval App. D,
Alg. 5; docs/seqmem.md §6).

The paper's G-Memory serves a multi-agent system; here the "system" is one solver, so the
per-role memories of Alg. 5 collapse into one prompt. Memory:

* query graph: one node per finished task (task, answer, feedback, success), linked to the
  nodes that were retrieved for it;
* insights: short texts with a score and the nodes they came from.

Answering: the nodes most similar to the task (BM25 over task texts) are expanded by one hop
along the links; from that set the ``success_k`` (2) most similar successes and ``failed_k``
(1) most similar failures are shown, after up to ``insights_k`` (10) insights -- first those
linked to the expanded nodes, then the rest, each group by score.

Updating: the new node links to the nodes retrieved for it. Each insight shown for the task
gains 1 when the task succeeded and loses 2 when it failed; insights start at 2 and are
dropped below 0, and beyond ``max_insights`` (40) the lowest scores (oldest first) go. When a
retrieved node's outcome differs from the new one, a refinement call (stage ``update``)
compares the solved task with the failed one and each ``INSIGHT:`` line of its reply becomes
a new insight linked to both; a reply with no such line adds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clstream.core import layout
from clstream.core.events import Feedback
from clstream.core.params import Param
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

INSIGHT_START = 2
INSIGHT_REWARD = 1
INSIGHT_PENALTY = 2


@dataclass
class Insight:
    text: str
    score: int
    sources: list[int]


@dataclass
class _Plan:
    """What was retrieved for one query, kept until its feedback arrives."""

    query_id: str
    retrieved: list[int]
    insights: list[int]  # indices into ``insights`` at answering time


def _is_index_list(value: Any, bound: int) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) and 0 <= v < bound for v in value)


class GMemory(ExperienceSystem):
    """Experience graph with scored insights (see the module docstring)."""

    name = "g-memory"
    summary = "an experience graph with insights scored by later outcomes"
    params = {
        "k": k_param(3, "nodes retrieved directly"),
        "success_k": Param(2, "successes shown", minimum=0),
        "failed_k": Param(1, "failures shown", minimum=0),
        "insights_k": Param(10, "insights shown", minimum=0),
        "max_insights": Param(40, "insights kept at most", minimum=1),
        "retriever": RETRIEVER_PARAM,
    }

    def _clear(self) -> None:
        self.nodes = self._pool()
        self.links: list[list[int]] = []
        self.insights: list[Insight] = []
        self._plan: _Plan | None = None

    # --- answering -----------------------------------------------------------------------

    def _retrieve(self, text: str) -> tuple[list[int], list[int], list[int]]:
        """(directly retrieved nodes, shown successes, shown failures)."""
        hits = self.nodes.similar(text, self.args["k"])
        score = {p: s for p, s in hits}
        expanded = list(score)
        for p, _ in hits:
            expanded += [n for n in self.links[p] if n not in expanded]
        ranked = sorted(expanded, key=lambda n: (-score.get(n, 0.0), -n))
        wins = [n for n in ranked if self.nodes.records[n].success][: self.args["success_k"]]
        losses = [n for n in ranked if not self.nodes.records[n].success][: self.args["failed_k"]]
        return [p for p, _ in hits], wins, losses

    def _pick_insights(self, around: set[int]) -> list[int]:
        order = sorted(range(len(self.insights)), key=lambda i: (
            not (set(self.insights[i].sources) & around), -self.insights[i].score, i))
        return order[: self.args["insights_k"]]

    async def _sections(self, query: Query, timings: dict[str, float],
                        results: list[GenerationResult]) -> list[str]:
        with self._timed(timings, "retrieve"):
            retrieved, wins, losses = self._retrieve(query.text)
            around = set(retrieved) | {n for p in retrieved for n in self.links[p]}
            chosen = self._pick_insights(around)
        self._plan = _Plan(query.id, retrieved, chosen)
        return [memory_prompts.list_section(memory_prompts.INSIGHTS_HEADER,
                                            [self.insights[i].text for i in chosen]),
                layout.experiences_section(self.nodes.experiences(wins)),
                layout.experiences_section(self.nodes.experiences(losses), layout.FAILED_EXPERIENCES_HEADER)]

    # --- updating ------------------------------------------------------------------------

    async def _update(self, fb: Feedback) -> list[GenerationResult]:
        plan = self._plan if self._plan and self._plan.query_id == fb.query_id else None
        self._plan = None
        if plan is None:  # feedback without a preceding answer from this memory
            retrieved, _, _ = self._retrieve(fb.query_text)
            plan = _Plan(fb.query_id, retrieved, [])
        record = ExperienceRecord.from_feedback(fb)
        node = self.nodes.add(record)
        self.links.append(list(plan.retrieved))
        delta = INSIGHT_REWARD if fb.success else -INSIGHT_PENALTY
        for i in plan.insights:
            self.insights[i].score += delta
        calls: list[GenerationResult] = []
        opposite = [n for n in plan.retrieved if self.nodes.records[n].success != fb.success]
        if opposite:
            other = self.nodes.records[opposite[0]]
            won, lost = (record, other) if fb.success else (other, record)
            prompt = memory_prompts.INSIGHT_PROMPT.format(
                insights=memory_prompts.numbered([x.text for x in self.insights]),
                succeeded=layout.experience_block(won.experience()),
                failed=layout.experience_block(lost.experience()))
            call = await self._update_call(f"{fb.query_id}/insights", prompt)
            calls.append(call)
            known = {x.text for x in self.insights}
            for text in memory_prompts.parse_insights(reply_text(call)):
                if text not in known:
                    known.add(text)
                    self.insights.append(Insight(text, INSIGHT_START, [node, opposite[0]]))
        self._prune()
        return calls

    def _prune(self) -> None:
        kept = [x for x in self.insights if x.score >= 0]
        while len(kept) > self.args["max_insights"]:
            kept.pop(min(range(len(kept)), key=lambda i: (kept[i].score, i)))
        self.insights = kept

    # --- snapshots -----------------------------------------------------------------------

    def _dump(self) -> dict[str, Any]:
        return {"nodes": self.nodes.to_json(), "links": [list(x) for x in self.links],
                "insights": [{"text": x.text, "score": x.score, "sources": list(x.sources)}
                             for x in self.insights]}

    def _load(self, memory: dict[str, Any]) -> None:
        self.nodes = ExperiencePool.from_json(memory.get("nodes"), "nodes",
                                              self.args["retriever"])
        n = len(self.nodes)
        links = memory.get("links")
        if not (isinstance(links, list) and len(links) == n
                and all(_is_index_list(x, n) for x in links)):
            raise snapshot_error("links", "expected one list of node positions per node")
        self.links = [list(x) for x in links]
        insights = memory.get("insights")
        if not (isinstance(insights, list) and all(
                isinstance(x, dict) and isinstance(x.get("text"), str)
                and isinstance(x.get("score"), int) and _is_index_list(x.get("sources"), n)
                for x in insights)):
            raise snapshot_error("insights", "expected {text: str, score: int, sources: [int]}")
        self.insights = [Insight(x["text"], x["score"], list(x["sources"])) for x in insights]
