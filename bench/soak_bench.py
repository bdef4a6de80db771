"""Soak run: thousands of turns through the public API on SQLite, with large outputs, failures and restarts.

Run from the repository root:

    python bench/soak_bench.py                 # 2,000 turns, outputs up to 5 MB; writes docs/benchmarks.md
    python bench/soak_bench.py --quick         # 60 turns, outputs up to 1 MB, no docs
    python bench/soak_bench.py --turns 500 --max-output-mb 2

Every turn: a user message, a request, a model answer with one or two tool calls, their
outputs (random sizes from 0 to the maximum, most of them small; some fail with exit code
1), another request and a closing answer; each request is rendered for Anthropic. At random
moments the process "restarts": the engine is closed and the session reopened from the store,
sometimes with tool calls still pending (a crash between the call and its result). When the
engine asks for a child run (the summary reached its depth cap) the run continues in one.

The run reports the peak resident memory and, in ten windows, the CPU time per turn split
into what depends on the turn's own draw (``tool_result()`` per MB of output) and what could
grow with the history (the warm requests, against ``json.dumps`` of the same bodies), a
least-squares trend of each against the turn index with the turn's own size as covariate,
the cost of every reopen against the session's length, and ends with ``verify`` over the
whole store.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parent))
import argparse
import json
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
from _soak_stats import fit, window_ratios, windows
from rich.console import Console
from rich.table import Table

from contextwright.clock import FixedClock
from contextwright.errors import ContextwrightError
from contextwright.events import AssistantMessage, ToolCall
from contextwright.runtime.engine import Engine
from contextwright.runtime.errors import EscalationRequired
from contextwright.runtime.session import Session
from contextwright.testing.fakes import TEST_SECRET, sample_agent, sample_model

LINE = "tests/test_mod_{m}.py::test_case_{i} {status} [{p:3d}%]\n"


@dataclass(kw_only=True, slots=True)
class Reopen:
    """One reopen of the session from the store."""

    turn: int
    events: int
    """Events of the session in the log when it was reopened."""
    open_cpu: float
    """CPU time of closing the engine, opening it and the session (reading and folding the log)."""
    first_request_cpu: float = 0.0
    """CPU time of the first request after the reopen (built with every cache empty)."""


@dataclass(kw_only=True, slots=True)
class Soak:
    """What a soak run measured (times are the engine's work only: making outputs and sizing bodies are left out)."""

    turn_seconds: list[float] = field(default_factory=list)
    """Wall-clock time of each turn."""
    turn_cpu: list[float] = field(default_factory=list)
    """CPU time of each turn (the process's own work, whatever else the machine runs)."""
    request_cpu: list[float] = field(default_factory=list)
    """Per turn: CPU time of its warm requests, ``next_request()`` and the Anthropic render."""
    reopen_cpu: list[float] = field(default_factory=list)
    """Per turn: CPU time of reopens (opening the session, its first request after)."""
    session_events: list[int] = field(default_factory=list)
    """Per turn: the session's last seq at its end (how long the history is)."""
    dumps_cpu: list[float] = field(default_factory=list)
    """Per turn: CPU time of ``json.dumps`` of the same rendered bodies (the floor the requests are held to)."""
    body_bytes: list[int] = field(default_factory=list)
    """Per turn: bytes of ``json.dumps`` of its last rendered body."""
    tool_cpu: list[float] = field(default_factory=list)
    """Per turn: CPU time of ``tool_result()`` (compressing and storing its outputs)."""
    turn_output_bytes: list[int] = field(default_factory=list)
    """Per turn: bytes of tool output it recorded."""
    rss_mb: list[float] = field(default_factory=list)
    """Resident memory after each turn."""
    reopens: list[Reopen] = field(default_factory=list)
    restarts: int = 0
    crashes_with_pending_calls: int = 0
    failed_outputs: int = 0
    output_bytes: int = 0
    largest_output: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    sessions: int = 1
    child_runs: list[int] = field(default_factory=list)
    """Turns at which the session continued in a child run (its summary reached the depth cap)."""


def tool_output(rng: random.Random, max_bytes: int, *, failing: bool, turn: int) -> str:
    """A pytest-like log: most outputs small, a few near ``max_bytes`` (size = max × u⁶)."""
    size = int(max_bytes * rng.random() ** 6)
    block = "".join(LINE.format(m=i % 97, i=i, status="PASSED", p=i % 100) for i in range(turn % 50, turn % 50 + 400))
    text = (block * (size // len(block) + 1))[:size]
    if failing:
        cut = text.rfind("\n", 0, len(text) // 2) + 1
        text = text[:cut] + f"tests/test_pay.py::test_turn_{turn} FAILED - AssertionError\n" + text[cut:]
    return text


@dataclass(kw_only=True, slots=True)
class _Turn:
    """Costs gathered during one turn."""

    request: float = 0.0
    dumps: float = 0.0
    body: int = 0
    tool: float = 0.0
    output: int = 0
    reopen: float = 0.0
    """CPU time of reopening the session and of the first request after a reopen."""
    outside: float = 0.0
    """CPU time spent on the run's own bookkeeping (making outputs, sizing bodies), left out of the turn."""


def soak(*, turns: int, max_bytes: int, seed: int, url: str, window: int) -> tuple[Soak, Engine]:
    """Run the soak and return its figures and the (open) engine."""
    rng = random.Random(seed)
    clock = FixedClock("2026-03-01T09:00:00Z")
    result = Soak()
    session_id = "soak-1"
    cold: Reopen | None = None

    def open_engine() -> tuple[Engine, Session]:
        engine = Engine.open(url, clock=clock, secret=TEST_SECRET)
        return engine, engine.session(session_id, agent=sample_agent(), model=sample_model(window))

    def reopen(turn: int, engine: Engine, events: int, costs: _Turn) -> tuple[Engine, Session]:
        nonlocal cold
        start = time.process_time()
        engine.close()
        engine, session = open_engine()
        cold = Reopen(turn=turn, events=events, open_cpu=time.process_time() - start)
        costs.reopen += cold.open_cpu
        result.reopens.append(cold)
        return engine, session

    def request(costs: _Turn) -> None:
        nonlocal cold
        start = time.process_time()
        body = session.next_request().anthropic()
        spent = time.process_time() - start
        measured = time.process_time()
        encoded = json.dumps(body)
        dumps = time.process_time() - measured
        costs.outside += dumps
        costs.body = len(encoded)
        if cold is not None:
            cold.first_request_cpu, cold = spent, None
            costs.reopen += spent
        else:
            costs.request += spent
            costs.dumps += dumps

    engine, session = open_engine()
    for turn in range(turns):
        start, start_cpu = time.perf_counter(), time.process_time()
        costs = _Turn()
        clock.advance(37)
        try:
            if not session.pending_tool_calls():
                session.user(f"Turn {turn}: run the checks for module {turn % 17} and fix what fails.")
                request(costs)
                calls = tuple(
                    ToolCall(id=f"t{turn}-{k}", name=rng.choice(["run_tests", "build", "grep"]), arguments={"turn": turn})
                    for k in range(rng.choice([1, 1, 2]))
                )
                session.adapter.record_assistant(AssistantMessage(text=f"Checking module {turn % 17}.", tool_calls=calls))
                if rng.random() < 0.02:
                    # A crash between the model's call and the tool's result: the calls stay pending.
                    result.crashes_with_pending_calls += 1
                    engine, session = reopen(turn, engine, session.history.last_seq, costs)
            for call in session.pending_tool_calls():
                made = time.process_time()
                failing = rng.random() < 0.15
                output = tool_output(rng, max_bytes, failing=failing, turn=turn)
                costs.outside += time.process_time() - made
                result.failed_outputs += failing
                result.output_bytes += len(output)
                result.largest_output = max(result.largest_output, len(output))
                costs.output += len(output)
                stored = time.process_time()
                session.tool_result(call.id, output, exit_code=1 if failing else 0)
                costs.tool += time.process_time() - stored
            request(costs)
            session.adapter.record_assistant(AssistantMessage(text=f"Module {turn % 17} is done."))
        except EscalationRequired:
            # The summary reached its depth cap: carry on in a child run, as the engine asks.
            result.child_runs.append(turn)
            session = session.children.escalate()
            session_id = session.id
        except ContextwrightError as exc:
            # Recorded, not hidden: a session that cannot go on continues as a new one.
            result.errors[type(exc).__name__] += 1
            result.sessions += 1
            session_id = f"soak-{result.sessions}"
            engine, session = reopen(turn, engine, 0, costs)
        if rng.random() < 0.01:
            result.restarts += 1
            engine, session = reopen(turn, engine, session.history.last_seq, costs)
        result.turn_seconds.append(time.perf_counter() - start)
        result.turn_cpu.append(time.process_time() - start_cpu - costs.outside)
        result.request_cpu.append(costs.request)
        result.reopen_cpu.append(costs.reopen)
        result.session_events.append(session.history.last_seq)
        result.dumps_cpu.append(costs.dumps)
        result.body_bytes.append(costs.body)
        result.tool_cpu.append(costs.tool)
        result.turn_output_bytes.append(costs.output)
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


@dataclass(frozen=True, slots=True)
class Trend:
    """How a per-turn cost moves over the run once a covariate (the turn's own size) is accounted for."""

    per_1000_turns_ms: float
    """The fitted change over 1,000 turns (or 1,000 events of the session), in ms (0 means flat)."""
    per_covariate_ms: float
    """The fitted cost per unit of the covariate (per MB of output, per 100 KB of body), in ms."""
    typical_ms: float
    """The median of the cost, for scale."""


def trend(costs: list[float], *covariates: list[float], against: list[float] | None = None) -> Trend:
    """Least squares ``cost ≈ a + b·x + c·covariate + …``, x the turn index unless ``against``; b scaled to 1,000 of x."""
    x = against if against is not None else [float(i) for i in range(len(costs))]
    _, per_x, per_unit, *_ = fit(costs, x, *covariates)
    return Trend(per_x * 1e6, per_unit * 1000, statistics.median(costs) * 1000)


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
    start, start_cpu = time.perf_counter(), time.process_time()
    result, engine = soak(turns=turns, max_bytes=int(max_mb * 1_000_000), seed=args.seed, url=url, window=args.window)
    elapsed, elapsed_cpu = time.perf_counter() - start, time.process_time() - start_cpu
    report = engine.log.verify()
    engine.close()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    store_mb = sum(f.stat().st_size for f in _Path(folder).iterdir()) / 1e6

    rows = window_rows(result)
    whole = trend(result.turn_cpu, [b / 1e6 for b in result.turn_output_bytes])
    steady = trend(
        [t - r for t, r in zip(result.turn_cpu, result.reopen_cpu)],
        [b / 1e6 for b in result.turn_output_bytes],
        [b / 1e5 for b in result.body_bytes],
    )
    requests = trend(result.request_cpu, [b / 1e5 for b in result.body_bytes])
    by_length = trend(result.request_cpu, [b / 1e5 for b in result.body_bytes], against=[float(e) for e in result.session_events])
    floor = trend(result.dumps_cpu, [b / 1e5 for b in result.body_bytes])
    first, last = rows["median CPU ms per turn"], rows["request CPU ms per turn"]
    growth = first[-1] / first[0] if first and first[0] > 0 else float("nan")
    request_growth = last[-1] / last[0] if last and last[0] > 0 else float("nan")

    console = Console()
    table = Table(
        "window", *(str(i) for i in range(1, len(first) + 1)), title=f"Soak: {turns:,} turns, outputs up to {max_mb:g} MB"
    )
    for name, values in rows.items():
        table.add_row(name, *(f"{v:.1f}" if abs(v) < 10 else f"{v:.0f}" for v in values))
    console.print(table)
    reopen_table = Table("session events", "reopens", "median open CPU ms", "median first request CPU ms", title="Reopens")
    for label, count, opened, cold_first in reopen_bins(result.reopens):
        reopen_table.add_row(label, str(count), f"{opened:.0f}", f"{cold_first:.0f}")
    console.print(reopen_table)
    reopen_fit = (
        fit([r.open_cpu + r.first_request_cpu for r in result.reopens], [float(r.events) for r in result.reopens])
        if len(result.reopens) > 1
        else [0.0, 0.0]
    )

    def reopen_trend(cost: list[float]) -> str:
        if len(result.reopens) < 2:
            return "too few reopens"
        fitted = fit(cost, [float(r.events) for r in result.reopens])
        return f"{fitted[0] * 1000:.0f} ms + {fitted[1] * 1e6:.1f} ms per 1,000 events"

    summary = [
        ("turns", f"{turns:,} in {elapsed:.0f} s ({elapsed_cpu:.0f} s CPU)"),
        ("peak RSS", f"{peak_mb:.0f} MB"),
        ("last window ÷ first window, median CPU per turn", f"{growth:.2f} (warm requests alone: {request_growth:.2f})"),
        (
            "trend of the whole turn (fitted with the turn's output size)",
            f"{whole.per_1000_turns_ms:+.1f} ms per 1,000 turns, {whole.per_covariate_ms:.1f} ms per MB of output, "
            f"median {whole.typical_ms:.1f} ms",
        ),
        (
            "the same without reopens, fitted with the output and the body size",
            f"{steady.per_1000_turns_ms:+.1f} ms per 1,000 turns, {steady.per_covariate_ms:.1f} ms per MB of output, "
            f"median {steady.typical_ms:.1f} ms",
        ),
        (
            "trend of the warm requests (fitted with the body size)",
            f"{requests.per_1000_turns_ms:+.1f} ms per 1,000 turns, {requests.per_covariate_ms:.1f} ms per 100 KB of body, "
            f"median {requests.typical_ms:.1f} ms; `json.dumps` of the same bodies: "
            f"{floor.per_1000_turns_ms:+.1f} ms per 1,000 turns, {floor.per_covariate_ms:.1f} ms per 100 KB, median {floor.typical_ms:.1f} ms",
        ),
        (
            "warm requests against the session's length (fitted with the body size)",
            f"{by_length.per_1000_turns_ms:+.1f} ms per 1,000 events of the session, "
            f"{by_length.per_covariate_ms:.1f} ms per 100 KB of body",
        ),
        (
            "reopen (open + first request) against the session's events",
            f"{len(result.reopens)} reopens, {reopen_fit[0] * 1000:.0f} ms + {reopen_fit[1] * 1e6:.1f} ms per 1,000 events "
            f"(open alone: {reopen_trend([r.open_cpu for r in result.reopens])}; first request alone: "
            f"{reopen_trend([r.first_request_cpu for r in result.reopens])})",
        ),
        ("tool output", f"{result.output_bytes / 1e6:,.0f} MB in all, largest {result.largest_output / 1e6:.1f} MB"),
        ("failed outputs", f"{result.failed_outputs:,}"),
        ("restarts / crashes with calls pending", f"{result.restarts} / {result.crashes_with_pending_calls}"),
        ("child runs (summary at its depth cap)", ", ".join(f"turn {t}" for t in result.child_runs) or "none"),
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
            + (f" --seed {args.seed}" if args.seed != 19 else "")
        )
        lines = [
            f"Machine: {machine}. Command: `{command}`.",
            "",
            "Turns through the public API on one SQLite store, with random tool outputs (most small, some near "
            "the maximum), 15% failing outputs, restarts (the session reopened from the store) and crashes with "
            "tool calls pending. Each turn makes two requests and renders each for Anthropic. Times are CPU time "
            "of the engine's calls only (making the outputs and sizing the bodies are left out). A warm request "
            "is one not first after a reopen; reopens are listed on their own.",
            "",
            "| window of the run | " + " | ".join(str(i) for i in range(1, len(first) + 1)) + " |",
            "|---|" + "---:|" * len(first),
            *(
                f"| {name} | " + " | ".join(f"{v:.1f}" if abs(v) < 10 else f"{v:.0f}" for v in values) + " |"
                for name, values in rows.items()
            ),
            "",
            "| session events at the reopen | reopens | median open CPU ms | median first request CPU ms |",
            "|---|---:|---:|---:|",
            *(
                f"| {label} | {count} | {opened:.0f} | {cold_first:.0f} |"
                for label, count, opened, cold_first in reopen_bins(result.reopens)
            ),
            "",
            *(f"- {name}: {value}" for name, value in summary),
        ]
        update_section("soak-bench", "## Soak run (`bench/soak_bench.py`)\n\n" + "\n".join(lines))
    return 0 if report.ok else 1


def reopen_bins(reopens: list[Reopen], width: int = 1000) -> list[tuple[str, int, float, float]]:
    """Reopens grouped by the session's length: (range of events, count, median open ms, median first request ms)."""
    groups: dict[int, list[Reopen]] = {}
    for item in reopens:
        groups.setdefault(item.events // width, []).append(item)
    return [
        (
            f"{key * width:,}–{(key + 1) * width - 1:,}",
            len(group),
            statistics.median(r.open_cpu for r in group) * 1000,
            statistics.median(r.first_request_cpu for r in group) * 1000,
        )
        for key, group in sorted(groups.items())
    ]


def window_rows(result: Soak) -> dict[str, list[float]]:
    """The per-window rows of the report (medians, or sums over sums for the ratios)."""
    return {
        "median CPU ms per turn": [v * 1000 for v in windows(result.turn_cpu)],
        "median wall ms per turn": [v * 1000 for v in windows(result.turn_seconds)],
        "tool output MB per turn (mean)": [v / 1e6 for v in window_ratios(result.turn_output_bytes, [1] * len(result.turn_cpu))],
        "tool_result CPU ms per MB": [
            v * 1000 for v in window_ratios(result.tool_cpu, [b / 1e6 for b in result.turn_output_bytes])
        ],
        "request CPU ms per turn": [v * 1000 for v in windows(result.request_cpu)],
        "median CPU ms per turn less tool_result() and reopens": [
            v * 1000
            for v in windows([t - c - r for t, c, r in zip(result.turn_cpu, result.tool_cpu, result.reopen_cpu, strict=True)])
        ],
        "body KB (median)": [v / 1000 for v in windows([float(b) for b in result.body_bytes])],
        "requests ÷ json.dumps": window_ratios(result.request_cpu, result.dumps_cpu),
        "median RSS (MB)": windows(result.rss_mb),
    }


if __name__ == "__main__":
    _sys.exit(main())
