"""SeqMem-Eval's headline numbers for the cross-protocol view (docs/summary-json.md,
"Cross-protocol view"): online accuracy, and BWT and forgetting each as the mean over the
run's horizons of BWT(t) and F(t) (docs/seqmem.md §4; the radar's backward transfer and
forgetting average them the same way). The protocol gives no interval for them. The labels
say "mean over horizons": the SeqMem table beside the view shows BWT(1) and F(1), a different
number, and the two must not read as the same one."""

from __future__ import annotations

from typing import Any

from clstream.core.protocol import HeadlineMetric


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


def _mean_over_horizons(by_horizon: Any) -> float | None:
    values = [_number(v) for v in (by_horizon or {}).values()] \
        if isinstance(by_horizon, dict) else []
    found = [v for v in values if v is not None]
    return sum(found) / len(found) if found else None


def headline_metrics(run: dict[str, Any]) -> list[HeadlineMetric]:
    metrics = run.get("metrics") or {}
    return [
        HeadlineMetric("online_acc", "SeqMem online acc", "higher",
                       _number(metrics.get("online_acc"))),
        HeadlineMetric("bwt", "SeqMem BWT (mean over horizons)", "higher", _mean_over_horizons(metrics.get("bwt"))),
        HeadlineMetric("forgetting", "SeqMem forgetting (mean over horizons)", "lower",
                       _mean_over_horizons(metrics.get("forgetting"))),
    ]
