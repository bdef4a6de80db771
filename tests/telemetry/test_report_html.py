"""O2: the session report is one self-contained, accessible, deterministic HTML file."""

from __future__ import annotations

import re
import sys
from collections import Counter
from html.parser import HTMLParser

import pytest
from telemetry_sessions import ROTATED_WINDOW, WINDOW

from contextwright.errors import MissingDependencyError, UsageError
from contextwright.providers.usage import Usage
from contextwright.report import COMPARISON_COLUMNS, render_html, write_report
from contextwright.report.plots import cache_read_share_plot, context_tokens_plot, token_axis_top
from contextwright.telemetry.records import request_records, summarize, with_usage

pytest.importorskip("matplotlib", reason='plots need matplotlib: pip install "contextwright[report]"')

COMPARISON = [
    {
        "strategy": "contextwright",
        "cache_read_share": 0.82,
        "relative_input_cost": 0.31,
        "peak_request_tokens": 21_000,
        "overflows": 0,
        "task_visible": True,
    },
    {
        "strategy": "naive",
        "cache_read_share": 0.0,
        "relative_input_cost": 1.0,
        "peak_request_tokens": 64_000,
        "overflows": 3,
        "task_visible": False,
        "notes": "truncates",
    },
]


class Tags(HTMLParser):
    """Collects start tags with their attributes, and checks that svg/figure/table elements close."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.open: Counter[str] = Counter()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag in ("svg", "figure", "table", "section"):
            self.open[tag] += 1

    def handle_endtag(self, tag):
        if tag in ("svg", "figure", "table", "section"):
            self.open[tag] -= 1


def parse(html: str) -> Tags:
    tags = Tags()
    tags.feed(html)
    tags.close()
    return tags


@pytest.fixture(scope="module")
def report(driven):
    records = request_records(driven.events)
    summary = summarize(driven.events, records=records)
    return summary, records, render_html(summary, records, title="Telemetry <session>", comparison=COMPARISON)


def test_the_page_references_nothing_outside_itself(report):
    html = report[2]
    tags = parse(html)
    # Check: no scripts, no stylesheets or fonts to fetch, no URL of any scheme.
    assert not any(tag in ("script", "link", "img", "iframe", "object") for tag, _ in tags.tags)
    assert not re.search(r"(?i)(https?:|ftp:|//[a-z0-9.-]+\.[a-z]{2,}/|@import|@font-face)", html)
    references = [value for _, attrs in tags.tags for key, value in attrs.items() if key in ("src", "href", "xlink:href")]
    assert references and all(value.startswith("#") for value in references)
    assert all(ref.startswith("url(#") for ref in re.findall(r"url\([^)]*\)", html))
    assert set(tags.open.values()) == {0}


def test_summary_and_comparison_tables(report):
    summary, _, html = report
    # Check: the title is escaped, the summary carries the derived numbers.
    assert "<title>Telemetry &lt;session&gt;</title>" in html and "<session>" not in html
    assert f"{summary.peak_request_tokens:,} tokens" in html
    assert f"{summary.cache_read_share:.1%}" in html
    assert f"${summary.total_cost_usd:,.4f}" in html
    assert "epoch 1: 1, epoch 2: 1" in html
    assert f"{summary.requests_with_usage:,} of {summary.requests:,}" in html
    # Check: known comparison columns get their headings and formats, unknown ones are shown as given.
    for key, heading in COMPARISON_COLUMNS.items():
        if any(key in row for row in COMPARISON):
            assert f">{heading}</th>" in html
    # The same forms as the terminal's comparison table ("0.31×", "n/a").
    assert "82.0%" in html and "0.31×" in html and "64,000" in html and ">notes</th>" in html
    assert "<td>no</td>" in html and "<td>n/a</td>" in html  # False and a missing value


def test_plots_are_inline_accessible_and_namespaced(report):
    html = report[2]
    tags = parse(html)
    svgs = [attrs for tag, attrs in tags.tags if tag == "svg"]
    # Check: both plots are there (usage exists), each labelled by its own title and description.
    assert len(svgs) == 2
    for attrs in svgs:
        assert attrs["role"] == "img"
        for label in attrs["aria-labelledby"].split():
            assert f'id="{label}"' in html
    assert html.count("<figcaption") == 2
    assert "Context tokens per request, by class" in html and "Prompt-cache read share per request" in html
    assert "Request index" in html and "Tokens (estimated)" in html and "Input read from cache" in html
    # Check: ids are unique across the page, so two plots' glyphs and clips never collide.
    ids = [attrs["id"] for _, attrs in tags.tags if "id" in attrs]
    assert len(ids) == len(set(ids))


def test_context_changes_are_marked_and_described(driven):
    records = request_records(driven.events)
    plot = context_tokens_plot(records)
    pruned = [r.request_index for r in records if "pruned" in r.changes]
    compacted = [r.request_index for r in records if any(c.startswith("compacted") for c in r.changes)]
    rotated = [r.request_index for r in records if any(c.startswith("epoch") for c in r.changes)]

    # Check: the text alternative names where each change happened.
    def listed(change: str, requests: list[int]) -> str:
        return f"{change} before request{'s' if len(requests) > 1 else ''} {', '.join(map(str, requests))}"

    assert listed("pruning", pruned) in plot.description
    assert listed("compaction", compacted) in plot.description
    assert f"new epoch before request {rotated[0]}" in plot.description
    # Check: each epoch's window is drawn, and the labels are in the SVG (as text comments of path glyphs).
    assert f"window per epoch: {WINDOW:,}, {ROTATED_WINDOW:,} tokens" in plot.description
    # Drawn where the axis reaches it; named in the legend when it sits far above the bars.
    _, window_shown = token_axis_top(records)
    assert ("window (per epoch)" if window_shown else "(above the scale)") in plot.svg
    assert "<!-- prune -->" in plot.svg and "compact (manual)" in plot.svg and "epoch" in plot.svg


def test_rendering_is_byte_for_byte_repeatable(driven, report):
    records = request_records(driven.events)
    summary = summarize(driven.events, records=records)
    again = render_html(summary, records, title="Telemetry <session>", comparison=COMPARISON)
    assert again == report[2]


def test_without_usage_there_is_no_cache_plot(driven_without_usage):
    records = request_records(driven_without_usage.events)
    summary = summarize(driven_without_usage.events)
    html = render_html(summary, records, title="No usage")
    assert cache_read_share_plot(records) is None
    assert html.count("<svg") == 1 and "Strategies compared" not in html
    assert "0 of " in html and "(simulated)" not in html


def test_simulated_usage_is_labelled(driven_without_usage):
    records = request_records(driven_without_usage.events)
    filled = with_usage(records, {r.request_index: Usage(input_tokens=100, cache_read_tokens=r.total_tokens) for r in records})
    html = render_html(summarize(driven_without_usage.events, records=filled), filled, title="Simulated")
    assert html.count("<svg") == 2 and "(simulated)" in html and "offline cache simulator" in html


def test_write_report_and_misuse(tmp_path, report, driven_without_usage):
    summary, records, html = report
    path = write_report(tmp_path / "r.html", summary, records, title="Telemetry <session>", comparison=COMPARISON)
    assert path.read_text(encoding="utf-8") == html
    other = request_records(driven_without_usage.events)
    with pytest.raises(UsageError, match="another session"):
        render_html(summary, other, title="x")
    with pytest.raises(UsageError, match="mappings"):
        render_html(summary, records, title="x", comparison=[("strategy", "naive")])  # type: ignore[list-item]


def test_missing_matplotlib_names_the_extra_and_tables_still_render(report, monkeypatch):
    summary, records, _ = report
    for name in [n for n in sys.modules if n == "matplotlib" or n.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingDependencyError, match=r'pip install "contextwright\[report\]"'):
        render_html(summary, records, title="x")
    html = render_html(summary, records, title="x", plots=False)
    assert "<svg" not in html and "Summary" in html
