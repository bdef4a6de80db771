"""Request building through the public API, against the floor of serialising the same body.

Run from the repository root:

    python bench/build_bench.py                  # 10 to 20,000 messages, and a 1,000-turn session
    python bench/build_bench.py --quick          # 10 to 1,000 messages, and a 200-turn session
    python bench/build_bench.py --sizes 1000,5000 --turns 300
    python bench/build_bench.py --quick --pasted # the same with a pasted log shown bounded early on

Steady state: a generated coding session (user messages, answers with parallel tool
calls and their outputs) is loaded into an in-memory log and opened; then each measured
turn records an answer and a user message and times what an agent loop pays per model
call, ``session.next_request()`` followed by ``.anthropic()``, in CPU time. The floor is
``json.dumps(body, sort_keys=True)`` of the same final body, timed in the same process:
no builder can be cheaper than writing its output once. Times are medians over the
measured turns. The window is large enough that nothing is relieved (sessions past
1M tokens get a larger window), so the body grows with the history.

Whole session: a session driven turn by turn from empty (user message, request, an
answer with a tool call, its output, request, closing answer), summing the time of
every request in each quarter of the run. Work proportional to what each turn adds
keeps the quarters equal (total cost linear in turns); work proportional to the history
makes each quarter cost more than the one before (total cost quadratic).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from typing import Any

from rich.console import Console
from rich.table import Table

from contextwright.clock import FixedClock
from contextwright.events import AssistantMessage, FrameRecorded, ToolCall, ToolResult, UserMessage
from contextwright.models import anthropic
from contextwright.runtime.engine import Engine
from contextwright.runtime.session import Session
from contextwright.testing.fakes import TEST_SECRET, sample_agent

MODEL = "claude-sonnet-4-6"


def open_engine() -> Engine:
    return Engine.open("memory://", clock=FixedClock("2026-03-01T09:00:00Z", step=1), secret=TEST_SECRET)


def pasted_log(chars: int) -> str:
    """A pasted build log of about ``chars`` characters: over the item cap, so every request shows it bounded."""
    line = "a line of the pasted build log, numbered {n}, with enough words to be a long one\n"
    return "Here is the whole build log:\n" + "".join(line.format(n=n) for n in range(chars // len(line) + 1))


def history(messages: int, *, pasted: int = 0) -> list[Any]:
    """Events of a coding session with about ``messages`` model-visible messages, ending with a user message.

    ``pasted``: the second turn's ask carries a pasted log of that many characters (0: none)."""
    payloads: list[Any] = []
    turn = 0
    # Each turn is four messages: the ask, the answer with its calls, the outputs, the closing answer.
    while turn * 4 < messages - 1:
        seq = len(payloads) + 1
        ask = f"Turn {turn}: run the billing tests and fix what fails in module {turn % 7}."
        payloads.append(UserMessage(text=ask + "\n" + pasted_log(pasted) if pasted and turn == 1 else ask))
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
    return payloads


def open_session(engine: Engine, name: str, window: int) -> Session:
    model = anthropic(MODEL, context_window=window) if window > 1_000_000 else anthropic(MODEL)
    return engine.session(name, agent=sample_agent(), model=model)


def cpu(call: Any) -> tuple[Any, float]:
    start = time.process_time()
    value = call()
    return value, time.process_time() - start


def request_and_render(session: Session) -> tuple[dict[str, Any], float]:
    """One model call's worth of engine work: build the next request and render the Anthropic body (CPU seconds)."""
    return cpu(lambda: session.next_request().anthropic())


