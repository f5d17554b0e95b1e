"""Summary and export of a CL-Bench run, computed from stored records (docs/clbench.md §5, §3).

Nothing comes from the run's own progress: the instance records the store holds are turned
into the docs/clbench.md §3.1 records and scored by :func:`~clstream.protocols.clbench.metrics.score_clbench`,
so a finished, resumed or partial run summarizes the same way, and ``export`` then
``score clbench`` gives exactly the summary's metrics.

Coverage. An error is never a reward and a missing instance is never a zero (docs/design.md §7,
docs/clbench.md §5.11). An arm counts only when it is complete: the stateless arm of a task with every one of
its N instances stored without error, a stateful rollout likewise. A task is scored over its
complete rollouts, provided its stateless arm is complete and at least one rollout is; otherwise
it is withheld. The aggregate averages the scored tasks. ``coverage`` says how many instances
that is (``scored`` of ``total`` instances planned, over both arms and every rollout) and, per
task, which rollouts were scored; ``status.complete`` is true only when everything planned is
scored. The export writes exactly the scored records, so it never holds a partial arm.

Cost is tokens (offline, docs/clbench.md §5.8): each instance record carries the tokens of every model call
made for it, a rollout's cost is their sum and a task's the mean over its scored rollouts.

:func:`text_rows` lays out the CL-Bench lines of ``clstream summary``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from itertools import accumulate
from typing import Any

from clstream.core.errors import StoreError
from clstream.core.jsonio import write_jsonl
from clstream.core.reader import ResultsReader
from clstream.core.records import RunRow
from clstream.driver.record_fields import cut_by_cap
from clstream.metrics.exact import exact_mean, exact_sum, scaled_integers
from clstream.protocols.clbench.metrics import score_clbench, stage_means
from clstream.protocols.clbench.runner import STATEFUL, STATELESS
from clstream.render.runs import coverage_note
from clstream.render.text_columns import aligned_lines, seed_text

Row = dict[str, Any]


def run_view(store: ResultsReader, run: RunRow) -> dict[str, Any]:
    """What the run stored about its tasks (schedules, r_max), or {} when missing."""
    try:
        _, view = store.get_dataset(run.dataset_sha256)
    except StoreError:
        return {}
    return view if isinstance(view.get("tasks"), dict) else {}


def _planned_rollouts(run: RunRow) -> int:
    value = (run.spec.get("params") or {}).get("rollouts")
    return int(value) if isinstance(value, int) else 0


def instance_rows(store: ResultsReader, run: RunRow) -> dict[str, dict[tuple[str, int], list[Row]]]:
    """Successful instance records as docs/clbench.md §3.1 rows: task -> (arm, rollout) -> rows by pos."""
    out: dict[str, dict[tuple[str, int], list[Row]]] = {}
    for rec in store.read_records(run.run_id, "instance", errors=False):
        p = rec.payload
        row: Row = {"kind": "instance", "task": str(p["task"]), "arm": str(rec.arm),
                    "rollout": int(rec.rollout or 0), "pos": int(p["pos"]),
                    "instance_id": str(p["instance_id"]), "stage": int(p["stage"]),
                    "reward": float(rec.score if rec.score is not None else 0.0)}
        if isinstance(p.get("steps"), int):
            row["steps"] = int(p["steps"])
        if isinstance(p.get("tokens"), int):
            row["tokens"] = int(p["tokens"])
        out.setdefault(row["task"], {}).setdefault((row["arm"], row["rollout"]), []).append(row)
    for arms in out.values():
        for rows in arms.values():
            rows.sort(key=lambda r: r["pos"])
    return out


def _complete(rows: list[Row], n: int) -> bool:
    return len(rows) == n and {r["pos"] for r in rows} == set(range(1, n + 1))


def reference_s_ext(run: RunRow) -> dict[str, float]:
    """S_ext per task from the reference recorded with the run (``run clbench --reference``),
    or {} when the run has none."""
    ref = run.info.get("reference")
    values = ref.get("s_ext") if isinstance(ref, dict) else None
    if not isinstance(values, dict):
        return {}
    return {str(k): float(v) for k, v in values.items() if isinstance(v, int | float)}


def stateless_sums(store: ResultsReader, run: RunRow) -> dict[str, float]:
    """The cumulative reward of each task's stateless arm, for the tasks whose stateless arm is
    complete (every instance stored without error): S_ext when ``run`` is the reference."""
    view = run_view(store, run)
    rows = instance_rows(store, run)
    out: dict[str, float] = {}
    for task, info in view.get("tasks", {}).items():
        arm = rows.get(task, {}).get((STATELESS, 0), [])
        if _complete(arm, int(info["n_instances"])):
            out[task] = exact_sum(r["reward"] for r in arm)
    return out


def scored_records(view: dict[str, Any], rows: dict[str, dict[tuple[str, int], list[Row]]],
                   rollouts: int, s_ext: dict[str, float] | None = None
                   ) -> tuple[list[Row], dict[str, Any]]:
    """The docs/clbench.md §3.1 records the run is scored on (complete arms of scorable tasks, in task
    order, a task line carrying its S_ext when ``s_ext`` gives one) and the per-task
    coverage."""
    out: list[Row] = []
    tasks: dict[str, Any] = {}
    for task, info in view.get("tasks", {}).items():
        n = int(info["n_instances"])
        arms = rows.get(task, {})
        stateless = _complete(arms.get((STATELESS, 0), []), n)
        complete = [r for r in range(rollouts) if _complete(arms.get((STATEFUL, r), []), n)]
        scored = stateless and bool(complete)
        tasks[task] = {"n_instances": n, "stateless_complete": stateless,
                       "rollouts_complete": complete, "rollouts_total": rollouts,
                       "scored": scored}
        if not scored:
            continue
        line: Row = {"kind": "task", "task": task, "r_max": float(info["r_max"]),
                     "n_instances": n}
        best = (info.get("ceiling") or {}).get("best_reward")
        if isinstance(best, int | float) and not isinstance(best, bool):
            line["reward_max"] = float(best)  # no instance can earn more (docs/clbench.md §4.7)
        if s_ext and task in s_ext:
            line["s_ext"] = s_ext[task]
        out.append(line)
        out += arms[(STATELESS, 0)]
        for r in complete:
            out += arms[(STATEFUL, r)]
    return out, tasks


def export_rows(store: ResultsReader, run: RunRow) -> list[Row]:
    rows, _ = scored_records(run_view(store, run), instance_rows(store, run),
                             _planned_rollouts(run), reference_s_ext(run))
    return rows


def export_clbench(store: ResultsReader, run: RunRow, out: Any) -> int:
    """Write the run's scored records in the docs/clbench.md §3.1 form (JSONL), atomically."""
    if run.protocol != "clbench":
        raise StoreError(f"{store.dir}: run {run.run_id} is a {run.protocol} run, not clbench")
    return write_jsonl(out, export_rows(store, run))


