"""An ACE-style playbook (docs/clbench.md §6; Agentic Context Engineering, as CL-Bench runs it:
reflector and curator after each instance, delta updates).

Memory: a playbook of bullets -- id (``b1``, ``b2``, ...), text, helpful and harmful counts --
the conversation of the instance in progress (turns as in
:mod:`clstream.systems.conversation`, cleared at each instance end), and the chunks and
documents read, kept as passages.

The playbook is kept in the authors' seven sections (:data:`~clstream.systems.conversation.prompts.
PLAYBOOK_SECTIONS`: strategies, formulas, code, mistakes, heuristics, clues, other). Answering
opens the conversation with the whole playbook -- each non-empty section under its heading,
its bullets ordered by helpful minus harmful (then more helpful, then older first) -- and shows
the ``k`` passages most similar to the query's text (tagged, in stream order) just before the
query's block. The system message asks the model to end its reply with a line ``Bullets used:
b1, b4``; that line is cut out of the reply before the protocol reads it (as the authors'
generator returns the ids in a field of its own) and the ids it names are the bullets the
instance used.

At each instance end (an observation with ``done=True``, final feedback):

1. the reflector call (stage ``update``) sees the bullets used in the instance and the
   instance's record -- every request, reply and outcome; for feedback also the verdict,
   never an environment's hidden reward -- and replies ``TAG <id>: helpful|harmful|neutral``
   and ``LESSON: ...`` lines. Each used bullet's first tag counts: helpful and harmful add one
   to that count, neutral nothing; tags of bullets not used are ignored;
2. when it gave lessons, the curator call (stage ``update``) sees the playbook, the request
   that opened the instance, the lessons, the sections and the token budget
   (``playbook_tokens``, the authors' 80k) with the playbook's current size, and replies
   ``ADD <section>: <bullet>`` lines (at most ``max_new``; an unknown or missing section is
   ``other``), each added to its section unless it nearly repeats one held (content-word
   Jaccard >= ``dedupe``) or would take the playbook past the budget. Bullets are never
   edited or removed (delta updates: additions and counts only). No lesson, no curator call.

A reply in no such line changes nothing. Chunks and documents never reach the reflector or
curator: they are kept as passages only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from clstream.core import layout
from clstream.core.events import Chunk, Document, Feedback, Observation
from clstream.core.params import Param
from clstream.core.types import GenerationResult, Query, Sample
from clstream.retrieval.hybrid import make_index
from clstream.systems.base import reply_text, snapshot_error
from clstream.systems.conversation import (
    BUDGET_PARAMS,
    Asked,
    EpisodeMethod,
    Turn,
    event_key,
    int_field,
)
from clstream.systems.conversation import prompts as conversation_prompts
from clstream.systems.passages import PassageStore

_WORD = re.compile(r"[^\W_]+")


SECTION_KEYS = tuple(key for key, _ in conversation_prompts.PLAYBOOK_SECTIONS)


@dataclass
class Bullet:
    id: str
    text: str
    helpful: int = 0
    harmful: int = 0
    section: str = "other"

    def line(self) -> str:
        return f"[{self.id}] (helpful {self.helpful}, harmful {self.harmful}) {self.text}"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "helpful": self.helpful,
                "harmful": self.harmful, "section": self.section}


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def near_duplicate(a: str, b: str, threshold: float) -> bool:
    """Whether two bullet texts share at least ``threshold`` of their words (Jaccard)."""
    wa, wb = _words(a), _words(b)
    if not wa or not wb:
        return a.strip().lower() == b.strip().lower()
    return len(wa & wb) / len(wa | wb) >= threshold


def trace_text(turns: list[Turn]) -> str:
    labels = {"user": conversation_prompts.TRACE_SHOWN_LABEL,
              "assistant": conversation_prompts.TRACE_REPLY_LABEL}
    return "\n\n".join(f"{labels[t.role]}\n{t.text.strip()}" for t in turns)


def clip_middle(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, its start and end kept (the question an opening
    request asks and the task line and format that close it)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    half = max(1, (limit - 5) // 2)
    return f"{text[:half].rstrip()}\n...\n{text[-half:].lstrip()}"


class Ace(EpisodeMethod):
    """A playbook of counted bullets grown by a reflector and a curator after each instance."""

    name = "ace"
    summary = "a playbook of counted bullets grown by a reflector and a curator per instance"
    params: ClassVar[dict[str, Param]] = {
        "playbook_tokens": Param(80_000, "token budget the curator keeps the playbook within "
                                 "(the authors' budget)", minimum=1),
        "k": Param(5, "passages (chunks, documents read) shown, most similar to the query",
                   minimum=1),
        "max_new": Param(10, "bullets one curator call may add", minimum=1),
        "dedupe": Param(0.8, "word Jaccard at or above which a new bullet repeats one held",
                        minimum=0.0),
        **BUDGET_PARAMS,
    }

    def _clear_method(self) -> None:
        self.bullets: list[Bullet] = []
        self.next_id = 1
        self.texts = PassageStore(lambda: make_index("bm25"))
        self.used: list[str] = []  # ids of the bullets the instance's replies said they used

    # --- answering -----------------------------------------------------------------------

    def _rules(self) -> str:
        return conversation_prompts.PLAYBOOK_RULES

    def ranked(self) -> list[Bullet]:
        """Bullets most helpful first: helpful - harmful, then helpful, then older first."""
        order = sorted(range(len(self.bullets)), key=lambda i: (
            -(self.bullets[i].helpful - self.bullets[i].harmful), -self.bullets[i].helpful, i))
        return [self.bullets[i] for i in order]

    def playbook_text(self) -> str:
        """The whole playbook as shown: each non-empty section under its heading, ranked."""
        ranked = self.ranked()
        parts = []
        for key, heading in conversation_prompts.PLAYBOOK_SECTIONS:
            lines = [b.line() for b in ranked if b.section == key]
            if lines:
                parts.append("\n".join([conversation_prompts.SECTION_TEMPLATE.format(
                    heading=heading, key=key), *lines]))
        return "\n".join(parts)

    def playbook_tokens(self) -> int:
        return self.model.tokenizer.count(self.playbook_text())

    def _head(self) -> list[str]:
        return [conversation_prompts.text_section(conversation_prompts.PLAYBOOK_HEADER,
                                                  self.playbook_text())]

    def _finish(self, result: GenerationResult) -> tuple[GenerationResult, str, str | None]:
        """Cut the ``Bullets used:`` line out of every sample; the first sample's ids are kept
        (comma-separated) as the reply's extra field."""
        if not result.ok or not result.samples:
            return result, "", None
        split = [conversation_prompts.split_bullets_used(s.text) for s in result.samples]
        samples = [Sample(text=answer, reasoning=s.reasoning, finish_reason=s.finish_reason)
                   for s, (answer, _) in zip(result.samples, split, strict=True)]
        answer, ids = split[0]
        return result.model_copy(update={"samples": samples}), answer, ",".join(ids)

    def _split_reply(self, text: str) -> tuple[str, str | None]:
        answer, ids = conversation_prompts.split_bullets_used(text)
        return answer, ",".join(ids)

    def _sections(self, query: Query) -> list[str]:
        positions = self.texts.similar(query.text, self.args["k"]) if self.texts else []
        return [layout.passages_section(self.texts.tagged(positions))] if positions else []

    # --- updating ------------------------------------------------------------------------

    async def _text(self, event: Chunk | Document) -> list[GenerationResult]:
        self.texts.observe(event)
        return []

    async def _after_step(self, event: Observation | Feedback, asked: Asked | None
                          ) -> list[GenerationResult]:
        extra = self._extra_of(event, asked)
        known = {b.id for b in self.bullets}
        for bullet_id in (extra or "").split(","):
            if bullet_id in known and bullet_id not in self.used:
                self.used.append(bullet_id)
        return []

    def cited(self) -> list[Bullet]:
        """The bullets the instance's replies said they used, in playbook order."""
        return [b for b in self.bullets if b.id in self.used]

    async def _at_end(self, event: Observation | Feedback) -> list[GenerationResult]:
        key = event_key(event)
        cited = self.cited()
        self.used = []
        outcome = ""
        if isinstance(event, Feedback):
            outcome = conversation_prompts.OUTCOME_TEMPLATE.format(
                outcome="correct" if event.success else "wrong")
        trace = self.model.tokenizer.truncate_left(
            trace_text(self.turns), max(1, (self.args["budget"] - self.args["reserve"]) // 2))
        prompt = conversation_prompts.REFLECT_PROMPT.format(
            bullets="\n".join(b.line() for b in cited) or "(none)", trace=trace,
            outcome=outcome)
        reflection = await self._update_call(f"{key}/reflect", prompt)
        reply = reply_text(reflection)
        by_id = {b.id: b for b in cited}
        for bullet_id, label in conversation_prompts.parse_tags(reply, by_id).items():
            if label == "helpful":
                by_id[bullet_id].helpful += 1
            elif label == "harmful":
                by_id[bullet_id].harmful += 1
        lessons = conversation_prompts.parse_lessons(reply)
        if not lessons:
            return [reflection]
        opening = next((t.text for t in self.turns if t.role == "user"), "")
        return [reflection, await self._curate(f"{key}/curate", lessons, opening)]

    async def _curate(self, key: str, lessons: list[str], opening: str) -> GenerationResult:
        budget = self.args["playbook_tokens"]
        prompt = conversation_prompts.CURATE_PROMPT.format(
            budget=budget, used=self.playbook_tokens(),
            sections=", ".join(f"{k} ({h})" for k, h in conversation_prompts.PLAYBOOK_SECTIONS),
            playbook=self.playbook_text() or "(empty)",
            context=clip_middle(opening, conversation_prompts.CONTEXT_CHARS) or "(none)",
            lessons="\n".join(f"- {x}" for x in lessons))
        call = await self._update_call(key, prompt)
        for section, text in conversation_prompts.parse_additions(reply_text(call),
                                                                  self.args["max_new"]):
            if any(near_duplicate(text, b.text, self.args["dedupe"]) for b in self.bullets):
                continue
            bullet = Bullet(f"b{self.next_id}", text, section=section)
            self.bullets.append(bullet)
            if self.playbook_tokens() > budget:  # past the budget: not added
                self.bullets.pop()
                continue
            self.next_id += 1
        return call

    # --- snapshots -----------------------------------------------------------------------

    def _dump(self) -> dict[str, Any]:
        return {"bullets": [b.to_json() for b in self.bullets], "next_id": self.next_id,
                "used": list(self.used), **self._dump_episode(), "texts": self.texts.to_json()}

    def _load(self, memory: dict[str, Any]) -> None:
        items = memory.get("bullets")

        def count_ok(value: Any) -> bool:
            return isinstance(value, int) and not isinstance(value, bool) and value >= 0

        if not isinstance(items, list) or not all(
                isinstance(b, dict) and isinstance(b.get("id"), str)
                and re.fullmatch(r"b\d+", b["id"]) is not None and isinstance(b.get("text"), str)
                and count_ok(b.get("helpful")) and count_ok(b.get("harmful"))
                and b.get("section") in SECTION_KEYS for b in items):
            raise snapshot_error("bullets", "expected a list of {id: 'b<n>', text: str, "
                                            "helpful: int, harmful: int, section: str}")
        self.bullets = [Bullet(b["id"], b["text"], b["helpful"], b["harmful"], b["section"])
                        for b in items]
        used = memory.get("used")
        if not isinstance(used, list) or not all(isinstance(u, str) for u in used):
            raise snapshot_error("used", "expected a list of bullet ids")
        self.used = list(used)
        self.next_id = int_field(memory, "next_id", minimum=1)
        if any(int(b.id[1:]) >= self.next_id for b in self.bullets):
            raise snapshot_error("next_id", "must exceed every bullet number")
        self._load_episode(memory)
        self.texts.load(memory.get("texts", []), "texts")
