"""The report's plots, drawn with matplotlib into inline, deterministic SVG.

Each function returns a :class:`Plot`: SVG markup ready to be placed in an HTML page
(no XML prolog, no external references, ids namespaced per plot so that several
plots can share a page) plus its title and a text alternative. The same records
always give the same bytes: the SVG hash salt and metadata are fixed, no date is
written and text is drawn as paths (so no font is needed to view it).
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from contextwright._optional import require
from contextwright.telemetry.records import RequestRecord

__all__ = [
    "CLASS_ORDER",
    "PREFIX_CLASSES",
    "Plot",
    "cache_read_share_plot",
    "context_tokens_plot",
    "recall_cost_plot",
    "tokens_figure",
]

_FEATURE = "plots in the HTML report"

CLASS_ORDER: tuple[str, ...] = (
    "policy",
    "framing",
    "instructions",
    "tools",
    "memory_snapshot",
    "summary",
    "history",
    "reasoning",
    "tool_results",
    "working_state",
    "recall",
    "runtime",
)
"""Stacking order of token classes: the frozen prefix at the bottom, the turn body above."""

# Prefix classes in blues (one family: they never change within an epoch); body
# classes in the Okabe-Ito colour-blind-safe palette.
_CLASS_COLOURS: dict[str, str] = {
    "policy": "#08306b",
    "framing": "#2171b5",
    "instructions": "#4292c6",
    "tools": "#9ecae1",
    "memory_snapshot": "#c6dbef",
    "summary": "#CC79A7",
    "history": "#E69F00",
    "reasoning": "#882255",
    "tool_results": "#D55E00",
    "working_state": "#009E73",
    "recall": "#F0E442",
    "runtime": "#999999",
}
_SPARE_COLOURS = ("#56B4E9", "#000000", "#7f3b08", "#b2abd2", "#1b7837", "#fdb863")

# How each kind of context change is drawn: colour, line style, short label.
_CHANGE_STYLES: dict[str, tuple[str, tuple[int, tuple[int, ...]] | str, str]] = {
    "pruned": ("#555555", (0, (2, 2)), "pruned"),
    "compacted": ("#000000", (0, (6, 3)), "compacted"),
    "epoch": ("#6a3d9a", "-.", "new epoch"),
}
_WINDOW_COLOUR = "#b30000"

_RC: dict[str, Any] = {
    # Fixed salt: matplotlib otherwise salts its SVG ids with a random UUID per run.
    "svg.hashsalt": "contextwright-report",
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
_METADATA = {"Creator": "Contextwright", "Date": None, "Format": None, "Type": None}


@dataclass(frozen=True, kw_only=True, slots=True)
class Plot:
    """One plot: inline SVG markup, a title and a text alternative."""

    key: str
    """Short identifier, unique within a report (used to namespace SVG ids)."""
    title: str
    """What the plot shows."""
    description: str
    """Text alternative: what the plot shows and what it says, for readers who cannot see it."""
    svg: str
    """SVG markup to place in an HTML page."""


PREFIX_CLASSES: tuple[str, ...] = ("policy", "framing", "instructions", "tools", "memory_snapshot")
"""The frozen prefix's classes: small next to the history, so they get a panel of their own."""
HEAD_ROOM = 1.12
"""The token axis ends this far above the tallest bar (or the window, when the window is in range)."""
_LABEL_GAP = 0.01
"""Smallest space between two change labels on one row, as a share of the axes width."""
_LABEL_ROWS = 3
_LABEL_FONT = 7.5
_AXES_WIDTH = 0.69
"""The axes' share of the figure width (``subplots_adjust(left=0.11, right=0.80)``)."""


