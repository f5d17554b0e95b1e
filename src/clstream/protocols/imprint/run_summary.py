"""Summary and export of an ImprintBench run, computed from stored records (docs/imprint.md §7, §3).

The items a run answered are judged here, from their stored samples, by the same judges and
estimators ``score imprint`` uses (items judged ``llm`` by the verdicts the run stored), so
``export`` then ``score imprint`` gives exactly the summary's numbers. An item that failed, or was never answered, is left out and counted in
``coverage`` -- never scored as wrong (docs/design.md §7, docs/imprint.md §7.10).

Besides the docs/imprint.md §3.4 JSON (``metrics``), the summary carries what the report draws: Pass@1 by
sub-axis, the stale-answer rate (samples asserting the answer from before an update),
per-persona means, tokens in context and the compression ratio (docs/imprint.md §7.9: corpus tokens of
the instance over the mean tokens the method put in context), and the length of the answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from clstream.core.errors import StoreError
from clstream.core.files import atomic_writer
from clstream.core.outputs import claim_file, output_writer
from clstream.core.reader import ResultsReader
from clstream.core.records import RunRow
from clstream.driver.record_fields import cut_by_cap
from clstream.metrics.exact import exact_mean
from clstream.protocols.imprint.chance import CONSTANT_ANSWERS, floor_text
from clstream.protocols.imprint.judge_plan import paper_judge
from clstream.protocols.imprint.judging import Verdict, judge_deterministic
from clstream.protocols.imprint.schema import FAMILIES, Item
from clstream.render.runs import coverage_note
from clstream.render.text_columns import aligned_lines, seed_text


def run_view(store: ResultsReader, run: RunRow) -> dict[str, Any]:
    try:
        _, view = store.get_dataset(run.dataset_sha256)
    except StoreError:
        return {}
    return view if isinstance(view.get("items"), list) else {}


def stored_items(view: dict[str, Any]) -> list[Item]:
    return [Item.model_validate(row) for row in view.get("items", [])]


def answered(store: ResultsReader, run: RunRow) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """Samples of every successfully answered item, and per-item facts (tokens, lengths)."""
    samples: dict[str, list[str]] = {}
    facts: dict[str, Any] = {}
    for rec in store.read_records(run.run_id, "item", errors=False):
        p = rec.payload
        samples[rec.key] = [str(s) for s in p.get("samples", [])]
        facts[rec.key] = {"instance": rec.stream, "injected": p.get("injected_tokens"),
                          "prompt": p.get("prompt_tokens"),
                          "completion": rec.usage.completion_tokens,
                          "finish": p.get("finish_reasons", [])}
    return samples, facts


def _mean(values: Iterable[float]) -> float | None:
    vals = list(values)
    return exact_mean(vals) if vals else None


def context_tokens(items: list[Item], facts: dict[str, Any],
                   corpus: dict[str, int]) -> dict[str, Any]:
    """Mean tokens in context over the answered items, and the compression ratio: per
    instance, corpus tokens / mean tokens in context, averaged over instances (None when a
    method puts nothing in context: parametric methods have no ratio)."""
    per_instance: dict[str, list[float]] = {}
    for item in items:
        fact = facts.get(item.item_id)
        if fact is not None and isinstance(fact["injected"], int):
            per_instance.setdefault(item.instance_id, []).append(float(fact["injected"]))
    means = {inst: exact_mean(v) for inst, v in per_instance.items() if v}
    ratios = [corpus[inst] / m for inst, m in means.items() if m > 0 and inst in corpus]
    return {"tokens_in_context": _mean(means.values()),
            "corpus_tokens": _mean(float(corpus[i]) for i in means if i in corpus),
            "compression_ratio": _mean(ratios) if ratios and len(ratios) == len(means) else None}


def judge_of_run(run: RunRow) -> tuple[str | None, bool]:
    """The run's judge model (None: deterministic judges only) and whether abstention is
    judged strictly, as its spec records them."""
    params = run.spec.get("params") or {}
    judge = params.get("judge")
    model = judge.get("model") if isinstance(judge, dict) else None
    return (str(model) if model is not None else None,
            bool(params.get("strict_abstention", False)))


def verdicts_of(store: ResultsReader, run: RunRow, items: list[Item],
                samples: dict[str, list[str]]) -> dict[str, list[Verdict]]:
    """Verdicts of every answered item: the LLM judge's stored ``judgment`` records for the
    items an LLM judge decides in this run (an item not judged yet, or whose judgment failed,
    has none), the deterministic judges for the rest."""
    judge_model, strict = judge_of_run(run)
    stored = {r.key: [Verdict(**v) for v in r.payload.get("verdicts", [])]
              for r in store.read_records(run.run_id, "judgment", errors=False)}
    out: dict[str, list[Verdict]] = {}
    for item in items:
        if item.item_id not in samples:
            continue
        if paper_judge(item, judge_model is not None) is not None:
            if item.item_id in stored:
                out[item.item_id] = stored[item.item_id]
        else:
            out[item.item_id] = [judge_deterministic(item, s, strict_abstention=strict)
                                 for s in samples[item.item_id]]
    return out


def summarize_imprint_run(store: ResultsReader, run: RunRow) -> dict[str, Any]:
    view = run_view(store, run)
    items = stored_items(view)
    samples, facts = answered(store, run)
    samples = {k: v for k, v in samples.items() if v}
    verdicts = verdicts_of(store, run, items, samples)
    done = [i for i in items if i.item_id in verdicts]
    errors = (store.count(run.run_id, "item", errors=True)
              + store.count(run.run_id, "judgment", errors=True))
    params = run.spec.get("params") or {}
    judge_model, strict = judge_of_run(run)
    out: dict[str, Any] = {
        "dataset": {"setting": params.get("setting"), "items": len(items),
                    "instances": len(view.get("instances", {}))},
        "supervision": params.get("supervision"),
        "judge": {"model": judge_model, "strict_abstention": strict},
        "coverage": {"scored": len(done), "total": len(items), "unit": "items",
                     "errors": errors},
        "status": {"complete": len(done) == len(items) and errors == 0,
                   "hit_token_cap": cut_by_cap(store, run.run_id, ("item",))},
    }
    if not done:
        return out
    from clstream.protocols.imprint.scoring import score_details, score_imprint

    predictions = {i.item_id: samples[i.item_id] for i in done}
    judged = {i.item_id: verdicts[i.item_id] for i in done}
    out["metrics"] = score_imprint(done, predictions, allow_missing=False, verdicts=judged,
                                   judge_model=judge_model, strict_abstention=strict)
    out["details"] = score_details(done, predictions, verdicts=judged, judge_model=judge_model)
    out["context"] = context_tokens(done, facts, view.get("corpus_tokens", {}))
    lengths = [facts[i.item_id]["completion"] / max(1, len(samples[i.item_id])) for i in done]
    capped = sum(f == "length" for i in done for f in facts[i.item_id]["finish"])
    out["answers"] = {"completion_tokens_mean": _mean(lengths), "hit_token_cap": capped}
    return out


def export_rows(store: ResultsReader, run: RunRow) -> list[dict[str, Any]]:
    """The run's answered items as docs/imprint.md §3.3 prediction lines."""
    samples, _ = answered(store, run)
    order = [i.item_id for i in stored_items(run_view(store, run))]
    return [{"item_id": key, "samples": samples[key]} for key in order
            if key in samples and samples[key]]


