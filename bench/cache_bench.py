"""Cache benchmark: Contextwright against common context strategies on the shared transcripts.

Run from the repository root:

    python bench/cache_bench.py                        # every transcript, 32k and 200k windows
    python bench/cache_bench.py --quick                # two transcripts per format
    python bench/cache_bench.py --windows 32000,200000 --markdown
    python bench/cache_bench.py --counting heuristic   # the engine's estimator instead of o200k
    python bench/cache_bench.py --cache-rules-on 2026-11-30   # one date's cache rules for every request
    python bench/cache_bench.py --cache-rules lenient  # no minimum cacheable length, no expiry (issue 15's figures)
    python bench/cache_bench.py --cache-rules no_minimum   # documented less one rule (also: no_expiry)
    python bench/cache_bench.py --engine-budget tool_results_share=0.99 --reconcile-margin 0   # a what-if engine row

Every transcript is replayed by every strategy of :mod:`contextwright.compare` in
the same run, on the Anthropic wire (claude-sonnet-4-6) through the offline cache
simulator. Per window and strategy the table shows: transcripts, requests, the
token-weighted cache-read share, the input cost relative to the append-only
ceiling (and in USD), the peak request, overflows (input over the window minus the
output reserve) and how often the task statement was visible after it was stated;
then the same per transcript format.

The simulator applies the minimum cacheable length in effect on each request's own
date by default (``--cache-rules-on request``): the shared transcripts predate
2026-05-13, so Sonnet 4.6's older 2,048-token minimum applies. ``--cache-rules-on DATE``
applies that date's rules to every request instead: the replay sends old logs to a
current model at today's list prices, and the rules of the same day go with those
prices (the simulator's docstring gives the research behind both readings). The output
names the choice.

``--cache-rules lenient`` runs the simulator without a minimum cacheable length and
without expiry (:mod:`contextwright.compare.cache_rules`). Those are not the provider's
rules; they are the ones under which our append-only ceiling reads what an outside
measurement reports for its own (93.4% at 200k), and a sliding window of the form that
measurement likely used comes close to its 32k figures (``bench/sliding_forms.py``), so a
run with them shows where each strategy likely stands in that measurement. The lookback, the breakpoints and what is billed as a write are unchanged:
an unlimited lookback moved no figure.

Every strategy, Contextwright included, is counted by one counter: exact o200k
counts by default (``--counting heuristic`` for the engine's estimator). The output
names it. The engine runs as in a live loop: each request's input total, counted by
that counter, is reported back to its session as the provider's usage, so its
estimates are reconciled from the second response on (``compare.counted_usage``).

``--engine-budget NAME=VALUE`` (repeatable) and ``--reconcile-margin X`` change what the
engine row runs with (:class:`contextwright.compare.EngineSettings`): a what-if run, not
the engine as it ships. The output says so; the baselines are unchanged.

Acceptance targets checked at the end:

* at 200k, Contextwright's input cost is at most 1.03x the append-only ceiling's and
  its cache-read share at least 0.93;
* at 32k, Contextwright has no overflow, a cache-read share of at least 0.90, costs no
  more input than the sliding window, and the task is visible in every request.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from contextwright.compare import (
    CACHE_RULES,
    CEILING,
    COUNTINGS,
    STRATEGIES,
    CacheRules,
    EngineSettings,
    StrategyResult,
    TokenCounter,
    aggregate,
    cache_rules_named,
    compare_windows,
)
from contextwright.errors import UsageError
from contextwright.importers import load_transcripts
from contextwright.importers.model import Transcript
from contextwright.testing.corpus import corpus_path, missing_reason

COST_OF_CEILING_200K = 1.03
SHARE_200K = 0.93
SHARE_32K = 0.90


def main() -> None:
    parser = run_parser(__doc__)
    parser.add_argument("--markdown", action="store_true", help="also print the results as a markdown table")
    parser.add_argument(
        "--counting", choices=COUNTINGS, default="o200k", help="token counter for every strategy (default: exact o200k)"
    )
    args = parser.parse_args()
    run = load_run(parser, args)
    cache_rules, engine, windows, transcripts = run.rules, run.engine, run.windows, run.transcripts
    console = Console(width=170)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    counter = TokenCounter(counting=args.counting)
    rules = describe_rules(args.cache_rules, args.cache_rules_on)
    console.print(
        f"{machine}, {time.strftime('%Y-%m-%d')}, {len(transcripts)} transcripts, tokens counted with {args.counting}, {rules}"
    )
    if not engine.default:
        console.print(f"[bold]What-if run[/]: the engine row runs with {engine.describe()}")

    per_window: dict[int, list[tuple[StrategyResult, ...]]] = defaultdict(list)
    per_format: dict[tuple[int, str], list[tuple[StrategyResult, ...]]] = defaultdict(list)
    started = time.perf_counter()
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("Replaying transcripts through every strategy", total=len(transcripts))
        for kind, transcript in transcripts:
            for window, results in compare_windows(
                transcript, windows=windows, counter=counter, cache_rules=cache_rules, engine=engine
            ).items():
                per_window[window].append(results)
                per_format[window, kind].append(results)
            progress.advance(task)
    elapsed = time.perf_counter() - started

    rows = {window: aggregate(per_window[window]) for window in windows}
    console.print(
        _table(
            rows,
            title=f"Prompt-cache behaviour per strategy (Anthropic wire, offline simulator, {args.counting} counts, {args.cache_rules} cache rules)",
        )
    )
    console.print(f"Replayed in {elapsed:.0f} s.")
    for line in _targets(rows, what_if=not engine.default):
        console.print(line)
    by_format = {key: aggregate(results) for key, results in sorted(per_format.items())}
    console.print(
        _format_table(by_format, title=f"Per transcript format ({args.counting} counts, {args.cache_rules} cache rules)")
    )
    if args.markdown:
        console.print(_markdown(rows), markup=False, highlight=False, soft_wrap=True)
        console.print(_format_markdown(by_format), markup=False, highlight=False, soft_wrap=True)


def _table(rows: dict[int, list[StrategyResult]], *, title: str) -> Table:
    table = Table(
        "window",
        "strategy",
        "transcripts",
        "requests",
        "cache-read share",
        "input cost vs ceiling",
        "input cost (USD)",
        "peak request",
        "overflows",
        "task visible",
        title=title,
    )
    for window, window_rows in rows.items():
        for row in window_rows:
            table.add_row(
                f"{window:,}",
                row.name,
                str(row.transcripts),
                f"{row.requests:,}",
                f"{row.cache_read_share:.1%}",
                _ratio(row.relative_input_cost),
                f"{row.input_cost:,.2f}",
                f"{row.peak_request_tokens:,}",
                f"{row.overflows:,}",
                _task(row),
            )
        table.add_section()
    return table


def _format_table(by_format: dict[tuple[int, str], list[StrategyResult]], *, title: str) -> Table:
    """Contextwright against the ceiling and the sliding window, per window and transcript format."""
    table = Table(
        "window", "format", "transcripts", "requests", *(f"{n} {m}" for n in _FORMAT_NAMES for m in _FORMAT_MEASURES), title=title
    )
    for (window, kind), rows in by_format.items():
        table.add_row(f"{window:,}", kind, *_format_cells(rows))
    return table


_FORMAT_NAMES = ("contextwright", "sliding_window", CEILING)
_FORMAT_MEASURES = ("share", "cost")


def _format_cells(rows: list[StrategyResult]) -> list[str]:
    by_name = {r.name: r for r in rows}
    cw = by_name["contextwright"]
    cells = [str(cw.transcripts), f"{cw.requests:,}"]
    for name in _FORMAT_NAMES:
        row = by_name[name]
        cells += [f"{row.cache_read_share:.1%}", _ratio(row.relative_input_cost)]
    return cells


def _format_markdown(by_format: dict[tuple[int, str], list[StrategyResult]]) -> str:
    heads = [f"{n} {m}" for n in _FORMAT_NAMES for m in _FORMAT_MEASURES]
    out = [
        "| window | format | transcripts | requests | " + " | ".join(heads) + " |",
        "|---:|---|---:|---:|" + "---:|" * len(heads),
    ]
    for (window, kind), rows in by_format.items():
        out.append(f"| {window:,} | {kind} | " + " | ".join(_format_cells(rows)) + " |")
    return "\n".join(out)


def cache_rules_date(text: str) -> date | None:
    """``--cache-rules-on``: None for each request's own date, else the date given."""
    return None if text == "request" else date.fromisoformat(text)


