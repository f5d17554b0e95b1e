"""Summary of an OAKS run, computed from stored records (docs/oaks.md §5.9): the dataset, how many
probes are done, the metrics and bootstrap confidence intervals, and the coverage they were
computed on; and the OAKS lines of ``clstream summary``'s text table.

An error is never a wrong answer and a missing probe never a zero (docs/design.md §7, docs/oaks.md §5.9). The
metrics of a run are therefore computed over the *complete* questions only: those with a stored
successful answer at every interval. A question with a failed or not yet asked probe is left
out entirely (its remaining intervals would otherwise count as wrong and shift AL, DS and PM
too). ``coverage`` says how many questions and probes that is; when no question is complete the
metrics are null, never a mix of answered and unanswered probes. ``clstream score`` on a
predictions file keeps docs/oaks.md §3.2 (a missing prediction is an error unless ``--allow-missing``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from clstream.core.reader import ResultsReader
from clstream.core.records import RunRow
from clstream.driver.record_fields import cut_by_cap
from clstream.metrics.bootstrap import bootstrap_ci, ci_for_metrics
from clstream.protocols.oaks.data import OaksDataset, from_gold_view
from clstream.protocols.oaks.export import oaks_predictions
from clstream.protocols.oaks.metrics import score_oaks_with_rows
from clstream.render.runs import coverage_note
from clstream.render.text_columns import aligned_lines, seed_text

_CI_KEYS = ("accuracy", "acquisition_latency", "distraction_susceptibility", "phase_miss")


def complete_questions(dataset: OaksDataset, preds: dict[tuple[str, int], str]) -> OaksDataset:
    """The dataset narrowed to the questions with a prediction at every interval (documents
    left without a question are dropped)."""
    docs = []
    for doc in dataset.documents:
        kept = tuple(q for q in doc.questions
                     if all((q.question_id, t) in preds for t in range(1, doc.num_chunks + 1)))
        if kept:
            docs.append(dataclasses.replace(doc, questions=kept))
    return dataclasses.replace(dataset, documents=tuple(docs))


def interval_cis(rows: list[dict[str, Any]]) -> list[list[float]]:
    """The 95% bootstrap interval of ``accuracy_by_interval[t]`` at every interval: over the
    questions whose document reaches interval t, with the seed of the headline intervals (the
    same resampled questions at every interval), for the band under the accuracy curve."""
    longest = max((len(r["correct"]) for r in rows), default=0)
    return [list(bootstrap_ci([r["correct"][t] for r in rows if len(r["correct"]) > t]))
            for t in range(longest)]


def summarize_oaks_run(store: ResultsReader, run: RunRow) -> dict[str, Any]:
    _, view = store.get_dataset(run.dataset_sha256)
    dataset = from_gold_view(view)
    preds = oaks_predictions(store, run)
    total = sum(len(d.questions) * d.num_chunks for d in dataset.documents)
    n_questions = sum(len(d.questions) for d in dataset.documents)
    scored = complete_questions(dataset, preds)
    scored_ids = {q.question_id for d in scored.documents for q in d.questions}
    metrics: dict[str, Any] | None = None
    ci: dict[str, Any] = {}
    if scored_ids:
        used = {key: text for key, text in preds.items() if key[0] in scored_ids}
        metrics, _missing, rows = score_oaks_with_rows(scored, used)
        ci = {k: list(v) for k, v in ci_for_metrics(rows, _CI_KEYS).items()}
        ci["accuracy_by_interval"] = interval_cis(rows)
    errors = store.count(run.run_id, "probe", errors=True)
    coverage = {
        "unit": "questions",
        "scored": len(scored_ids),
        "total": n_questions,
        "share": len(scored_ids) / n_questions if n_questions else 0.0,
        "probes_scored": sum(len(d.questions) * d.num_chunks for d in scored.documents),
        "probes_done": len(preds),
        "probes_total": total,
        "over": "questions with a stored answer at every interval; failed and missing probes "
                "are left out, never counted as wrong",
    }
    return {
        "dataset": {
            "path": view["path"], "sha256": run.dataset_sha256,
            "n_documents": len(dataset.documents),
            "n_questions": sum(len(d.questions) for d in dataset.documents),
            "n_intervals": max((d.num_chunks for d in dataset.documents), default=0),
        },
        "status": {"probes_done": len(preds), "probes_total": total, "errors": errors,
                   "complete": len(preds) == total,
                   "hit_token_cap": cut_by_cap(store, run.run_id, ("probe",))},
        "coverage": coverage,
        "metrics": metrics,
        "ci": ci,
    }


def text_rows(runs: list[dict[str, Any]]) -> list[str]:
    """``clstream summary`` lines for OAKS runs: accuracy and its decomposition, progress; a
    dollar column when ``--prices`` priced any run (``-`` for a model without a price). The
    seed column tells apart runs that differ only in seed."""
    priced = any(isinstance(run.get("cost_usd"), int | float) for run in runs)
    header = ["system", "model", "seed", "acc", "AL", "DS", "PM", "probes", "errors", "tokens",
              "wall s"] + (["cost $"] if priced else [])
    rows = []
    for run in runs:
        m = run.get("metrics") or {}
        status = run.get("status", {})
        tokens = run["tokens"]["prompt"] + run["tokens"]["completion"]
        cost = run.get("cost_usd")
        rows.append([str(run["system"]), str(run["model"]), seed_text(run),
                     *(f"{m[k]:.3f}" if m.get(k) is not None else "-" for k in _CI_KEYS),
                     f"{status.get('probes_done', 0)}/{status.get('probes_total', 0)}",
                     str(status.get("errors", 0)), str(tokens), f"{run['wall_s']:.1f}"]
                    + ([f"{cost:.4f}" if isinstance(cost, int | float) else "-"]
                       if priced else []))
    return aligned_lines(header, rows, [False, False, True] + [True] * (len(header) - 3)) \
        + coverage_lines(runs)


def coverage_lines(runs: list[dict[str, Any]]) -> list[str]:
    """A note under the table for each incomplete run: what its metrics are computed over."""
    notes = [(run["system"], coverage_note(run)) for run in runs]
    return [f"  {system}: {note}" for system, note in notes if note]
