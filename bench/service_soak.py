"""Service soak: one worker process under steady load on loopback, its resident memory sampled.

Run from the repository root:

    python bench/service_soak.py                     # 180 s, 4 clients, SQLite
    python bench/service_soak.py --seconds 60 --clients 2
    python bench/service_soak.py --store postgresql://postgres@127.0.0.1:5432/test?schema=cw_soak

One worker (``uvicorn`` on 127.0.0.1, as ``contextwright serve`` starts it) serves ``--clients``
threads; each runs agent sessions of ``--turns`` turns (a user message, a request, the raw
provider response with a tool call, the tool's output, a request, the closing response) and
then opens a new session, so the worker meets a steady stream of sessions it has not seen.
Every ``--every`` seconds the worker's resident set (``VmRSS``) is read from ``/proc``.

The table gives, per tenth of the run, the RSS at its end, the sessions opened and the HTTP
requests served so far. The verdict compares the growth over the second half with the first:
memory that levels off grows little in the second half; memory that leaks keeps its slope.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parent))
import argparse
import tempfile
import threading
import time
import uuid

from _soak_stats import fit
from rich.console import Console
from rich.table import Table

from contextwright import models
from contextwright.client import Client
from contextwright.events import AssistantMessage, ToolCall
from contextwright.runtime import AgentSpec, Tool
from contextwright.service import ServiceConfig
from contextwright.service.limits import RateLimit
from contextwright.testing.provider import ScriptedProvider
from contextwright.testing.service import WorkerProcess

AGENT = AgentSpec(
    policy="You are a careful coding agent. Never push to main.",
    tools=[Tool("run_tests", "Run the test suite", {"type": "object", "properties": {"path": {"type": "string"}}})],
)
OUTPUT = "tests/test_x.py::test_y PASSED\n" * 60 + "60 passed in 1.9s"
REQUESTS_PER_TURN = 6


def rss_mb(pid: int) -> float:
    """The resident set of process ``pid`` in MB (Linux)."""
    for line in _Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


class Load:
    """Client threads running sessions one after another until told to stop."""

    def __init__(self, url: str, key: str, *, clients: int, turns: int) -> None:
        self.url, self.key, self.turns = url, key, turns
        self.sessions = 0
        self.requests = 0
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, name=f"client-{i}", daemon=True) for i in range(clients)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)

    def _run(self) -> None:
        model = models.anthropic("claude-sonnet-4-6")
        with Client(self.url, self.key, timeout=60) as client:
            while not self._stop.is_set():
                provider = ScriptedProvider()
                try:
                    session = client.session(f"soak-{uuid.uuid4().hex[:12]}", agent=AGENT, model=model)
                    with self._lock:
                        self.sessions += 1
                    for turn in range(self.turns):
                        if self._stop.is_set():
                            return
                        call = ToolCall(id=f"c{turn}", name="run_tests", arguments={"path": f"tests/m{turn}"})
                        provider.push(AssistantMessage(text="Running the tests.", tool_calls=(call,)))
                        provider.push(AssistantMessage(text=f"Turn {turn}: all tests pass."))
                        session.user(f"Turn {turn}: run the tests of module {turn % 17} and report.")
                        session.record(provider.create(**session.next_request().body()))
                        session.tool_result(call.id, OUTPUT, exit_code=0)
                        session.record(provider.create(**session.next_request().body()))
                        with self._lock:
                            self.requests += REQUESTS_PER_TURN
                except Exception as exc:  # a soak reports failures, it does not stop at the first
                    with self._lock:
                        self.errors.append(f"{type(exc).__name__}: {exc}")
                    time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=180.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--turns", type=int, default=8, help="turns per session before the client opens a new one")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between RSS samples")
    parser.add_argument("--store", default=None, help="store URL (default: a SQLite file in a temporary folder)")
    parser.add_argument(
        "--cache-events", type=int, default=ServiceConfig().cache_events, help="the worker's ServiceConfig.cache_events"
    )
    args = parser.parse_args()
    console = Console()

    with tempfile.TemporaryDirectory() as folder:
        store = args.store or f"sqlite:///{folder}/soak.db"
        config = ServiceConfig(
            store=store, rate_limit=RateLimit(per_second=1e6, burst=10**6), console=False, cache_events=args.cache_events
        )
        worker = WorkerProcess(config).start()
        try:
            from contextwright.service.store import open_service_store

            with open_service_store(store) as keys:
                _, key = keys.create_key("soak")
            assert worker.process is not None
            pid = worker.process.pid
            load = Load(worker.url, key, clients=args.clients, turns=args.turns)
            started = time.monotonic()
            samples: list[tuple[float, float, int, int]] = [(0.0, rss_mb(pid), 0, 0)]
            load.start()
            while (elapsed := time.monotonic() - started) < args.seconds:
                time.sleep(min(args.every, max(0.0, args.seconds - elapsed)))
                samples.append((time.monotonic() - started, rss_mb(pid), load.sessions, load.requests))
            load.stop()
        finally:
            worker.stop()

    title = f"Worker RSS: {args.clients} clients, {args.turns} turns per session, cache_events {args.cache_events:,}, {args.seconds:.0f} s"
    table = Table(title=title)
    for column in ("time (s)", "RSS (MB)", "sessions opened", "HTTP requests"):
        table.add_column(column, justify="right")
    step = max(1, (len(samples) - 1) // 10)
    for at, rss, sessions, requests in samples[::step] if samples[-1] in samples[::step] else [*samples[::step], samples[-1]]:
        table.add_row(f"{at:.0f}", f"{rss:.1f}", f"{sessions:,}", f"{requests:,}")
    console.print(table)

    half = len(samples) // 2
    first, second = samples[: half + 1], samples[half:]
    slope = [fit([s[1] for s in part], [s[0] / 60 for s in part])[1] for part in (first, second)]
    console.print(
        f"RSS {samples[0][1]:.1f} -> {max(s[1] for s in samples):.1f} MB peak, {samples[-1][1]:.1f} MB at the end; "
        f"slope {slope[0]:.2f} MB/min in the first half, {slope[1]:.2f} MB/min in the second"
    )
    if load.errors:
        console.print(f"[red]{len(load.errors)} client errors[/red], first: {load.errors[0]}")


if __name__ == "__main__":
    main()
