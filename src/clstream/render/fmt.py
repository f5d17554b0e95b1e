"""Number formatting for the HTML report: one place decides how a rate, a count or a time reads.

Rates print with three decimals and their 95% interval as ``0.412 [0.380, 0.445]``; a missing
value prints as an em dash so a partial run never shows a made-up zero.
"""

from __future__ import annotations

from collections.abc import Sequence

MISSING = "\u2014"


def fmt_rate(value: float | None, ci: Sequence[float | None] | None = None) -> str:
    """``0.412`` or ``0.412 [0.380, 0.445]`` when both interval ends are known."""
    if value is None:
        return MISSING
    interval = fmt_ci(ci)
    return f"{value:.3f} {interval}" if interval else f"{value:.3f}"


def fmt_ci(ci: Sequence[float | None] | None) -> str:
    """``[0.380, 0.445]``, or "" unless both ends are known."""
    if ci is None or len(ci) != 2 or ci[0] is None or ci[1] is None:
        return ""
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def fmt_int(value: int | None) -> str:
    """Thousands separated: ``1,234,567``."""
    return MISSING if value is None else f"{value:,}"


def fmt_seconds(value: float | None) -> str:
    """``8.2 s``, ``4 min 05 s`` or ``2 h 07 min``."""
    if value is None:
        return MISSING
    if value < 60:
        return f"{value:.1f} s"
    whole = int(round(value))
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {(whole % 3600) // 60:02d} min"


def fmt_cost(value: float | None) -> str:
    """US dollars: cents for amounts of a dollar or more, four decimals below."""
    if value is None:
        return MISSING
    return f"${value:,.2f}" if value >= 1 else f"${value:.4f}"
