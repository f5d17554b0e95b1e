"""What the three environments share: instance bookkeeping, the malformed-action cap, drift
notices, snapshots (the :class:`~clstream.core.environment.Environment` contract).

A subclass supplies the content through a few hooks:

* ``_reset_state()`` / ``_state_for(instance_id)`` -- the state at the start of the stateful
  run / the state an instance has in it (the stateless arm);
* ``_enter(instance_id)`` -- the stateful run moves to this instance (a migration happens);
* ``_observation(first)`` -- the text of the current query of the instance in progress;
* ``_check(action)`` -- raise :class:`ActionError` for a malformed action;
* ``_apply(action)`` -- act, returning an :class:`Outcome`;
* ``_notice(old, new)`` -- the drift notice for a stage change in a stateful run ('' = none);
* ``_forfeit()`` -- what an instance ended by invalid actions scores (default: ``min_reward``);
* ``_state_json()`` / ``_load_state(state)`` -- what a snapshot adds.

Named options (:attr:`EnvironmentBase.OPTIONS`, e.g. ``feedback=rich``) select departures from
the paper's defaults; the ones in force (:attr:`EnvironmentBase.options`) are part of the
environment's parameters, so they enter its description, the run's dataset hash (and with it
the run id) and the snapshot fingerprint (docs/clbench.md §4).

Every observation opens with the line ``Instance <id>, step <s>`` (never a position in the
run), so a reader can tell which instance a past turn belonged to.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from clstream.core.environment import (
    ActionError,
    EnvironmentStateError,
    EnvQuery,
    OrderPolicy,
    Schedule,
    Stage,
    StepResult,
    parse_action,
)

HEADER = "Instance {instance_id}, step {step}"
SNAPSHOT_FORMAT = "clstream-clbench-env"


def instance_of(text: str) -> str | None:
    """The instance id named by an observation's header line, or None."""
    first = text.lstrip().split("\n", 1)[0]
    if not first.startswith("Instance ") or ", step " not in first:
        return None
    return first[len("Instance "):].split(", step ", 1)[0].strip()


def build_schedule(name: str, sizes: tuple[int, ...], variants: tuple[str, ...],
                   ids: list[str]) -> Schedule:
    """A schedule cutting ``ids`` into stages of ``sizes`` labelled ``variants``."""
    if len(sizes) != len(variants) or sum(sizes) != len(ids):
        raise ValueError(f"schedule {name!r}: sizes {sizes} do not fit {len(ids)} instances")
    stages, at = [], 0
    for size, variant in zip(sizes, variants, strict=True):
        stages.append(Stage(variant, tuple(ids[at:at + size])))
        at += size
    return Schedule(name, tuple(stages))


@dataclass
class Outcome:
    """What a valid action did: feedback, and at completion the reward."""

    feedback: str
    complete: bool = False
    reward: float | None = None
    success: bool | None = None
    info: dict[str, Any] = field(default_factory=dict)


