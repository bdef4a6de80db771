"""Evidence recall against cost: every strategy on the shared transcripts, per window.

Run from the repository root:

    python bench/evidence_bench.py                        # every transcript, 32k and 200k windows
    python bench/evidence_bench.py --quick                # two transcripts per format
    python bench/evidence_bench.py --markdown --plot frontier.html
    python bench/evidence_bench.py --engine-budget tool_results_share=0.5   # a what-if engine row
    python bench/evidence_bench.py --quick --windows 32000 --worst 5        # where the engine misses most

Each transcript goes through every strategy of :mod:`contextwright.compare` (the same
run as ``bench/cache_bench.py``, with its options). Per window and strategy the table
gives the (call, string) pairs the recorded model used, the evidence recall (the rule
is :mod:`contextwright.compare.evidence`'s), the input cost relative to the append-only
ceiling with and without the read-backs a pointer would cost, the cache-read share, the
read-backs, and the misses by cause. A second table gives the engine's and the sliding
window's recall per transcript format. ``--plot`` writes the recall-against-cost figure
(one point per strategy and window) as a small HTML page (needs matplotlib).
"""

from __future__ import annotations

import os
import platform
import time
from collections import defaultdict
from pathlib import Path

from cache_bench import describe_rules, load_run, run_parser

from contextwright.compare import STRATEGIES, StrategyResult, TokenCounter, aggregate, compare_windows
from contextwright.compare.evidence import CAUSES

PER_FORMAT = ("contextwright", "sliding_window", "summarize_at_threshold")


def main() -> None:
    parser = run_parser(__doc__)
    parser.add_argument("--markdown", action="store_true", help="print the tables as markdown")
    parser.add_argument("--plot", type=Path, default=None, help="write the recall-against-cost figure to this HTML file")
    parser.add_argument(
        "--worst", type=int, default=0, metavar="N", help="also list the N transcripts where the engine misses most pairs"
    )
    args = parser.parse_args()
    run = load_run(parser, args)
    counter = TokenCounter(counting="o200k")
    print(
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}, "
        f"{len(run.transcripts)} transcripts, o200k counts, {describe_rules(args.cache_rules, args.cache_rules_on)}"
    )
    if not run.engine.default:
        print(f"What-if run: the engine row runs with {run.engine.describe()}")
    per_window: dict[int, list[tuple[StrategyResult, ...]]] = defaultdict(list)
    per_format: dict[tuple[int, str], list[tuple[StrategyResult, ...]]] = defaultdict(list)
    engine_misses: dict[int, list[tuple[int, str, StrategyResult]]] = defaultdict(list)
    started = time.perf_counter()
    for kind, transcript in run.transcripts:
        for window, results in compare_windows(
            transcript, windows=run.windows, counter=counter, cache_rules=run.rules, engine=run.engine
        ).items():
            per_window[window].append(results)
            per_format[window, kind].append(results)
            engine = next(r for r in results if r.name == "contextwright")
            engine_misses[window].append((engine.evidence.pairs - engine.evidence.seen, transcript.source, engine))
    elapsed = time.perf_counter() - started
    rows = {window: aggregate(per_window[window]) for window in run.windows}
    print(_table(rows, markdown=args.markdown))
    print(f"\nReplayed in {elapsed:.0f} s.\n")
    print(_format_table({key: aggregate(results) for key, results in sorted(per_format.items())}, markdown=args.markdown))
    if args.worst:
        for window in run.windows:
            print(f"\nWhere the engine misses most at {window:,} (missed / pairs, by cause):")
            for missed, source, r in sorted(engine_misses[window], key=lambda m: (-m[0], m[1]))[: args.worst]:
                causes = ", ".join(f"{cause} {n}" for cause, n in r.evidence.misses.items())
                print(f"  {missed} / {r.evidence.pairs}  {Path(source).name}  ({causes or 'none'})")
    if args.plot is not None:
        _write_plot(args.plot, rows)
        print(f"\nFigure: {args.plot}")


def _table(rows: dict[int, list[StrategyResult]], *, markdown: bool) -> str:
    head = ["window", "strategy", "pairs", "evidence recall", "cost vs ceiling", "with read-backs", "cache read", "read-backs"]
    head += [f"missed: {cause}" for cause in CAUSES]
    lines = [head]
    for window, window_rows in rows.items():
        for r in sorted(window_rows, key=lambda r: STRATEGIES.index(r.name)):
            e = r.evidence
            lines.append(
                [
                    f"{window:,}",
                    r.name,
                    f"{e.pairs:,}",
                    _share(e.share),
                    _ratio(r.relative_input_cost),
                    _ratio(r.relative_cost_with_read_backs),
                    f"{r.cache_read_share:.1%}",
                    f"{e.read_backs:,}",
                    *(f"{e.misses.get(cause, 0):,}" for cause in CAUSES),
                ]
            )
    return _render(lines, markdown=markdown)


def _format_table(by_format: dict[tuple[int, str], list[StrategyResult]], *, markdown: bool) -> str:
    lines = [["window", "format", "transcripts", "pairs", *(f"{name} recall" for name in PER_FORMAT)]]
    for (window, kind), rows in by_format.items():
        by_name = {r.name: r for r in rows}
        first = by_name[PER_FORMAT[0]]
        lines.append(
            [
                f"{window:,}",
                kind,
                str(first.transcripts),
                f"{first.evidence.pairs:,}",
                *(_share(by_name[name].evidence.share) for name in PER_FORMAT),
            ]
        )
    return _render(lines, markdown=markdown)


def _write_plot(path: Path, rows: dict[int, list[StrategyResult]]) -> None:
    from html import escape

    from contextwright.report.plots import recall_cost_plot

    points = [
        {
            "strategy": r.name,
            "window": window,
            "relative_input_cost": r.relative_input_cost,
            "evidence_recall": r.evidence.share,
        }
        for window, window_rows in rows.items()
        for r in window_rows
    ]
    plot = recall_cost_plot(points)
    if plot is None:
        raise SystemExit("nothing to plot: no strategy has both a cost and a recall")
    path.write_text(
        f'<!DOCTYPE html><html lang="en"><meta charset="utf-8"><title>{escape(plot.title)}</title>'
        f"<style>svg.plot {{ width: 100%; height: auto; }}</style>{plot.svg}<p>{escape(plot.description)}</p></html>\n",
        encoding="utf-8",
    )


def _render(lines: list[list[str]], *, markdown: bool) -> str:
    if markdown:
        out = ["| " + " | ".join(lines[0]) + " |", "|" + "---|" * len(lines[0])]
        out += ["| " + " | ".join(line) + " |" for line in lines[1:]]
        return "\n".join(out)
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join(
        "  ".join(cell.rjust(w) if i > 1 else cell.ljust(w) for i, (cell, w) in enumerate(zip(line, widths))) for line in lines
    )


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


if __name__ == "__main__":
    main()