def _running_sums(rewards: Sequence[float]) -> list[float]:
    """Each prefix sum of the rewards, exact and rounded once (the last is S of the arm)."""
    numerators, denominator = scaled_integers(rewards)
    return [total / denominator for total in accumulate(numerators)]


def _curve(rows: dict[tuple[str, int], list[Row]], complete: list[int]) -> dict[str, Any]:
    """Cumulative reward by position: the mean over scored rollouts with its range, and the
    stateless arm's rewards taken in each rollout's order (paired by instance), averaged."""
    stateless = {r["instance_id"]: r["reward"] for r in rows.get((STATELESS, 0), [])}
    sf_curves, sl_curves = [], []
    for r in complete:
        order = rows[(STATEFUL, r)]
        sf_curves.append(_running_sums([row["reward"] for row in order]))
        sl_curves.append(_running_sums([stateless[row["instance_id"]] for row in order]))
    if not sf_curves:
        return {}
    cols = list(zip(*sf_curves, strict=True))
    return {"stateful_mean": [exact_mean(c) for c in cols],
            "stateful_low": [min(c) for c in cols], "stateful_high": [max(c) for c in cols],
            "stateless": [exact_mean(c) for c in zip(*sl_curves, strict=True)]}


def _stage_variants(store: ResultsReader, run: RunRow, task: str) -> dict[int, str]:
    """The variant of each stage of ``task``, as the stored instance records name it."""
    out: dict[int, str] = {}
    for rec in store.read_records(run.run_id, "instance", stream=task, errors=False):
        stage, variant = rec.payload.get("stage"), rec.payload.get("variant")
        if isinstance(stage, int) and variant is not None:
            out.setdefault(stage, str(variant))
    return out


def by_stage(rows: dict[tuple[str, int], list[Row]], complete: list[int],
             variants: dict[int, str] | None = None) -> list[dict[str, Any]]:
    """Mean reward per stage (:func:`~clstream.protocols.clbench.metrics.stage_means`) over
    the stateless arm and the scored rollouts ``complete``: a row per stage with its index,
    variant (when known), instance count, stateful mean over rollouts, stateless mean and
    gain."""
    def pairs(arm: list[Row]) -> list[tuple[int, float]]:
        return [(int(r["stage"]), float(r["reward"])) for r in arm]

    means = stage_means([pairs(rows[(STATEFUL, r)]) for r in complete],
                        pairs(rows.get((STATELESS, 0), [])))
    return [{"stage": s, "variant": (variants or {}).get(s), **m} for s, m in means.items()]


