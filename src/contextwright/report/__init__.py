"""Session reports: one self-contained HTML file with tables and inline SVG plots."""

from contextwright.report.html import COMPARISON_COLUMNS, render_html, write_report
from contextwright.report.plots import Plot, cache_read_share_plot, context_tokens_plot

__all__ = [
    "COMPARISON_COLUMNS",
    "Plot",
    "cache_read_share_plot",
    "context_tokens_plot",
    "render_html",
    "write_report",
]