def steady_state(messages: int, turns: int, *, pasted: bool = False) -> dict[str, Any]:
    engine = open_engine()
    window = max(1_000_000, messages * 400)
    session = open_session(engine, f"bench-{messages}", window)
    # Twice the window in characters is over a quarter of the history budget in tokens: shown bounded.
    payloads = history(messages, pasted=2 * window if pasted else 0)
    for start in range(0, len(payloads), 5_000):  # the log takes batches of at most 10,000 events
        session.setup.log.append(session.id, payloads[start : start + 5_000], expected_seq=start)
    body, first = request_and_render(session)  # opening a long session reads and folds it once
    spent, floor = [], []
    for turn in range(turns):
        session.adapter.record_assistant(AssistantMessage(text=f"Done: {turn}."))
        session.user(f"Next step {turn}: check module {turn % 7} again.")
        body, seconds = request_and_render(session)
        text, dumped = cpu(lambda body=body: json.dumps(body, sort_keys=True))
        spent.append(seconds)
        floor.append(dumped)
    engine.close()
    turn_ms, floor_ms = statistics.median(spent) * 1e3, statistics.median(floor) * 1e3
    return {
        "messages": len(body["messages"]),
        "kib": len(text.encode()) / 1024,
        "first_ms": first * 1e3,
        "turn_ms": turn_ms,
        "floor_ms": floor_ms,
    }


def whole_session(turns: int) -> tuple[list[float], list[float]]:
    """CPU seconds of every request of a session driven from empty, turn by turn, and of json.dumps of each body."""
    engine = open_engine()
    session = open_session(engine, "whole", 1_000_000)
    spent: list[float] = []
    floor: list[float] = []

    def request() -> None:
        body, seconds = request_and_render(session)
        spent.append(seconds)
        floor.append(cpu(lambda: json.dumps(body, sort_keys=True))[1])

    for turn in range(turns):
        session.user(f"Turn {turn}: run the billing tests and fix what fails in module {turn % 7}.")
        request()
        call = ToolCall(id=f"w{turn}", name="read_file", arguments={"path": f"src/m{turn % 7}.py"})
        session.adapter.record_assistant(AssistantMessage(text="Reading the module.", tool_calls=(call,)))
        session.tool_result(call.id, f"def f{turn}(x):\n    return x * {turn}\n" * 8)
        request()
        session.adapter.record_assistant(AssistantMessage(text=f"Fixed module {turn % 7}."))
    engine.close()
    return spent, floor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10 to 1,000 messages and a 200-turn session")
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",") if x], help="message counts, comma-separated")
    parser.add_argument("--turns", type=int, help="turns of the whole-session run (default 1,000; 200 with --quick)")
    parser.add_argument("--measured", type=int, default=7, help="measured turns per size")
    parser.add_argument("--pasted", action="store_true", help="steady state with a pasted log shown bounded in every request")
    args = parser.parse_args()
    sizes = args.sizes if args.sizes is not None else ([10, 100, 1_000] if args.quick else [10, 100, 1_000, 5_000, 20_000])
    turns = args.turns if args.turns is not None else (200 if args.quick else 1_000)
    console = Console(width=150)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}"
    console.print(machine)

    header = ("messages", "body KiB", "open + first request (ms)", "turn (ms)", "json.dumps (ms)", "turn ÷ json.dumps")
    title = "next_request() + anthropic(), steady state, CPU time" + (", a pasted log shown bounded" if args.pasted else "")
    table = Table(*header, title=title)
    for size in sizes:
        with console.status(f"{size:,} messages"):
            row = steady_state(size, args.measured, pasted=args.pasted)
        cells = (
            f"{row['messages']:,}",
            f"{row['kib']:,.0f}",
            f"{row['first_ms']:,.1f}",
            f"{row['turn_ms']:,.2f}",
            f"{row['floor_ms']:,.2f}",
            f"{row['turn_ms'] / row['floor_ms']:.1f}×",
        )
        table.add_row(*cells)
    console.print(table)

    if not turns:
        return
    with console.status(f"a {turns:,}-turn session"):
        spent, floor = whole_session(turns)
    quarter = len(spent) // 4
    session_table = Table(
        "",
        "total (s)",
        "Q1 (s)",
        "Q2 (s)",
        "Q3 (s)",
        "Q4 (s)",
        "Q4 ÷ Q1",
        title=f"whole session of {turns:,} turns ({len(spent):,} requests): CPU time by quarter of the run",
    )
    for name, times in (("next_request() + anthropic()", spent), ("json.dumps of the same bodies", floor)):
        sums = [sum(times[i * quarter : (i + 1) * quarter]) for i in range(4)]
        session_table.add_row(name, f"{sum(times):,.2f}", *(f"{s:,.2f}" for s in sums), f"{sums[3] / sums[0]:.2f}")
    console.print(session_table)


if __name__ == "__main__":
    main()
