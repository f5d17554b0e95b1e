"""What the conversation-style memory methods share (docs/clbench.md §6: ``icl``, ``notepad``,
``mem0``, ``ace``): a transcript of turns, the scratch that carries an answer from ``respond`` to
the ``observe`` of its outcome, request assembly under a token budget, timings and JSON
snapshots (model calls with per-request seeds and stage tags are every method's:
:class:`clstream.systems.base.MemorySystem`).

Turns. Memory may hold a transcript: alternating user and assistant turns as the model saw and
wrote them. Events become turns as follows:

* an :class:`Observation` (the outcome of an action): the step's request block (user), the
  action taken (assistant: the event's ``action`` -- what the environment received -- else
  the reply given), then the environment's words (user), with a line saying so when the
  instance is complete. The reward is never shown: an environment that reports a score says
  so in its own words. With no reply waiting (below), the event's ``query`` stands in for
  the request block;
* :class:`Feedback` (the verdict on a task): the task block (user), the answer judged
  (assistant), then the verdict (user) as an experience block of the layout -- the task's
  first line, the answer's final line, correct or wrong, the evaluator's message -- so that
  every reader finds the outcome where memory methods put it;
* a :class:`Chunk` or :class:`Document`: one user turn holding the text as a tagged passage
  (``[chunk index i]``; a document gets a running index), the format every reader of
  :mod:`clstream.core.layout` knows.

``respond`` never changes memory, so the reply to a step enters memory only when ``observe``
receives that step's outcome. Until then it waits in a transient scratch keyed by query id
(never in snapshots); ``observe`` takes the entry it needs and drops the rest, so replies to
probes (which are never reported back) never reach memory. Feedback is matched by query id; an
observation takes the latest reply to a query of the same instance (``meta["instance_id"]``),
else the latest reply to a query that names no instance. An outcome with no reply waiting (a
restored system, a runner that reports an outcome it did not ask for) falls back on what the
event carries: an observation's ``query`` and ``action`` (the outcome turn alone when both are
empty), feedback's task text and answer. A repaired step (the same instance asked again) is
kept as its last exchange.

Requests. One request per query: a system message (the query's instructions plus any rules of
the method), the transcript as messages -- consecutive turns of one role merged into one
message, so roles alternate as every chat template wants -- and last a user message holding
the method's memory sections for this query and then the query's block. Memory that does not
depend on the query (a notepad, a playbook) may instead open the conversation, at the start of
its first user message, so each later step's outcome reads on its own (as
:func:`clstream.core.layout.transcript_steps` reads a conversation back). When the whole would
exceed ``budget - reserve`` tokens (counted with the model's tokenizer), the oldest turns are
left out first; a leading assistant turn is left out with them. ``respond_batch`` sends the
requests of one memory state in one ``generate`` call.

:class:`EpisodeMethod` adds instances (episodes): the transcript holds only the instance in
progress and is cleared at its end -- an observation with ``done=True``, final feedback
(``meta["final"]``, true unless said otherwise), or an event of another instance (an
observation naming another instance id, a chunk of another stream, a document after anything
but documents) -- with hooks for what a method does after each step and at each instance end.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from clstream.core import layout
from clstream.core.events import Chunk, Document, Event, Feedback, Observation
from clstream.core.params import Param
from clstream.core.types import GenerationRequest, GenerationResult, Message, Query, Response
from clstream.systems.base import MemorySystem, reply_text, snapshot_error, staged
from clstream.systems.conversation import prompts as conversation_prompts

TurnRole = Literal["user", "assistant"]
SCRATCH_SIZE = 64  # replies kept waiting for their outcome; probes beyond that are dropped

BUDGET_PARAMS: dict[str, Param] = {
    "budget": Param(120_000, "context budget in tokens (model's tokenizer); the oldest turns "
                    "are left out past it", minimum=1),
    "reserve": Param(500, "tokens kept free under the budget (the authors' margin)", minimum=0),
}


@dataclass(frozen=True)
class Turn:
    """One message of a transcript and its token count (not stored in snapshots)."""

    role: TurnRole
    text: str
    tokens: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "text": self.text}


@dataclass(frozen=True)
class Asked:
    """A reply waiting for its outcome: the block shown and the answer the protocol reads,
    plus a method's own output field when it has one (the notepad)."""

    query_id: str
    instance_id: str | None
    prompt: str
    answer: str
    extra: str | None = None


def instance_of(query: Query) -> str | None:
    value = query.meta.get("instance_id")
    return str(value) if value is not None else None


def task_of(fb: Feedback) -> str:
    return str(fb.meta.get("task_id", fb.query_id))


def is_final(fb: Feedback) -> bool:
    return bool(fb.meta.get("final", True))


