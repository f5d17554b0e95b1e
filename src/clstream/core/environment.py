"""The contract of a stateful environment (docs/clbench.md §2) and of a builtin policy that acts in one.

A *task* is an ordered sequence of instances; an instance has up to ``max_steps`` steps and
yields one reward; a *stage* is a contiguous run of instances sharing one variant (variants may
recur, so stability/plasticity boundaries are stages, never variant ids). The order of a
stateful rollout comes from the task's :class:`OrderPolicy` (:func:`rollout_order`).

One instance, as a runner drives it::

    q = env.begin(instance_id)          # EnvQuery: observation text, action schema, step 1
    while True:
        result = env.step(action)       # StepResult: feedback, instance_complete, reward
        if result.instance_complete:
            break
        q = result.next_query

Stateful arm: ``env.reset()`` once, then ``begin`` every instance in rollout order. Stateless
arm: ``env.reset_to(instance_id)`` before each ``begin``: the environment takes the state that
instance has in the stateful schedule (after a migration, the migrated database; in a later
stage, that stage's activity) with nothing the agent wrote kept (a persistent workspace is
wiped). A drift notice is shown only when a stateful run crosses into a stage that announces
one; ``reset_to`` never shows it (a fresh agent has no earlier experience to invalidate).
Prompts carry no position counters ("question 7 of 40"), so both arms see the same text.

A malformed action (not a JSON object, unknown tool, missing field, out-of-range value) never
loops: the step returns ``valid=False`` and an error text naming the problem, and after
``max_invalid`` such actions in one instance it ends with the task's minimum reward.

``snapshot()`` / ``restore()`` carry the environment's state as JSON between instances, so a
run can resume; the content (scans, panels, databases) is regenerated from the seed.

A :class:`Policy` is a builtin (non-LLM) actor: a pure function of the turns it has seen
(observation, action, feedback text) and the current observation text. A stateful policy is
given the whole run's turns; the same policy given only the current instance's turns is its
stateless twin.
"""

from __future__ import annotations

import enum
import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from clstream.core.events import Observation
from clstream.core.layout import action_block, instance_steps_section
from clstream.core.types import Query

MAX_ACTION_CHARS = 200_000
"""Longest action text accepted; a longer one is malformed."""


class EnvironmentStateError(RuntimeError):
    """An environment was driven out of order (``step`` before ``begin``, a foreign snapshot)."""


class ActionError(ValueError):
    """A malformed action; the message is shown to the agent as feedback."""


# --- schedules and rollout order --------------------------------------------------------------


@dataclass(frozen=True)
class Stage:
    """A contiguous run of instances sharing one variant."""

    variant: str
    instance_ids: tuple[str, ...]


@dataclass(frozen=True)
class Schedule:
    """The canonical order of a task: its stages, in order."""

    name: str
    stages: tuple[Stage, ...]

    def __post_init__(self) -> None:
        ids = self.instance_ids
        if not ids:
            raise ValueError(f"schedule {self.name!r} has no instances")
        if len(set(ids)) != len(ids):
            raise ValueError(f"schedule {self.name!r} repeats an instance id")
        if any(not s.instance_ids for s in self.stages):
            raise ValueError(f"schedule {self.name!r} has an empty stage")

    @property
    def instance_ids(self) -> tuple[str, ...]:
        return tuple(i for s in self.stages for i in s.instance_ids)

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(len(s.instance_ids) for s in self.stages)

    def __len__(self) -> int:
        return sum(self.sizes)

    def stage_of(self, instance_id: str) -> int:
        for k, s in enumerate(self.stages):
            if instance_id in s.instance_ids:
                return k
        raise KeyError(f"unknown instance id {instance_id!r} in schedule {self.name!r}")

    def variant_of(self, instance_id: str) -> str:
        return self.stages[self.stage_of(instance_id)].variant

    def canonical_index(self, instance_id: str) -> int:
        return self.instance_ids.index(instance_id)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name,
                "stages": [{"variant": s.variant, "instance_ids": list(s.instance_ids)}
                           for s in self.stages]}


class OrderPolicy(enum.StrEnum):
    """How the stateful rollouts of a task order its instances (docs/clbench.md §2.3)."""

    STAGE_PERMUTE = "stage_permute"
    """Rollout 0 canonical; rollout r > 0 shuffles within each stage with Random(seed + r)."""
    FIXED = "fixed"
    """Never permuted: every rollout is canonical (sales)."""
    STAGE_SHUFFLE = "stage_shuffle"
    """Every rollout, 0 included, shuffles within each stage (database: within each half)."""


def _derived_seed(*parts: object) -> int:
    text = ":".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:8], "big")


