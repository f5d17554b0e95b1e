"""OAKS's headline numbers for the cross-protocol view (docs/summary-json.md,
"Cross-protocol view"): accuracy and distraction susceptibility (DS, docs/oaks.md §4), each
with its 95% bootstrap interval over questions from the run's summary ``ci``."""

from __future__ import annotations

from typing import Any

from clstream.core.protocol import HeadlineMetric

_INTERVAL = "95% bootstrap over questions"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


def _interval(run: dict[str, Any], key: str) -> tuple[float, float] | None:
    found = (run.get("ci") or {}).get(key)
    if isinstance(found, list) and len(found) == 2:
        low, high = _number(found[0]), _number(found[1])
        if low is not None and high is not None:
            return low, high
    return None


def headline_metrics(run: dict[str, Any]) -> list[HeadlineMetric]:
    metrics = run.get("metrics") or {}
    return [
        HeadlineMetric("accuracy", "OAKS accuracy", "higher", _number(metrics.get("accuracy")),
                       _interval(run, "accuracy"), _INTERVAL),
        HeadlineMetric("distraction_susceptibility", "OAKS DS", "lower",
                       _number(metrics.get("distraction_susceptibility")),
                       _interval(run, "distraction_susceptibility"), _INTERVAL),
    ]