def context_tokens_plot(records: Sequence[RequestRecord], *, key: str = "tokens") -> Plot:
    """Tokens per request stacked by class, the window as a line, context changes as labelled verticals."""
    title = "Context tokens per request, by class"
    fig, classes = tokens_figure(records)
    with _rc():
        svg = _svg(fig)
    windows = {r.context_window for r in records if r.context_window is not None}
    peak = max((r.total_tokens for r in records), default=0)
    changes = _change_summary(records)
    prefix = [n for n, _ in classes if n in PREFIX_CLASSES]
    description = (
        f"Stacked bars, one per request ({len(records)} requests), showing estimated input tokens by class "
        f"({', '.join(n.replace('_', ' ') for n, _ in classes) or 'none'}). "
        f"Peak request: {peak:,} tokens"
        + (
            f"; window: {next(iter(windows)):,} tokens"
            if len(windows) == 1
            else f"; window per epoch: {', '.join(f'{w:,}' for _, _, w in _window_runs(records))} tokens"
            if windows
            else ""
        )
        + ". "
        + (
            f"A smaller panel below gives the frozen prefix by class ({', '.join(n.replace('_', ' ') for n in prefix)}) "
            "with token counts, on a log scale. "
            if prefix
            else ""
        )
        + changes
    )
    return Plot(key=key, title=title, description=description, svg=_inline(svg, key=key, title=title, description=description))


def tokens_figure(records: Sequence[RequestRecord]) -> tuple[Any, list[tuple[str, str]]]:
    """The matplotlib figure of :func:`context_tokens_plot` and its classes (exposed so tests can measure it)."""
    require("matplotlib", extra="report", feature=_FEATURE)
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    classes = _classes(records)
    prefix_classes = [(n, c) for n, c in classes if n in PREFIX_CLASSES]
    x = [r.request_index for r in records]
    top, window_shown = token_axis_top(records)
    with _rc():
        fig = Figure(figsize=(11, 7.0))
        grid = fig.add_gridspec(2, 1, height_ratios=[3.3, 1.3], hspace=0.38)
        ax = fig.add_subplot(grid[0])
        stack = _stacked_bars(ax, records, classes)
        windows = sorted({w for _, _, w in _window_runs(records)})
        label = f"window ({windows[0]:,})" if len(windows) == 1 else "window (per epoch)"
        for first, last, window in _window_runs(records):
            if window <= top:
                # Each epoch's plan has its own window: draw it only over that epoch's requests.
                ax.hlines(window, first - 0.5, last + 0.5, color=_WINDOW_COLOUR, linewidth=1.6, label=label)
                label = "_nolegend_"  # matplotlib's marker for "leave out of the legend"
        if windows and not window_shown:
            # Far above the data: named in the legend rather than flattening every bar under it.
            ax.plot(
                [],
                [],
                color=_WINDOW_COLOUR,
                linewidth=1.6,
                label=f"window {', '.join(f'{w:,}' for w in windows)}\n(above the scale)",
            )
        _draw_changes(ax, records, labelled=True)
        ax.set_ylim(0, top)
        if records:
            ax.set_xlim(min(x) - 0.7, max(x) + 0.7)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        # The change labels sit above the axes, so the title goes up a little further.
        ax.set_title("Context tokens per request, by class", loc="left", fontsize=12, pad=14 + 11 * _label_rows_used(ax))
        ax.set_ylabel("Tokens (estimated)")
        ax.set_xlabel("Request index")
        ax.grid(axis="y", color="#e5e5e5", linewidth=0.6)
        ax.set_axisbelow(True)
        handles, labels = ax.get_legend_handles_labels()
        lines = [(h, lab) for h, lab in zip(handles, labels) if all(h is not b for b in stack)]
        # Lines first, then the classes top-down so that the legend reads like the stack.
        entries = lines + [(b, b.get_label()) for b in reversed(stack)]
        ax.legend(
            [h for h, _ in entries],
            [lab for _, lab in entries],
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            frameon=False,
            fontsize=9,
        )
        _prefix_panel(fig.add_subplot(grid[1]), records, prefix_classes)
        # Room above the axes for as many rows of change labels as were used.
        fig.subplots_adjust(left=0.11, right=0.80, top=0.91 - 0.022 * _label_rows_used(ax), bottom=0.08)
    return fig, classes


