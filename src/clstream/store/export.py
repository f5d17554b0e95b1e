"""Export stored answers to the public file formats of SPECS §5."""

from __future__ import annotations

import json
import os
from pathlib import Path

from clstream.core.errors import ClstreamError, StoreError
from clstream.core.specs import ComponentSpec
from clstream.protocols.oaks.data import from_gold_view
from clstream.store.db import ResultsStore, RunRow


def select_run(store: ResultsStore, system: str, model: str | None = None) -> RunRow:
    """The one run whose system label (or run id) is ``system``, optionally for ``model``."""
    try:  # accept the system as typed on the command line, whatever its argument order
        canonical = ComponentSpec.parse(system).label
    except ClstreamError:
        canonical = system
    runs = [r for r in store.runs()
            if system in (r.system, r.run_id) or r.system == canonical]
    runs = [r for r in runs if model is None or r.model == model]
    if not runs:
        known = ", ".join(sorted({r.system for r in store.runs()})) or "none"
        raise StoreError(f"{store.dir}: no run of system {system!r} (runs here: {known})")
    if len(runs) > 1:
        ids = ", ".join(f"{r.run_id} ({r.model})" for r in runs)
        raise StoreError(
            f"{store.dir}: system {system!r} has several runs ({ids}); pass --model or a run id"
        )
    return runs[0]


def oaks_predictions(store: ResultsStore, run: RunRow) -> dict[tuple[str, int], str]:
    """Successful probe answers of a run, keyed (question_id, t)."""
    out: dict[tuple[str, int], str] = {}
    for row in store.iter_records(run.run_id, "probe"):
        if row["error"] is None:
            payload = json.loads(row["payload"])
            out[(payload["question_id"], int(payload["t"]))] = payload["output"]
    return out


def export_oaks(store: ResultsStore, run: RunRow, out: str | Path) -> int:
    """Write the predictions JSONL (exactly ``question_id``, ``t``, ``output`` per line) in
    dataset order: document, question, interval. Written atomically (temp file + rename)."""
    _, view = store.get_dataset(run.dataset_sha256)
    dataset = from_gold_view(view)
    preds = oaks_predictions(store, run)
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    n = 0
    with open(tmp, "w", encoding="utf-8") as fh:
        for doc in dataset.documents:
            for q in doc.questions:
                for t in range(1, doc.num_chunks + 1):
                    if (q.question_id, t) in preds:
                        line = {"question_id": q.question_id, "t": t,
                                "output": preds[(q.question_id, t)]}
                        fh.write(json.dumps(line, ensure_ascii=False) + "\n")
                        n += 1
    os.replace(tmp, out)
    return n
