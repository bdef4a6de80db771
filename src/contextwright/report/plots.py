"""The report's plots, drawn with matplotlib into inline, deterministic SVG.

Each function returns a :class:`Plot`: SVG markup ready to be placed in an HTML page
(no XML prolog, no external references, ids namespaced per plot so that several
plots can share a page) plus its title and a text alternative. The same records
always give the same bytes: the SVG hash salt and metadata are fixed, no date is
written and text is drawn as paths (so no font is needed to view it).
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from contextwright._optional import require
from contextwright.telemetry.records import RequestRecord

__all__ = ["CLASS_ORDER", "Plot", "cache_read_share_plot", "context_tokens_plot"]

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


def context_tokens_plot(records: Sequence[RequestRecord], *, key: str = "tokens") -> Plot:
    """Tokens per request stacked by class, the window as a line, context changes as labelled verticals."""
    require("matplotlib", extra="report", feature=_FEATURE)
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    title = "Context tokens per request, by class"
    classes = _classes(records)
    x = [r.request_index for r in records]
    windows = {r.context_window for r in records if r.context_window is not None}
    peak = max((r.total_tokens for r in records), default=0)
    with _rc():
        fig = Figure(figsize=(11, 5.2))
        ax = fig.add_subplot()
        bottom = [0] * len(records)
        stack = []
        for name, colour in classes:
            heights = [r.tokens_by_class.get(name, 0) for r in records]
            stack.append(ax.bar(x, heights, bottom=bottom, width=0.85, color=colour, label=name.replace("_", " "), linewidth=0))
            bottom = [b + h for b, h in zip(bottom, heights)]
        label = f"window ({next(iter(windows)):,})" if len(windows) == 1 else "window (per epoch)"
        for first, last, window in _window_runs(records):
            # Each epoch's plan has its own window: draw it only over that epoch's requests.
            ax.hlines(window, first - 0.5, last + 0.5, color=_WINDOW_COLOUR, linewidth=1.6, label=label)
            label = "_nolegend_"  # matplotlib's marker for "leave out of the legend"
        _draw_changes(ax, records, labelled=True)
        top = max([peak, *windows]) if records else 1
        # Head room above the window line for the change labels, which sit inside the axes.
        ax.set_ylim(0, top * 1.45 or 1)
        if records:
            ax.set_xlim(min(x) - 0.7, max(x) + 0.7)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.set_title(title, loc="left", fontsize=12)
        ax.set_xlabel("Request index")
        ax.set_ylabel("Tokens (estimated)")
        ax.grid(axis="y", color="#e5e5e5", linewidth=0.6)
        ax.set_axisbelow(True)
        handles, labels = ax.get_legend_handles_labels()
        lines = [(h, label) for h, label in zip(handles, labels) if all(h is not b for b in stack)]
        # Lines first, then the classes top-down so that the legend reads like the stack.
        entries = lines + [(b, b.get_label()) for b in reversed(stack)]
        # matplotlib's stubs type legend handles as Artist; it accepts a bar container too.
        ax.legend(  # type: ignore[call-overload]
            [h for h, _ in entries],
            [label for _, label in entries],
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            frameon=False,
            fontsize=9,
        )
        fig.subplots_adjust(left=0.08, right=0.80, top=0.88, bottom=0.11)
        svg = _svg(fig)
    changes = _change_summary(records)
    description = (
        f"Stacked bars, one per request ({len(records)} requests), showing estimated input tokens by class "
        f"({', '.join(n.replace('_', ' ') for n, _ in classes) or 'none'}). "
        f"Peak request: {peak:,} tokens"
        + (
            f"; window: {next(iter(windows)):,} tokens, drawn as a horizontal line"
            if len(windows) == 1
            else f"; window per epoch: {', '.join(f'{w:,}' for _, _, w in _window_runs(records))} tokens, drawn as horizontal lines"
            if windows
            else ""
        )
        + f". {changes}"
    )
    return Plot(key=key, title=title, description=description, svg=_inline(svg, key=key, title=title, description=description))


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
    for index, kinds in _changes(records):
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
        if labelled:
            text = "+".join(_short(kind, records, index) for kind in kinds)
            ax.annotate(
                text,
                xy=(position, 0.99),
                xycoords=("data", "axes fraction"),
                xytext=(-2, 0),
                textcoords="offset points",
                rotation=90,
                ha="right",
                va="top",
                fontsize=8,
                color="#333333",
                # A white backing keeps the label readable where it crosses the window line.
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 0.6},
            )


def _short(kind: str, records: Sequence[RequestRecord], index: int) -> str:
    if kind != "compacted":
        return {"pruned": "prune", "epoch": "epoch"}[kind]
    triggers = [c.split(":", 1)[1] for r in records if r.request_index == index for c in r.changes if c.startswith("compacted:")]
    # Pressure is the usual trigger; name only the unusual ones (manual, overflow).
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
