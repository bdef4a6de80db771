"""HTTP service benchmark: latency per endpoint over a real loopback server, as a session grows.

Run from the repository root:

    python bench/service_bench.py            # 80 agent turns on SQLite and PostgreSQL
    python bench/service_bench.py --quick    # 30 turns, SQLite only

Each turn is what an agent loop sends: a user message, the next request, the provider's
raw response (usage included), a tool result, the next request, the final response. Every
HTTP request opens its session from the store (no worker state), so the table shows what
that costs early in a session and late in it.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
import uuid
from collections import defaultdict

from rich.console import Console
from rich.table import Table

from contextwright import models
from contextwright.client import Client
from contextwright.events import AssistantMessage, ToolCall
from contextwright.runtime import AgentSpec, Tool
from contextwright.service import ServiceConfig, create_app
from contextwright.service.limits import RateLimit
from contextwright.testing.provider import ScriptedProvider
from contextwright.testing.service import serving

POSTGRES_DSN = os.environ.get("CONTEXTWRIGHT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
AGENT = AgentSpec(
    policy="You are a careful coding agent.",
    tools=[Tool("run_tests", "Run the test suite", {"type": "object", "properties": {"path": {"type": "string"}}})],
)
OUTPUT = "tests/test_x.py::test_y PASSED\n" * 40 + "40 passed in 1.2s"


def run(store: str, turns: int) -> tuple[dict[str, dict[str, list[float]]], int]:
    """Drive ``turns`` agent turns through the client; return latencies (ms) by phase and endpoint, and the events."""
    app = create_app(ServiceConfig(store=store, rate_limit=RateLimit(per_second=1e6, burst=10**6)))
    _, key = app.state.store.create_key("bench")
    timings: dict[str, dict[str, list[float]]] = {"early": defaultdict(list), "late": defaultdict(list)}
    provider = ScriptedProvider()
    with serving(app) as url, Client(url, key) as client:
        session = client.session(f"bench-{uuid.uuid4().hex[:6]}", agent=AGENT, model=models.anthropic("claude-sonnet-4-6"))

        def timed(phase: str, name: str, call, *args, **kwargs):  # type: ignore[no-untyped-def]
            start = time.perf_counter()
            result = call(*args, **kwargs)
            timings[phase][name].append((time.perf_counter() - start) * 1000)
            return result

        for turn in range(turns):
            phase = "early" if turn < turns // 4 else "late" if turn >= turns - turns // 4 else "middle"
            timings.setdefault(phase, defaultdict(list))
            provider.push(
                AssistantMessage(
                    text="Running.", tool_calls=(ToolCall(id=f"c{turn}", name="run_tests", arguments={"path": "tests"}),)
                )
            )
            provider.push(AssistantMessage(text=f"Turn {turn} done: all tests pass."))
            timed(phase, "POST messages", session.user, f"Turn {turn}: run the tests for module {turn % 17} and report.")
            request = timed(phase, "POST requests (build)", session.next_request)
            timed(phase, "POST responses", session.record, provider.create(**request.body()))
            timed(phase, "POST tool-results", session.tool_result, f"c{turn}", OUTPUT, exit_code=0)
            request = timed(phase, "POST requests (build)", session.next_request)
            timed(phase, "POST responses", session.record, provider.create(**request.body()))
        timed("late", "GET stats", session.stats)
        timed("late", "GET series", session.series)
        timed("late", "GET requests/N (inspect)", session.inspect, 2 * turns - 1)
        events = session.history.last_seq
    app.state.store.close()
    return timings, events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30 turns, SQLite only")
    args = parser.parse_args()
    turns = 30 if args.quick else 80
    console = Console()
    console.print(f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; {turns} turns per backend")
    backends = [("SQLite", lambda d: f"sqlite:///{d}/bench.db")]
    if not args.quick:
        backends.append(("PostgreSQL", lambda d: f"{POSTGRES_DSN}?schema=cw_bench_{uuid.uuid4().hex[:8]}"))
    table = Table(
        "backend",
        "endpoint",
        "first quarter p50 ms",
        "first quarter p95 ms",
        "last quarter p50 ms",
        "last quarter p95 ms",
        title="Service latency on loopback",
    )
    for name, store_for in backends:
        with tempfile.TemporaryDirectory() as tmp:
            store = store_for(tmp)
            started = time.perf_counter()
            timings, events = run(store, turns)
            elapsed = time.perf_counter() - started
            if name == "PostgreSQL":
                import psycopg

                with psycopg.connect(POSTGRES_DSN, autocommit=True) as conn:
                    conn.execute(f"DROP SCHEMA IF EXISTS {store.split('schema=')[1]} CASCADE")
        for endpoint in sorted({*timings["early"], *timings["late"]}):
            early, late = timings["early"].get(endpoint, []), timings["late"].get(endpoint, [])
            cells = []
            for values in (early, late):
                if values:
                    cells += [f"{statistics.median(values):.1f}", f"{_p95(values):.1f}"]
                else:
                    cells += ["", ""]
            table.add_row(name, endpoint, *cells)
        console.print(f"{name}: {events:,} events in {elapsed:.1f} s")
    console.print(table)


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


if __name__ == "__main__":
    main()
