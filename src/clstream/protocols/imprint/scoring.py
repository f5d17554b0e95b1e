"""``clstream score imprint``: predictions against items, to the docs/imprint.md §3.4 JSON.

Predictions are JSON Lines, one ``{"item_id", "samples": [...]}`` per item (docs/imprint.md §3.3), every
item with the same number n of samples (ImprintBench App. C.3 samples n = 8 per question).
Each sample is judged by the item's judge (:mod:`clstream.protocols.imprint.judging`); an item then has
n samples, c correct, and :mod:`clstream.protocols.imprint.metrics` aggregates them per family
(per persona first in the personalization setting, App. D.3).

:func:`score_imprint` returns exactly the docs/imprint.md §3.4 JSON; :func:`score_details` returns the
tables the run summary and report add (sub-type axes, stale answers, personas, the Avg over
the setting's reported families, bootstrap intervals), which are not part of that contract.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import clstream.protocols.imprint.metrics as metrics
from clstream.core.errors import DataError, SpecError
from clstream.core.jsonio import iter_json_lines
from clstream.protocols.imprint.chance import chance_floors
from clstream.protocols.imprint.judge_plan import (
    family_judges,
    judge_errors,
    judge_outputs_sync,
    paper_judge,
)
from clstream.protocols.imprint.judging import Verdict, is_stale
from clstream.protocols.imprint.llm_judges import LLMJudge
from clstream.protocols.imprint.schema import FAMILIES, REPORTED_FAMILIES, Item

Predictions = Mapping[str, Sequence[str]]
Verdicts = Mapping[str, Sequence[Verdict]]


def load_predictions(path: str | Path) -> dict[str, list[str]]:
    """Read a predictions file: one JSON object per line with ``item_id`` (a non-empty
    string) and ``samples`` (a non-empty list of strings); other keys (a run's token counts)
    are ignored. A duplicate item, or an item whose sample count differs from the first
    line's, is an error naming the file, line and field."""
    out: dict[str, list[str]] = {}
    lines: dict[str, int] = {}
    expected: tuple[int, str] | None = None
    for number, obj in iter_json_lines(path):
        record = f"line {number}"
        if not isinstance(obj, dict):
            raise DataError(path, record, None, "expected a JSON object")
        item_id = obj.get("item_id")
        if not isinstance(item_id, str) or not item_id:
            raise DataError(path, record, "item_id",
                            "missing key" if "item_id" not in obj else "expected a non-empty "
                            "string")
        record = f"line {number} (item_id {item_id!r})"
        samples = obj.get("samples")
        if "samples" not in obj:
            raise DataError(path, record, "samples", "missing key")
        if not isinstance(samples, list) or not samples:
            raise DataError(path, record, "samples", "expected a non-empty list of strings")
        bad = next((i for i, s in enumerate(samples) if not isinstance(s, str)), None)
        if bad is not None:
            raise DataError(path, record, "samples",
                            f"sample {bad} is {type(samples[bad]).__name__}, expected a string")
        if item_id in lines:
            raise DataError(path, record, "item_id",
                            f"duplicate item {item_id!r} (first on line {lines[item_id]})")
        if expected is None:
            expected = (len(samples), item_id)
        elif len(samples) != expected[0]:
            raise DataError(path, record, "samples",
                            f"item {item_id!r} has {len(samples)} samples, item "
                            f"{expected[1]!r} has {expected[0]} (every item needs the same n)")
        lines[item_id] = number
        out[item_id] = list(samples)
    return out


def _setting_of(items: Sequence[Item]) -> str:
    settings = list(dict.fromkeys(i.setting for i in items))
    if len(settings) > 1:
        raise SpecError(f"items mix settings {', '.join(settings)}; score each setting apart "
                        "(they aggregate differently)")
    return settings[0]


def _sample_count(items: Sequence[Item], predictions: Predictions) -> int:
    counts = {len(predictions[i.item_id]) for i in items if i.item_id in predictions}
    if not counts:
        raise SpecError("no predictions for any item")
    if len(counts) > 1:
        sizes = {i.item_id: len(predictions[i.item_id]) for i in items
                 if i.item_id in predictions}
        first = next(iter(sizes))
        odd = next(k for k, v in sizes.items() if v != sizes[first])
        raise SpecError(f"item {odd!r} has {sizes[odd]} samples, item {first!r} has "
                        f"{sizes[first]} (every item needs the same n)")
    n = counts.pop()
    if n < 1:
        raise SpecError("predictions hold no samples")
    return n


def _check_inputs(items: Sequence[Item], predictions: Predictions, allow_missing: bool,
                  llm: LLMJudge | None, verdicts: Verdicts | None) -> None:
    if not items:
        raise SpecError("no items to score")
    known = {i.item_id for i in items}
    unknown = next((k for k in predictions if k not in known), None)
    if unknown is not None:
        raise SpecError(f"prediction for item {unknown!r}, which is not among the items")
    if not allow_missing:
        missing = next((i for i in items if i.item_id not in predictions), None)
        if missing is not None:
            raise SpecError(f"no prediction for item {missing.item_id!r} (allow missing "
                            "predictions to leave such items out)")
    if llm is None and verdicts is None:
        needing = next((i for i in items if i.judge == "llm"), None)
        if needing is not None:
            raise SpecError(f"item {needing.item_id!r} is judged by an LLM judge; give a "
                            "judge model")


def _ks(ks: Sequence[int] | None, n: int) -> list[int]:
    chosen = sorted(set(ks if ks is not None else (1, n)))
    bad = next((k for k in chosen if isinstance(k, bool) or not 1 <= k <= n), None)
    if bad is not None:
        raise SpecError(f"k {bad} is outside 1..{n} (n = {n} samples per item)")
    return chosen


def _judged(items: Sequence[Item], predictions: Predictions, llm: LLMJudge | None,
            verdicts: Verdicts | None, strict_abstention: bool) -> Verdicts:
    if verdicts is not None:
        return verdicts
    return judge_outputs_sync(items, predictions, llm, strict_abstention=strict_abstention)


def scored_items(items: Sequence[Item], predictions: Predictions,
                 verdicts: Verdicts) -> list[Item]:
    """The items the metrics cover: those with a prediction whose every sample the judge
    gave a verdict for. A missing item, or one the judge gave no verdict for, is left out
    (counted in ``left_out``), never scored as wrong."""
    errors = judge_errors(verdicts)
    kept = [i for i in items if i.item_id in predictions and i.item_id not in errors]
    if not kept:
        raise SpecError("no item could be scored: "
                        + (f"the judge gave no verdict for item {next(iter(errors))!r} "
                           f"({next(iter(errors.values()))})" if errors
                           else "no item has a prediction"))
    return kept


def item_counts(items: Sequence[Item], predictions: Predictions, verdicts: Verdicts,
                n: int) -> list[metrics.ItemCounts]:
    """(n, c) per item (every item must have a prediction and n verdicts). Personalization
    items carry their persona (else their instance) as the unit averaged first."""
    rows = []
    for item in items:
        judged = verdicts.get(item.item_id)
        if judged is None or len(judged) != n:
            raise SpecError(f"item {item.item_id!r}: {0 if judged is None else len(judged)} "
                            f"verdicts for {n} samples")
        correct = sum(v.correct for v in judged)
        unit = (item.persona or item.instance_id) if item.setting == "persona" else None
        rows.append(metrics.ItemCounts(item.item_id, item.family, n, correct, unit, item.axis))
    return rows


def score_imprint(items: Sequence[Item], predictions: Predictions, *,
                  ks: Sequence[int] | None = None, allow_missing: bool = False,
                  llm: LLMJudge | None = None, verdicts: Verdicts | None = None,
                  strict_abstention: bool = False,
                  judge_model: str | None = None) -> dict[str, Any]:
    """The docs/imprint.md §3.4 ImprintBench JSON: ``{"n_items", "n_samples", "by_family":
    {family: {"n_items", "pass_at_1", "pass_at_k": {k}, "all_correct_at_k": {k}, "se",
    "judge"}}, "avg": {"pass_at_1", "all_correct_at_n"}, "left_out": {"missing",
    "judge_errors"}, "chance": ...}``, ``chance`` being what a constant answer scores on the
    scored items (:func:`~clstream.protocols.imprint.chance.chance_floors`).

    ``ks`` defaults to (1, n). A missing prediction is an error naming the first missing item
    unless ``allow_missing`` (the item is then left out and counted); an item the judge gave
    no verdict for is left out and counted. With ``llm`` the paper's judges decide where the
    paper uses an LLM (:mod:`clstream.protocols.imprint.judge_plan`); ``verdicts`` are
    precomputed ones (the run summary's, whose judge model ``judge_model`` names;
    ``strict_abstention`` then only sets how the chance floors judge abstentions)."""
    _check_inputs(items, predictions, allow_missing, llm, verdicts)
    _setting_of(items)
    n = _sample_count(items, predictions)
    chosen = _ks(ks, n)
    judged = _judged(items, predictions, llm, verdicts, strict_abstention)
    scored = scored_items(items, predictions, judged)
    rows = item_counts(scored, predictions, judged, n)
    cells = metrics.by_family(rows, sorted({*chosen, n}), FAMILIES)
    judges = family_judges(scored, llm.name if llm is not None else judge_model)
    left_out = {"missing": len(missing_items(items, predictions)),
                "judge_errors": len(judge_errors(judged))}
    return _contract(len(scored), n, cells, chosen, judges, left_out,
                     chance_floors(scored, strict_abstention=strict_abstention))


def _contract(n_items: int, n: int, cells: dict[str, dict[str, Any]],
              ks: Sequence[int], judges: dict[str, str],
              left_out: dict[str, int], chance: dict[str, Any]) -> dict[str, Any]:
    """The docs/imprint.md §3.4 keys, in order; cells hold k = n for the Avg even where ``ks`` omits it."""
    keep = [str(k) for k in ks]
    return {
        "n_items": n_items,
        "n_samples": n,
        "by_family": {f: {**c, "pass_at_k": {k: c["pass_at_k"][k] for k in keep},
                          "all_correct_at_k": {k: c["all_correct_at_k"][k] for k in keep},
                          "judge": judges[f]}
                      for f, c in cells.items()},
        "avg": {"pass_at_1": metrics.average(c["pass_at_1"] for c in cells.values()),
                "all_correct_at_n": metrics.average(c["all_correct_at_k"][str(n)]
                                                    for c in cells.values())},
        "left_out": left_out,
        "chance": chance,
    }


def missing_items(items: Sequence[Item], predictions: Predictions) -> list[str]:
    """Items with no prediction (left out under ``allow_missing``)."""
    return [i.item_id for i in items if i.item_id not in predictions]


def score_details(items: Sequence[Item], predictions: Predictions, *,
                  ks: Sequence[int] | None = None, allow_missing: bool = False,
                  llm: LLMJudge | None = None, verdicts: Verdicts | None = None,
                  strict_abstention: bool = False, judge_model: str | None = None,
                  n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The tables beyond the docs/imprint.md §3.4 JSON, for the run summary and the report:

    * ``reported_avg`` -- Avg over the families the setting's paper table reports (persona
      DirAcq and code BoundAbs are generated but not reported, docs/imprint.md §5);
    * ``by_axis`` -- ``{family: {axis: {n_items, pass_at_1, all_correct_at_n}}}`` (news
      TempUpd axes, CompRel hops, persona TempUpd kinds; Fig. 6);
    * ``stale`` -- per family, over the items that have a ``gold_before``: the fraction of
      samples that state the old value and not the new (:func:`is_stale`);
    * ``by_persona`` -- ``{persona: {family: {n_items, pass_at_1}}}`` (personalization);
    * ``ci95_pass_at_1`` -- seeded percentile bootstrap per family (personas resampled);
    * ``se_all_correct_at_n`` -- sqrt(p(1-p)/N) per family (docs/imprint.md §7.6);
    * ``llm_judged_items`` -- per family, how many items an LLM judge decided;
    * ``judges`` -- per family, the judge behind its numbers;
    * ``missing`` -- the items without a prediction; ``judge_errors`` -- the items the judge
      gave no verdict for, with the first error (both left out).
    """
    _check_inputs(items, predictions, allow_missing, llm, verdicts)
    setting = _setting_of(items)
    n = _sample_count(items, predictions)
    chosen = _ks(ks, n)
    judged = _judged(items, predictions, llm, verdicts, strict_abstention)
    everything = items
    items = scored_items(items, predictions, judged)
    rows = item_counts(items, predictions, judged, n)
    cells = metrics.by_family(rows, sorted({*chosen, n}), FAMILIES)
    by_item = {i.item_id: i for i in items}

    by_axis: dict[str, dict[str, dict[str, Any]]] = {}
    for family in cells:
        axes = sorted({r.axis for r in rows if r.family == family and r.axis is not None})
        for axis in axes:
            cell = metrics.family_scores(
                [r for r in rows if r.family == family and r.axis == axis], [n])
            by_axis.setdefault(family, {})[axis] = {
                "n_items": cell["n_items"], "pass_at_1": cell["pass_at_1"],
                "all_correct_at_n": cell["all_correct_at_k"][str(n)]}

    stale: dict[str, dict[str, Any]] = {}
    for family in cells:
        tracked = [i for i in items if i.family == family and i.stale_golds
                   and i.item_id in predictions]
        if tracked:
            flags = [is_stale(i, s) for i in tracked for s in predictions[i.item_id]]
            stale[family] = {"n_items": len(tracked), "stale_rate": sum(flags) / len(flags)}

    by_persona: dict[str, dict[str, dict[str, Any]]] = {}
    if setting == "persona":
        grouped: dict[str, dict[str, list[metrics.ItemCounts]]] = {}
        for r in rows:
            grouped.setdefault(r.unit or "", {}).setdefault(r.family, []).append(r)
        for persona, families in grouped.items():
            by_persona[persona] = {
                f: {"n_items": len(part),
                    "pass_at_1": metrics.average(metrics.pass_at_1(r.n, r.c) for r in part)}
                for f in FAMILIES if (part := families.get(f))}

    ci = {f: list(metrics.bootstrap_family_ci([r for r in rows if r.family == f],
                                              n_boot=n_boot, seed=seed)) for f in cells}
    se_all = {f: metrics.se_of_proportion(c["all_correct_at_k"][str(n)], c["n_items"])
              for f, c in cells.items()}
    judge_name = llm.name if llm is not None else judge_model
    llm_judged = {f: sum(1 for r in rows if r.family == f and paper_judge(
        by_item[r.item_id], judge_name is not None) is not None) for f in cells}
    return {
        "setting": setting,
        "n_samples": n,
        "ks": chosen,
        "reported_avg": {
            "families": [f for f in REPORTED_FAMILIES[setting] if f in cells],
            "pass_at_1": metrics.reported_average(cells, "pass_at_1", REPORTED_FAMILIES[setting]),
            "all_correct_at_n": metrics.average(
                cells[f]["all_correct_at_k"][str(n)]
                for f in REPORTED_FAMILIES[setting] if f in cells)},
        "by_axis": by_axis,
        "stale": stale,
        "by_persona": by_persona,
        "ci95_pass_at_1": ci,
        "se_all_correct_at_n": se_all,
        "llm_judged_items": {f: c for f, c in llm_judged.items() if c},
        "judges": family_judges(items, judge_name),
        "missing": missing_items(everything, predictions),
        "judge_errors": judge_errors(judged),
    }