def _prefix_panel(ax: Any, records: Sequence[RequestRecord], classes: list[tuple[str, str]]) -> None:
    """One horizontal bar per prefix class and epoch, on a log scale, each with its token count written out."""
    require("matplotlib", extra="report", feature=_FEATURE)
    from matplotlib.ticker import FuncFormatter

    epochs: dict[int, RequestRecord] = {}
    for record in records:
        epochs.setdefault(record.epoch, record)  # the prefix is frozen within an epoch: its first request says it all
    rows: list[tuple[str, int, str]] = []
    for epoch, record in sorted(epochs.items()):
        for name, colour in classes:
            label = name.replace("_", " ") + (f" (epoch {epoch})" if len(epochs) > 1 else "")
            rows.append((label, record.tokens_by_class.get(name, 0), colour))
    ax.set_title("Frozen prefix by class (tokens, log scale)", loc="left", fontsize=10)
    if not rows:
        ax.set_axis_off()
        return
    y = list(range(len(rows)))[::-1]
    values = [max(1, tokens) for _, tokens, _ in rows]
    ax.barh(y, values, color=[colour for *_, colour in rows], height=0.7, linewidth=0)
    for position, (_, tokens, _), value in zip(y, rows, values):
        ax.annotate(f"{tokens:,}", xy=(value, position), xytext=(4, 0), textcoords="offset points", va="center", fontsize=8)
    ax.set_xscale("log")
    ax.set_xlim(0.8, max(values) * 4)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_yticks(y, [label for label, _, _ in rows], fontsize=8.5)
    ax.grid(axis="x", color="#e5e5e5", linewidth=0.6)
    ax.set_axisbelow(True)


def token_axis_top(records: Sequence[RequestRecord]) -> tuple[float, bool]:
    """Where the token axis ends, and whether the window line falls inside it.

    The axis follows the data: a 36k peak in a 200k window gets an axis near 40k, and
    the window is then named in text instead of stretching the bars flat.
    """
    peak = max((r.total_tokens for r in records), default=0)
    windows = [w for _, _, w in _window_runs(records)]
    top = peak * HEAD_ROOM or 1
    # A window close above the data is worth showing: the reader sees how near the limit it got.
    near = [w for w in windows if w <= peak * 1.5]
    if near:
        return max(near) * 1.06, len(near) == len(windows)
    return top, not windows


def _stacked_bars(ax: Any, records: Sequence[RequestRecord], classes: list[tuple[str, str]]) -> list[Any]:
    x = [r.request_index for r in records]
    bottom = [0] * len(records)
    stack = []
    for name, colour in classes:
        heights = [r.tokens_by_class.get(name, 0) for r in records]
        stack.append(ax.bar(x, heights, bottom=bottom, width=0.85, color=colour, label=name.replace("_", " "), linewidth=0))
        bottom = [b + h for b, h in zip(bottom, heights)]
    return stack