def _task_status(store: ResultsReader, run: RunRow, task: str) -> dict[str, Any]:
    counts: dict[str, Any] = {"stateless_done": 0, "stateful_done": {}, "errors": 0,
                              "tokens": 0, "steps": 0}
    for rec in store.read_records(run.run_id, "instance", stream=task):
        if rec.error is not None:
            counts["errors"] += 1
            continue
        counts["tokens"] += int(rec.payload.get("tokens") or 0)
        counts["steps"] += int(rec.payload.get("steps") or 0)
        if rec.arm == STATELESS:
            counts["stateless_done"] += 1
        else:
            r = str(rec.rollout)
            counts["stateful_done"][r] = counts["stateful_done"].get(r, 0) + 1
    return counts


def summarize_clbench_run(store: ResultsReader, run: RunRow) -> dict[str, Any]:
    """Metrics (``score clbench``'s JSON over the scored records), coverage, per-task status
    and cumulative-reward curves of one CL-Bench run."""
    view = run_view(store, run)
    rollouts = _planned_rollouts(run)
    rows = instance_rows(store, run)
    records, coverage_tasks = scored_records(view, rows, rollouts, reference_s_ext(run))
    metrics = score_clbench(records) if records else None
    tasks: dict[str, Any] = {}
    done = errors = total = scored = 0
    for task, cov in coverage_tasks.items():
        status = _task_status(store, run, task)
        n = cov["n_instances"]
        planned = n * (rollouts + 1)
        total += planned
        done += status["stateless_done"] + sum(status["stateful_done"].values())
        errors += status["errors"]
        if cov["scored"]:
            scored += n * (1 + len(cov["rollouts_complete"]))
        tasks[task] = {**cov, **status, "instances_total": planned,
                       "r_max": view["tasks"][task].get("r_max"),
                       "curve": _curve(rows.get(task, {}), cov["rollouts_complete"])
                       if cov["scored"] else {},
                       "by_stage": by_stage(rows.get(task, {}), cov["rollouts_complete"],
                                            _stage_variants(store, run, task))
                       if cov["scored"] else []}
    complete = bool(total) and scored == total
    withheld = [t for t, c in coverage_tasks.items() if not c["scored"]]
    coverage = {
        "unit": "instances", "scored": scored, "total": total,
        "share": scored / total if total else 0.0, "complete": complete,
        "tasks_scored": [t for t, c in coverage_tasks.items() if c["scored"]],
        "tasks_withheld": withheld,
        "over": "complete arms only: the stateless arm and each stateful rollout with every "
                "instance stored without error; a task without a complete stateless arm and "
                "rollout is withheld; failed and missing instances are never scored",
    }
    params = run.spec.get("params") or {}
    names = list(view.get("tasks", {}))
    return {
        "dataset": {"path": f"clbench: {', '.join(names)} ({params.get('schedule')} schedule, "
                            f"seed {run.spec.get('seed')})",
                    "sha256": run.dataset_sha256, "tasks": names,
                    "schedule": params.get("schedule"), "seed": run.spec.get("seed"),
                    "n_tasks": len(names),
                    "n_instances": sum(int(t["n_instances"])
                                       for t in view.get("tasks", {}).values())},
        "plan": {"rollouts": rollouts, "tasks": list(view.get("tasks", {}))},
        "status": {"instances_done": done, "instances_total": total, "errors": errors,
                   "steps": sum(t["steps"] for t in tasks.values()),
                   "tokens": sum(t["tokens"] for t in tasks.values()), "complete": complete,
                   "hit_token_cap": cut_by_cap(store, run.run_id, ("step",))},
        "coverage": coverage,
        "metrics": metrics,
        "reference": run.info.get("reference"),
        "tasks": tasks,
    }


# --- the text table of ``clstream summary`` ---------------------------------------------------

TASK_HEADER = ("task", "system", "model", "seed", "norm gain ± SE", "stability", "plasticity",
               "norm reward ± SE", "reward", "stateless", "instances", "errors", "tokens")
"""Per task: ± is the standard error over rollouts."""
AGGREGATE_HEADER = ("over tasks", "system", "model", "seed", "norm gain ± 95% CI half-width",
                    "stability", "plasticity", "norm reward ± 95% CI half-width", "instances",
                    "errors", "tokens")
