"""The CL-Bench records file that ``clstream score clbench`` reads (docs/clbench.md §3.1).

JSON lines in any order: one ``task`` line per task and one ``instance`` line per instance, arm
and rollout::

    {"kind": "task", "task": "<name>", "r_max": <number>, "n_instances": <N>, "s_ext"?: <number>}
    {"kind": "instance", "task": "<name>", "arm": "stateful"|"stateless", "rollout": <r>,
     "pos": <1..N>, "instance_id": "<id>", "stage": <index>, "reward": <number>,
     "steps"?: <int>, "cost"?: <number>, "tokens"?: <int>}

Readings this loader applies (each one line where it applies):

* the stateless arm is run once per task (paper App. B.1), so its rollout must be 0;
* ``pos`` is the 1-based position in that arm's and rollout's order, unique there and at most N;
* an instance keeps one ``stage`` in every arm and rollout (it belongs to one stage of the
  schedule); the label is an index, and a stage is a maximal run of consecutive positions with
  one label, so a label that comes back later starts a new stage (variants may recur);
* an optional field given as ``null`` counts as absent; other fields on a line are ignored.

Every instance must be in the stateless arm and in every stateful rollout of its task, and the
task must name all N instances it declares. Otherwise the file is an error naming the instance,
unless ``allow_missing``. Two rules for what is then left out (docs/clbench.md §7, item 9):

* ``"instance"`` (clstream's): an instance absent from the stateless arm or from any stateful
  rollout is left out of both arms (every rollout) of its task, and the count is reported; the
  task is then scored over the instances that remain (N becomes their number). Every rollout
  keeps counting, over fewer instances;
* ``"rollout"`` (the authors' analysis): a stateful rollout missing any instance is left out
  whole, so the task is scored over its complete rollouts and all N instances; an instance
  absent from the stateless arm (one run, nothing to drop whole but the task) is still left
  out of both arms as above.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clstream.core.errors import DataError
from clstream.core.jsonio import iter_json_lines

__all__ = [
    "ARMS",
    "MISSING_RULES",
    "ClbenchRecords",
    "TaskRecords",
    "load_clbench_records",
    "records_from_rows",
]

ARMS = ("stateful", "stateless")
MISSING_RULES = ("instance", "rollout")


@dataclass
class TaskRecords:
    """One task's validated records, restricted to the instances scored.

    ``stateless`` maps instance id to its stateless reward; ``stateful[r]`` the same for
    rollout r, and ``orders[r]`` lists the ids in that rollout's order (by ``pos``).
    ``costs[r]`` maps id to the instance's cost in ``cost_unit`` ("cost" or "tokens"; None
    when the records carry neither). ``left_out`` names the instances dropped under
    ``allow_missing``; ``n_unseen`` counts declared instances that no record names.
    """

    name: str
    r_max: float
    n_declared: int
    s_ext: float | None
    stateless: dict[str, float]
    stages: dict[str, int]
    stateful: dict[int, dict[str, float]]
    orders: dict[int, list[str]]
    costs: dict[int, dict[str, float]] = field(default_factory=dict)
    cost_unit: str | None = None
    left_out: list[str] = field(default_factory=list)
    n_unseen: int = 0
    rollouts_left_out: list[int] = field(default_factory=list)

    @property
    def n_instances(self) -> int:
        """N: the number of instances scored (the declared number unless some were left out)."""
        return len(self.stateless)

    @property
    def rollouts(self) -> list[int]:
        return sorted(self.stateful)

    @property
    def n_missing(self) -> int:
        """Declared instances not scored: left out of both arms, or named by no record."""
        return len(self.left_out) + self.n_unseen


@dataclass
class ClbenchRecords:
    """Validated CL-Bench records: one :class:`TaskRecords` per task, by name."""

    tasks: dict[str, TaskRecords]
    source: str = "<records>"

    @property
    def n_missing(self) -> int:
        return sum(t.n_missing for t in self.tasks.values())

    @property
    def n_rollouts_left_out(self) -> int:
        return sum(len(t.rollouts_left_out) for t in self.tasks.values())


@dataclass
class _Task:
    name: str
    r_max: float
    n_instances: int
    s_ext: float | None
    line: int
    reward_min: float | None = None
    reward_max: float | None = None


@dataclass
class _Instance:
    task: str
    arm: str
    rollout: int
    pos: int
    instance_id: str
    stage: int
    reward: float
    cost: float | None
    tokens: int | None
    line: int


class _Row:
    """Typed access to one record's fields, with errors naming the file, line and field."""

    def __init__(self, source: str, line: int, row: Mapping[str, Any]):
        self.source, self.line, self.row = source, line, row

    def error(self, name: str | None, problem: str) -> DataError:
        return DataError(self.source, f"line {self.line}", name, problem)

    def _present(self, name: str, optional: bool) -> bool:
        if self.row.get(name) is not None:
            return True
        if optional:
            return False
        raise self.error(name, "missing")

    def integer(self, name: str, low: int, *, optional: bool = False) -> int | None:
        if not self._present(name, optional):
            return None
        value = self.row[name]
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(name, f"must be an integer, got {value!r}")
        if value < low:
            raise self.error(name, f"must be >= {low}, got {value}")
        return value

    def number(self, name: str, *, optional: bool = False, low: float | None = None
               ) -> float | None:
        if not self._present(name, optional):
            return None
        value = self.row[name]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(name, f"must be a number, got {value!r}")
        try:
            out = float(value)
        except OverflowError:
            out = math.inf
        if not math.isfinite(out):
            raise self.error(name, f"must be a finite number, got {value!r}")
        if low is not None and out < low:
            raise self.error(name, f"must be >= {low:g}, got {value!r}")
        return out

    def text(self, name: str) -> str:
        self._present(name, False)
        value = self.row[name]
        if not isinstance(value, str) or not value:
            raise self.error(name, f"must be a non-empty string, got {value!r}")
        return value


