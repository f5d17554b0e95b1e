"""An ACE-style playbook (docs/clbench.md §6; Agentic Context Engineering, as CL-Bench runs it:
reflector and curator after each instance, delta updates).

Memory: a playbook of bullets -- id (``b1``, ``b2``, ...), text, helpful and harmful counts --
the conversation of the instance in progress (turns as in
:mod:`clstream.systems.conversation`, cleared at each instance end), and the chunks and
documents read, kept as passages.

The playbook is kept in the authors' seven sections (:data:`PLAYBOOK_SECTIONS`: strategies, formulas, code, mistakes, heuristics, clues, other). Answering
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

The builtin model's replies to these prompts are here too (:func:`builtin_replier`, registered
under the registry kind ``"builtin_reply"`` as ``ace``; docs/clbench.md §6), for tasks whose
builtin policy keeps notes: to an action prompt (the playbook rules), the action taken from the
playbook's bullets, oldest first, with the bullets holding notes named on the ``Bullets used:``
line; to the reflector, ``LESSON:`` lines from the notes of the instance's record, each used
bullet tagged helpful when a lesson shares its subject, else neutral; to the curator, each
lesson not held word for word added to the ``clues`` section. The task is read from the prompt
(an action block's task line; the opening request the curator is shown).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from clstream.core import layout
from clstream.core.environment import NoteTaker, note_key
from clstream.core.environment import Turn as Step
from clstream.core.events import Chunk, Document, Feedback, Observation
from clstream.core.params import Param
from clstream.core.registry import BuiltinReply, PolicyLookup
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
from clstream.systems.conversation.builtin_replies import (
    RESULT_HEAD,
    NoteReplies,
    UpdateHandler,
    action_json,
    between,
    feedback_of,
    prefix,
)
from clstream.systems.conversation.prompts import text_section
from clstream.systems.passages import PassageStore

# --- prompts ---------------------------------------------------------------------------------

PLAYBOOK_SECTIONS = (
    ("strategies", "Strategies and insights"),
    ("formulas", "Formulas and calculations"),
    ("code", "Code snippets and templates"),
    ("mistakes", "Mistakes to avoid"),
    ("heuristics", "Problem-solving heuristics"),
    ("clues", "Clues and indicators to look for"),
    ("other", "Other"),
)
"""(key, heading) of the playbook's sections, in the order shown; the curator names the key."""
SECTION_TEMPLATE = "## {heading} ({key})"
PLAYBOOK_HEADER = (
    "Playbook learned from earlier instances, by section (each bullet with its id and how "
    "often it helped or misled):"
)
BULLETS_USED_LABEL = "Bullets used:"
PLAYBOOK_RULES = (
    "A playbook of bullets learned from earlier instances may be shown before the current "
    "request. End your reply with one line naming the ids of the bullets that guided it, "
    "such as 'Bullets used: b1, b4' (or 'Bullets used: none'); that line is taken out before "
    "your reply is read, and it lets the usefulness of each bullet be tracked."
)

REFLECT_PROMPT = (
    "The agent has just finished one instance of its work. Below are the playbook bullets it "
    "said it used and the record of the instance: what it was shown, what it replied and what "
    "came back.\n\nBullets the agent used:\n{bullets}\n\nRecord of the instance:\n{trace}\n\n"
    "{outcome}Judge each bullet used: did it help here, did it mislead, or did it not "
    "matter? Then state what this instance teaches that would help in later instances: "
    "general strategies, how the environment behaves, mistakes to avoid -- not the details "
    "of this one instance.\n\n"
    "Reply only with lines of these forms:\nTAG <bullet id>: helpful | harmful | neutral\n"
    "LESSON: <one lesson>"
)
TRACE_SHOWN_LABEL = "[Shown to the agent]"
TRACE_REPLY_LABEL = "[The agent replied]"
OUTCOME_TEMPLATE = "The evaluator judged the final answer {outcome}.\n\n"