def cache_read_share_plot(records: Sequence[RequestRecord], *, key: str = "cache") -> Plot | None:
    """Cache-read share of each request with usage, and the running token-weighted share; None without usage."""
    measured = [r for r in records if r.usage is not None]
    if not measured:
        return None
    require("matplotlib", extra="report", feature=_FEATURE)
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator, PercentFormatter

    title = "Prompt-cache read share per request"
    x = [r.request_index for r in measured]
    shares = [r.cache_read_share or 0.0 for r in measured]
    running: list[float] = []
    read = total = 0
    for r in measured:
        usage = r.usage
        assert usage is not None
        read += usage.cache_read_tokens
        total += usage.total_input
        running.append(read / total if total else 0.0)
    simulated = any(r.usage_source == "simulated" for r in measured)
    with _rc():
        fig = Figure(figsize=(11, 3.8))
        ax = fig.add_subplot()
        ax.bar(x, shares, width=0.85, color="#0072B2", linewidth=0, label="this request")
        ax.step(x, running, where="mid", color="#E69F00", linewidth=2, label="session so far\n(token-weighted)")
        _draw_changes(ax, records, labelled=False)
        ax.set_ylim(0, 1.05)
        ax.set_xlim(min(r.request_index for r in records) - 0.7, max(r.request_index for r in records) + 0.7)
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(title + (" (simulated)" if simulated else ""), loc="left", fontsize=12)
        ax.set_xlabel("Request index")
        ax.set_ylabel("Input read from cache")
        ax.grid(axis="y", color="#e5e5e5", linewidth=0.6)
        ax.set_axisbelow(True)
        handles, labels = ax.get_legend_handles_labels()
        first = labels.index("this request")
        order = [first] + [i for i in range(len(handles)) if i != first]
        ax.legend(
            [handles[i] for i in order],
            [labels[i] for i in order],
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            frameon=False,
            fontsize=9,
        )
        fig.subplots_adjust(left=0.08, right=0.80, top=0.88, bottom=0.15)
        svg = _svg(fig)
    source = "predicted by the offline cache simulator" if simulated else "as reported by the provider"
    misses = sum(1 for s in shares if s == 0.0)
    description = (
        f"Bars show the share of each request's input read from the prompt cache, {source}, for "
        f"{len(measured)} of {len(records)} requests; a line shows the running token-weighted share, "
        f"which ends at {running[-1]:.1%}. {misses} requests read nothing from the cache. "
        "Dashed verticals mark pruning and compaction, which change the cached history."
    )
    return Plot(key=key, title=title, description=description, svg=_inline(svg, key=key, title=title, description=description))


def recall_cost_plot(rows: Sequence[Mapping[str, Any]], *, key: str = "frontier") -> Plot | None:
    """Evidence recall against input cost (relative to the ceiling), one point per strategy and window.

    ``rows`` are comparison rows (``strategy``, ``relative_input_cost``, ``evidence_recall``
    and, when several windows are compared, ``window``); None when no row has both measures.
    """
    points = [
        (str(r["strategy"]), r.get("window"), float(r["relative_input_cost"]), float(r["evidence_recall"]))
        for r in rows
        if r.get("relative_input_cost") is not None and r.get("evidence_recall") is not None
    ]
    if not points:
        return None
    require("matplotlib", extra="report", feature=_FEATURE)
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, NullLocator, PercentFormatter

    title = "Evidence recall against input cost, per strategy"
    strategies = list(dict.fromkeys(p[0] for p in points))
    windows = list(dict.fromkeys(p[1] for p in points))
    palette = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#999999")
    markers = ("o", "s", "^", "D", "v", "P")
    with _rc():
        fig = Figure(figsize=(9, 4.6))
        ax = fig.add_subplot()
        for number, strategy in enumerate(strategies):
            mine = sorted((p for p in points if p[0] == strategy), key=lambda p: p[2])
            colour = palette[number % len(palette)]
            if len(mine) > 1:
                ax.plot([p[2] for p in mine], [p[3] for p in mine], color=colour, linewidth=1, alpha=0.6)
            for _, window, x, y in mine:
                marker = markers[windows.index(window) % len(markers)]
                ax.scatter([x], [y], color=colour, marker=marker, s=46, zorder=3)
            ax.plot([], [], color=colour, marker="o", linestyle="-", label=strategy.replace("_", " "))
        if len(windows) > 1:
            for index, window in enumerate(windows):
                name = f"{window:,}-token window" if isinstance(window, int) else str(window)
                ax.scatter([], [], color="#555555", marker=markers[index % len(markers)], label=name)
        lowest = min(p[3] for p in points)
        ax.set_ylim(max(0.0, math.floor(lowest * 10 - 0.5) / 10), 1.02)
        costs = [p[2] for p in points if p[2] > 0]
        if costs and max(costs) > 3 * min(costs):
            # Keeping everything costs several times the ceiling: a log scale keeps the cheap end readable.
            ax.set_xscale("log")
            ticks = [t for t in (0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20) if min(costs) / 1.3 <= t <= max(costs) * 1.3]
            ax.set_xticks(ticks)
            ax.xaxis.set_minor_locator(NullLocator())
            ax.set_xlim(min(costs) / 1.15, max(costs) * 1.15)
        else:
            ax.set_xlim(0, max(1.1, max(p[2] for p in points) * 1.08))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}×"))
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
        ax.set_title(title, loc="left", fontsize=12)
        ax.set_xlabel("Input cost, relative to the append-only ceiling")
        ax.set_ylabel("Evidence recall")
        ax.grid(color="#e5e5e5", linewidth=0.6)
        ax.set_axisbelow(True)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=9)
        fig.subplots_adjust(left=0.1, right=0.70, top=0.9, bottom=0.13)
        svg = _svg(fig)
    listed = "; ".join(
        f"{strategy.replace('_', ' ')}{f' at {window:,}' if isinstance(window, int) else ''}: {y:.1%} recall at {x:.2f}x cost"
        for strategy, window, x, y in points
    )
    description = (
        "Each point is one strategy"
        + (" at one window" if len(windows) > 1 else "")
        + ": across, its input cost relative to the append-only ceiling; up, the share of the strings the "
        "recorded model used that the strategy's requests still showed. Up and to the left is better. " + listed + "."
    )
    return Plot(key=key, title=title, description=description, svg=_inline(svg, key=key, title=title, description=description))


