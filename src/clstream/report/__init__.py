"""Reports: one self-contained HTML file per results directory (see :mod:`clstream.report.html`)."""

from clstream.report.html import register_section, render_html, render_report

__all__ = ["register_section", "render_html", "render_report"]