CURATE_PROMPT = (
    "You curate the playbook of an agent: short, reusable bullets that help it in later "
    "instances of its work, kept in sections. Below are the current playbook, the request "
    "that opened the instance just finished, and the lessons drawn from it. Add a bullet only "
    "for a lesson the playbook does not already cover; make each bullet one self-contained, "
    "actionable statement, and place it in the section it fits. Existing bullets stay as "
    "they are. The playbook may hold at most {budget} tokens and holds {used} now; bullets "
    "that would take it past that are not added.\n\nSections: {sections}\n\n"
    "Current playbook:\n{playbook}\n\nRequest that opened the instance:\n{context}\n\n"
    "Lessons from the last instance:\n{lessons}\n\n"
    "Reply with one line per new bullet, in the form\nADD <section>: <bullet text>\n"
    "or with the single line NONE when nothing needs adding."
)
CONTEXT_CHARS = 4000  # clip of the request shown to the curator


# --- parsing the replies -----------------------------------------------------------------------

_BULLETS_USED = re.compile(r"^[ \t]*(?:[-*][ \t]*)?Bullets used[ \t]*:[ \t]*(.*?)[ \t]*$",
                           re.IGNORECASE | re.MULTILINE)
_BULLET = re.compile(r"\bb\d+\b")


def split_bullets_used(reply: str) -> tuple[str, list[str]]:
    """(the reply without its ``Bullets used:`` lines, the bullet ids they name, in order).

    Every such line is cut out; the last one names the bullets (``none`` or no id: none).
    """
    lines = list(_BULLETS_USED.finditer(reply))
    if not lines:
        return reply, []
    ids = list(dict.fromkeys(_BULLET.findall(lines[-1].group(1).lower())))
    rest = re.sub(r"\n{3,}", "\n\n", _BULLETS_USED.sub("", reply)).strip()
    return rest, ids


_TAG = re.compile(
    r"^[ \t]*(?:[-*][ \t]*)?TAG[ \t]+\[?(b\d+)\]?[ \t]*[:=\-]?[ \t]*(helpful|harmful|neutral)"
    r"[ \t.]*$",
    re.IGNORECASE | re.MULTILINE,
)
_LESSON = re.compile(r"^[ \t]*(?:[-*][ \t]*|\d+[.)][ \t]*)?LESSON[ \t]*:[ \t]*(\S.*?)[ \t]*$",
                     re.IGNORECASE | re.MULTILINE)
_ADD = re.compile(r"^[ \t]*(?:[-*][ \t]*|\d+[.)][ \t]*)?ADD(?:[ \t]+\(?([A-Za-z]+)\)?)?[ \t]*:"
                  r"[ \t]*(\S.*?)[ \t]*$", re.MULTILINE)


def parse_tags(text: str, allowed: Iterable[str]) -> dict[str, str]:
    """Bullet id -> helpful | harmful | neutral, for ids in ``allowed``; a bullet tagged twice
    keeps its first tag."""
    ok = set(allowed)
    tags: dict[str, str] = {}
    for m in _TAG.finditer(text):
        bullet, label = m.group(1).lower(), m.group(2).lower()
        if bullet in ok and bullet not in tags:
            tags[bullet] = label
    return tags


def parse_lessons(text: str) -> list[str]:
    out: list[str] = []
    for m in _LESSON.finditer(text):
        lesson = " ".join(m.group(1).split())
        if lesson not in out:
            out.append(lesson)
    return out


def parse_additions(text: str, limit: int) -> list[tuple[str, str]]:
    """(section key, text) of the ``ADD <section>: <text>`` lines of a curator reply
    (upper-case keyword), in order, at most ``limit``; a missing or unknown section is
    ``other``."""
    keys = {key for key, _ in PLAYBOOK_SECTIONS}
    out = []
    for m in _ADD.finditer(text):
        section = (m.group(1) or "").lower()
        out.append((section if section in keys else "other", " ".join(m.group(2).split())))
    return out[:limit]

_WORD = re.compile(r"[^\W_]+")