def outcome_text(obs: Observation) -> str:
    text = conversation_prompts.RESULT_TEMPLATE.format(text=obs.text.strip())
    return f"{text}\n{conversation_prompts.INSTANCE_DONE}" if obs.done else text


def step_parts(obs: Observation, asked: Asked | None) -> tuple[str, str]:
    """(the request, the reply) of the step ``obs`` is the outcome of ('' when unknown): the
    block shown, from the waiting reply, else the observation the event carries; the action
    the event carries (what the environment received, as the authors keep it), else the
    waiting reply's answer."""
    request = asked.prompt if asked is not None else obs.query.strip()
    action = obs.action.strip() or (asked.answer if asked is not None else "")
    return request, action


def verdict_text(fb: Feedback, answer: str) -> str:
    """The verdict turn: an experience block (:mod:`clstream.core.layout`) restating the task's
    first line and the answer's final line, then the outcome and the evaluator's message."""
    task = fb.query_text.strip().splitlines()
    line = layout.clip(task[0], conversation_prompts.VERDICT_CHARS) if task else ""
    given = layout.clip(layout.final_answer_text(answer), conversation_prompts.VERDICT_CHARS)
    block = layout.experience_block(layout.Experience(line, given, fb.message, fb.success))
    return f"{conversation_prompts.FEEDBACK_HEADER}\n{block.strip()}"


def event_key(event: Event) -> str:
    """A stable identity of an event, the root of the keys of the calls it causes."""
    if isinstance(event, Observation):
        return f"{event.instance_id}/step{event.step}"
    if isinstance(event, Feedback):
        return event.query_id
    if isinstance(event, Chunk):
        return f"{event.stream_id}/chunk{event.index}"
    return f"document/{event.doc_id}"


def merged(turns: Sequence[Turn]) -> tuple[Message, ...]:
    """Messages from turns, consecutive turns of one role joined (user turns by the layout's
    placement rule, so tagged passages keep their blank line)."""
    groups: list[tuple[TurnRole, list[str]]] = []
    for turn in turns:
        if groups and groups[-1][0] == turn.role:
            groups[-1][1].append(turn.text)
        else:
            groups.append((turn.role, [turn.text]))
    out = []
    for role, texts in groups:
        if role == "user":
            content = "".join(layout.placed(t) for t in texts[:-1]) + texts[-1]
        else:
            content = "\n\n".join(t.strip() for t in texts)
        out.append(Message(role=role, content=content))
    return tuple(out)


def turns_from_json(items: Any, field: str) -> list[tuple[TurnRole, str]]:
    ok = isinstance(items, list) and all(
        isinstance(t, dict) and t.get("role") in ("user", "assistant")
        and isinstance(t.get("text"), str) for t in items)
    if not ok:
        raise snapshot_error(field, "expected a list of {role: user|assistant, text: str}")
    return [(t["role"], t["text"]) for t in items]


def int_field(memory: dict[str, Any], field: str, minimum: int = 0) -> int:
    value = memory.get(field)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise snapshot_error(field, f"expected an integer >= {minimum}")
    return value


def str_field(memory: dict[str, Any], field: str, optional: bool = False) -> Any:
    value = memory.get(field)
    if not (isinstance(value, str) or (optional and value is None)):
        raise snapshot_error(field, "expected a string" + (" or null" if optional else ""))
    return value


