"""Reports: one self-contained HTML file per results directory (see :mod:`clstream.report.html`).

The HTML renderer (and with it matplotlib) is imported on first use of these names, not with
the package: ``clstream summary`` reads the package's summary modules and draws nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clstream.report.html import register_section, render_html, render_report

__all__ = ["register_section", "render_html", "render_report"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from clstream.report import html

        return getattr(html, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