SECTION_KEYS = tuple(key for key, _ in PLAYBOOK_SECTIONS)


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
    labels = {"user": TRACE_SHOWN_LABEL,
              "assistant": TRACE_REPLY_LABEL}
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
    templates: ClassVar[dict[str, object]] = {
        "PLAYBOOK_SECTIONS": PLAYBOOK_SECTIONS, "SECTION_TEMPLATE": SECTION_TEMPLATE,
        "PLAYBOOK_HEADER": PLAYBOOK_HEADER, "BULLETS_USED_LABEL": BULLETS_USED_LABEL,
        "PLAYBOOK_RULES": PLAYBOOK_RULES, "REFLECT_PROMPT": REFLECT_PROMPT,
        "TRACE_SHOWN_LABEL": TRACE_SHOWN_LABEL, "TRACE_REPLY_LABEL": TRACE_REPLY_LABEL,
        "OUTCOME_TEMPLATE": OUTCOME_TEMPLATE, "CURATE_PROMPT": CURATE_PROMPT,
        "CONTEXT_CHARS": CONTEXT_CHARS}

    def _clear_method(self) -> None:
        self.bullets: list[Bullet] = []
        self.next_id = 1
        self.texts = PassageStore(lambda: make_index("bm25"))
        self.used: list[str] = []  # ids of the bullets the instance's replies said they used

    # --- answering -----------------------------------------------------------------------

    def _rules(self) -> str:
        return PLAYBOOK_RULES

    def ranked(self) -> list[Bullet]:
        """Bullets most helpful first: helpful - harmful, then helpful, then older first."""
        order = sorted(range(len(self.bullets)), key=lambda i: (
            -(self.bullets[i].helpful - self.bullets[i].harmful), -self.bullets[i].helpful, i))
        return [self.bullets[i] for i in order]

    def playbook_text(self) -> str:
        """The whole playbook as shown: each non-empty section under its heading, ranked."""
        ranked = self.ranked()
        parts = []
        for key, heading in PLAYBOOK_SECTIONS:
            lines = [b.line() for b in ranked if b.section == key]
            if lines:
                parts.append("\n".join([SECTION_TEMPLATE.format(
                    heading=heading, key=key), *lines]))
        return "\n".join(parts)

    def playbook_tokens(self) -> int:
        return self.model.tokenizer.count(self.playbook_text())

    def _head(self) -> list[str]:
        return [text_section(PLAYBOOK_HEADER, self.playbook_text())]

    def _finish(self, result: GenerationResult) -> tuple[GenerationResult, str, str | None]:
        """Cut the ``Bullets used:`` line out of every sample; the first sample's ids are kept
        (comma-separated) as the reply's extra field."""
        if not result.ok or not result.samples:
            return result, "", None
        split = [split_bullets_used(s.text) for s in result.samples]
        samples = [Sample(text=answer, reasoning=s.reasoning, finish_reason=s.finish_reason)
                   for s, (answer, _) in zip(result.samples, split, strict=True)]
        answer, ids = split[0]
        return result.model_copy(update={"samples": samples}), answer, ",".join(ids)

    def _split_reply(self, text: str) -> tuple[str, str | None]:
        answer, ids = split_bullets_used(text)
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
            outcome = OUTCOME_TEMPLATE.format(
                outcome="correct" if event.success else "wrong")
        trace = self.model.tokenizer.truncate_left(
            trace_text(self.turns), max(1, (self.args["budget"] - self.args["reserve"]) // 2))
        prompt = REFLECT_PROMPT.format(
            bullets="\n".join(b.line() for b in cited) or "(none)", trace=trace,
            outcome=outcome)
        reflection = await self._update_call(f"{key}/reflect", prompt)
        reply = reply_text(reflection)
        by_id = {b.id: b for b in cited}
        for bullet_id, label in parse_tags(reply, by_id).items():
            if label == "helpful":
                by_id[bullet_id].helpful += 1
            elif label == "harmful":
                by_id[bullet_id].harmful += 1
        lessons = parse_lessons(reply)
        if not lessons:
            return [reflection]
        opening = next((t.text for t in self.turns if t.role == "user"), "")
        return [reflection, await self._curate(f"{key}/curate", lessons, opening)]

    async def _curate(self, key: str, lessons: list[str], opening: str) -> GenerationResult:
        budget = self.args["playbook_tokens"]
        prompt = CURATE_PROMPT.format(
            budget=budget, used=self.playbook_tokens(),
            sections=", ".join(f"{k} ({h})" for k, h in PLAYBOOK_SECTIONS),
            playbook=self.playbook_text() or "(empty)",
            context=clip_middle(opening, CONTEXT_CHARS) or "(none)",
            lessons="\n".join(f"- {x}" for x in lessons))
        call = await self._update_call(key, prompt)
        for section, text in parse_additions(reply_text(call), self.args["max_new"]):
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


# --- the builtin model's replies (module docstring) ------------------------------------------

_BULLET_LINE = re.compile(r"^\[(b(\d+))\] \(helpful \d+, harmful \d+\) (.+)$", re.MULTILINE)
_TASK_LINE = re.compile(rf"^{re.escape(layout.ACTION_TASK_LABEL)} ([a-z][a-z0-9_+\-]*)$",
                        re.MULTILINE)
_OUTCOME_LINE = re.compile(r"\n\nThe evaluator judged the final answer \w+\.$")
_TRACE_LABEL = re.compile(
    rf"(?:^|\n\n)({re.escape(TRACE_SHOWN_LABEL)}|{re.escape(TRACE_REPLY_LABEL)})\n")


def builtin_replier(policy_of: PolicyLookup) -> BuiltinReply:
    """The registered replier: :class:`AceReplies` over the builtin model's policies."""
    return AceReplies(policy_of).reply


class AceReplies(NoteReplies):
    """The builtin model's replies to ace's prompts (module docstring); None for every other
    request."""

    def update_handlers(self) -> dict[str, UpdateHandler]:
        return {prefix(REFLECT_PROMPT, "bullets"): self._reflect,
                prefix(CURATE_PROMPT, "budget"): self._curate}

    def claims_action(self, system: str, memory: str) -> bool:
        return PLAYBOOK_RULES in system

    def act(self, policy: NoteTaker, body: str, memory: str, turns: list[Step],
            observation: str) -> str:
        bullets = sorted((int(m.group(2)), m.group(1), m.group(3))
                         for m in _BULLET_LINE.finditer(body))
        action = policy.act_from_notes([text for _, _, text in bullets], turns, observation)
        used = [bullet_id for _, bullet_id, text in bullets if note_key(text) is not None]
        return (f"{action_json(action)}\n{BULLETS_USED_LABEL} "
                + (", ".join(used) if used else "none"))

    def _reflect(self, prompt: str) -> str | None:
        cited = between(prompt, "Bullets the agent used:\n", "\n\nRecord of the instance:\n")
        judge = REFLECT_PROMPT.partition("{outcome}")[2][:40]
        trace = between(prompt, "Record of the instance:\n", "\n\n" + judge)
        if cited is None or trace is None:
            return None
        entries = _trace_entries(_OUTCOME_LINE.sub("", trace))
        steps: list[Step] = []
        task = None
        for n, (label, text) in enumerate(entries):
            if label != TRACE_REPLY_LABEL or n == 0:
                continue
            parsed = layout.parse_action_block(layout.split_prompt(entries[n - 1][1])[1])
            if parsed is None:
                continue
            task = task or parsed[0]
            after = entries[n + 1][1] if n + 1 < len(entries) else ""
            feedback = feedback_of(after) if after.startswith(RESULT_HEAD) else ""
            steps.append(Step(parsed[1], text, feedback))
        policy = self.taker(task) if task is not None else None
        if policy is None:
            return None
        lessons = policy.notes(steps)
        subjects = {note_key(n) for n in lessons}
        tags = [f"TAG {m.group(1)}: "
                + ("helpful" if note_key(m.group(3)) in subjects else "neutral")
                for m in _BULLET_LINE.finditer(cited)]
        return "\n".join([*tags, *(f"LESSON: {n}" for n in lessons)]) or "NONE"

    def _curate(self, prompt: str) -> str | None:
        context = between(prompt, "Request that opened the instance:\n",
                          "\n\nLessons from the last instance:\n")
        lessons = between(prompt, "Lessons from the last instance:\n",
                          "\n\nReply with one line per new bullet")
        found = _TASK_LINE.findall(context or "")
        policy = self.taker(found[-1]) if found else None
        if policy is None or lessons is None:
            return None
        held = {m.group(3) for m in _BULLET_LINE.finditer(prompt)}
        adds = [f"ADD clues: {line[2:]}" for line in lessons.split("\n")
                if line.startswith("- ") and note_key(line[2:]) is not None
                and line[2:] not in held]
        return "\n".join(adds) or "NONE"


def _trace_entries(trace: str) -> list[tuple[str, str]]:
    """(label, text) of each entry of an instance record, in order."""
    marks = list(_TRACE_LABEL.finditer(trace))
    return [(m.group(1), trace[m.end():marks[n + 1].start() if n + 1 < len(marks)
                               else len(trace)].strip())
            for n, m in enumerate(marks)]