def _req_int(row: _Row, name: str, low: int) -> int:
    value = row.integer(name, low)
    assert value is not None
    return value


def _req_num(row: _Row, name: str) -> float:
    value = row.number(name)
    assert value is not None
    return value


def _task(row: _Row, line: int) -> _Task:
    """A task line, with the ranges the metrics rest on checked (docs/clbench.md
    §3.1): r_max > 0; s_ext below the ceiling N * r_max (else the normalized reward's
    denominator is not positive); reward_min < reward_max when both are given."""
    r_max = _req_num(row, "r_max")
    if r_max <= 0:
        raise row.error("r_max", f"must be > 0 (the per-instance ceiling), got {r_max:g}")
    n = _req_int(row, "n_instances", 1)
    s_ext = row.number("s_ext", optional=True)
    if s_ext is not None and s_ext >= n * r_max:
        raise row.error("s_ext", f"must be below the ceiling n_instances * r_max = "
                                 f"{n * r_max:g}, got {s_ext:g}")
    low, high = row.number("reward_min", optional=True), row.number("reward_max", optional=True)
    if low is not None and high is not None and low >= high:
        raise row.error("reward_max", f"must be above reward_min {low:g}, got {high:g}")
    return _Task(name=row.text("task"), r_max=r_max, n_instances=n, s_ext=s_ext, line=line,
                 reward_min=low, reward_max=high)


def _parse(source: str, line: int, raw: Any) -> _Task | _Instance:
    if not isinstance(raw, Mapping):
        raise DataError(source, f"line {line}", None, "a record must be a JSON object")
    row = _Row(source, line, raw)
    kind = raw.get("kind")
    if kind == "task":
        return _task(row, line)
    if kind != "instance":
        raise row.error("kind", f"must be 'task' or 'instance', got {kind!r}")
    task = row.text("task")
    arm = raw.get("arm")
    if arm not in ARMS:
        raise row.error("arm", f"must be 'stateful' or 'stateless', got {arm!r}")
    rollout = _req_int(row, "rollout", 0)
    if arm == "stateless" and rollout != 0:
        # The stateless arm is run once per task (paper App. B.1): its rollout is 0.
        raise row.error("rollout", f"must be 0 in the stateless arm (run once), got {rollout}")
    pos = _req_int(row, "pos", 1)
    instance_id = row.text("instance_id")
    stage = _req_int(row, "stage", 0)
    reward = _req_num(row, "reward")
    row.integer("steps", 0, optional=True)
    cost = row.number("cost", optional=True, low=0.0)
    tokens = row.integer("tokens", 0, optional=True)
    return _Instance(task=task, arm=str(arm), rollout=rollout, pos=pos, instance_id=instance_id,
                     stage=stage, reward=reward, cost=cost, tokens=tokens, line=line)


