"""ExpeL refactored for sequential memory: single-try and multi-try (SeqMem-Eval App. D,
Alg. 3-4; docs/seqmem.md §6).

Memory: a pool of solved tasks, the solved tasks since the last rule update, and at most
``max_rules`` (20) numbered rules with importance counts. Answers show the rules and the k (3)
solved tasks most similar to the task. Success always comes from the evaluator's score.

Rule updates are one model call (stage ``update``) whose reply lists operations, one per line:
``ADD: <rule>``, ``EDIT <n>: <rule>``, ``REMOVE <n>``, ``AGREE <n>``, numbers referring to the
rules as the prompt listed them. Importance counts follow ExpeL: an added rule starts at 2,
AGREE and EDIT add 1, REMOVE takes 1 away, a rule at 0 is dropped, and past ``max_rules`` the
least important rules (oldest first) go. Lines in any other form are ignored, so a reply with
no valid operation leaves the rules unchanged.

``expel-st`` (k=3, batch=8, max_rules=20): every ``batch`` successes (the paper's step size L)
a batch update compares them with the rules.

``expel-mt`` (tries=3, plus the same arguments): up to ``tries`` attempts per task online
(``max_tries``, read by the runner). After a failed attempt that is not the last, a reflection
call (``REFLECTION:`` line) is kept for the next attempt; when the reply has no reflection the
failed attempt and its feedback stand in for it. A task solved after a failure triggers a
pairwise rule update (failed vs successful attempt), and the batch update runs as in
``expel-st``. Reflections live only within the task: snapshots, taken between tasks, never
hold them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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

NEW_RULE_IMPORTANCE = 2


@dataclass
class Rule:
    text: str
    importance: int


def apply_rule_ops(rules: list[Rule], ops: list[memory_prompts.RuleOp],
                   max_rules: int) -> list[Rule]:
    """The rules after ``ops`` (rules in the module docstring); the input is not modified."""
    current = [Rule(r.text, r.importance) for r in rules]
    numbered = {i + 1: rule for i, rule in enumerate(current)}
    for op in ops:
        if op.op == "ADD":
            if all(r.text != op.text for r in current):
                current.append(Rule(op.text, NEW_RULE_IMPORTANCE))
            continue
        rule = numbered.get(op.number or 0)
        if rule is None:
            continue
        if op.op == "EDIT":
            rule.text, rule.importance = op.text, rule.importance + 1
        elif op.op == "AGREE":
            rule.importance += 1
        elif op.op == "REMOVE":
            rule.importance -= 1
    alive = [r for r in current if r.importance > 0]
    while len(alive) > max_rules:
        weakest = min(range(len(alive)), key=lambda i: (alive[i].importance, i))
        alive.pop(weakest)
    return alive


@dataclass
class _Attempt:
    record: ExperienceRecord
    reflection: str | None


@dataclass
class _TaskScratch:
    task_id: str
    failed: list[_Attempt] = field(default_factory=list)


class ExpelSt(ExperienceSystem):
    """ExpeL, single try (see the module docstring)."""

    name = "expel-st"
    summary = "rules distilled from batches of solved tasks, shown with similar successes"
    params = {
        "k": k_param(3, "similar solved tasks shown"),
        "batch": Param(8, "successes gathered between rule updates (L)", minimum=1),
        "max_rules": Param(20, "rules kept at most", minimum=1),
        "retriever": RETRIEVER_PARAM,
    }

    def _clear(self) -> None:
        self.solved = self._pool()
        self.recent: list[int] = []  # positions in ``solved`` since the last batch update
        self.rules: list[Rule] = []
        self._scratch: _TaskScratch | None = None

    # --- answering -----------------------------------------------------------------------

    async def _sections(self, query: Query, timings: dict[str, float],
                        results: list[GenerationResult]) -> list[str]:
        with self._timed(timings, "retrieve"):
            hits = self.solved.similar(query.text, self.args["k"])
        sections = [memory_prompts.list_section(memory_prompts.RULES_HEADER,
                                                [r.text for r in self.rules]),
                    layout.experiences_section(self.solved.experiences([p for p, _ in hits]))]
        return sections + self._retry_sections(query)

    def _retry_sections(self, query: Query) -> list[str]:
        return []

    # --- updating ------------------------------------------------------------------------

    async def _rule_update(self, key: str, prompt: str) -> GenerationResult:
        call = await self._update_call(key, prompt)
        ops = memory_prompts.parse_rule_ops(reply_text(call))
        if ops:
            self.rules = apply_rule_ops(self.rules, ops, self.args["max_rules"])
        return call

    def _rules_text(self) -> str:
        return memory_prompts.numbered([r.text for r in self.rules])

    async def _solved(self, record: ExperienceRecord, key: str) -> list[GenerationResult]:
        """Add a solved task; run the batch update when ``batch`` have gathered."""
        self.recent.append(self.solved.add(record))
        if len(self.recent) < self.args["batch"]:
            return []
        examples = "\n".join(layout.experience_block(e) for e in self.solved.experiences(self.recent))
        prompt = memory_prompts.RULES_BATCH_PROMPT.format(
            max_rules=self.args["max_rules"], rules=self._rules_text(), examples=examples)
        self.recent = []
        return [await self._rule_update(f"{key}/batch-rules", prompt)]

    async def _update(self, fb: Feedback) -> list[GenerationResult]:
        if not fb.success:
            return []
        return await self._solved(ExperienceRecord.from_feedback(fb), fb.query_id)

    # --- snapshots -----------------------------------------------------------------------

    def _dump(self) -> dict[str, Any]:
        return {"solved": self.solved.to_json(), "recent": list(self.recent),
                "rules": [{"text": r.text, "importance": r.importance} for r in self.rules]}

    def _load(self, memory: dict[str, Any]) -> None:
        self.solved = ExperiencePool.from_json(memory.get("solved"), "solved",
                                               self.args["retriever"])
        recent = memory.get("recent")
        if not (isinstance(recent, list) and all(
                isinstance(p, int) and not isinstance(p, bool) and 0 <= p < len(self.solved)
                for p in recent)):
            raise snapshot_error("recent", "expected positions of solved tasks")
        self.recent = list(recent)
        rules = memory.get("rules")
        if not (isinstance(rules, list) and all(
                isinstance(r, dict) and isinstance(r.get("text"), str)
                and isinstance(r.get("importance"), int) for r in rules)):
            raise snapshot_error("rules", "expected a list of {text: str, importance: int}")
        self.rules = [Rule(r["text"], r["importance"]) for r in rules]


class ExpelMt(ExpelSt):
    """ExpeL, multiple tries with reflection (see the module docstring)."""

    name = "expel-mt"
    summary = "ExpeL with up to `tries` attempts per task, reflecting after each failure"
    params = {**ExpelSt.params, "tries": Param(3, "attempts per task online (Z)", minimum=1)}

    def _configure(self) -> None:
        self.max_tries = self.args["tries"]

    def _retry_sections(self, query: Query) -> list[str]:
        scratch = self._scratch
        attempt = int(query.meta.get("attempt", 1))
        if attempt <= 1 or scratch is None or scratch.task_id != query.meta.get("task_id"):
            return []
        notes = [a.reflection for a in scratch.failed if a.reflection]
        raw = [a.record.experience() for a in scratch.failed if not a.reflection]
        return [memory_prompts.list_section(memory_prompts.REFLECTIONS_HEADER, notes),
                layout.experiences_section(raw, layout.FAILED_EXPERIENCES_HEADER)]

    async def _update(self, fb: Feedback) -> list[GenerationResult]:
        task_id = str(fb.meta.get("task_id", fb.query_id))
        final = bool(fb.meta.get("final", True))
        if self._scratch is None or self._scratch.task_id != task_id:
            self._scratch = _TaskScratch(task_id)
        record = ExperienceRecord.from_feedback(fb)
        calls: list[GenerationResult] = []
        if not fb.success:
            reflection = None
            if not final:
                prompt = memory_prompts.REFLECTION_PROMPT.format(
                    attempt=layout.experience_block(record.experience()))
                call = await self._update_call(f"{fb.query_id}/reflect", prompt)
                calls.append(call)
                reflection = memory_prompts.parse_reflection(reply_text(call))
            self._scratch.failed.append(_Attempt(record, reflection))
        if not final:
            return calls
        failed = self._scratch.failed
        self._scratch = None
        if not fb.success:
            return calls
        if failed:
            prompt = memory_prompts.RULES_PAIR_PROMPT.format(
                max_rules=self.args["max_rules"], rules=self._rules_text(),
                failed=layout.experience_block(failed[-1].record.experience()),
                succeeded=layout.experience_block(record.experience()))
            calls.append(await self._rule_update(f"{fb.query_id}/pair-rules", prompt))
        return calls + await self._solved(record, fb.query_id)
