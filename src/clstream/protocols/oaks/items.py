"""Per-question scores of a stored OAKS run, for paired comparisons between systems
(docs/statistics.md §2): accuracy is the mean over questions of each question's share of
intervals answered right (docs/oaks.md §5.2), so a question is the item two systems are
compared on."""

from __future__ import annotations

from clstream.core.reader import ResultsReader
from clstream.core.records import RunRow
from clstream.protocols.oaks.data import from_gold_view
from clstream.protocols.oaks.export import oaks_predictions
from clstream.protocols.oaks.metrics import score_oaks_with_rows
from clstream.protocols.oaks.run_summary import complete_questions


def item_scores(store: ResultsReader, run: RunRow) -> dict[str, dict[str, float]]:
    """``{"accuracy": {"DOCUMENT/QUESTION": accuracy}}`` over the questions the run's
    accuracy is computed over (those answered at every interval); empty before any is."""
    _, view = store.get_dataset(run.dataset_sha256)
    preds = oaks_predictions(store, run)
    scored = complete_questions(from_gold_view(view), preds)
    ids = {q.question_id for d in scored.documents for q in d.questions}
    if not ids:
        return {}
    _, _, rows = score_oaks_with_rows(scored, {k: v for k, v in preds.items() if k[0] in ids})
    return {"accuracy": {f"{r['document']}/{r['question_id']}": float(r["accuracy"])
                         for r in rows}}
