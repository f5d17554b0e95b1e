"""Per-run summaries computed from stored records (never from callbacks during the run).

``clstream summary DIR --json`` prints :func:`summarize`; the HTML report renders the same dict.
The fields every run has (tokens, stages, cost, provenance) are filled here; each run's
protocol adds its own (dataset, status, metrics) through its ``summarize_run``.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import clstream
from clstream.core.reader import ResultsReader
from clstream.core.records import RunRow
from clstream.core.registry import names, resolve
from clstream.driver.transport import transport_history
from clstream.models.pricing import cost_usd
from clstream.report.cross_protocol import cross_protocol
from clstream.report.paired import paired_view
from clstream.report.seed_groups import seed_groups
from clstream.store.export import select_runs

TRAIN_STAGE = "train"  # a parametric method's weight updates (docs/parametric.md §2)


def _token_totals(stages: dict[str, dict[str, float]]) -> dict[str, int]:
    """Inference tokens: every stage but training, whose tokens are read, not prompted."""
    keys = ("prompt", "cached", "completion", "reasoning")
    return {k: int(sum(s[k] for name, s in stages.items() if name != TRAIN_STAGE))
            for k in keys}


def _training(stages: dict[str, dict[str, float]]) -> dict[str, float | int] | None:
    """A parametric method's training cost: updates, those found already trained, tokens
    read over all epochs and seconds spent; None for a method that trains nothing."""
    stage = stages.get(TRAIN_STAGE)
    if stage is None:
        return None
    return {"updates": int(stage["records"]), "reused": int(stage["cache_hits"]),
            "tokens": int(stage["prompt"] + stage["completion"]),
            "seconds": round(float(stage["latency_s"]), 3)}


def broken_reason(error: BaseException) -> str:
    """One line saying why a run could not be summarized."""
    text = " ".join(str(error).split()) or "no message"
    return f"{type(error).__name__}: {text[:300]}"


def _entry(store: ResultsReader, run: RunRow, prices: dict[str, dict[str, float]] | None,
           known: list[str]) -> dict[str, Any]:
    stages = store.usage_by_stage(run.run_id)
    tokens = _token_totals(stages)
    entry: dict[str, Any] = {
        "run_id": run.run_id, "protocol": run.protocol, "system": run.system,
        "model": run.model, "model_info": run.info.get("model_info", {}),
        "tokens": tokens, "tokens_by_stage": stages, "training": _training(stages),
        "wall_s": round(run.wall_s, 3),
        "cost_usd": None,
        "meta": {
            "clstream_version": run.info.get("clstream_version"),
            "prompt_template_hash": run.info.get("prompt_template_hash"),
            "tokenizer": run.info.get("tokenizer"),
            "spec": run.spec, "seed": run.spec.get("seed"),
        },
    }
    if prices is not None and run.model in prices:
        entry["cost_usd"] = cost_usd(tokens, prices[run.model])
    if run.protocol in known:
        entry.update(resolve("protocol", run.protocol).summarize_run(store, run))
    # What a remote model's transport did (concurrency limit over time), per session.
    entry["transport"] = transport_history(store, run.run_id)
    return entry


def summarize(
    store: ResultsReader, prices: dict[str, dict[str, float]] | None = None, *,
    protocol: str | None = None, dataset: str | None = None, system: str | None = None,
    where: str | None = None,
) -> dict[str, Any]:
    """Every run of ``store`` (of ``protocol``, over ``dataset``, of ``system`` as typed,
    when given: :func:`clstream.store.export.select_runs`, whose refusals ``where`` opens),
    summarized.

    A run whose records cannot be summarized (damaged, or written by a clstream that stored
    them differently) is listed with ``broken``, the one-line reason, and nothing else it
    could not read: one broken run never hides the others."""
    runs_out = []
    known = names("protocol")
    for run in select_runs(store, protocol, dataset, system, where=where):
        try:
            runs_out.append(_entry(store, run, prices, known))
        except Exception as error:  # any failure of one run's summary, told as its reason
            runs_out.append({"run_id": run.run_id, "protocol": run.protocol,
                             "system": run.system, "model": run.model,
                             "meta": {"spec": run.spec}, "broken": broken_reason(error)})
    result: dict[str, Any] = {
        "dir": str(store.dir),
        "generated_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "clstream_version": clstream.__version__,
        "runs": runs_out,
    }
    view = cross_protocol(runs_out)
    if len(view["protocols"]) >= 2:  # the view compares protocols: absent for one
        result["cross_protocol"] = view
    seeds = seed_groups(runs_out)
    if seeds["groups"]:  # absent unless some runs differ only in seed
        result["seeds"] = seeds
    paired = paired_view(store, runs_out)
    if paired["pairs"]:  # absent unless two systems scored the same items
        result["paired"] = paired
    return result