# -- internals ------------------------------------------------------------------------


def _rc() -> Any:
    matplotlib = require("matplotlib", extra="report", feature=_FEATURE)
    return matplotlib.rc_context(_RC)


def _classes(records: Sequence[RequestRecord]) -> list[tuple[str, str]]:
    present = {name for r in records for name, tokens in r.tokens_by_class.items() if tokens}
    ordered = [c for c in CLASS_ORDER if c in present] + sorted(present - set(CLASS_ORDER))
    spare = iter(_SPARE_COLOURS * (1 + len(ordered) // len(_SPARE_COLOURS)))
    return [(name, _CLASS_COLOURS.get(name) or next(spare)) for name in ordered]


def _window_runs(records: Sequence[RequestRecord]) -> list[tuple[int, int, int]]:
    """(first request, last request, window) for each run of requests with the same known window."""
    runs: list[tuple[int, int, int]] = []
    for record in records:
        window = record.context_window
        if window is None:
            continue
        if runs and runs[-1][2] == window and runs[-1][1] == record.request_index - 1:
            runs[-1] = (runs[-1][0], record.request_index, window)
        else:
            runs.append((record.request_index, record.request_index, window))
    return runs


def _changes(records: Sequence[RequestRecord]) -> list[tuple[int, list[str]]]:
    """(request index, change kinds) for every request that follows a context change."""
    out = []
    for record in records:
        kinds = []
        for change in record.changes:
            kind = change.split(":", 1)[0]
            if kind in _CHANGE_STYLES and kind not in kinds:
                kinds.append(kind)
        if kinds:
            out.append((record.request_index, kinds))
    return out


def _draw_changes(ax: Any, records: Sequence[RequestRecord], *, labelled: bool) -> None:
    legend_done: set[str] = set()
    changes = _changes(records)
    for index, kinds in changes:
        # The change happened before this request was built: draw it just left of its bar.
        position = index - 0.5
        for offset, kind in enumerate(kinds):
            colour, style, label = _CHANGE_STYLES[kind]
            ax.axvline(
                position + offset * 0.12,
                color=colour,
                linestyle=style,
                linewidth=1.2,
                label=label if kind not in legend_done else None,
            )
            legend_done.add(kind)
    if not labelled or not records:
        return
    first = min(r.request_index for r in records) - 0.7
    span = max(r.request_index for r in records) + 0.7 - first
    texts = ["+".join(_short(kind, records, index) for kind in kinds) for index, kinds in changes]
    # Label widths as axes fractions: ~0.6 em per character at the label's size, over the axes width.
    axes_points = ax.figure.get_figwidth() * 72 * _AXES_WIDTH
    spans = []
    for (index, _), text in zip(changes, texts):
        centre, half = (index - 0.5 - first) / span, len(text) * _LABEL_FONT * 0.6 / axes_points / 2
        spans.append((centre - half, centre + half))
    rows = label_rows(spans)
    ax._cw_label_rows = max((r for r in rows if r is not None), default=-1) + 1  # read back by the title padding
    for (index, _), text, row in zip(changes, texts, rows):
        if row is None:
            continue  # no room on any row: the line and the legend still say what it is
        ax.annotate(
            text,
            xy=(index - 0.5, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(0, 3 + 11 * row),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=_LABEL_FONT,
            color="#333333",
        )


def label_rows(spans: Sequence[tuple[float, float]], *, gap: float = _LABEL_GAP, rows: int = _LABEL_ROWS) -> list[int | None]:
    """A row for each label (its left and right edge, in order) so that labels on a row keep ``gap`` apart; None: no room."""
    right: list[float] = [-1.0] * rows
    out: list[int | None] = []
    for left, end in spans:
        row = next((r for r in range(rows) if left - right[r] >= gap), None)
        if row is not None:
            right[row] = end
        out.append(row)
    return out


def _label_rows_used(ax: Any) -> int:
    return int(getattr(ax, "_cw_label_rows", 0))


def _short(kind: str, records: Sequence[RequestRecord], index: int) -> str:
    if kind != "compacted":
        return {"pruned": "prune", "epoch": "epoch"}[kind]
    triggers = [c.split(":", 1)[1] for r in records if r.request_index == index for c in r.changes if c.startswith("compacted:")]
    # Pressure is the usual trigger; name only the unusual ones (manual, overflow, cache_expired).
    unusual = [t for t in dict.fromkeys(triggers) if t != "pressure"]
    return "compact" + (f" ({', '.join(unusual)})" if unusual else "")


def _change_summary(records: Sequence[RequestRecord]) -> str:
    changes = _changes(records)
    if not changes:
        return "No pruning, compaction or epoch change happened."
    parts = []
    for kind, label in (("pruned", "pruning"), ("compacted", "compaction"), ("epoch", "new epoch")):
        at = [str(i) for i, kinds in changes if kind in kinds]
        if at:
            parts.append(f"{label} before request{'s' if len(at) > 1 else ''} {', '.join(at)}")
    return "Vertical lines mark " + "; ".join(parts) + "."


def _svg(fig: Any) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata=_METADATA)
    return buffer.getvalue()


_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.DOTALL)
_METADATA_BLOCK = re.compile(r"\s*<metadata>.*?</metadata>", re.DOTALL)
_XMLNS = re.compile(r'\s+xmlns(?::\w+)?="[^"]*"')
_SIZE = re.compile(r'\s+(?:width|height)="[\d.]+pt"')
_ID = re.compile(r'\bid="([^"]+)"')


def _inline(svg: str, *, key: str, title: str, description: str) -> str:
    """Make standalone SVG safe to inline: no prolog, no namespace URLs, ids unique to this plot."""
    svg = _PROLOG.sub("", svg, count=1)
    svg = _METADATA_BLOCK.sub("", svg, count=1)
    # Inside HTML, the parser supplies the SVG and xlink namespaces itself.
    svg = _XMLNS.sub("", svg)
    root_end = svg.index(">")
    # The page's CSS sizes the plot; the viewBox keeps its aspect ratio.
    svg = _SIZE.sub("", svg[:root_end]) + svg[root_end:]
    ids = set(_ID.findall(svg))

    def rename(match: re.Match[str]) -> str:
        name = match.group(2)
        return f"{match.group(1)}{key}-{name}{match.group(3)}" if name in ids else match.group(0)

    svg = re.sub(r'(\bid=")([^"]+)(")', rename, svg)
    svg = re.sub(r'(href="#)([^"]+)(")', rename, svg)
    svg = re.sub(r"(url\(#)([^)]+)(\))", rename, svg)
    head = f'<svg class="plot" role="img" aria-labelledby="{key}-title {key}-desc"'
    svg = svg.replace("<svg", head, 1)
    end_of_tag = svg.index(">") + 1
    label = f'<title id="{key}-title">{escape(title)}</title><desc id="{key}-desc">{escape(description)}</desc>'
    return svg[:end_of_tag] + label + svg[end_of_tag:].rstrip() + "\n"