def describe_rules(name: str, rules_on: date | None) -> str:
    """How the output names the cache rules of a run."""
    if name == "lenient":
        return "lenient cache rules (no minimum cacheable length, no expiry)"
    if name == "no_minimum":
        return "documented cache rules without the minimum cacheable length"
    dated = f"documented cache rules of {rules_on}" if rules_on else "documented cache rules of each request's date"
    return f"{dated}, without expiry" if name == "no_expiry" else dated


def load_traces(traces: Path, *, quick: bool) -> list[tuple[str, Transcript]]:
    """Every transcript under ``traces`` with its format folder; ``quick`` keeps two files per format."""
    files = sorted(p for p in traces.rglob("*") if p.is_file() and p.name not in ("README.md", "manifest.jsonl"))
    if quick:
        by_format: dict[str, list[Path]] = defaultdict(list)
        for path in files:
            by_format[path.relative_to(traces).parts[0]].append(path)
        files = [p for paths in by_format.values() for p in paths[:2]]
    return [(path.relative_to(traces).parts[0], t) for path in files for t in load_transcripts([path])]


@dataclass(frozen=True)
class MissRun:
    """What a comparison run reads from its command line: windows, cache rules, corpus, what-if settings."""

    windows: list[int]
    rules: CacheRules
    transcripts: list[tuple[str, Transcript]]
    engine: EngineSettings


