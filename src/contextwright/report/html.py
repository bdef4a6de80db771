"""A self-contained HTML report of one session: tables and inline SVG plots.

The page needs nothing from the network: styles are inline, plots are inline SVG
(text drawn as paths), there is no script and no web font. Everything shown is
derived from a :class:`~contextwright.telemetry.records.SessionSummary` and its
:class:`~contextwright.telemetry.records.RequestRecord` list, so the same session
renders to the same bytes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from decimal import Decimal
from html import escape
from pathlib import Path
from typing import Any

from contextwright._version import __version__
from contextwright.errors import UsageError
from contextwright.report.plots import Plot, cache_read_share_plot, context_tokens_plot, recall_cost_plot
from contextwright.telemetry.records import RequestRecord, SessionSummary

__all__ = ["COMPARISON_COLUMNS", "comparison_cell", "render_html", "write_report"]

COMPARISON_COLUMNS: dict[str, str] = {
    "strategy": "strategy",
    "cache_read_share": "cache-read share",
    "input_cost_usd": "input cost",
    "relative_input_cost": "vs ceiling",
    "peak_request_tokens": "peak request",
    "overflows": "over window",
    "task_visible": "task visible",
    "evidence_recall": "evidence recall",
    "relative_cost_with_read_backs": "vs ceiling, with read-backs",
    "read_backs": "read-backs",
}
"""Known comparison keys and their column headings, in display order; other keys follow as given.

