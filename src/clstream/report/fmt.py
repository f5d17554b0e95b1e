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
    text = f"{value:.3f}"
    if ci is not None and len(ci) == 2 and ci[0] is not None and ci[1] is not None:
        text += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
    return text


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
