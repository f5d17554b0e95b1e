"""Summary of an OAKS run, computed from stored records (SPECS §1.4): the dataset, how many
probes are done, the metrics over the answers stored and bootstrap confidence intervals; and
the OAKS lines of ``clstream summary``'s text table."""

from __future__ import annotations

from typing import Any

from clstream.core.records import RunRow
from clstream.metrics.bootstrap import ci_for_metrics
from clstream.protocols.oaks.data import from_gold_view
from clstream.protocols.oaks.export import oaks_predictions
from clstream.protocols.oaks.metrics import score_oaks_with_rows

_CI_KEYS = ("accuracy", "acquisition_latency", "distraction_susceptibility", "phase_miss")


def summarize_oaks_run(store: Any, run: RunRow) -> dict[str, Any]:
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


def text_rows(runs: list[dict[str, Any]]) -> list[str]:
    """``clstream summary`` lines for OAKS runs: accuracy and its decomposition, progress."""
    lines = [f"{'system':<22}{'model':<16}{'acc':>8}{'AL':>8}{'DS':>8}{'PM':>8}{'probes':>12}"
             f"{'errors':>8}{'tokens':>12}{'wall s':>9}"]
    for run in runs:
        m = run.get("metrics") or {}
        status = run.get("status", {})
        cells = [m.get(k) for k in _CI_KEYS]
        nums = "".join(f"{c:>8.3f}" if c is not None else f"{'-':>8}" for c in cells)
        nums += f"{status.get('probes_done', 0)}/{status.get('probes_total', 0)}".rjust(12)
        tokens = run["tokens"]["prompt"] + run["tokens"]["completion"]
        lines.append(f"{run['system']:<22}{run['model']:<16}{nums}"
                     f"{status.get('errors', 0):>8}{tokens:>12}{run['wall_s']:>9.1f}")
    return lines