def records_from_rows(
    rows: Iterable[tuple[int, Any]], source: str = "<records>", *, allow_missing: bool = False,
    missing_rule: str = "instance",
) -> ClbenchRecords:
    """Validate ``(line number, record)`` pairs into :class:`ClbenchRecords`.

    Raises :class:`DataError` naming the source, the line and the field for a malformed
    record, a second task line for one name, an instance of an undeclared task, a duplicate
    (task, arm, rollout, instance), a duplicate or out-of-range ``pos``, an instance whose
    stage differs between records, a task with no stateful records, more instances than the
    task declares, inconsistent costs, and (unless ``allow_missing``) an instance missing from
    an arm or a declared instance that no record names. ``missing_rule`` says what
    ``allow_missing`` leaves out (the module docstring).
    """
    if missing_rule not in MISSING_RULES:
        raise ValueError(f"missing_rule must be one of {MISSING_RULES}, got {missing_rule!r}")
    tasks: dict[str, _Task] = {}
    instances: list[_Instance] = []
    for line, raw in rows:
        parsed = _parse(source, line, raw)
        if isinstance(parsed, _Task):
            if parsed.name in tasks:
                raise DataError(source, f"line {line}", "task",
                                f"a second task line for {parsed.name!r} "
                                f"(first at line {tasks[parsed.name].line})")
            tasks[parsed.name] = parsed
        else:
            instances.append(parsed)
    by_task: dict[str, list[_Instance]] = {name: [] for name in tasks}
    for inst in instances:
        if inst.task not in tasks:
            raise DataError(source, f"line {inst.line}", "task",
                            f"task {inst.task!r} has no task line")
        by_task[inst.task].append(inst)
    if not tasks:
        raise DataError(source, None, "kind", "no task lines (at least one task is needed)")
    out = {name: _build_task(source, tasks[name], by_task[name], allow_missing, missing_rule)
           for name in sorted(tasks)}
    return ClbenchRecords(tasks=out, source=source)


def _build_task(source: str, task: _Task, rows: list[_Instance], allow_missing: bool,
                missing_rule: str = "instance") -> TaskRecords:
    name = task.name
    seen: dict[tuple[str, int, str], _Instance] = {}
    positions: dict[tuple[str, int, int], _Instance] = {}
    stages: dict[str, _Instance] = {}
    for inst in rows:
        where = f"line {inst.line}"
        key = (inst.arm, inst.rollout, inst.instance_id)
        if key in seen:
            raise DataError(source, where, "instance_id",
                            f"duplicate record for instance {inst.instance_id!r} of task "
                            f"{name!r}, {inst.arm} rollout {inst.rollout} (first at line "
                            f"{seen[key].line})")
        seen[key] = inst
        if inst.pos > task.n_instances:
            raise DataError(source, where, "pos", f"must be <= n_instances {task.n_instances} "
                                                  f"of task {name!r}, got {inst.pos}")
        slot = (inst.arm, inst.rollout, inst.pos)
        if slot in positions:
            raise DataError(source, where, "pos",
                            f"position {inst.pos} of task {name!r}, {inst.arm} rollout "
                            f"{inst.rollout} is taken (by line {positions[slot].line})")
        positions[slot] = inst
        low = -math.inf if task.reward_min is None else task.reward_min
        high = math.inf if task.reward_max is None else task.reward_max
        if not low <= inst.reward <= high:
            raise DataError(source, where, "reward", f"{inst.reward:g} is outside task "
                                                     f"{name!r}'s range [{low:g}, {high:g}]")
        first = stages.setdefault(inst.instance_id, inst)
        if first.stage != inst.stage:
            raise DataError(source, where, "stage",
                            f"instance {inst.instance_id!r} of task {name!r} is in stage "
                            f"{first.stage} at line {first.line} but {inst.stage} here")
    stateless = {i.instance_id: i for i in rows if i.arm == "stateless"}
    stateful: dict[int, dict[str, _Instance]] = {}
    for inst in rows:
        if inst.arm == "stateful":
            stateful.setdefault(inst.rollout, {})[inst.instance_id] = inst
    if not stateful:
        raise DataError(source, f"line {task.line}", "task",
                        f"task {name!r} has no stateful records")
    if len(stages) > task.n_instances:
        raise DataError(source, f"line {task.line}", "n_instances",
                        f"task {name!r} declares {task.n_instances} instances but its records "
                        f"name {len(stages)}")
    rollouts_left_out: list[int] = []
    if allow_missing and missing_rule == "rollout":
        known = set(stages)
        rollouts_left_out = [r for r in sorted(stateful) if set(stateful[r]) != known]
        for r in rollouts_left_out:
            del stateful[r]
        if not stateful:
            raise DataError(source, f"line {task.line}", "task",
                            f"task {name!r} has no stateful rollout holding all its instances")
    left_out: list[str] = []
    for instance_id, first in stages.items():  # first-seen order (file order)
        absent = [] if instance_id in stateless else ["the stateless arm"]
        gaps = [r for r in sorted(stateful) if instance_id not in stateful[r]]
        if gaps:
            absent.append(f"stateful rollout{'s' if len(gaps) > 1 else ''} "
                          + ", ".join(map(str, gaps)))
        if not absent:
            continue
        if not allow_missing:
            raise DataError(source, f"line {first.line}", "instance_id",
                            f"instance {instance_id!r} of task {name!r} is missing from "
                            f"{' and '.join(absent)} (--allow-missing leaves it out)")
        left_out.append(instance_id)
    n_unseen = task.n_instances - len(stages)
    if n_unseen and not allow_missing:
        raise DataError(source, f"line {task.line}", "n_instances",
                        f"task {name!r} declares {task.n_instances} instances but its records "
                        f"name {len(stages)} (--allow-missing scores those present)")
    dropped = set(left_out)
    kept = [i for i in stages if i not in dropped]
    if not kept:
        raise DataError(source, f"line {task.line}", "task",
                        f"task {name!r} has no instance in both arms")
    orders = {r: [i.instance_id for i in sorted(per.values(), key=lambda x: x.pos)
                  if i.instance_id not in dropped]
              for r, per in sorted(stateful.items())}
    stateless_sum = math.fsum(stateless[i].reward for i in kept)
    if stateless_sum > len(kept) * task.r_max:
        raise DataError(source, f"line {task.line}", "r_max",
                        f"task {name!r}: the stateless arm's mean reward "
                        f"{stateless_sum / len(kept):g} is above r_max {task.r_max:g}, so the "
                        f"normalized gain would change sign; r_max must be the ceiling")
    if not left_out and not n_unseen:
        _check_ceiling(source, task, stateful)
    unit, costs = _costs(source, name, orders, stateful)
    return TaskRecords(
        name=name, r_max=task.r_max, n_declared=task.n_instances, s_ext=task.s_ext,
        stateless={i: stateless[i].reward for i in kept},
        stages={i: stages[i].stage for i in kept},
        stateful={r: {i: stateful[r][i].reward for i in order} for r, order in orders.items()},
        orders=orders, costs=costs, cost_unit=unit, left_out=left_out, n_unseen=n_unseen,
        rollouts_left_out=rollouts_left_out)