class ConversationMethod(MemorySystem):
    """Shared plumbing (see the module docstring). Subclasses set ``name``, ``summary`` and
    ``params`` and implement ``_clear``, ``_observe``, ``_dump`` and ``_load``; as needed
    ``_head``, ``_sections``, ``_rules``, ``_split_reply`` and ``_finish``."""

    # observe may depend on the reply given in respond (the scratch), so a runner must keep
    # snapshots rather than replay events.
    replayable: ClassVar[bool] = False
    # Every step observed becomes turns of the transcript, so the instance in progress is
    # already in each request: an environment runner need not show its steps again
    # (docs/clbench.md §2.4).
    keeps_instance_steps: ClassVar[bool] = True
    # The method's own prompt templates (name -> text), fingerprinted with the shared ones in
    # ``describe()`` so a change to either tells prompt versions apart.
    templates: ClassVar[dict[str, object]] = {}

    def _empty(self) -> None:
        self._asked: dict[str, Asked] = {}
        self.turns: list[Turn] = []
        self.next_index = 0  # the running tag index the next document passage gets
        self._clear()

    # --- the System contract -------------------------------------------------------------

    async def observe(self, event: Event) -> list[GenerationResult]:
        asked = self._take(event)
        return await self._observe(event, asked)

    async def respond_batch(self, queries: Sequence[Query]) -> list[Response]:
        """The requests of one memory state, sent in one ``generate`` call; memory unchanged."""
        built: list[tuple[GenerationRequest, dict[str, float]]] = []
        for query in queries:
            timings = {"retrieve": 0.0, "generate": 0.0, "update": 0.0}
            with self._timed(timings, "retrieve"):
                messages = self._messages(query)
            built.append((self._seeded_request(query.id, messages, stage="generate"), timings))
        if not built:
            return []
        start = time.perf_counter()
        results = await self._generate([request for request, _ in built])
        per_query = (time.perf_counter() - start) / len(built)
        responses = []
        for query, (_, timings), result in zip(queries, built, results, strict=True):
            result, answer, extra = self._finish(staged(result, "generate"))
            self._remember(Asked(query.id, instance_of(query), layout.prompt_of(query),
                                 answer, extra))
            timings["generate"] = per_query
            responses.append(Response(query_id=query.id, results=[result],
                                      timings={k: round(v, 6) for k, v in timings.items()}))
        return responses

    def snapshot(self) -> dict[str, Any]:
        return self._enveloped(self._dump())

    def restore(self, state: dict[str, Any]) -> None:
        memory = self._opened(state)
        self._empty()
        self._load(memory)

    def _described(self) -> dict[str, Any]:
        return {"prompt_template_hash": conversation_prompts.template_fingerprint(self.templates.items())}

    # --- the scratch -----------------------------------------------------------------------

    def _remember(self, asked: Asked) -> None:
        self._asked.pop(asked.query_id, None)
        self._asked[asked.query_id] = asked
        while len(self._asked) > SCRATCH_SIZE:
            del self._asked[next(iter(self._asked))]

    def _take(self, event: Event) -> Asked | None:
        """The reply ``event`` is the outcome of (if waiting); the scratch is emptied."""
        found: Asked | None = None
        if isinstance(event, Feedback):
            found = self._asked.get(event.query_id)
        elif isinstance(event, Observation):
            waiting = list(self._asked.values())
            found = next((a for a in reversed(waiting) if a.instance_id == event.instance_id),
                         None)
            if found is None:
                found = next((a for a in reversed(waiting) if a.instance_id is None), None)
        self._asked = {}
        return found

    # --- turns -----------------------------------------------------------------------------

    def _turn(self, role: TurnRole, text: str) -> Turn:
        return Turn(role, text, self.model.tokenizer.count(text))

    def _load_turns(self, items: Any, field: str) -> list[Turn]:
        return [self._turn(role, text) for role, text in turns_from_json(items, field)]

    def _step_turns(self, obs: Observation, asked: Asked | None) -> list[Turn]:
        request, action = step_parts(obs, asked)
        turns = []
        if request or action:
            turns += [self._turn("user", request or conversation_prompts.NO_REQUEST),
                      self._turn("assistant", action.strip() or conversation_prompts.NO_REPLY)]
        return turns + [self._turn("user", outcome_text(obs))]

    def _feedback_turns(self, fb: Feedback, asked: Asked | None) -> list[Turn]:
        if asked is not None:
            prompt, answer = asked.prompt, asked.answer
        else:
            prompt = layout.prompt_of(Query(fb.query_id, fb.query_text))
            answer = self._split_reply(fb.answer)[0]
        return [self._turn("user", prompt),
                self._turn("assistant", answer.strip() or conversation_prompts.NO_REPLY),
                self._turn("user", verdict_text(fb, answer))]

    def _passage_turn(self, event: Chunk | Document) -> Turn:
        if isinstance(event, Chunk):
            index, text = event.index, event.text
        else:
            index, text = self.next_index, event.text
        self.next_index = max(self.next_index, index + 1)
        return self._turn("user", layout.passage_block(index, text))

    # --- requests --------------------------------------------------------------------------

    def _messages(self, query: Query) -> tuple[Message, ...]:
        rules = self._rules()
        instructions = layout.instructions_of(query)
        if rules:
            instructions = f"{instructions}\n\n{rules}"
        head = "".join(layout.placed(s) for s in self._head() if s.strip())
        final = layout.user_text(self._sections(query), layout.prompt_of(query))
        count = self.model.tokenizer.count
        room = (self.args["budget"] - self.args["reserve"] - count(instructions) - count(final)
                - (count(head) if head else 0))
        turns = [*self._fitting(self.turns, room), Turn("user", final)]
        if head:  # the first turn shown is a user turn: the head opens it
            turns[0] = Turn("user", head + turns[0].text)
        return (Message(role="system", content=instructions), *merged(turns))

    @staticmethod
    def _fitting(turns: Sequence[Turn], room: int) -> list[Turn]:
        """The newest turns that fit ``room`` tokens, oldest first, opening with a user turn."""
        first, used = len(turns), 0
        while first > 0 and used + turns[first - 1].tokens <= room:
            first -= 1
            used += turns[first].tokens
        kept = list(turns[first:])
        while kept and kept[0].role == "assistant":
            kept.pop(0)
        return kept

    def _finish(self, result: GenerationResult) -> tuple[GenerationResult, str, str | None]:
        """The result the protocol gets, the answer kept for memory and any extra field."""
        return result, reply_text(result), None

    # --- model calls for updates ------------------------------------------------------------

    async def _update_call(self, key: str, prompt: str) -> GenerationResult:
        """One memory-update call (stage ``update``), seeded from its key."""
        return await self._call(key, conversation_prompts.update_messages(prompt), "update")

    # --- what subclasses provide ------------------------------------------------------------

    @abstractmethod
    def _clear(self) -> None:
        """Empty the method's own memory (the transcript and passage index are emptied)."""

    @abstractmethod
    async def _observe(self, event: Event, asked: Asked | None) -> list[GenerationResult]:
        """Take ``event`` (and the reply it is the outcome of) into memory."""

    @abstractmethod
    def _dump(self) -> dict[str, Any]: ...

    @abstractmethod
    def _load(self, memory: dict[str, Any]) -> None: ...

    def _head(self) -> list[str]:
        """Memory sections that open the conversation shown (before its first turn)."""
        return []

    def _sections(self, query: Query) -> list[str]:
        """Memory sections shown before the query's block, in the last user message."""
        return []

    def _rules(self) -> str:
        """The method's own rules, appended to the system message ('' for none)."""
        return ""

    def _split_reply(self, text: str) -> tuple[str, str | None]:
        """(the answer part of a reply, the method's extra output field or None)."""
        return text, None

    def _extra_of(self, event: Observation | Feedback, asked: Asked | None) -> str | None:
        """The extra field of the reply ``event`` answers: kept when this system asked it,
        else read back from the answer a feedback event restates (None for none)."""
        if asked is not None:
            return asked.extra
        if isinstance(event, Feedback):
            return self._split_reply(event.answer)[1]
        return None