def export_imprint(store: ResultsReader, run: RunRow, out: Any) -> int:
    """Write predictions (``out``) and, next to them, the items they answer
    (``<out stem>.items.jsonl``), so ``score imprint ITEMS PREDICTIONS`` scores the export."""
    rows = export_rows(store, run)
    target = Path(out)
    companion = target.with_name(target.stem + ".items.jsonl")
    claim_file(companion, protected=store.dataset_paths())
    with atomic_writer(target) as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    items = stored_items(run_view(store, run))
    with output_writer(companion) as handle:
        for item in items:
            handle.write(json.dumps(item.model_dump(exclude_defaults=True)
                                    | {"item_id": item.item_id, "gold": item.gold,
                                       "judge": item.judge}, ensure_ascii=False) + "\n")
    return len(rows)


def run_label(run: dict[str, Any]) -> str:
    """The system, tagged with what else in its spec changes its numbers: the coached prompt,
    strict abstention, an LLM judge (docs/imprint.md §2, §6), so rows never look alike."""
    params = ((run.get("meta") or {}).get("spec") or {}).get("params") or {}
    tags = [tag for tag, on in (("coached", params.get("prompt") == "coached"),
                                ("strict", bool(params.get("strict_abstention"))),
                                ("judge", bool(params.get("judge")))) if on]
    system = str(run.get("system", "?"))
    return f"{system} [{','.join(tags)}]" if tags else system


