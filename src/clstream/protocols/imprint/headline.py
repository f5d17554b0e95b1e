"""ImprintBench's headline numbers for the cross-protocol view (docs/summary-json.md,
"Cross-protocol view"): the average Pass@1 over families (``metrics.avg``, docs/imprint.md
§7) and BoundAbs Pass@1, the abstention family, with its bootstrap interval
(``details.ci95_pass_at_1``); the average has no interval. Fractions, not percent."""

from __future__ import annotations

from typing import Any

from clstream.core.protocol import HeadlineMetric


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


def headline_metrics(run: dict[str, Any]) -> list[HeadlineMetric]:
    metrics = run.get("metrics") or {}
    bound = ((metrics.get("by_family") or {}).get("BoundAbs") or {}).get("pass_at_1")
    found = ((run.get("details") or {}).get("ci95_pass_at_1") or {}).get("BoundAbs")
    interval = None
    if isinstance(found, list) and len(found) == 2:
        low, high = _number(found[0]), _number(found[1])
        interval = (low, high) if low is not None and high is not None else None
    return [
        HeadlineMetric("avg_pass_at_1", "Imprint Avg Pass@1", "higher",
                       _number((metrics.get("avg") or {}).get("pass_at_1"))),
        HeadlineMetric("boundabs_pass_at_1", "Imprint BoundAbs", "higher", _number(bound),
                       interval, "95% bootstrap"),
    ]