class EpisodeMethod(ConversationMethod):
    """A transcript of the instance in progress only, cleared at each instance end (see the
    module docstring); subclasses add ``_after_step``, ``_at_end`` and ``_text``."""

    keeps_texts_in_transcript: ClassVar[bool] = False

    def _clear(self) -> None:
        self.instance: str | None = None
        self._clear_method()

    async def _observe(self, event: Event, asked: Asked | None) -> list[GenerationResult]:
        if isinstance(event, Observation):
            self._enter(event.instance_id)
            self.turns += self._step_turns(event, asked)
            calls = await self._after_step(event, asked)
            if event.done:
                calls += await self._end(event)
            return calls
        if isinstance(event, Feedback):
            self._enter(task_of(event))
            self.turns += self._feedback_turns(event, asked)
            calls = await self._after_step(event, asked)
            if is_final(event):
                calls += await self._end(event)
            return calls
        if self.keeps_texts_in_transcript:
            key = f"chunk:{event.stream_id}" if isinstance(event, Chunk) else "documents"
            self._enter(key)
            self.turns.append(self._passage_turn(event))
        return await self._text(event)

    def _enter(self, instance: str) -> None:
        """Make ``instance`` the one in progress; another's turns are dropped unconsolidated."""
        if self.instance is not None and self.instance != instance:
            self.turns = []
        self.instance = instance

    async def _end(self, event: Observation | Feedback) -> list[GenerationResult]:
        calls = await self._at_end(event)
        self.turns, self.instance = [], None
        return calls

    def _dump_episode(self) -> dict[str, Any]:
        return {"instance": self.instance, "turns": [t.to_json() for t in self.turns]}

    def _load_episode(self, memory: dict[str, Any]) -> None:
        self.instance = str_field(memory, "instance", optional=True)
        self.turns = self._load_turns(memory.get("turns"), "turns")

    # --- what subclasses provide ------------------------------------------------------------

    @abstractmethod
    def _clear_method(self) -> None: ...

    async def _after_step(self, event: Observation | Feedback, asked: Asked | None
                          ) -> list[GenerationResult]:
        """After each step's turns are in (before an instance end is handled)."""
        return []

    async def _at_end(self, event: Observation | Feedback) -> list[GenerationResult]:
        """At an instance end, with the instance's turns still held."""
        return []

    async def _text(self, event: Chunk | Document) -> list[GenerationResult]:
        """A chunk or document (after any transcript turn it became)."""
        return []
