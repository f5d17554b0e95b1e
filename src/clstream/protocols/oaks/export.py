"""OAKS predictions out of the store, in the public format of docs/oaks.md §3.2."""

from __future__ import annotations

import json
from pathlib import Path

from clstream.core.files import atomic_writer
from clstream.core.jsonio import dumps_finite
from clstream.core.reader import ResultsReader
from clstream.core.records import RunRow
from clstream.protocols.oaks.data import from_gold_view


def oaks_predictions(store: ResultsReader, run: RunRow) -> dict[tuple[str, int], str]:
    """Successful probe answers of a run, keyed (question_id, t)."""
    out: dict[tuple[str, int], str] = {}
    for row in store.iter_records(run.run_id, "probe"):
        if row["error"] is None:
            payload = json.loads(row["payload"])
            out[(payload["question_id"], int(payload["t"]))] = payload["output"]
    return out


def export_oaks(store: ResultsReader, run: RunRow, out: str | Path) -> int:
    """Write the predictions JSONL (exactly ``question_id``, ``t``, ``output`` per line) in
    dataset order: document, question, interval. Written atomically (temp file + rename): a
    failure leaves no partial file and an existing ``out`` unchanged."""
    _, view = store.get_dataset(run.dataset_sha256)
    dataset = from_gold_view(view)
    preds = oaks_predictions(store, run)
    n = 0
    with atomic_writer(out) as fh:
        for doc in dataset.documents:
            for q in doc.questions:
                for t in range(1, doc.num_chunks + 1):
                    if (q.question_id, t) in preds:
                        line = {"question_id": q.question_id, "t": t,
                                "output": preds[(q.question_id, t)]}
                        fh.write(dumps_finite(line, ensure_ascii=False) + "\n")
                        n += 1
    return n
