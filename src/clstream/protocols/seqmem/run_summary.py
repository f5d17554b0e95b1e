"""Summary of a SeqMem-Eval run, computed from stored records (SeqMem-Eval §3-4; docs/seqmem.md §5, §3).

Nothing is taken from the run's own progress: the metrics come from :func:`score_seqmem` over
the records the store holds, so a finished, resumed or partial run summarizes the same way.

An error is never a wrong answer and a missing record never a zero (docs/design.md §7, docs/seqmem.md §5.13); only
successful records are scored, and ``coverage`` says how much of the run that is:

* online: the stream is scored up to the last *contiguous* completed step m (tau = 1..m, every
  answer stored without error; an online answer that failed stops the stream there, so steps
  after it are not scored even if stored), as a stream of length m;
* hold-out: a checkpoint k <= m is scored only when every hold-out item has a successful
  answer there (H(k) always averages the same items); other checkpoints are left out;
* re-evaluation: the successful retro records of tasks tau with tau + t <= m; BWT(t) and F(t)
  average over those (docs/seqmem.md §5.13, as for a sampled re-evaluation).

``coverage`` gives m of T (``scored`` / ``total`` tasks, ``share``), the hold-out checkpoints
and re-evaluations scored against those planned, and ``status.complete`` is false unless all
of it is scored. With no online step done, the metrics are null.

Efficiency (paper §3.6) is the cost of the sequential run itself: the online answers and the
memory updates. Hold-out and re-evaluation probes are measurement, reported apart as
``probe_cost``. Time per stage: ``retrieve`` and ``generate`` come from the timings each
answer recorded, ``update`` from update calls made while answering (DC-RS's curator) plus the
wall time of every memory update.

Radar (paper Fig. 5 uses five dimensions, each an average of normalized metrics, then ranks
methods). This summary gives each run its normalized dimension scores in [0, 1], higher is
better, so any set of runs can be ranked from them:

* online utility = mean(OnlineAcc, 1 - PED);
* hold-out generalization = mean(HoldOutAcc, (clip(Trend_HO, -1, 1) + 1) / 2), or HoldOutAcc
  alone without a trend;
* backward transfer = mean over horizons of (BWT(t) + 1) / 2;
* forgetting = 1 - mean over horizons of F(t);
* efficiency = 1000 / (1000 + tokens per online task): 1 when free, 0.5 at 1000 tokens.

A dimension without its records is None.

:func:`text_rows` lays out the SeqMem lines of ``clstream summary``'s text table from these
summaries (the HTML view is :mod:`clstream.protocols.seqmem.report`).
"""

from __future__ import annotations

import json
from typing import Any

from clstream.core.errors import ClstreamError, StoreError
from clstream.core.reader import ResultsReader
from clstream.core.records import RunRow
from clstream.driver.record_fields import cut_by_cap
from clstream.metrics.exact import exact_mean
from clstream.metrics.proportions import running_wilson
from clstream.protocols.seqmem.metrics import online_curve, records_from_rows, score_seqmem
from clstream.protocols.seqmem.plan import SeqMemPlan
from clstream.render.runs import coverage_note
from clstream.render.text_columns import aligned_lines, seed_text

STAGES = ("retrieve", "generate", "update")
TOKEN_KEYS = ("prompt", "cached", "completion", "reasoning")
EFFICIENCY_SCALE = 1000.0  # tokens per task at which efficiency is 0.5


def seqmem_rows(store: ResultsReader, run: RunRow) -> list[dict[str, Any]]:
    """The run's successful records in the exact docs/seqmem.md §3.1 form: online by tau, hold-out by
    checkpoint then item, retro by horizon then tau."""
    online: list[dict[str, Any]] = []
    holdout: list[dict[str, Any]] = []
    retro: list[dict[str, Any]] = []
    for row in store.iter_records(run.run_id):
        if row["error"] is not None or row["kind"] not in ("online", "holdout", "retro"):
            continue
        p = json.loads(row["payload"])
        if row["kind"] == "online":
            online.append({"kind": "online", "tau": int(p["tau"]), "correct": int(p["correct"])})
        elif row["kind"] == "holdout":
            holdout.append({"kind": "holdout", "checkpoint": int(p["checkpoint"]),
                            "item": str(p["item"]), "correct": int(p["correct"])})
        else:
            retro.append({"kind": "retro", "tau": int(p["tau"]), "horizon": int(p["horizon"]),
                          "correct": int(p["correct"])})
    online.sort(key=lambda r: r["tau"])
    holdout.sort(key=lambda r: (r["checkpoint"], r["item"]))
    retro.sort(key=lambda r: (r["horizon"], r["tau"]))
    return online + holdout + retro


