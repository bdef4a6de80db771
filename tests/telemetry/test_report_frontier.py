"""The report's recall-against-cost figure: one point per strategy (and window), beside the comparison table."""

from __future__ import annotations

import pytest

from contextwright.report import render_html
from contextwright.report.html import comparison_cell
from contextwright.report.plots import recall_cost_plot
from contextwright.telemetry.records import request_records, summarize

pytest.importorskip("matplotlib", reason='plots need matplotlib: pip install "contextwright[report]"')

ROWS = [
    {"strategy": "sliding_window", "window": 32_000, "relative_input_cost": 0.75, "evidence_recall": 0.952},
    {"strategy": "contextwright", "window": 32_000, "relative_input_cost": 0.51, "evidence_recall": 0.875},
    {"strategy": "contextwright", "window": 200_000, "relative_input_cost": 1.01, "evidence_recall": 0.978},
    {"strategy": "keep_all_single_breakpoint", "window": 32_000, "relative_input_cost": 5.27, "evidence_recall": 1.0},
]


def test_the_figure_places_each_strategy_and_says_where_in_words():
    plot = recall_cost_plot(ROWS)
    assert plot is not None
    assert plot.svg.startswith('<svg class="plot" role="img"')
    assert "contextwright at 32,000: 87.5% recall at 0.51x cost" in plot.description
    assert "keep all single breakpoint at 32,000: 100.0% recall at 5.27x cost" in plot.description
    assert recall_cost_plot(ROWS) == plot  # the same rows draw the same bytes


def test_no_figure_without_recall():
    assert recall_cost_plot([{"strategy": "naive", "relative_input_cost": 1.0, "evidence_recall": None}]) is None


def test_the_report_puts_the_figure_under_the_comparison(driven):
    records = request_records(driven.events)
    summary = summarize(driven.events, records=records)
    comparison = [
        {**row, "read_backs": 2, "evidence_misses": {"bounded": 3, "pruned": 1}} for row in ROWS if row["window"] == 32_000
    ]
    html = render_html(summary, records, title="t", comparison=comparison)
    section = html[html.index('id="comparison-heading"') : html.index('id="plots-heading"')]
    assert "Evidence recall against input cost, per strategy" in section
    assert "evidence recall" in section and "87.5%" in section and "bounded 3, pruned 1" in section
    assert "Evidence recall against input cost" not in render_html(
        summary, records, title="t", comparison=comparison, plots=False
    )


def test_cells():
    assert comparison_cell("evidence_recall", 0.8754) == "87.5%"
    assert comparison_cell("relative_cost_with_read_backs", 0.5) == "0.50×"
    assert comparison_cell("evidence_misses", {}) == "none"
