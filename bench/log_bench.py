"""Event-log benchmark: append throughput and full-session replay, per backend.

Run from the repository root:

    python bench/log_bench.py            # 100,000-event sessions
    python bench/log_bench.py --quick    # 10,000 events, for a smoke run

Single-event appends are one transaction each (the durable path an agent loop
takes per message); batch appends put 100 events in one transaction; replay
reads and decodes a whole session (hash-checked) into typed events.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
import uuid
from collections.abc import Callable

from rich.console import Console
from rich.table import Table

from contextwright.clock import FixedClock
from contextwright.events import AssistantMessage, ToolCall, ToolResult, UserMessage
from contextwright.log import EventLog, InMemoryEventLog
from contextwright.log.sqlite import SQLiteEventLog

POSTGRES_DSN = os.environ.get("CONTEXTWRIGHT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


def payload(i: int):
    """A realistic mix: user text, assistant tool calls, ~1 kB tool outputs."""
    match i % 3:
        case 0:
            return UserMessage(text=f"Step {i}: run the tests for module {i % 17} and fix what fails.")
        case 1:
            return AssistantMessage(
                text="Running tests.",
                tool_calls=(ToolCall(id=f"c{i}", name="run_tests", arguments={"path": f"tests/m{i % 17}"}),),
            )
        case _:
            return ToolResult(
                call_id=f"c{i - 1}", tool_name="run_tests", output=("tests/test_x.py::test_y PASSED\n" * 32), exit_code=0
            )


def measure(log: EventLog, *, singles: int, total: int, batch: int) -> dict[str, float]:
    """Append ``singles`` one by one, ``total`` in batches, then replay the batch session."""
    single_session = f"single-{uuid.uuid4().hex[:6]}"
    start = time.perf_counter()
    for i in range(singles):
        log.append(single_session, [payload(i)], expected_seq=i)
    single_s = time.perf_counter() - start

    session = f"batch-{uuid.uuid4().hex[:6]}"
    events = [payload(i) for i in range(total)]
    start = time.perf_counter()
    for offset in range(0, total, batch):
        log.append(session, events[offset : offset + batch], expected_seq=offset)
    batch_s = time.perf_counter() - start

    start = time.perf_counter()
    replayed = log.read(session)
    replay_s = time.perf_counter() - start
    assert len(replayed) == total and replayed[-1].seq == total
    return {
        "single_per_s": singles / single_s,
        "single_ms": 1000 * single_s / singles,
        "batch_per_s": total / batch_s,
        "replay_s": replay_s,
        "replay_per_s": total / replay_s,
    }


def backends(tmp: str) -> list[tuple[str, Callable[[], EventLog], Callable[[EventLog], None]]]:
    """(name, open, cleanup) for each backend available here."""
    found: list[tuple[str, Callable[[], EventLog], Callable[[EventLog], None]]] = [
        ("memory (reference)", lambda: InMemoryEventLog(clock=FixedClock(step=0.001)), lambda log: None),
        (
            "SQLite, synchronous=FULL",
            lambda: SQLiteEventLog(os.path.join(tmp, "full.db"), clock=FixedClock(step=0.001)),
            lambda log: None,
        ),
        (
            "SQLite, synchronous=NORMAL",
            lambda: SQLiteEventLog(os.path.join(tmp, "normal.db"), clock=FixedClock(step=0.001), synchronous="NORMAL"),
            lambda log: None,
        ),
    ]
    try:
        from contextwright.log.postgres import PostgresEventLog

        schema = f"cw_bench_{uuid.uuid4().hex[:8]}"
        probe = PostgresEventLog(POSTGRES_DSN, schema=schema)
        probe.close()
        found.append(
            (
                "PostgreSQL",
                lambda: PostgresEventLog(POSTGRES_DSN, schema=schema, clock=FixedClock(step=0.001)),
                lambda log: log.drop_schema(),
            )
        )
    except Exception as exc:  # the table says why PostgreSQL is missing
        Console(stderr=True).print(f"PostgreSQL skipped: {exc}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10,000-event sessions and 300 single appends")
    parser.add_argument("--events", type=int, default=None, help="events in the replayed session (default 100,000)")
    parser.add_argument("--singles", type=int, default=None, help="single-event appends (default 2,000)")
    parser.add_argument("--batch", type=int, default=100, help="events per batch append")
    args = parser.parse_args()
    total = args.events or (10_000 if args.quick else 100_000)
    singles = args.singles or (300 if args.quick else 2_000)

    console = Console(width=150)
    console.print(
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}"
    )
    table = Table(
        "backend",
        "single appends/s",
        "ms per single append",
        f"events/s in batches of {args.batch}",
        f"replay {total:,} events (s)",
        "replayed events/s",
        title=f"Event log: {singles:,} single appends, {total:,} batched events, full replay",
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name, open_log_, cleanup in backends(tmp):
            log = open_log_()
            try:
                with console.status(f"measuring {name}"):
                    r = measure(log, singles=singles, total=total, batch=args.batch)
            finally:
                cleanup(log)
                log.close()
            table.add_row(
                name,
                f"{r['single_per_s']:,.0f}",
                f"{r['single_ms']:.3f}",
                f"{r['batch_per_s']:,.0f}",
                f"{r['replay_s']:.2f}",
                f"{r['replay_per_s']:,.0f}",
            )
    console.print(table)


if __name__ == "__main__":
    main()