class EnvironmentBase(ABC):
    """Bookkeeping shared by the environments; see the module docstring for the hooks."""

    name: ClassVar[str] = ""
    order_policy: ClassVar[OrderPolicy] = OrderPolicy.STAGE_PERMUTE
    best_reward: ClassVar[float] = 1.0
    """The most one instance can earn (docs/clbench.md §4.7 derives it task by task)."""
    min_reward: ClassVar[float] = 0.0
    max_steps: ClassVar[int] = 1
    instructions: ClassVar[str] = ""
    action_format: ClassVar[str] = ""
    action_schema: ClassVar[Mapping[str, Any]] = {}
    # option name -> its values, the first being the default (the paper's setting)
    OPTIONS: ClassVar[Mapping[str, tuple[str, ...]]] = {}

    def __init__(self, seed: int, schedule: Schedule, max_invalid: int = 3,
                 options: Mapping[str, str] | None = None) -> None:
        if max_invalid < 1:
            raise ValueError(f"max_invalid must be >= 1, got {max_invalid}")
        self.options = self.choose_options(options)
        self._seed = int(seed)
        self._schedule = schedule
        self.max_invalid = int(max_invalid)
        self._current: str | None = None
        self._step = 0
        self._valid = 0
        self._invalid = 0
        self._last_variant: str | None = None
        self._completed: list[str] = []

    @classmethod
    def choose_options(cls, given: Mapping[str, str] | None) -> dict[str, str]:
        """The options in force: ``given`` over the defaults; ValueError names an unknown
        option or value."""
        chosen = {name: values[0] for name, values in cls.OPTIONS.items()}
        for name, value in (given or {}).items():
            if name not in cls.OPTIONS:
                known = ", ".join(sorted(cls.OPTIONS)) or "none"
                raise ValueError(f"{cls.name}: unknown option {name!r} (known: {known})")
            if value not in cls.OPTIONS[name]:
                raise ValueError(f"{cls.name}: option {name} must be one of "
                                 f"{', '.join(cls.OPTIONS[name])}, got {value!r}")
            chosen[name] = value
        return chosen

    # --- properties of the contract --------------------------------------------------------

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def schedule(self) -> Schedule:
        return self._schedule

    @property
    def current(self) -> str | None:
        """The instance in progress, if any."""
        return self._current

    @property
    def r_max(self) -> float:
        """The ceiling of the mean reward over this schedule's instances, which no policy can
        exceed: ``best_reward`` unless the task computes a tighter one for its seed (poker,
        cohort studies; docs/clbench.md §4.7)."""
        return self.best_reward

    @property
    def completed(self) -> tuple[str, ...]:
        """Instances finished since the last reset, in the order they finished."""
        return tuple(self._completed)

    # --- lifecycle -------------------------------------------------------------------------

    def reset(self) -> None:
        self._clear()
        self._reset_state()

    def reset_to(self, instance_id: str) -> None:
        self._schedule.stage_of(instance_id)  # raises KeyError for an unknown id
        self._clear()
        self._state_for(instance_id)
        self._last_variant = self._schedule.variant_of(instance_id)

    def begin(self, instance_id: str) -> EnvQuery:
        if self._current is not None:
            raise EnvironmentStateError(
                f"{self.name}: instance {self._current!r} is still in progress")
        if instance_id in self._completed:
            raise EnvironmentStateError(
                f"{self.name}: instance {instance_id!r} was already played since the reset")
        variant = self._schedule.variant_of(instance_id)
        notice = ""
        if self._last_variant is not None and variant != self._last_variant:
            notice = self._notice(self._last_variant, variant)
        self._enter(instance_id)
        self._current, self._step, self._valid, self._invalid = instance_id, 1, 0, 0
        self._last_variant = variant
        return self._query(self._observation(first=True), notice)

    def step(self, action: str | Mapping[str, Any]) -> StepResult:
        if self._current is None:
            raise EnvironmentStateError(f"{self.name}: step() before begin()")
        step = self._step
        self._step += 1
        try:
            parsed = parse_action(action)
            self._check(parsed)
        except ActionError as err:
            return self._rejected(step, str(err))
        outcome = self._apply(parsed)
        self._valid += 1
        if not outcome.complete and self._valid > self.max_steps + 1:
            outcome = Outcome(outcome.feedback + " The step limit is reached: the instance ends.",
                              True, self.min_reward, False, {"ended": "step_limit"})
        if outcome.complete:
            return self._finish(step, outcome, valid=True)
        return StepResult(self._current, step, outcome.feedback, True, False,
                          info=outcome.info, next_query=self._query(self._observation(False)))

    def _rejected(self, step: int, problem: str) -> StepResult:
        assert self._current is not None
        self._invalid += 1
        problem = problem.rstrip(".")
        if self._invalid >= self.max_invalid:
            reward, detail = self._forfeit()
            text = (f"Invalid action: {problem}. That is {self._invalid} invalid actions in this "
                    f"instance, the most allowed: it ends with reward {reward:g}.")
            outcome = Outcome(text + (f"\n{detail}" if detail else ""), True, reward, False,
                              {"ended": "invalid_actions", "invalid": self._invalid})
            return self._finish(step, outcome, valid=False)
        text = (f"Invalid action: {problem}. Nothing was done. {self._invalid} of "
                f"{self.max_invalid} invalid actions allowed in this instance; the next one "
                f"{'ends it' if self._invalid + 1 == self.max_invalid else 'counts too'}.")
        return StepResult(self._current, step, text, False, False,
                          info={"invalid": self._invalid},
                          next_query=self._query(self._observation(False)))

    def _finish(self, step: int, outcome: Outcome, valid: bool) -> StepResult:
        assert self._current is not None
        instance_id = self._current
        reward = float(outcome.reward if outcome.reward is not None else self.min_reward)
        info = {"steps": step, "valid_steps": self._valid, "invalid": self._invalid,
                **outcome.info}
        self._completed.append(instance_id)
        self._current = None
        return StepResult(instance_id, step, outcome.feedback, valid, True, reward,
                          outcome.success, info)

    def _query(self, body: str, notice: str = "") -> EnvQuery:
        assert self._current is not None
        head = HEADER.format(instance_id=self._current, step=self._step)
        text = "\n".join(part for part in (head, notice, body) if part)
        stage = self._schedule.stage_of(self._current)
        return EnvQuery(self.name, self._current, stage, self._schedule.stages[stage].variant,
                        self._step, self.max_steps, text, self.instructions,
                        self.action_format, self.action_schema)

    def _clear(self) -> None:
        self._current, self._step, self._valid, self._invalid = None, 0, 0, 0
        self._last_variant = None
        self._completed = []

    # --- snapshots -------------------------------------------------------------------------

    def _fingerprint(self) -> str:
        text = json.dumps({"schedule": self._schedule.to_json(), "params": self._all_params()},
                          sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def snapshot(self) -> dict[str, Any]:
        if self._current is not None:
            raise EnvironmentStateError(
                f"{self.name}: snapshot only between instances ({self._current!r} is open)")
        return {"format": SNAPSHOT_FORMAT, "task": self.name, "seed": self._seed,
                "schedule": self._schedule.name, "fingerprint": self._fingerprint(),
                "completed": list(self._completed), "last_variant": self._last_variant,
                "state": self._state_json()}

    def restore(self, state: Mapping[str, Any]) -> None:
        if self._current is not None:
            raise EnvironmentStateError(f"{self.name}: restore while {self._current!r} is open")
        expected = {"format": SNAPSHOT_FORMAT, "task": self.name, "seed": self._seed,
                    "schedule": self._schedule.name, "fingerprint": self._fingerprint()}
        for key, value in expected.items():
            if state.get(key) != value:
                raise EnvironmentStateError(
                    f"{self.name}: snapshot field {key!r} is {state.get(key)!r}, "
                    f"this environment has {value!r}")
        completed = state.get("completed")
        if not isinstance(completed, list) or not all(
                isinstance(i, str) and i in self._schedule.instance_ids for i in completed):
            raise EnvironmentStateError(f"{self.name}: snapshot field 'completed' is malformed")
        last = state.get("last_variant")
        if last is not None and last not in {s.variant for s in self._schedule.stages}:
            raise EnvironmentStateError(f"{self.name}: unknown variant {last!r} in snapshot")
        self._clear()
        self._load_state(state.get("state") or {})
        self._completed, self._last_variant = list(completed), last

    def describe(self) -> dict[str, Any]:
        return {"task": self.name, "seed": self._seed, "schedule": self._schedule.to_json(),
                "order_policy": self.order_policy.value, "r_max": self.r_max,
                "ceiling": self._ceiling(), "min_reward": self.min_reward,
                "max_steps": self.max_steps, "max_invalid": self.max_invalid,
                "params": self._all_params()}

    # --- hooks -----------------------------------------------------------------------------

    def _params(self) -> dict[str, Any]:
        return {}

    def _all_params(self) -> dict[str, Any]:
        """The task's parameters and the options in force (none for a task without any)."""
        return {**self._params(), **({"options": self.options} if self.options else {})}

    def _ceiling(self) -> dict[str, Any]:
        """How ``r_max`` was found, recorded with the run (docs/clbench.md §4.7)."""
        return {"basis": "best_reward", "best_reward": self.best_reward}

    def _reset_state(self) -> None:
        """The state at the start of the stateful run (a hook: nothing by default)."""
        return None

    def _state_for(self, instance_id: str) -> None:
        """The state ``instance_id`` has in the stateful run (agent-owned state wiped)."""
        self._reset_state()

    def _enter(self, instance_id: str) -> None:
        """A run moves on to ``instance_id`` (a hook: nothing by default)."""
        return None

    def _notice(self, old_variant: str, new_variant: str) -> str:
        return ""

    def _forfeit(self) -> tuple[float, str]:
        """The reward of the current instance when too many invalid actions end it, and a line
        saying what that did ('' for none): the task's minimum reward by default."""
        return self.min_reward, ""

    @abstractmethod
    def _observation(self, first: bool) -> str:
        """The observation text of the current step."""

    @abstractmethod
    def _check(self, action: dict[str, Any]) -> None:
        """Raise :class:`ActionError` when ``action`` is malformed for this task."""

    @abstractmethod
    def _apply(self, action: dict[str, Any]) -> Outcome:
        """Carry out a valid action."""

    def _state_json(self) -> dict[str, Any]:
        return {}

    def _load_state(self, state: Mapping[str, Any]) -> None:
        self._reset_state()
