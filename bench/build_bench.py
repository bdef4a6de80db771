"""Builder benchmark: time per build against the floor of serialising the same request.

Run from the repository root:

    python bench/build_bench.py            # sessions of 10, 100, 1,000 and 5,000 events
    python bench/build_bench.py --quick    # 10, 100 and 1,000

Each session is a generated coding session on a 1M-token window (so nothing is
relieved and the request grows with the session). For each size the table shows
the request size, the time of one ``build()`` (best of several; "cold" clears
the envelope cache first, "warm" is the steady state of a running session, where
all but the newest history was rendered before), the time of ``canonical_json``
on the same request (the floor for any builder), their ratios, and the peak
memory of one build.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import tracemalloc

from rich.console import Console
from rich.table import Table

from contextwright.assembly import envelope
from contextwright.assembly.assemble import VolatileTail, build
from contextwright.budget.allocator import allocate
from contextwright.canonical import canonical_json
from contextwright.clock import FixedClock
from contextwright.derive.surface import fold
from contextwright.events import AssistantMessage, FrameRecorded, ToolCall, ToolResult, UserMessage
from contextwright.models import anthropic
from contextwright.runtime.engine import Engine
from contextwright.testing.fakes import TEST_SECRET, sample_agent


def make_session(events: int):
    """A session with about ``events`` events, planned, on an in-memory log."""
    engine = Engine.open("memory://", clock=FixedClock("2026-03-01T09:00:00Z", step=1), secret=TEST_SECRET)
    session = engine.session(f"bench-{events}", agent=sample_agent(), model=anthropic("claude-sonnet-4-6"))
    payloads: list = []
    turn = 0
    while len(payloads) < events - 2:
        seq = len(payloads) + 1
        payloads.append(UserMessage(text=f"Turn {turn}: run the billing tests and fix what fails in module {turn % 7}."))
        payloads.append(
            FrameRecorded(turn_seq=seq, runtime=f"Current date and time: Sunday, 2026-03-01 {9 + turn % 10:02d}:00 UTC.")
        )
        calls = tuple(ToolCall(id=f"c{turn}-{i}", name="read_file", arguments={"path": f"src/m{i}.py"}) for i in range(2))
        payloads.append(AssistantMessage(text="Reading the module.", tool_calls=calls))
        payloads += [
            ToolResult(call_id=c.id, tool_name="read_file", output=f"def f{turn}_{i}(x):\n    return x * {i}\n" * 8)
            for i, c in enumerate(calls)
        ]
        payloads.append(AssistantMessage(text=f"Fixed module {turn % 7}."))
        turn += 1
    payloads.append(UserMessage(text="Summarise what you changed."))
    session.log.append(session.id, payloads, expected_seq=0)
    session._sync()
    session._pin_plan()
    return session


def measure(session, repeats: int):
    plan = session.plan
    inputs = dict(
        plan=plan,
        allocation=allocate(plan),
        surface=fold(session.id, session.events),
        tail=VolatileTail(),
        secret=session.secret,
        estimate=lambda text: session.estimator.estimate(text, model=plan.model.id),
    )
    cold, warm, floor = [], [], []
    for _ in range(repeats):
        envelope.escape.cache_clear()
        session.estimator.clear()
        start = time.perf_counter()
        result = build(**inputs)
        cold.append(time.perf_counter() - start)
        start = time.perf_counter()
        build(**inputs)
        warm.append(time.perf_counter() - start)
        start = time.perf_counter()
        text = canonical_json(result.request.to_dict())
        floor.append(time.perf_counter() - start)
    tracemalloc.start()
    envelope.escape.cache_clear()
    build(**inputs)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, text, min(cold), min(warm), min(floor), peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="skip the 5,000-event session")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    sizes = [10, 100, 1_000] if args.quick else [10, 100, 1_000, 5_000]
    console = Console(width=150)
    console.print(
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}"
    )
    table = Table(
        "events",
        "messages",
        "request KiB",
        "tokens (est.)",
        "build cold (ms)",
        "build warm (ms)",
        "canonical JSON (ms)",
        "cold ÷ JSON",
        "warm ÷ JSON",
        "µs per KiB (cold)",
        "peak memory (MiB)",
        title="build() against serialising the same request",
    )
    for size in sizes:
        with console.status(f"{size:,} events"):
            session = make_session(size)
            result, text, cold, warm, floor, peak = measure(session, args.repeats)
        kib = len(text.encode()) / 1024
        table.add_row(
            f"{size:,}",
            f"{len(result.request.messages):,}",
            f"{kib:,.0f}",
            f"{result.total_tokens:,}",
            f"{cold * 1e3:.2f}",
            f"{warm * 1e3:.2f}",
            f"{floor * 1e3:.2f}",
            f"{cold / floor:.1f}×",
            f"{warm / floor:.1f}×",
            f"{cold * 1e6 / kib:.0f}",
            f"{peak / 2**20:.1f}",
        )
    console.print(table)


if __name__ == "__main__":
    main()
