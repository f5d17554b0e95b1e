"""Per-run summaries computed from stored records (never from callbacks during the run).

``clstream summary DIR --json`` prints :func:`summarize`; the HTML report renders the same dict.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import clstream
from clstream.metrics.bootstrap import ci_for_metrics
from clstream.models.pricing import cost_usd
from clstream.protocols.oaks.data import from_gold_view
from clstream.protocols.oaks.metrics import score_oaks_with_rows
from clstream.store.db import ResultsStore, RunRow
from clstream.store.export import oaks_predictions

_CI_KEYS = ("accuracy", "acquisition_latency", "distraction_susceptibility", "phase_miss")


def _token_totals(stages: dict[str, dict[str, float]]) -> dict[str, int]:
    keys = ("prompt", "cached", "completion", "reasoning")
    return {k: int(sum(s[k] for s in stages.values())) for k in keys}


def _oaks_run(store: ResultsStore, run: RunRow) -> dict[str, Any]:
    _, view = store.get_dataset(run.dataset_sha256)
    dataset = from_gold_view(view)
    preds = oaks_predictions(store, run)
    total = sum(len(d.questions) * d.num_chunks for d in dataset.documents)
    metrics: dict[str, Any] | None = None
    ci: dict[str, list[float]] = {}
    if preds:
        metrics, _missing, rows = score_oaks_with_rows(dataset, preds, allow_missing=True)
        ci = {k: list(v) for k, v in ci_for_metrics(rows, _CI_KEYS).items()}
    errors = store.count(run.run_id, "probe", errors=True)
    return {
        "dataset": {
            "path": view["path"], "sha256": run.dataset_sha256,
            "n_documents": len(dataset.documents),
            "n_questions": sum(len(d.questions) for d in dataset.documents),
            "n_intervals": max((d.num_chunks for d in dataset.documents), default=0),
        },
        "status": {"probes_done": len(preds), "probes_total": total, "errors": errors,
                   "complete": len(preds) == total},
        "metrics": metrics,
        "ci": ci,
    }


def summarize(
    store: ResultsStore, prices: dict[str, dict[str, float]] | None = None
) -> dict[str, Any]:
    runs_out = []
    for run in store.runs():
        stages = store.usage_by_stage(run.run_id)
        tokens = _token_totals(stages)
        entry: dict[str, Any] = {
            "run_id": run.run_id, "protocol": run.protocol, "system": run.system,
            "model": run.model, "model_info": run.info.get("model_info", {}),
            "tokens": tokens, "tokens_by_stage": stages, "wall_s": round(run.wall_s, 3),
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
        if run.protocol == "oaks":
            entry.update(_oaks_run(store, run))
        elif run.protocol == "seqmem":
            from clstream.protocols.seqmem.summary import summarize_seqmem_run

            entry.update(summarize_seqmem_run(store, run))
        runs_out.append(entry)
    return {
        "dir": str(store.dir),
        "generated_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "clstream_version": clstream.__version__,
        "runs": runs_out,
    }
