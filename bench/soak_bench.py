"""Soak run: thousands of turns through the public API on SQLite, with large outputs, failures and restarts.

Run from the repository root:

    python bench/soak_bench.py                 # 2,000 turns, outputs up to 5 MB; writes docs/benchmarks.md
    python bench/soak_bench.py --quick         # 60 turns, outputs up to 1 MB, no docs
    python bench/soak_bench.py --turns 500 --max-output-mb 2

Every turn: a user message, a request, a model answer with one or two tool calls, their
outputs (random sizes from 0 to the maximum, most of them small; some fail with exit code
1), another request and a closing answer. At random moments the process "restarts": the
engine is closed and the session reopened from the store, sometimes with tool calls still
pending (a crash between the call and its result). The run reports the peak resident
memory, the time per turn (wall clock and the process's CPU time) in ten windows (it must stay flat as the log grows), what went
wrong, and ends with ``verify`` over the whole store.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parent))
import argparse
import os
import platform
import random
import resource
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field

from _docs import update_section
from rich.console import Console
from rich.table import Table

from contextwright.clock import FixedClock
from contextwright.errors import ContextwrightError
from contextwright.events import AssistantMessage, ToolCall
from contextwright.runtime.engine import Engine
from contextwright.runtime.session import Session
from contextwright.testing.fakes import TEST_SECRET, sample_agent, sample_model

LINE = "tests/test_mod_{m}.py::test_case_{i} {status} [{p:3d}%]\n"


@dataclass(kw_only=True, slots=True)
class Soak:
    """What a soak run measured."""

    turn_seconds: list[float] = field(default_factory=list)
    """Wall-clock time of each turn."""
    turn_cpu: list[float] = field(default_factory=list)
    """CPU time of each turn (the process's own work, whatever else the machine runs)."""
    rss_mb: list[float] = field(default_factory=list)
    """Resident memory after each turn."""
    restarts: int = 0
    crashes_with_pending_calls: int = 0
    failed_outputs: int = 0
    output_bytes: int = 0
    largest_output: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    sessions: int = 1


def tool_output(rng: random.Random, max_bytes: int, *, failing: bool, turn: int) -> str:
    """A pytest-like log: most outputs small, a few near ``max_bytes`` (size = max × u⁶)."""
    size = int(max_bytes * rng.random() ** 6)
    block = "".join(LINE.format(m=i % 97, i=i, status="PASSED", p=i % 100) for i in range(turn % 50, turn % 50 + 400))
    text = (block * (size // len(block) + 1))[:size]
    if failing:
        cut = text.rfind("\n", 0, len(text) // 2) + 1
        text = text[:cut] + f"tests/test_pay.py::test_turn_{turn} FAILED - AssertionError\n" + text[cut:]
    return text


def soak(*, turns: int, max_bytes: int, seed: int, url: str, window: int) -> tuple[Soak, Engine]:
    """Run the soak and return its figures and the (open) engine."""
    rng = random.Random(seed)
    clock = FixedClock("2026-03-01T09:00:00Z")
    result = Soak()
    session_id = "soak-1"

    def open_engine() -> tuple[Engine, Session]:
        engine = Engine.open(url, clock=clock, secret=TEST_SECRET)
        return engine, engine.session(session_id, agent=sample_agent(), model=sample_model(window))

    engine, session = open_engine()
    for turn in range(turns):
        start, start_cpu = time.perf_counter(), time.process_time()
        clock.advance(37)
        try:
            if not session.pending_tool_calls():
                session.user(f"Turn {turn}: run the checks for module {turn % 17} and fix what fails.")
                session.next_request()
                calls = tuple(
                    ToolCall(id=f"t{turn}-{k}", name=rng.choice(["run_tests", "build", "grep"]), arguments={"turn": turn})
                    for k in range(rng.choice([1, 1, 2]))
                )
                session.record_assistant(AssistantMessage(text=f"Checking module {turn % 17}.", tool_calls=calls))
                if rng.random() < 0.02:
                    # A crash between the model's call and the tool's result: the calls stay pending.
                    result.crashes_with_pending_calls += 1
                    engine.close()
                    engine, session = open_engine()
            for call in session.pending_tool_calls():
                failing = rng.random() < 0.15
                output = tool_output(rng, max_bytes, failing=failing, turn=turn)
                result.failed_outputs += failing
                result.output_bytes += len(output)
                result.largest_output = max(result.largest_output, len(output))
                session.tool_result(call.id, output, exit_code=1 if failing else 0)
            session.next_request()
            session.record_assistant(AssistantMessage(text=f"Module {turn % 17} is done."))
        except ContextwrightError as exc:
            # Recorded, not hidden: a session that cannot go on continues as a new one.
            result.errors[type(exc).__name__] += 1
            result.sessions += 1
            session_id = f"soak-{result.sessions}"
            engine.close()
            engine, session = open_engine()
        if rng.random() < 0.01:
            result.restarts += 1
            engine.close()
            engine, session = open_engine()
        result.turn_seconds.append(time.perf_counter() - start)
        result.turn_cpu.append(time.process_time() - start_cpu)
        result.rss_mb.append(rss_mb())
    return result, engine


def rss_mb() -> float:
    """The process's resident memory now (Linux), in MB; 0 where /proc is absent."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def windows(seconds: list[float], count: int = 10) -> list[float]:
    """Medians over ``count`` consecutive windows of the run."""
    size = max(1, len(seconds) // count)
    return [statistics.median(seconds[i : i + size]) for i in range(0, size * count, size) if seconds[i : i + size]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="60 turns, outputs up to 1 MB, and do not write the docs")
    parser.add_argument("--turns", type=int, default=None)
    parser.add_argument("--max-output-mb", type=float, default=None)
    parser.add_argument("--window", type=int, default=200_000, help="context window in tokens")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--no-docs", action="store_true")
    args = parser.parse_args()
    turns = args.turns or (60 if args.quick else 2000)
    max_mb = args.max_output_mb or (1.0 if args.quick else 5.0)
    folder = tempfile.mkdtemp(prefix="cw-soak-")
    url = f"sqlite:///{folder}/soak.db"
    start = time.perf_counter()
    result, engine = soak(turns=turns, max_bytes=int(max_mb * 1_000_000), seed=args.seed, url=url, window=args.window)
    elapsed = time.perf_counter() - start
    report = engine.log.verify()
    engine.close()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    medians = windows(result.turn_seconds)
    cpu = windows(result.turn_cpu)
    memory = windows(result.rss_mb)
    growth = medians[-1] / medians[0] if medians and medians[0] > 0 else float("nan")
    cpu_growth = cpu[-1] / cpu[0] if cpu and cpu[0] > 0 else float("nan")
    store_mb = sum(f.stat().st_size for f in _Path(folder).iterdir()) / 1e6

    console = Console()
    table = Table(
        "window",
        "median ms per turn",
        "median CPU ms per turn",
        "median RSS (MB)",
        title=f"Soak: {turns:,} turns, outputs up to {max_mb:g} MB",
    )
    for index, (median, median_cpu, rss) in enumerate(zip(medians, cpu, memory), start=1):
        table.add_row(str(index), f"{median * 1000:.0f}", f"{median_cpu * 1000:.0f}", f"{rss:.0f}")
    console.print(table)
    summary = [
        ("turns", f"{turns:,} in {elapsed:.0f} s"),
        ("peak RSS", f"{peak_mb:.0f} MB"),
        ("last window ÷ first window", f"{growth:.2f} (CPU time: {cpu_growth:.2f})"),
        ("tool output", f"{result.output_bytes / 1e6:,.0f} MB in all, largest {result.largest_output / 1e6:.1f} MB"),
        ("failed outputs", f"{result.failed_outputs:,}"),
        ("restarts / crashes with calls pending", f"{result.restarts} / {result.crashes_with_pending_calls}"),
        ("errors", ", ".join(f"{k} × {v}" for k, v in result.errors.items()) or "none"),
        ("store", f"{store_mb:,.0f} MB, {report.events:,} events, {report.artifacts:,} artifacts"),
        ("verify", "clean" if report.ok else f"{len(report.problems)} problems: {report.problems[:3]}"),
    ]
    for name, value in summary:
        console.print(f"{name}: {value}")
    if not (args.quick or args.no_docs):
        machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}"
        command = (
            "python bench/soak_bench.py"
            + (f" --turns {turns}" if args.turns else "")
            + (f" --max-output-mb {max_mb:g}" if args.max_output_mb else "")
        )
        lines = [
            f"Machine: {machine}. Command: `{command}`.",
            "",
            "Turns through the public API on one SQLite store, with random tool outputs (most small, some near "
            "the maximum), 15% failing outputs, restarts (the session reopened from the store) and crashes with "
            "tool calls pending.",
            "",
            "| window of the run | " + " | ".join(str(i) for i in range(1, len(medians) + 1)) + " |",
            "|---|" + "---:|" * len(medians),
            "| median ms per turn | " + " | ".join(f"{m * 1000:.0f}" for m in medians) + " |",
            "| median CPU ms per turn | " + " | ".join(f"{m * 1000:.0f}" for m in cpu) + " |",
            "| median RSS (MB) | " + " | ".join(f"{m:.0f}" for m in memory) + " |",
            "",
            *(f"- {name}: {value}" for name, value in summary),
        ]
        if growth > 1.5:
            lines += [
                "",
                f"Time per turn is not flat (the last window takes {growth:.2f}× the first). The times are wall-clock: "
                "on a machine shared with other jobs they also follow the load; profile a late turn to tell the two apart.",
            ]
        update_section("soak-bench", "## Soak run (`bench/soak_bench.py`)\n\n" + "\n".join(lines))
    return 0 if report.ok else 1


if __name__ == "__main__":
    _sys.exit(main())
