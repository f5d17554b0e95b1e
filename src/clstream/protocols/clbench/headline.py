"""CL-Bench's headline numbers for the cross-protocol view (docs/summary-json.md,
"Cross-protocol view"): the aggregate normalized gain with its 95% interval (mean ± ci95 over
tasks, docs/clbench.md §5.7), and the aggregate stability and plasticity (§5.5), the two parts
of the gain, higher better for both."""

from __future__ import annotations

from typing import Any

from clstream.core.protocol import HeadlineMetric


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


def headline_metrics(run: dict[str, Any]) -> list[HeadlineMetric]:
    aggregate = (run.get("metrics") or {}).get("aggregate") or {}
    gain = aggregate.get("normalized_gain") or {}
    mean, ci95 = _number(gain.get("mean")), _number(gain.get("ci95"))
    interval = (mean - ci95, mean + ci95) if mean is not None and ci95 is not None else None
    return [
        HeadlineMetric("normalized_gain", "CL-Bench norm gain", "higher", mean, interval,
                       "mean ± 95% CI over tasks"),
        HeadlineMetric("stability", "CL-Bench stability", "higher",
                       _number(aggregate.get("stability"))),
        HeadlineMetric("plasticity", "CL-Bench plasticity", "higher",
                       _number(aggregate.get("plasticity"))),
    ]
