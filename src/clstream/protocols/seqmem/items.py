"""Per-task online scores of a stored SeqMem-Eval run, for paired comparisons between systems
(docs/statistics.md §2): online accuracy is the mean over the stream's tasks of whether each
was answered right when it arrived (docs/seqmem.md §5.2), so a task's position in the stream is
the item two systems are compared on."""

from __future__ import annotations

from typing import Any

from clstream.core.errors import StoreError
from clstream.core.reader import ResultsReader
from clstream.core.records import RunRow
from clstream.protocols.seqmem.run_summary import _scorable, seqmem_rows


def item_scores(store: ResultsReader, run: RunRow) -> dict[str, dict[str, float]]:
    """``{"online_acc": {"TAU": 0.0 or 1.0}}`` over the online prefix the run's metrics
    cover; empty before any task is answered."""
    try:
        _, view = store.get_dataset(run.dataset_sha256)
    except StoreError:
        view = {}
    found: Any = view.get("holdout_ids")
    kept, _ = _scorable(seqmem_rows(store, run), found if isinstance(found, list) else None)
    online = {str(r["tau"]): float(r["correct"]) for r in kept if r["kind"] == "online"}
    return {"online_acc": online} if online else {}
