"""An ACE-style playbook (docs/clbench.md §6; Agentic Context Engineering, as CL-Bench runs it:
reflector and curator after each instance, delta updates).

Memory: a playbook of bullets -- id (``b1``, ``b2``, ...), text, helpful and harmful counts --
the conversation of the instance in progress (turns as in
:mod:`clstream.systems.conversation`, cleared at each instance end), and the chunks and
documents read, kept as passages.

Answering opens the conversation with the playbook -- bullets ordered by helpful minus harmful
(then more helpful, then older first), taken in that order while they fit ``playbook_tokens``
-- and shows the ``k`` passages most similar to the query's text (tagged, in stream order)
just before the query's block. The system message asks the model to cite the bullets it uses
by id (``[b3]``).

At each instance end (an observation with ``done=True``, final feedback):

1. the reflector call (stage ``update``) sees the bullets cited in the instance's replies and
   the instance's record -- every request, reply and outcome; for feedback also the verdict,
   never an environment's hidden reward -- and replies ``TAG <id>: helpful|harmful|neutral``
   and ``LESSON: ...`` lines. Each cited bullet's first tag counts: helpful and harmful add one
   to that count, neutral nothing; tags of bullets not cited are ignored;
2. when it gave lessons, the curator call (stage ``update``) sees the playbook and the lessons
   and replies ``ADD: <bullet>`` lines (at most ``max_new``), each added as a new bullet unless
   it nearly repeats one held (content-word Jaccard >= ``dedupe``). Bullets are never edited or
   removed (delta updates: additions and counts only). No lesson, no curator call.

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
from clstream.core.types import GenerationResult, Query
from clstream.retrieval.hybrid import make_index
from clstream.systems import conversation_prompts
from clstream.systems.base import reply_text, snapshot_error
from clstream.systems.conversation import (
    BUDGET_PARAMS,
    EpisodeMethod,
    Turn,
    event_key,
    int_field,
)
from clstream.systems.passages import PassageStore

_WORD = re.compile(r"[^\W_]+")


@dataclass
class Bullet:
    id: str
    text: str
    helpful: int = 0
    harmful: int = 0

    def line(self) -> str:
        return f"[{self.id}] (helpful {self.helpful}, harmful {self.harmful}) {self.text}"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "helpful": self.helpful,
                "harmful": self.harmful}


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def near_duplicate(a: str, b: str, threshold: float) -> bool:
    """Whether two bullet texts share at least ``threshold`` of their words (Jaccard)."""
    wa, wb = _words(a), _words(b)
    if not wa or not wb:
        return a.strip().lower() == b.strip().lower()
    return len(wa & wb) / len(wa | wb) >= threshold


def trace_text(turns: list[Turn]) -> str:
    labels = {"user": "Shown to the agent", "assistant": "The agent replied"}
    return "\n\n".join(f"[{labels[t.role]}]\n{t.text.strip()}" for t in turns)


class Ace(EpisodeMethod):
    """A playbook of counted bullets grown by a reflector and a curator after each instance."""

    name = "ace"
    summary = "a playbook of counted bullets grown by a reflector and a curator per instance"
    params: ClassVar[dict[str, Param]] = {
        "playbook_tokens": Param(80_000, "token cap of the playbook shown (the authors' budget)",
                                 minimum=1),
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

    # --- answering -----------------------------------------------------------------------

    def _rules(self) -> str:
        return conversation_prompts.PLAYBOOK_RULES

    def ranked(self) -> list[Bullet]:
        """Bullets most helpful first: helpful - harmful, then helpful, then older first."""
        order = sorted(range(len(self.bullets)), key=lambda i: (
            -(self.bullets[i].helpful - self.bullets[i].harmful), -self.bullets[i].helpful, i))
        return [self.bullets[i] for i in order]

    def shown(self) -> list[Bullet]:
        """The ranked bullets that fit ``playbook_tokens``, in rank order."""
        count = self.model.tokenizer.count
        room, out = self.args["playbook_tokens"] - count(conversation_prompts.PLAYBOOK_HEADER), []
        for bullet in self.ranked():
            cost = count(bullet.line())
            if cost > room:
                break
            out.append(bullet)
            room -= cost
        return out

    def _head(self) -> list[str]:
        return [conversation_prompts.section(conversation_prompts.PLAYBOOK_HEADER,
                                             (b.line() for b in self.shown()))]

    def _sections(self, query: Query) -> list[str]:
        positions = self.texts.similar(query.text, self.args["k"]) if self.texts else []
        return [layout.passages_section(self.texts.tagged(positions))] if positions else []

    # --- updating ------------------------------------------------------------------------

    async def _text(self, event: Chunk | Document) -> list[GenerationResult]:
        self.texts.observe(event)
        return []

    def cited(self, turns: list[Turn]) -> list[Bullet]:
        """Bullets cited by id in the replies of ``turns``, in playbook order."""
        ids = {m for t in turns if t.role == "assistant"
               for m in conversation_prompts.BULLET_ID.findall(t.text)}
        return [b for b in self.bullets if b.id in ids]

    async def _at_end(self, event: Observation | Feedback) -> list[GenerationResult]:
        key = event_key(event)
        cited = self.cited(self.turns)
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
        return [reflection, await self._curate(f"{key}/curate", lessons)]

    async def _curate(self, key: str, lessons: list[str]) -> GenerationResult:
        playbook = "\n".join(b.line() for b in self.shown()) or "(empty)"
        prompt = conversation_prompts.CURATE_PROMPT.format(
            playbook=playbook, lessons="\n".join(f"- {x}" for x in lessons))
        call = await self._update_call(key, prompt)
        for text in conversation_prompts.parse_additions(reply_text(call), self.args["max_new"]):
            if not any(near_duplicate(text, b.text, self.args["dedupe"]) for b in self.bullets):
                self.bullets.append(Bullet(f"b{self.next_id}", text))
                self.next_id += 1
        return call

    # --- snapshots -----------------------------------------------------------------------

    def _dump(self) -> dict[str, Any]:
        return {"bullets": [b.to_json() for b in self.bullets], "next_id": self.next_id,
                **self._dump_episode(), "texts": self.texts.to_json()}

    def _load(self, memory: dict[str, Any]) -> None:
        items = memory.get("bullets")

        def count_ok(value: Any) -> bool:
            return isinstance(value, int) and not isinstance(value, bool) and value >= 0

        if not isinstance(items, list) or not all(
                isinstance(b, dict) and isinstance(b.get("id"), str)
                and re.fullmatch(r"b\d+", b["id"]) is not None and isinstance(b.get("text"), str)
                and count_ok(b.get("helpful")) and count_ok(b.get("harmful")) for b in items):
            raise snapshot_error("bullets", "expected a list of {id: 'b<n>', text: str, "
                                            "helpful: int, harmful: int}")
        self.bullets = [Bullet(b["id"], b["text"], b["helpful"], b["harmful"]) for b in items]
        self.next_id = int_field(memory, "next_id", minimum=1)
        if any(int(b.id[1:]) >= self.next_id for b in self.bullets):
            raise snapshot_error("next_id", "must exceed every bullet number")
        self._load_episode(memory)
        self.texts.load(memory.get("texts", []), "texts")
