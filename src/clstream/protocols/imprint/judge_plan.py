"""Which judge decides each item, and the entry point that judges a set of outputs
(docs/imprint.md §6.10; ImprintBench App. D, E).

Offline (no judge model) every item is judged by the deterministic judge its ``judge`` field
names; an item judged ``llm`` then cannot be judged. With a judge model (``--judge MODEL``) the
paper's judges take over where the paper uses an LLM:

| setting | families | judge under ``--judge`` |
| --- | --- | --- |
| news | TempUpd, CompRel, ImpRel | ``yn``: the Y / N consistency judge (App. E.1) |
| news | DirAcq, BoundAbs | deterministic: yes/no regex, abstention regex (App. E.1) |
| code | DirAcq | ``rubric``: MATCH / NONMATCH / REFUSAL (App. E.2) |
| code | RefRes | ``identifier``: the YES / NO identifier judge on every sample (App. E.2) |
| code | CompRel | ``identifier+fallback``: the trailing-component check, then the YES / NO identifier judge where it fails (App. D.2, E.2) |
| code | ImpRel | ``list``: the YES / NO "does the list name the target?" judge (App. E.2) |
| code | BoundAbs | deterministic: abstain or deny (App. D.2; the paper does not evaluate it) |
| persona | every family | ``rubric`` (BoundAbs correct iff REFUSAL; choice items against the gold letter; App. E.3) |

Items whose ``judge`` field is ``llm`` take the rubric in every setting. Every number then
says which judge produced it: :func:`family_judges` gives, per family, ``deterministic`` or
``llm:<model> (<kind>)``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from clstream.core.errors import SpecError
from clstream.protocols.imprint.judging import ImprintItem, Verdict, judge_deterministic
from clstream.protocols.imprint.llm_judges import LLMJudge

DETERMINISTIC = "deterministic"
LLM_KINDS: tuple[str, ...] = ("yn", "rubric", "identifier", "identifier+fallback", "list")
FALLBACK = "identifier+fallback"
"""The one plan whose deterministic check runs first: the LLM judge sees only what it failed."""

_PAPER_JUDGES: dict[tuple[str, str], str] = {
    ("news", "TempUpd"): "yn", ("news", "CompRel"): "yn", ("news", "ImpRel"): "yn",
    ("code", "DirAcq"): "rubric", ("code", "RefRes"): "identifier",
    ("code", "CompRel"): FALLBACK, ("code", "ImpRel"): "list",
    **{("persona", family): "rubric" for family in
       ("DirAcq", "TempUpd", "RefRes", "CompRel", "ImpRel", "BoundAbs")},
}


def paper_judge(item: ImprintItem, with_model: bool = True) -> str | None:
    """The LLM judge kind that decides ``item`` (None: its deterministic judge), given
    whether a judge model is configured (module docstring)."""
    if item.judge == "llm":
        return "rubric"
    if not with_model:
        return None
    return _PAPER_JUDGES.get((item.setting, item.family))


def judge_label(item: ImprintItem, judge_model: str | None) -> str:
    """``deterministic`` or ``llm:<model> (<kind>)`` for one item."""
    kind = paper_judge(item, judge_model is not None)
    return DETERMINISTIC if kind is None else f"llm:{judge_model or '?'} ({kind})"


def family_judges(items: Sequence[ImprintItem], judge_model: str | None) -> dict[str, str]:
    """Per family, the judge(s) behind its numbers, ``" + "``-joined when they differ."""
    labels: dict[str, dict[str, None]] = {}
    for item in items:
        labels.setdefault(item.family, {})[judge_label(item, judge_model)] = None
    return {family: " + ".join(found) for family, found in labels.items()}


def judge_mapping(setting: str, judge_model: str | None) -> dict[str, str]:
    """The judge of every family of a setting (what a run spec records)."""
    families = ("DirAcq", "TempUpd", "RefRes", "CompRel", "ImpRel", "BoundAbs")
    out = {}
    for family in families:
        kind = _PAPER_JUDGES.get((setting, family)) if judge_model is not None else None
        out[family] = DETERMINISTIC if kind is None else f"llm:{judge_model} ({kind})"
    return out


def judge_errors(verdicts: Mapping[str, Sequence[Verdict]]) -> dict[str, str]:
    """Items with a sample the judge gave no verdict for: ``{item_id: first error}``."""
    return {item_id: next(v.error for v in vs if v.error is not None)
            for item_id, vs in verdicts.items() if any(v.error is not None for v in vs)}


async def judge_outputs(items: Sequence[ImprintItem], predictions: Mapping[str, Sequence[str]],
                        llm: LLMJudge | None = None, *,
                        strict_abstention: bool = False) -> dict[str, list[Verdict]]:
    """Every sample of every item that has predictions, judged: ``{item_id: [Verdict]}`` in
    sample order, by the judge :func:`paper_judge` names. Items judged ``llm`` without
    ``llm`` are an error naming the first one. A sample the judge gave no verdict for is a
    verdict with ``error`` set (:func:`judge_errors`). The scorer, the runner and the run
    summary all judge through here."""
    if llm is None:
        needing = next((i for i in items if i.judge == "llm" and i.item_id in predictions), None)
        if needing is not None:
            raise SpecError(f"item {needing.item_id!r} is judged by an LLM judge; give a judge "
                            "model")
    verdicts: dict[str, list[Verdict]] = {}
    asked: dict[str, list[tuple[ImprintItem, str, int]]] = {}
    for item in items:
        samples = predictions.get(item.item_id)
        if samples is None:
            continue
        kind = paper_judge(item, llm is not None)
        if kind is not None and kind != FALLBACK:
            verdicts[item.item_id] = []
            asked.setdefault(kind, []).extend((item, s, i) for i, s in enumerate(samples))
            continue
        first = [judge_deterministic(item, s, strict_abstention=strict_abstention)
                 for s in samples]
        verdicts[item.item_id] = first
        if kind == FALLBACK:
            asked.setdefault(FALLBACK, []).extend(
                (item, s, i) for i, (s, v) in enumerate(zip(samples, first, strict=True))
                if not v.correct)
    if llm is not None:
        for kind, wanted in asked.items():
            prompt = "identifier" if kind == FALLBACK else kind
            judged = await llm.judge_many([(item, s) for item, s, _ in wanted], prompt,
                                          label=kind)
            for (item, _, index), verdict in zip(wanted, judged, strict=True):
                row = verdicts[item.item_id]
                if kind == FALLBACK:
                    row[index] = verdict
                else:
                    row.append(verdict)
    return {i.item_id: verdicts[i.item_id] for i in items if i.item_id in verdicts}


def judge_outputs_sync(items: Sequence[ImprintItem], predictions: Mapping[str, Sequence[str]],
                       llm: LLMJudge | None = None, *,
                       strict_abstention: bool = False) -> dict[str, list[Verdict]]:
    """:func:`judge_outputs` for callers outside an event loop (the ``score`` command)."""
    return asyncio.run(judge_outputs(items, predictions, llm,
                                     strict_abstention=strict_abstention))
