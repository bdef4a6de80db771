"""Pressure benchmark: replay every shared transcript at several window sizes.

Run from the repository root:

    python bench/pressure_bench.py            # 32k, 64k and 200k windows
    python bench/pressure_bench.py --quick    # 32k only

For each window and transcript format the table shows: transcripts, model
requests built, requests that could not fit the window (target 0), whether the
task statement and each constraint stated in it were visible in every request
after the task was stated (target 100%), tokens sent (sum of request sizes),
compactions and pruning passes.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections import defaultdict

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from contextwright.budget.allocator import allocate
from contextwright.clock import FixedClock
from contextwright.importers import load_transcripts
from contextwright.models import anthropic, with_window
from contextwright.replay import constraints_in, replay, visible_in
from contextwright.runtime.engine import Engine
from contextwright.testing.corpus import corpus_path, missing_reason
from contextwright.testing.fakes import TEST_SECRET


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="32k window only")
    parser.add_argument("--windows", default="32000,64000,200000", help="comma-separated window sizes")
    args = parser.parse_args()
    traces = corpus_path("traces")
    if traces is None:
        raise SystemExit(missing_reason("traces"))
    windows = [32_000] if args.quick else [int(w) for w in args.windows.split(",")]
    files = sorted(p for p in traces.rglob("*") if p.is_file() and p.name not in ("README.md", "manifest.jsonl"))
    transcripts = [t for path in files for t in load_transcripts([path])]
    console = Console(width=160)
    console.print(
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}"
    )
    table = Table(
        "window",
        "format",
        "transcripts",
        "requests",
        "over window",
        "task visible",
        "constraints visible",
        "tokens sent",
        "compactions",
        "prune passes",
        title="Replaying the shared transcripts under pressure",
    )
    with Progress(console=console, transient=True) as progress:
        for window in windows:
            rows: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
            task = progress.add_task(f"{window:,}-token window", total=len(transcripts))
            for transcript in transcripts:
                row = rows[transcript.format]
                engine = Engine.open("memory://", clock=FixedClock(step=1), secret=TEST_SECRET)
                result = replay(transcript, engine=engine, model=with_window(anthropic("claude-sonnet-4-6"), window))
                events = result.session.history.events
                stated = next(
                    (
                        e.seq
                        for e in events
                        if e.type == "message.user" and transcript.task and e.payload.text.strip() == transcript.task.strip()
                    ),
                    None,
                )
                constraints = constraints_in(transcript.task)
                row["transcripts"] += 1
                row["over"] += result.overflows
                for built in result.requests:
                    row["requests"] += 1
                    allocation = allocate(built.plan)
                    row["tokens"] += built.result.total_tokens
                    if built.plan.prefix_token_total + allocation.with_margin(built.result.body_tokens) > allocation.input_limit:
                        row["over"] += 1
                    if stated is not None and built.result.upto_seq >= stated:
                        row["task_checks"] += 1
                        row["task_seen"] += visible_in(built.neutral, transcript.task)
                        row["constraint_checks"] += len(constraints)
                        row["constraint_seen"] += sum(visible_in(built.neutral, c) for c in constraints)
                row["compactions"] += sum(1 for e in events if e.type == "context.compacted")
                row["prunes"] += sum(1 for e in events if e.type == "context.pruned")
                engine.close()
                progress.advance(task)
            for name, row in sorted(rows.items()):
                table.add_row(
                    f"{window:,}",
                    name,
                    f"{row['transcripts']:.0f}",
                    f"{row['requests']:,.0f}",
                    f"{row['over']:.0f}",
                    _share(row["task_seen"], row["task_checks"]),
                    _share(row["constraint_seen"], row["constraint_checks"]),
                    f"{row['tokens']:,.0f}",
                    f"{row['compactions']:.0f}",
                    f"{row['prunes']:.0f}",
                )
            table.add_section()
    console.print(table)


def _share(seen: float, checks: float) -> str:
    return "n/a" if not checks else f"{100 * seen / checks:.1f}% ({seen:,.0f}/{checks:,.0f})"


if __name__ == "__main__":
    main()