def _scorable(rows: list[dict[str, Any]], holdout_ids: list[str] | None = None
              ) -> tuple[list[dict[str, Any]], int]:
    """Rows restricted to the stored online prefix tau = 1..m, and m. Hold-out checkpoints
    not holding every hold-out item (``holdout_ids`` when known, else the most any checkpoint
    holds: a run stopped while answering them, or an item whose answer failed) are left out."""
    taus = {r["tau"] for r in rows if r["kind"] == "online"}
    m = 0
    while m + 1 in taus:
        m += 1
    kept = [r for r in rows if (r["kind"] == "online" and r["tau"] <= m)
            or (r["kind"] == "holdout" and r["checkpoint"] <= m)
            or (r["kind"] == "retro" and r["tau"] + r["horizon"] <= m)]
    items: dict[int, set[str]] = {}
    for r in kept:
        if r["kind"] == "holdout":
            items.setdefault(r["checkpoint"], set()).add(r["item"])
    if items:
        reference = set(holdout_ids) if holdout_ids else max(items.values(), key=len)
        kept = [r for r in kept if r["kind"] != "holdout" or items[r["checkpoint"]] == reference]
    return kept, m


def _planned(run: RunRow, n_tasks: int) -> tuple[list[int], int] | None:
    """The run's planned hold-out checkpoints and number of re-evaluations, from its spec."""
    params = run.spec.get("params") or {}
    try:
        plan = SeqMemPlan.build(n_tasks, params.get("checkpoints"), params.get("horizons"),
                                float(params.get("retro_sample", 1.0)),
                                int(run.spec.get("seed") or 0))
    except (ClstreamError, TypeError, ValueError):
        return None
    return list(plan.checkpoints), sum(len(plan.retro_at(k)) for k in range(n_tasks + 1))


def _coverage(kept: list[dict[str, Any]], m: int, n_tasks: int, n_holdout: int,
              planned: tuple[list[int], int] | None) -> dict[str, Any]:
    checkpoints = sorted({r["checkpoint"] for r in kept if r["kind"] == "holdout"})
    retro = sum(1 for r in kept if r["kind"] == "retro")
    cov: dict[str, Any] = {
        "unit": "tasks", "scored": m, "total": n_tasks,
        "share": m / n_tasks if n_tasks else 0.0,
        "holdout_checkpoints": checkpoints, "holdout_checkpoints_scored": len(checkpoints),
        "holdout_checkpoints_total": None, "retro_scored": retro, "retro_total": None,
        "over": f"online tasks 1..{m} (the stream up to its last contiguous completed step), "
                "hold-out checkpoints within it with every item answered, re-evaluations "
                "within it; failed and missing records are left out, never counted as wrong",
    }
    complete = m == n_tasks > 0
    if planned is not None:
        wanted = planned[0] if n_holdout else []
        cov["holdout_checkpoints_total"], cov["retro_total"] = len(wanted), planned[1]
        complete = complete and set(wanted) <= set(checkpoints) and retro >= planned[1]
    cov["complete"] = complete
    return cov


def _zero_tokens() -> dict[str, int]:
    return {k: 0 for k in TOKEN_KEYS}