def rollout_order(schedule: Schedule, policy: OrderPolicy | str, seed: int, rollout: int
                  ) -> list[str]:
    """The instance order of stateful rollout ``rollout`` (0-based); stages never mix.

    STAGE_PERMUTE draws all stages from one ``random.Random(seed + rollout)`` in stage order;
    STAGE_SHUFFLE gives stage k its own generator, seeded from (seed, rollout, k), so one
    half's order does not depend on the other's size.
    """
    policy = OrderPolicy(policy)
    if rollout < 0:
        raise ValueError(f"rollout must be >= 0, got {rollout}")
    if policy is OrderPolicy.FIXED or (policy is OrderPolicy.STAGE_PERMUTE and rollout == 0):
        return list(schedule.instance_ids)
    order: list[str] = []
    shared = random.Random(seed + rollout)
    for k, stage in enumerate(schedule.stages):
        ids = list(stage.instance_ids)
        if policy is OrderPolicy.STAGE_PERMUTE:
            shared.shuffle(ids)
        else:
            random.Random(_derived_seed("stage-shuffle", seed, rollout, k)).shuffle(ids)
        order.extend(ids)
    return order


# --- what an environment says ----------------------------------------------------------------


@dataclass(frozen=True)
class EnvQuery:
    """What the environment asks at one step of one instance.

    ``observation`` is the full text the agent needs now (the environment's words only: no
    memory, no position in the run); ``instructions`` the task's rules; ``action_format`` one
    paragraph describing the JSON action; ``action_schema`` its JSON Schema.
    """

    task: str
    instance_id: str
    stage: int
    variant: str
    step: int
    max_steps: int
    observation: str
    instructions: str
    action_format: str
    action_schema: Mapping[str, Any] = field(compare=False, hash=False)

    @property
    def query_id(self) -> str:
        return f"{self.instance_id}/step{self.step}"

    def to_query(self, earlier: Sequence[str] = ()) -> Query:
        """The generic :class:`Query`: rules as instructions, the observation as the block
        (an action block of :mod:`clstream.core.layout`: its line naming the task lets a reader
        of the prompt, such as the builtin model, tell which environment asks). ``earlier``
        are the step blocks of the instance's steps already taken, shown before the block
        (:func:`~clstream.core.layout.instance_steps_section`); the query's text stays the
        observation, so retrieval keyed on it is unchanged."""
        return Query(
            id=self.query_id, text=self.observation, kind="action",
            meta={"task": self.task, "instance_id": self.instance_id, "stage": self.stage,
                  "variant": self.variant, "step": self.step, "max_steps": self.max_steps,
                  "action_schema": dict(self.action_schema)},
            instructions=self.instructions,
            prompt=instance_steps_section(earlier)
            + action_block(self.observation, self.task, self.action_format))


@dataclass(frozen=True)
class StepResult:
    """The environment's answer to one action.

    ``reward`` (and ``success``) are set exactly when ``instance_complete``; ``info`` holds
    JSON-able details for the records (queries used, raw metric, why the instance ended).
    """

    instance_id: str
    step: int
    feedback: str
    valid: bool
    instance_complete: bool
    reward: float | None = None
    success: bool | None = None
    info: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    next_query: EnvQuery | None = None

    def to_event(self, query: str = "", action: str = "") -> Observation:
        """The event a system observes; ``query`` (the observation acted on) and ``action``
        (the action as text) let a memory keep the whole step."""
        return Observation(instance_id=self.instance_id, step=self.step, text=self.feedback,
                           reward=self.reward, done=self.instance_complete, query=query,
                           action=action)


@runtime_checkable
class Environment(Protocol):
    """A stateful task: yields queries, takes actions, scores instances (docs/clbench.md §2.4)."""

    @property
    def name(self) -> str: ...

    @property
    def seed(self) -> int: ...

    @property
    def schedule(self) -> Schedule: ...

    @property
    def order_policy(self) -> OrderPolicy: ...

    @property
    def r_max(self) -> float:
        """The ceiling of the mean reward over the schedule's instances, which no policy can
        pass: the best one instance can earn where every instance shares it."""
        ...

    @property
    def min_reward(self) -> float:
        """The lowest reward one instance can earn; unless the task says otherwise, also the
        reward of an instance ended by too many malformed actions."""
        ...

    @property
    def max_steps(self) -> int: ...

    @property
    def max_invalid(self) -> int: ...

    @property
    def instructions(self) -> str: ...

    @property
    def action_schema(self) -> Mapping[str, Any]: ...

    def reset(self) -> None:
        """The state at the start of a stateful run."""
        ...

    def reset_to(self, instance_id: str) -> None:
        """The state ``instance_id`` has in the stateful run, minus anything the agent kept."""
        ...

    def begin(self, instance_id: str) -> EnvQuery:
        """Start an instance (none may be in progress) and return its first query."""
        ...

    def step(self, action: str | Mapping[str, Any]) -> StepResult: ...

    def snapshot(self) -> dict[str, Any]:
        """The state as JSON-able data; only between instances."""
        ...

    def restore(self, state: Mapping[str, Any]) -> None: ...

    def describe(self) -> dict[str, Any]:
        """What a run records about the environment (name, seed, schedule, parameters)."""
        ...