The terminal tables use the same headings and :func:`comparison_cell`, so both show the same forms.
"""

_NUM = ' class="num"'
_WARN = ' class="warn"'

_CSS = """
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       margin: 0; background: #fafafa; color: #1a1a1a; line-height: 1.45; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 32px 48px; background: #fff; }
h1 { font-size: 1.6rem; margin: 0 0 4px; }
h2 { font-size: 1.2rem; margin: 32px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.meta { color: #555; margin: 0 0 16px; }
table { border-collapse: collapse; font-size: 0.92rem; }
caption { text-align: left; color: #555; padding: 0 0 6px; }
th, td { padding: 4px 12px 4px 0; text-align: left; vertical-align: top; border-bottom: 1px solid #eee; }
thead th { border-bottom: 2px solid #ccc; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.warn { color: #a40000; font-weight: 600; }
figure { margin: 16px 0 28px; }
figcaption { color: #444; font-size: 0.9rem; max-width: 70em; }
svg.plot { width: 100%; height: auto; display: block; }
details { margin-top: 24px; }
footer { color: #777; font-size: 0.85rem; margin-top: 32px; }
.bar { background: #4a7ab5; height: 0.9em; display: inline-block; vertical-align: middle; min-width: 1px; }
td.bar-cell { width: 320px; }
"""


def render_html(
    summary: SessionSummary,
    records: Sequence[RequestRecord],
    *,
    title: str,
    comparison: list[dict[str, Any]] | None = None,
    comparison_caption: str = "Each strategy on the same session",
    plots: bool = True,
) -> str:
    """The report as one HTML document (no external resources).

    ``comparison`` rows compare strategies; keys in :data:`COMPARISON_COLUMNS` get
    their headings and formats, other keys are shown as given. ``plots=False`` leaves
    out the figures (and the need for matplotlib).
    """
    if any(r.session_id != summary.session_id for r in records):
        raise UsageError(
            f"records of another session were passed with the summary of {summary.session_id!r}", session_id=summary.session_id
        )
    figures: list[Plot] = []
    if plots and records:
        figures.append(context_tokens_plot(records))
        cache = cache_read_share_plot(records)
        if cache is not None:
            figures.append(cache)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        "<main>",
        f"<h1>{escape(title)}</h1>",
        (
            f'<p class="meta">Session <code>{escape(summary.session_id)}</code>, '
            f"{escape(_time(summary.started_at))} to {escape(_time(summary.ended_at))}</p>"
        ),
        '<section aria-labelledby="summary-heading">',
        '<h2 id="summary-heading">Summary</h2>',
        _summary_table(summary, records),
        "</section>",
    ]
    parts += _misses_section(summary)
    if comparison:
        parts += [
            '<section aria-labelledby="comparison-heading">',
            '<h2 id="comparison-heading">Strategies compared</h2>',
            _comparison_table(comparison, caption=comparison_caption),
        ]
        frontier = recall_cost_plot(comparison) if plots else None
        if frontier is not None:
            parts += [
                f'<figure aria-labelledby="{frontier.key}-caption">',
                frontier.svg.rstrip(),
                f'<figcaption id="{frontier.key}-caption"><strong>{escape(frontier.title)}.</strong> '
                f"{escape(frontier.description)}</figcaption>",
                "</figure>",
            ]
        parts.append("</section>")
    if figures:
        parts += ['<section aria-labelledby="plots-heading">', '<h2 id="plots-heading">Over the session</h2>']
        for plot in figures:
            parts += [
                f'<figure aria-labelledby="{plot.key}-caption">',
                plot.svg.rstrip(),
                f'<figcaption id="{plot.key}-caption"><strong>{escape(plot.title)}.</strong> {escape(plot.description)}</figcaption>',
                "</figure>",
            ]
        parts.append("</section>")
    if records:
        parts += ["<details>", "<summary>Every request</summary>", _requests_table(records), "</details>"]
    parts += [
        (
            f"<footer>Derived from the event log by Contextwright {escape(__version__)}. "
            "Token counts are the engine's conservative estimates; usage and cost are provider-reported "
            "unless marked simulated.</footer>"
        ),
        "</main>",
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


def write_report(
    path: str | Path,
    summary: SessionSummary,
    records: Sequence[RequestRecord],
    *,
    title: str,
    comparison: list[dict[str, Any]] | None = None,
    comparison_caption: str = "Each strategy on the same session",
    plots: bool = True,
) -> Path:
    """Render the report and write it to ``path`` (UTF-8); return the path."""
    target = Path(path)
    html = render_html(summary, records, title=title, comparison=comparison, comparison_caption=comparison_caption, plots=plots)
    target.write_text(html, encoding="utf-8")
    return target


# -- tables -------------------------------------------------------------------------


def _summary_table(summary: SessionSummary, records: Sequence[RequestRecord]) -> str:
    window = summary.context_window
    peak = f"{summary.peak_request_tokens:,} tokens"
    if window:
        peak += f" ({summary.peak_request_tokens / window:.0%} of the window)"
    drift = summary.prefix_drift
    hashes = ", ".join(f"epoch {epoch}: {count}" for epoch, count in summary.prefix_hashes_by_epoch.items()) or "none"
    simulated = any(r.usage_source == "simulated" for r in records)
    usage_note = " (simulated)" if simulated else ""
    rows: list[tuple[str, str, bool]] = [
        ("Model", f"{summary.model or 'unknown'} ({summary.provider or 'unknown provider'})", False),
        ("Context window", f"{window:,} tokens" if window else "unknown", False),
        ("Events", f"{summary.events:,}", False),
        ("Requests built", f"{summary.requests:,}", False),
        ("Epochs", str(summary.epochs), summary.epochs > 1),
        ("Prefix hashes per epoch", hashes + (" — the prompt cache prefix was broken" if drift else ""), drift),
        ("Peak request (engine's estimate)", peak, False),
        *_usage_peak(records, usage_note),
        ("Compactions", _counts(summary.compactions, summary.compactions_by_trigger), False),
        ("Pruning passes", str(summary.prunes), False),
        ("Dedupe hits", str(summary.dedupe_hits), False),
        (
            "Relief compression ratio",
            "n/a"
            if summary.relief_compression_ratio is None
            else f"{summary.relief_compression_ratio:.2f} (tokens after ÷ before, mean per pass)",
            False,
        ),
        ("Stages closed", f"{summary.stages_closed} ({summary.decisions_graduated} decision points graduated to memory)", False),
        ("Yields", _by_kind(summary.yields_by_kind), False),
        ("Overflow recoveries", str(summary.overflow_recoveries), summary.overflow_recoveries > 0),
        ("Archive failures", str(summary.archive_failures), summary.archive_failures > 0),
        ("Requests with usage", f"{summary.requests_with_usage:,} of {summary.requests:,}{usage_note}", False),
        ("Cache-read share (token-weighted)", _share(summary.cache_read_share) + usage_note, False),
        ("Total cost", _money(summary.total_cost_usd) + usage_note, False),
        ("Denied tool calls", str(summary.denied_tool_calls), False),
        (
            "Memory candidates",
            f"{summary.memory_candidates_offered} offered, {summary.memory_candidates_withheld} withheld",
            False,
        ),
    ]
    body = "\n".join(
        f'<tr><th scope="row">{escape(label)}</th><td{_WARN if warn else ""}>{escape(value)}</td></tr>'
        for label, value, warn in rows
    )
    return f"<table>\n<caption>What the session did, derived from its events</caption>\n<tbody>\n{body}\n</tbody>\n</table>"


def _usage_peak(records: Sequence[RequestRecord], note: str) -> list[tuple[str, str, bool]]:
    """The largest input the usage reports (the figure the comparison's peak column shows), if any."""
    inputs = [r.usage.total_input for r in records if r.usage is not None]
    return [("Peak input (usage)", f"{max(inputs):,} tokens{note}", False)] if inputs else []


def _comparison_table(rows: list[dict[str, Any]], *, caption: str) -> str:
    if not all(isinstance(row, Mapping) for row in rows):
        raise UsageError("comparison rows must be mappings of column name to value")
    seen: list[str] = []
    for row in rows:
        seen += [k for k in row if k not in seen]
    columns = [k for k in COMPARISON_COLUMNS if k in seen] + [k for k in seen if k not in COMPARISON_COLUMNS]
    head = "".join(
        f'<th scope="col"{_NUM if _numeric(rows, c) else ""}>{escape(COMPARISON_COLUMNS.get(c, c.replace("_", " ")))}</th>'
        for c in columns
    )
    lines = []
    for row in rows:
        cells = []
        for column in columns:
            value = comparison_cell(column, row.get(column))
            if column == columns[0]:
                cells.append(f'<th scope="row">{escape(value)}</th>')
            else:
                cells.append(f"<td{_NUM if _numeric(rows, column) else ''}>{escape(value)}</td>")
        lines.append("<tr>" + "".join(cells) + "</tr>")
    body = "\n".join(lines)
    return f"<table>\n<caption>{escape(caption)}</caption>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def _requests_table(records: Sequence[RequestRecord]) -> str:
    head = "".join(
        f'<th scope="col"{_NUM if num else ""}>{escape(name)}</th>'
        for name, num in (
            ("#", True),
            ("Built at", False),
            ("Epoch", True),
            ("Tokens", True),
            ("Projected next", True),
            ("Pressure", False),
            ("Yields", False),
            ("Changes before", False),
            ("Cache read", True),
            ("Cost", True),
        )
    )
    lines = []
    for r in records:
        cells = [
            (str(r.request_index), True),
            (_time(r.at), False),
            (str(r.epoch), True),
            (f"{r.total_tokens:,}", True),
            (f"{r.projected_next_tokens:,}", True),
            (r.pressure, False),
            (", ".join(y.replace("_", " ") for y in r.yields) or "—", False),
            (", ".join(r.changes) or "—", False),
            (_share(r.cache_read_share), True),
            (_money(r.cost_usd), True),
        ]
        lines.append("<tr>" + "".join(f"<td{_NUM if num else ''}>{escape(v)}</td>" for v, num in cells) + "</tr>")
    body = "\n".join(lines)
    return f"<table>\n<caption>One row per built request</caption>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def _misses_section(summary: SessionSummary) -> list[str]:
    """Uncached input by cause, one bar each, and the requests whose cache-read share dropped."""
    parts: list[str] = []
    total = summary.uncached_input_tokens or 0
    if total:
        rows = []
        for cause, tokens in sorted(summary.uncached_by_cause.items(), key=lambda kv: -kv[1]):
            width = round(100 * tokens / total, 1)
            rows.append(
                f'<tr><th scope="row">{escape(cause.replace("_", " "))}</th><td{_NUM}>{tokens:,}</td>'
                f"<td{_NUM}>{tokens / total:.1%}</td>"
                f'<td class="bar-cell"><span class="bar" style="width: {width}%"></span></td></tr>'
            )
        parts += [
            '<section aria-labelledby="misses-heading">',
            '<h2 id="misses-heading">Cache misses by cause</h2>',
            "<table>",
            f"<caption>{total:,} uncached input tokens (offline cache simulation), each given one cause</caption>",
            f'<thead><tr><th scope="col">cause</th><th scope="col"{_NUM}>tokens</th>'
            f'<th scope="col"{_NUM}>share</th><th scope="col"></th></tr></thead>',
            "<tbody>",
            *rows,
            "</tbody>",
            "</table>",
        ]
    if summary.cache_alarms:
        if not parts:
            parts += ['<section aria-labelledby="misses-heading">', '<h2 id="misses-heading">Cache misses</h2>']
        items = [
            f"<li>request {a.request_index} ({escape(_time(a.at))}): cache read {_share(a.share)} against a running "
            f"{_share(a.running_level)}; cause: {escape((a.cause or 'not known from the log').replace('_', ' '))}</li>"
            for a in summary.cache_alarms
        ]
        parts += [f"<p{_WARN}>Cache-read share dropped well below its running level:</p>", "<ul>", *items, "</ul>"]
    if parts:
        parts.append("</section>")
    return parts


# -- formatting -----------------------------------------------------------------------


def comparison_cell(column: str, value: Any) -> str:
    """One comparison value as text, in the same form in the terminal and in HTML."""
    if value is None:
        return "n/a"
    number = isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)
    if column == "cache_read_share" and number:
        return f"{float(value):.1%}"
    if column == "input_cost_usd" and (number or isinstance(value, str)):
        return f"${Decimal(str(value)).quantize(Decimal('0.0001'))}"
    if column in ("relative_input_cost", "relative_cost_with_read_backs") and number:
        return f"{float(value):.2f}×"
    if column == "task_visible" and number:
        return f"{float(value):.0%}"
    if column == "evidence_recall" and number:
        return f"{float(value):.1%}"
    if column == "evidence_misses" and isinstance(value, dict):
        return ", ".join(f"{cause} {count:,}" for cause, count in value.items()) or "none"
    return _plain(value)


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".") if value != int(value) else f"{value:,.0f}"
    if isinstance(value, Decimal):
        return str(value)
    return str(value)


def _numeric(rows: list[dict[str, Any]], column: str) -> bool:
    if column == "input_cost_usd":
        return True
    values = [row.get(column) for row in rows if row.get(column) is not None]
    return bool(values) and all(isinstance(v, (int, float, Decimal)) and not isinstance(v, bool) for v in values)


def _counts(total: int, by: Mapping[str, int]) -> str:
    return str(total) + (f" ({_by_kind(by)})" if by else "")


def _by_kind(by: Mapping[str, int]) -> str:
    return ", ".join(f"{kind.replace('_', ' ')}: {count}" for kind, count in by.items()) or "none"


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def _money(value: Decimal | None) -> str:
    return "—" if value is None else f"${value:,.4f}"


def _time(at: dt.datetime) -> str:
    return at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