# -- text -----------------------------------------------------------------------------------
def _pct(value: Any) -> str:
    return "-" if not isinstance(value, int | float) else f"{100 * value:.1f}"


def text_rows(runs: list[dict[str, Any]]) -> list[str]:
    """Pass@1 (%) by family and Avg per run, with tokens in context and compression; the seed
    column tells apart runs that differ only in seed."""
    present = {fam for run in runs for fam in (run.get("metrics") or {}).get("by_family", {})}
    families = [f for f in FAMILIES if f in present]
    header = ["system", "setting", "sup", "seed", *families, "Avg", "AC@n", "ctx tok", "compr",
              "coverage"]
    rows = []
    for run in runs:
        metrics = run.get("metrics") or {}
        by = metrics.get("by_family", {})
        ctx = run.get("context") or {}
        tokens = ctx.get("tokens_in_context")
        ratio = ctx.get("compression_ratio")
        avg = metrics.get("avg") or {}
        rows.append([
            run_label(run), str((run.get("dataset") or {}).get("setting")),
            str(run.get("supervision")), seed_text(run),
            *(_pct((by.get(f) or {}).get("pass_at_1")) for f in families),
            _pct(avg.get("pass_at_1")), _pct(avg.get("all_correct_at_n")),
            "-" if tokens is None else f"{tokens:.0f}",
            "-" if ratio is None else f"{ratio:.1f}x", coverage_note(run) or "complete"])
    numeric = [False, False, False, True, *[True] * len(families), True, True, True, True,
               False]
    lines = aligned_lines(header, rows, numeric)
    said: dict[str, list[str]] = {}  # the judges line -> the runs it holds for
    for run in runs:
        by = (run.get("metrics") or {}).get("by_family", {})
        kinds = {f: by[f]["judge"] for f in families
                 if isinstance(by.get(f), dict) and "judge" in by[f]}
        if not kinds:
            continue
        if set(kinds.values()) == {"deterministic"}:
            judges = "deterministic for every family"
        else:
            judges = "; ".join(f"{f} {kind}" for f, kind in kinds.items())
        said.setdefault(judges, []).append(run_label(run))
    for judges, labels in said.items():
        whose = "" if len(said) == 1 else f" of {', '.join(labels)}"
        lines.append(f"  judges{whose}: {judges}")
    return lines + chance_lines(runs)


def chance_lines(runs: list[dict[str, Any]]) -> list[str]:
    """What a constant answer scores on each set of items the runs answered (Pass@1 %, per
    family and Avg; docs/imprint.md §7.11): one line per setting, or per group of runs where
    runs of one setting answered different items."""
    found: dict[tuple[str, str], tuple[dict[str, Any], list[str]]] = {}
    for run in runs:
        chance = (run.get("metrics") or {}).get("chance")
        if not isinstance(chance, dict) or not isinstance(chance.get("by_family"), dict):
            continue
        setting = str((run.get("dataset") or {}).get("setting"))
        key = (setting, json.dumps(chance, sort_keys=True))
        found.setdefault(key, (chance, []))[1].append(run_label(run))
    if not found:
        return []
    answers = " / ".join(CONSTANT_ANSWERS.values())
    lines = [f"  constant answers, Pass@1 % ({answers}), by family:"]
    settings = [s for s, _ in found]
    for (setting, _), (chance, labels) in found.items():
        whose = f", {', '.join(labels)}" if settings.count(setting) > 1 else ""
        lines.append(f"    {setting}{whose}: {floor_text(chance)}")
    return lines