# --- actions -------------------------------------------------------------------------------


def _no_constant(name: str) -> Any:
    raise ActionError(f"the action contains {name}, which is not a JSON number")


def _strip_fence(text: str) -> str:
    t = text.strip()
    if t.startswith("```"):
        t = t.split("\n", 1)[1] if "\n" in t else ""
        if t.rstrip().endswith("```"):
            t = t.rstrip()[:-3]
    return t.strip()


def parse_action(action: str | Mapping[str, Any]) -> dict[str, Any]:
    """The action as a dict: a mapping as is, a text as the JSON object it holds.

    A text may wrap the object in a code fence or in prose; the first balanced JSON object is
    taken. Raises :class:`ActionError` with a message fit to show the agent.
    """
    if isinstance(action, Mapping):
        return dict(action)
    if not isinstance(action, str):
        raise ActionError(f"an action must be a JSON object, got {type(action).__name__}")
    if len(action) > MAX_ACTION_CHARS:
        raise ActionError(f"the action is longer than {MAX_ACTION_CHARS} characters")
    text = _strip_fence(action)
    if not text:
        raise ActionError("the action is empty; reply with one JSON object")
    decoder = json.JSONDecoder(parse_constant=_no_constant)
    start = text.find("{")
    while start >= 0:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        except RecursionError:
            raise ActionError("the action is nested too deeply") from None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    raise ActionError("no JSON object found in the reply; reply with one JSON object")


def action_text(action: str | Mapping[str, Any]) -> str:
    """An action as the text a policy's history keeps (sorted-key JSON for a mapping)."""
    if isinstance(action, str):
        return action
    return json.dumps(dict(action), sort_keys=True, ensure_ascii=False)


# --- builtin policies ------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """One step as a policy remembers it: what it saw, what it did, what came back."""

    observation: str
    action: str
    feedback: str


@runtime_checkable
class Policy(Protocol):
    """A builtin actor. ``act`` must be a pure function of its arguments (deterministic).

    ``history`` is every earlier turn the policy may remember, oldest first: the whole run for
    the stateful arm, only the current instance's turns for the stateless arm.
    """

    @property
    def name(self) -> str: ...

    def act(self, history: Sequence[Turn], observation: str) -> dict[str, Any]: ...


# --- notes: what a policy learned, written down ------------------------------------------------

NOTE_SEPARATOR = ": "


def note_key(note: str) -> str | None:
    """The subject of a note line ``<subject>: <content>`` (stripped), or None for a line that
    is not a note."""
    line = note.strip()
    if NOTE_SEPARATOR not in line:
        return None
    key = line.split(NOTE_SEPARATOR, 1)[0].strip()
    return key or None


@runtime_checkable
class NoteTaker(Protocol):
    """A builtin policy whose learning can be written down and read back (docs/clbench.md §6).

    Memory methods other than a full transcript keep *notes*: a notepad, extracted facts,
    playbook bullets. So that the builtin model can exercise them, a policy that learns says
    what it learned as note lines ``<subject>: <content>`` and acts from such lines:

    * ``notes(history)`` -- what ``history`` teaches, one line per subject (subjects distinct
      within one call). A note carries its own evidence (the hands, scans or instances it
      counts) so that merging the same evidence twice changes nothing;
    * ``merge(old, new)`` -- one note holding both, for two notes of the same subject
      (idempotent: ``merge(merge(a, b), b) == merge(a, b)``);
    * ``act_from_notes(notes, history, observation)`` -- the action given remembered notes (in
      any order, several per subject allowed: they are merged; lines that are not this
      policy's notes are ignored) and the turns still shown (the current instance's).

    ``act(history, obs)`` and ``act_from_notes(notes(earlier), current, obs)`` should agree
    when ``earlier`` + ``current`` is ``history`` split at the current instance: the notes are
    the policy's whole memory of earlier instances.
    """

    @property
    def name(self) -> str: ...

    def act(self, history: Sequence[Turn], observation: str) -> dict[str, Any]: ...

    def notes(self, history: Sequence[Turn]) -> list[str]: ...

    def merge(self, old: str, new: str) -> str: ...

    def act_from_notes(self, notes: Sequence[str], history: Sequence[Turn], observation: str
                       ) -> dict[str, Any]: ...


def merge_notes(policy: NoteTaker, notes: Sequence[str]) -> list[str]:
    """``notes`` with the notes of one subject merged into one, in first-seen order; lines that
    are not notes are dropped."""
    merged: dict[str, str] = {}
    for note in notes:
        key = note_key(note)
        if key is None:
            continue
        line = note.strip()
        merged[key] = policy.merge(merged[key], line) if key in merged else line
    return list(merged.values())