def run_parser(description: str | None) -> argparse.ArgumentParser:
    """A parser with the options every comparison run shares: ``--quick``, ``--windows``, the cache rules, what-if settings."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="two transcripts per format instead of all")
    parser.add_argument("--windows", default="32000,200000", help="comma-separated window sizes")
    parser.add_argument(
        "--cache-rules-on",
        default="request",
        type=cache_rules_date,
        help="cache rules of each request's own date ('request', the default) or of one YYYY-MM-DD date for all",
    )
    parser.add_argument(
        "--cache-rules",
        choices=CACHE_RULES,
        default="documented",
        help="the provider's documented rules (default), 'lenient' (no minimum cacheable length, no expiry), or one of the two dropped",
    )
    parser.add_argument(
        "--engine-budget",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="change one of the engine's budgets for a what-if run (repeatable), e.g. tool_results_share=0.5",
    )
    parser.add_argument(
        "--reconcile-margin", type=float, default=None, help="the reconciler's smallest log-margin for a what-if run"
    )
    return parser


def load_run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> MissRun:
    """The rules, the what-if settings, the windows and the corpus :func:`run_parser`'s options name."""
    try:
        rules = cache_rules_named(args.cache_rules, rules_on=args.cache_rules_on)
        engine = EngineSettings.parse(args.engine_budget, reconcile_margin=args.reconcile_margin)
    except UsageError as exc:
        parser.error(str(exc))
    traces = corpus_path("traces")
    if traces is None:
        raise SystemExit(f"skipped: {missing_reason('traces')}")
    windows = [int(w) for w in args.windows.split(",")]
    return MissRun(windows=windows, rules=rules, transcripts=load_traces(traces, quick=args.quick), engine=engine)


def miss_run(description: str | None) -> MissRun:
    """Parse :func:`run_parser`'s options for a miss breakdown and load the corpus."""
    parser = run_parser(description)
    run = load_run(parser, parser.parse_args())
    if not run.engine.default:
        print(f"What-if run: the engine row runs with {run.engine.describe()}")
    return run


def _targets(rows: dict[int, list[StrategyResult]], *, what_if: bool = False) -> list[str]:
    lines = ["Acceptance targets (a what-if engine row, not the engine as it ships):" if what_if else "Acceptance targets:"]
    if 200_000 in rows:
        by_name = {r.name: r for r in rows[200_000]}
        cw = by_name["contextwright"]
        cost = cw.relative_input_cost or 0.0
        lines.append(
            f"  200k: input cost {cost:.3f}x the ceiling (target <= {COST_OF_CEILING_200K}): "
            f"{_verdict(cost <= COST_OF_CEILING_200K)}"
        )
        lines.append(
            f"  200k: cache-read share {cw.cache_read_share:.2%} (target >= {SHARE_200K:.0%}): "
            f"{_verdict(cw.cache_read_share >= SHARE_200K)}"
        )
    if 32_000 in rows:
        by_name = {r.name: r for r in rows[32_000]}
        cw, sliding = by_name["contextwright"], by_name["sliding_window"]
        lines.append(f"  32k: overflows {cw.overflows} (target 0): {_verdict(cw.overflows == 0)}")
        lines.append(
            f"  32k: cache-read share {cw.cache_read_share:.2%} (target >= {SHARE_32K:.0%}): "
            f"{_verdict(cw.cache_read_share >= SHARE_32K)}"
        )
        lines.append(
            f"  32k: input cost ${cw.input_cost:,.2f} vs sliding window ${sliding.input_cost:,.2f} "
            f"(target <=): {_verdict(cw.input_cost <= sliding.input_cost)}"
        )
        lines.append(f"  32k: task visible {_task(cw)} (target 100%): {_verdict(cw.task_visible in (None, 1.0))}")
    if len(lines) == 1:
        lines.append("  (run with the 32000 and 200000 windows to check them)")
    return lines


def _markdown(rows: dict[int, list[StrategyResult]]) -> str:
    out = [
        "| window | strategy | requests | cache-read share | input cost vs ceiling | input cost (USD) | peak request | overflows | task visible |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for window, window_rows in rows.items():
        for r in sorted(window_rows, key=lambda r: STRATEGIES.index(r.name)):
            out.append(
                f"| {window:,} | {r.name} | {r.requests:,} | {r.cache_read_share:.1%} | {_ratio(r.relative_input_cost)} | "
                f"{r.input_cost:,.2f} | {r.peak_request_tokens:,} | {r.overflows:,} | {_task(r)} |"
            )
    return "\n".join(out)


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def _task(row: StrategyResult) -> str:
    return "n/a" if row.task_visible is None else f"{row.task_visible:.1%}"


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


if __name__ == "__main__":
    main()