def _costs(store: ResultsReader, run: RunRow) -> dict[str, Any]:
    """Tokens per stage split into the sequential run (online + update) and probes."""
    phases: dict[str, dict[str, dict[str, int]]] = {
        "run": {s: _zero_tokens() for s in STAGES}, "probes": {s: _zero_tokens() for s in STAGES}}
    calls = 0
    for (stream, stage, kind), usage in store.usage_by_stream_stage_kind(run.run_id).items():
        phase = "run" if stream in ("online", "update") else "probes"
        bucket = phases[phase].setdefault(stage, _zero_tokens())
        for key in TOKEN_KEYS:
            bucket[key] += usage[key]
        if kind == "call":
            calls += usage["records"]
    times = {"run": dict.fromkeys(STAGES, 0.0), "probes": dict.fromkeys(STAGES, 0.0)}
    for row in store.iter_records(run.run_id):
        p = json.loads(row["payload"])
        if row["kind"] == "update":
            times["run"]["update"] += float(p.get("time_s", 0.0))
        elif row["kind"] in ("online", "holdout", "retro") and row["error"] is None:
            phase = "run" if row["kind"] == "online" else "probes"
            for stage, seconds in (p.get("timings") or {}).items():
                times[phase][stage] = times[phase].get(stage, 0.0) + float(seconds)
    return {"tokens": phases, "time_s": {k: {s: round(v, 6) for s, v in t.items()}
                                          for k, t in times.items()}, "calls": calls}


def _total(tokens: dict[str, dict[str, int]]) -> int:
    return sum(b["prompt"] + b["completion"] + b["reasoning"] for b in tokens.values())


def _mean(values: list[float]) -> float | None:
    return exact_mean(values) if values else None


def radar(metrics: dict[str, Any] | None, tokens_per_task: float | None) -> dict[str, Any]:
    """The five normalized dimensions (definitions in the module docstring)."""
    m = metrics or {}
    online = _mean([m["online_acc"], 1.0 - m["ped"]]) if "online_acc" in m else None
    holdout = None
    if "holdout_acc" in m:
        parts = [m["holdout_acc"]]
        if "trend_ho" in m:
            parts.append((max(-1.0, min(1.0, m["trend_ho"])) + 1.0) / 2.0)
        holdout = _mean(parts)
    bwt = _mean([(v + 1.0) / 2.0 for v in (m.get("bwt") or {}).values()])
    forget = _mean(list((m.get("forgetting") or {}).values()))
    eff = None if tokens_per_task is None else EFFICIENCY_SCALE / (EFFICIENCY_SCALE + tokens_per_task)
    return {"online_utility": online, "holdout_generalization": holdout,
            "backward_transfer": bwt, "forgetting": None if forget is None else 1.0 - forget,
            "efficiency": eff}


def summarize_seqmem_run(store: ResultsReader, run: RunRow) -> dict[str, Any]:
    """Metrics, curves, costs by stage, counts and radar scores of one SeqMem run."""
    view: dict[str, Any] = {}
    try:
        _, view = store.get_dataset(run.dataset_sha256)
    except StoreError:  # a store written without the dataset view still summarizes
        view = {}
    holdout_ids = view.get("holdout_ids") if isinstance(view.get("holdout_ids"), list) else None
    kept, m = _scorable(seqmem_rows(store, run), holdout_ids)
    metrics: dict[str, Any] | None = None
    curve: list[float] = []
    ci: dict[str, Any] = {}
    holdout_curve: list[dict[str, Any]] = []
    if m:
        records = records_from_rows(enumerate(kept, start=1), source=f"run {run.run_id}")
        metrics = score_seqmem(records)
        curve = [float(x) for x in online_curve(records.online)]
        # Wilson intervals of the running accuracy (docs/statistics.md §3); the last point's
        # is OnlineAcc's.
        band = [list(pair) for pair in running_wilson(records.online)]
        ci = {"online_acc": band[-1], "online_curve": band}
        holdout_curve = [{"checkpoint": k, "accuracy": sum(v.values()) / len(v), "items": len(v)}
                         for k, v in sorted(records.holdout.items())]
    costs = _costs(store, run)
    run_tokens = _total(costs["tokens"]["run"])
    n_tasks = int(view.get("n_tasks", m))
    plan = run.spec.get("params", {})
    counts = {kind: store.count(run.run_id, kind, errors=False)
              for kind in ("online", "holdout", "retro")}
    errors = sum(store.count(run.run_id, kind, errors=True)
                 for kind in ("online", "holdout", "retro", "call"))
    n_holdout = len(view.get("holdout_ids", []))
    coverage = _coverage(kept, m, n_tasks, n_holdout, _planned(run, n_tasks) if n_tasks else None)
    return {
        "dataset": {"path": view.get("path"), "sha256": run.dataset_sha256,
                    "source": view.get("source"), "n_tasks": n_tasks,
                    "n_holdout": n_holdout},
        "plan": {"checkpoints": plan.get("checkpoints"), "horizons": plan.get("horizons"),
                 "retro_sample": plan.get("retro_sample")},
        "status": {**{f"{k}_done": v for k, v in counts.items()}, "calls": costs["calls"],
                   "errors": errors, "online_total": n_tasks, "complete": coverage["complete"],
                   "hit_token_cap": cut_by_cap(store, run.run_id,
                                               ("online", "holdout", "retro"))},
        "coverage": coverage,
        "metrics": metrics,
        "online_curve": curve,
        "ci": ci,
        "holdout_curve": holdout_curve,
        "bwt": dict((metrics or {}).get("bwt", {})),
        "forgetting": dict((metrics or {}).get("forgetting", {})),
        "efficiency": {
            "tokens": run_tokens,
            "tokens_per_task": run_tokens / m if m else None,
            "tokens_by_stage": costs["tokens"]["run"],
            "time_s_by_stage": costs["time_s"]["run"],
        },
        "probe_cost": {"tokens": _total(costs["tokens"]["probes"]),
                       "tokens_by_stage": costs["tokens"]["probes"],
                       "time_s_by_stage": costs["time_s"]["probes"]},
        "radar": radar(metrics, run_tokens / m if m else None),
    }