def _check_ceiling(source: str, task: _Task, stateful: dict[int, dict[str, _Instance]]) -> None:
    """r_max bounds the mean reward over a task's N instances (docs/clbench.md §4.7), so a
    stateful rollout holding all of them cannot sum above N * r_max: one that does shows an
    r_max that is not the ceiling. Checked only where every declared instance is scored, since
    a subset of instances may have higher ceilings than the mean (poker's hands)."""
    for rollout, rewards in sorted(stateful.items()):
        total = math.fsum(inst.reward for inst in rewards.values())
        if total > task.n_instances * task.r_max * (1 + 1e-12):
            raise DataError(source, f"line {task.line}", "r_max",
                            f"task {task.name!r}: stateful rollout {rollout}'s mean reward "
                            f"{total / task.n_instances:g} is above r_max {task.r_max:g}; "
                            f"r_max must be the ceiling")


def _costs(source: str, name: str, orders: dict[int, list[str]],
           stateful: dict[int, dict[str, _Instance]]
           ) -> tuple[str | None, dict[int, dict[str, float]]]:
    """The cost of each scored stateful instance (docs/clbench.md §5.8: call costs, tokens offline).

    A task's unit is "cost" when every scored stateful record carries ``cost``, else "tokens"
    when every one carries ``tokens``, else None when none carries either; anything in between
    is an error naming the first record without the field. The stateless arm is not counted:
    the paper's cost is that of a stateful rollout (Tables 2-7).
    """
    scored = [stateful[r][i] for r, order in orders.items() for i in order]
    for unit in ("cost", "tokens"):
        if all(getattr(inst, unit) is not None for inst in scored):
            return unit, {r: {i: float(getattr(stateful[r][i], unit)) for i in order}
                          for r, order in orders.items()}
    unit = "cost" if any(inst.cost is not None for inst in scored) else "tokens"
    if all(getattr(inst, unit) is None for inst in scored):
        return None, {}
    bare = min((inst for inst in scored if getattr(inst, unit) is None), key=lambda x: x.line)
    raise DataError(source, f"line {bare.line}", unit,
                    f"missing, while other stateful records of task {name!r} carry it (give "
                    f"cost, or tokens, on every stateful record of a task, or on none)")


def load_clbench_records(path: str | Path, *, allow_missing: bool = False,
                         missing_rule: str = "instance") -> ClbenchRecords:
    """Read and validate a CL-Bench records file (JSONL, docs/clbench.md §3.1)."""
    p = Path(path)
    return records_from_rows(iter_json_lines(str(p)), source=str(p), allow_missing=allow_missing,
                             missing_rule=missing_rule)