"""Over tasks: ± is the half-width of the 95% interval of the mean over tasks."""


def _num(value: Any, digits: int = 3) -> str:
    ok = isinstance(value, int | float) and math.isfinite(value)
    return f"{round(value, digits) + 0.0:.{digits}f}" if ok else "-"


def _mean_pm(stat: Any, spread: str) -> str:
    """``mean ± spread`` of a statistic, ``spread`` the key of the one meaning of ± the
    table's header names (``se`` or ``ci95``)."""
    if not isinstance(stat, dict) or not isinstance(stat.get("mean"), int | float):
        return "-"
    text = f"{round(stat['mean'], 3) + 0.0:.3f}"
    value = stat.get(spread)
    return text + (f" ± {value:.3f}" if isinstance(value, int | float) else "")


def _task_rows(run: dict[str, Any]) -> Iterable[list[str]]:
    per_task = (run.get("metrics") or {}).get("tasks") or {}
    system, model, seed = str(run.get("system", "?")), str(run.get("model", "?")), seed_text(run)
    for task, info in (run.get("tasks") or {}).items():
        m = per_task.get(task) or {}
        done = info.get("stateless_done", 0) + sum((info.get("stateful_done") or {}).values())
        yield [task, system, model, seed, _mean_pm(m.get("normalized_gain"), "se"),
               _num((m.get("stability") or {}).get("mean")),
               _num((m.get("plasticity") or {}).get("mean")),
               _mean_pm(m.get("normalized_reward"), "se"),
               _num((m.get("reward") or {}).get("mean"), 2),
               _num(m.get("stateless_reward"), 2), f"{done}/{info.get('instances_total', 0)}",
               str(info.get("errors", 0)), str(info.get("tokens", 0))]


def _aggregate_row(run: dict[str, Any]) -> list[str] | None:
    agg = (run.get("metrics") or {}).get("aggregate")
    if not agg:
        return None
    status = run.get("status") or {}
    return ["(all tasks)", str(run.get("system", "?")), str(run.get("model", "?")),
            seed_text(run), _mean_pm(agg.get("normalized_gain"), "ci95"),
            _num(agg.get("stability")), _num(agg.get("plasticity")),
            _mean_pm(agg.get("normalized_reward"), "ci95"),
            f"{status.get('instances_done', 0)}/{status.get('instances_total', 0)}",
            str(status.get("errors", 0)), str(status.get("tokens", 0))]


BUILTIN_POLICY_NOTE = (
    "Every run here uses the builtin model, which acts in each task with one builtin policy "
    "(docs/clbench.md §6) whatever the system: the systems differ only in which earlier steps "
    "their prompts show that policy. The comparison checks the harness (memory carried across "
    "instances, both arms, the metrics) and does not rank memory methods."
)


def builtin_policy_note(runs: Sequence[dict[str, Any]]) -> str | None:
    """:data:`BUILTIN_POLICY_NOTE` when every run in ``runs`` used the builtin model (so the
    same policy acted for every system), else None: a model's scores are then no measurement of
    a method, only of what its prompts carried."""
    if runs and all((run.get("model_info") or {}).get("backend") == "builtin" for run in runs):
        return BUILTIN_POLICY_NOTE
    return None


def text_rows(runs: list[dict[str, Any]]) -> list[str]:
    """``clstream summary`` lines for CL-Bench runs, two tables, each with one meaning of ±
    named in its header: per task and run (normalized gain ± SE over rollouts, stability,
    plasticity, normalized reward ± SE when the run has a reference ('-' otherwise),
    cumulative reward of both arms, instances done, errors, tokens), then over tasks per run
    (± the 95% interval's half-width); a coverage note under them for each incomplete run;
    last, when every run used the builtin model, the line saying that the comparison checks
    the harness and ranks no method (:func:`builtin_policy_note`)."""
    tasks = [row for run in runs for row in _task_rows(run)]
    lines = aligned_lines(TASK_HEADER, tasks, [False] * 3 + [True] * 10)
    aggregates = [row for row in map(_aggregate_row, runs) if row is not None]
    if aggregates:
        lines += [""] + aligned_lines(AGGREGATE_HEADER, aggregates, [False] * 3 + [True] * 8)
    notes = [(run.get("system", "?"), coverage_note(run)) for run in runs]
    lines += [f"  {system}: {note}" for system, note in notes if note]
    same_policy = builtin_policy_note(runs)
    return lines + ([f"  note: {same_policy}"] if same_policy else [])
