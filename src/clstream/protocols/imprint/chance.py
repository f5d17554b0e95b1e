"""What a constant answer scores on a set of ImprintBench items: the chance floor of each
family (docs/imprint.md §7.11).

A family whose items a constant answer passes measures little: a constant "No." passes every
news BoundAbs item (the abstention regex takes a denial, App. E.1) and every negation-axis
TempUpd item, a constant "I don't know" every invented code name. So that a reader sees
where a method's number stands against chance, :func:`chance_floors` answers every item with
each of four constants -- always Yes, always No, always abstain, always option A -- judges
each answer by the item's own deterministic judge (:func:`~clstream.protocols.imprint.
judging.judge_deterministic`, the paper's regex judges and the project's stand-ins for its
LLM judges) and aggregates the verdicts as the family scores are aggregated (per persona
first in the personalization setting, App. D.3; Avg the plain mean over the families).

The floors are a property of the items alone -- no model, no run -- so ``score imprint``, the
run summary and the report all show the same numbers for the same items. Items judged ``llm``
have no deterministic judge and are left out of the floors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import clstream.protocols.imprint.metrics as metrics
from clstream.protocols.imprint.judging import ImprintItem, judge_deterministic
from clstream.protocols.imprint.schema import FAMILIES

CONSTANT_ANSWERS: dict[str, str] = {
    "yes": "Yes.",
    "no": "No.",
    "abstain": "I don't know.",
    "option_a": "A",
}
"""The constant answers, by the name each floor carries."""

CHANCE_JUDGE = "deterministic"


def _unit(item: ImprintItem) -> str | None:
    """The persona whose mean an item enters first (personalization), else None."""
    if item.setting != "persona":
        return None
    persona = getattr(item, "persona", None)
    return str(persona or getattr(item, "instance_id", "") or item.item_id)


def chance_floors(items: Sequence[ImprintItem], *,
                  strict_abstention: bool = False) -> dict[str, Any]:
    """Pass@1 of each constant answer per family and averaged:
    ``{"answers": {name: text}, "judge": "deterministic", "by_family": {family: {name:
    pass@1}}, "avg": {name: mean over the families}}``.

    Every item is judged once per constant by its deterministic judge (``strict_abstention``
    as the run's); items judged ``llm`` are left out, and a family with no other item has no
    floor. Families come in the order of the score JSON."""
    judged = [i for i in items if i.judge != "llm"]
    by_family: dict[str, dict[str, float]] = {}
    present = [f for f in FAMILIES if any(i.family == f for i in judged)]
    present += sorted({i.family for i in judged} - set(present))
    for family in present:
        members = [i for i in judged if i.family == family]
        cell: dict[str, float] = {}
        for name, answer in CONSTANT_ANSWERS.items():
            rows = [metrics.ItemCounts(i.item_id, family, 1, int(judge_deterministic(
                i, answer, strict_abstention=strict_abstention).correct), _unit(i))
                for i in members]
            cell[name] = metrics.family_scores(rows, [1])["pass_at_1"]
        by_family[family] = cell
    avg = {name: metrics.average(cell[name] for cell in by_family.values())
           for name in CONSTANT_ANSWERS}
    return {"answers": dict(CONSTANT_ANSWERS), "judge": CHANCE_JUDGE,
            "by_family": by_family, "avg": avg}


def floor_text(floors: dict[str, Any]) -> str:
    """One line: per family (and Avg) the constant answers' Pass@1 in %, in the order of
    :data:`CONSTANT_ANSWERS` ("DirAcq 50.0/50.0/0.0/0.0 ...")."""
    names = list(CONSTANT_ANSWERS)

    def cell(values: dict[str, Any]) -> str:
        return "/".join("-" if not isinstance(values.get(n), int | float)
                        else f"{100 * values[n]:.1f}" for n in names)

    parts = [f"{family} {cell(values)}" for family, values in floors["by_family"].items()]
    parts.append(f"Avg {cell(floors['avg'])}")
    return "  ".join(parts)