# --- the text table of ``clstream summary`` ---------------------------------------------------

TEXT_HEADER = ("system", "model", "seed", "online", "holdout", "IV", "BWT(1)", "F(1)", "tasks",
               "errors", "ret tok", "upd tok", "ret s", "upd s", "tokens", "wall s")


def _cell(value: Any, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) else "-"


def _stage_tokens(efficiency: dict[str, Any], stage: str) -> int:
    b = (efficiency.get("tokens_by_stage") or {}).get(stage) or {}
    return int(b.get("prompt", 0) + b.get("completion", 0) + b.get("reasoning", 0))


def text_rows(runs: list[dict[str, Any]]) -> list[str]:
    """``clstream summary`` lines for SeqMem runs: the header, then one line per run with the
    main metrics, online progress, and the retrieve / update cost of the sequential run; a
    dollar column when ``--prices`` priced any run (``-`` for a model without a price). BWT(1)
    and F(1) are at horizon 1, as the report's table shows them; the seed column tells apart
    runs that differ only in seed."""
    priced = any(isinstance(run.get("cost_usd"), int | float) for run in runs)
    header = [*TEXT_HEADER, *(["cost $"] if priced else [])]
    rows = []
    for run in runs:
        m = run.get("metrics") or {}
        status = run.get("status") or {}
        eff = run.get("efficiency") or {}
        seconds = eff.get("time_s_by_stage") or {}
        scores = [m.get("online_acc"), m.get("holdout_acc"), m.get("iv"),
                  (m.get("bwt") or {}).get("1"), (m.get("forgetting") or {}).get("1")]
        total = run.get("tokens") or {}
        rows.append([
            str(run["system"]), str(run["model"]), seed_text(run), *map(_cell, scores),
            f"{status.get('online_done', 0)}/{status.get('online_total', 0)}",
            str(status.get("errors", 0)), str(_stage_tokens(eff, "retrieve")),
            str(_stage_tokens(eff, "update")), _cell(seconds.get("retrieve")),
            _cell(seconds.get("update")),
            str(total.get("prompt", 0) + total.get("completion", 0)),
            f"{run.get('wall_s', 0.0):.1f}",
            *([_cell(run.get("cost_usd"), 4)] if priced else [])])
    numeric = [False, False, True] + [True] * (len(header) - 3)
    return aligned_lines(header, rows, numeric) + coverage_lines(runs)


def coverage_lines(runs: list[dict[str, Any]]) -> list[str]:
    """A note under the table for each incomplete run: what its metrics are computed over."""
    notes = [(run["system"], coverage_note(run)) for run in runs]
    return [f"  {system}: {note}" for system, note in notes if note]
