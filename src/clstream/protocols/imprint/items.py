"""Per-item scores of a stored ImprintBench run, for paired comparisons between systems
(docs/statistics.md §2): an item's Pass@1 is the share of its samples judged correct
(docs/imprint.md §7.1), and the BoundAbs family score is their mean over the family's items
(docs/imprint.md §7.4), so an item is what two systems are compared on.

The personalization setting averages per persona first, so its family score is not a mean
over items; its runs give no item scores. The Avg over families is not a mean over items
either and is not compared item by item.
"""

from __future__ import annotations

from clstream.core.reader import ResultsReader
from clstream.core.records import RunRow
from clstream.protocols.imprint.judge_plan import judge_errors
from clstream.protocols.imprint.run_summary import answered, run_view, stored_items, verdicts_of

BOUND_FAMILY = "BoundAbs"


def item_scores(store: ResultsReader, run: RunRow) -> dict[str, dict[str, float]]:
    """``{"boundabs_pass_at_1": {ITEM: pass@1}}`` over the BoundAbs items the run's metrics
    cover (answered, every sample judged); empty for a personalization run or before any."""
    if (run.spec.get("params") or {}).get("setting") == "persona":
        return {}
    items = [i for i in stored_items(run_view(store, run)) if i.family == BOUND_FAMILY]
    samples, _ = answered(store, run)
    samples = {k: v for k, v in samples.items() if v}
    verdicts = verdicts_of(store, run, items, samples)
    failed = judge_errors(verdicts)
    scores = {item_id: sum(v.correct for v in judged) / len(judged)
              for item_id, judged in verdicts.items() if judged and item_id not in failed}
    return {"boundabs_pass_at_1": scores} if scores else {}
