"""``contextwright demo``: a long scripted coding-agent session through the engine, offline."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from contextwright.assembly.request import ToolCallPart, ToolResultPart
from contextwright.cli._common import console, friendly_errors
from contextwright.cli._compare import comparison_json, comparison_table
from contextwright.clock import FixedClock
from contextwright.demo.drive import drive
from contextwright.demo.script import demo_script
from contextwright.log import open_log
from contextwright.models import anthropic, openai, with_window
from contextwright.runtime.engine import SECRET_SETTING, Engine
from contextwright.runtime.ports import InMemoryMemory
from contextwright.telemetry.records import request_records, summarize
from contextwright.testing.fakes import sample_agent
from contextwright.testing.provider import ScriptedProvider

DEMO_START = "2026-03-01T23:35:00+00:00"
SESSION_ID = "demo-ticket-4711"
# The demo pins its envelope secret so that two runs print the same numbers.
DEMO_SECRET = bytes.fromhex("c0ffee" * 10 + "c0")


def demo(
    db: Path = typer.Option(Path("contextwright-demo.db"), "--db", help="SQLite file to write (replaced if it exists)."),
    turns: int = typer.Option(50, "--turns", min=1, max=500, help="User turns in the scripted session."),
    window: int = typer.Option(64_000, "--window", min=16_000, help="Context window in tokens (the model's own is larger)."),
    provider: str = typer.Option("anthropic", "--provider", help="anthropic or openai: which wire and cache rules to simulate."),
    seed: int = typer.Option(7, "--seed", help="Seed of the script generator."),
    report: Path = typer.Option(Path("contextwright-demo.html"), "--report", help="Where to write the HTML report."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON instead of tables."),
) -> None:
    """Run a scripted coding-agent session through the engine on SQLite, with no network, and report on it."""
    if provider not in ("anthropic", "openai"):
        console.print(f"[bold red]error:[/] --provider must be anthropic or openai, not {provider!r}")
        raise typer.Exit(code=2)
    with friendly_errors():
        summary = run_demo(db, turns=turns, window=window, provider=provider, seed=seed, report=report, quiet=as_json)
    if as_json:
        typer.echo(json.dumps(summary, indent=2, sort_keys=True, default=str))


def run_demo(
    db: Path, *, turns: int, window: int, provider: str, seed: int, report: Path | None, quiet: bool = False
) -> dict[str, Any]:
    """Drive the scripted session into ``db`` and return the summary (and write the report)."""
    for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        path.unlink(missing_ok=True)
    clock = FixedClock(DEMO_START)
    model = with_window(anthropic("claude-sonnet-4-6") if provider == "anthropic" else openai("gpt-4.1"), window)
    memory = InMemoryMemory(
        {"mem-style": "Billing code uses Decimal for money amounts.", "mem-python": "The project supports Python 3.10."}
    )
    log = open_log(f"sqlite:///{db}", clock=clock)  # closed with the engine below
    # Stored like any store's secret, so that inspect can rebuild the requests later.
    log.setting(SECRET_SETTING, DEMO_SECRET.hex())
    engine = Engine(log, clock=clock)
    try:
        session = engine.session(SESSION_ID, agent=sample_agent(), model=model, memory=memory, recall=memory)
        scripted = ScriptedProvider(provider=provider, clock=clock)
        steps = demo_script(turns=turns, seed=seed)
        columns = (TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console, disable=quiet, transient=True) as progress:
            task = progress.add_task("Running the scripted session", total=len(steps))
            result = drive(
                session,
                steps,
                clock=clock,
                force_compaction_at=[turns * 3 // 5] if turns >= 5 else [],
                provider=scripted,
                wire=None if provider == "anthropic" else "openai_chat",
                on_step=lambda _step: progress.advance(task),
            )
        events = session.events
        records = request_records(events)
        stats = summarize(events, records=records)
        orphans = sum(_orphans(r.neutral) for r in result.requests)
        frames = [e.payload.runtime for e in events if e.type == "context.frame.recorded"]
        summary: dict[str, Any] = {
            "store": str(db),
            "session": SESSION_ID,
            "provider": provider,
            "model": model.id,
            "window": window,
            "turns": turns,
            "events": len(events),
            "requests": stats.requests,
            "epochs": stats.epochs,
            "prefix_hashes_per_epoch": {str(k): v for k, v in sorted(stats.prefix_hashes_by_epoch.items())},
            "orphaned_tool_pairs": orphans,
            "peak_request_tokens": stats.peak_request_tokens,
            "cache_read_share": None if stats.cache_read_share is None else round(stats.cache_read_share, 4),
            "cost_usd": None if stats.total_cost_usd is None else str(stats.total_cost_usd.quantize(Decimal("0.0001"))),
            "compactions": dict(sorted(stats.compactions_by_trigger.items())),
            "prune_passes": stats.prunes,
            "overflow_recoveries": stats.overflow_recoveries,
            "denied_tool_calls": stats.denied_tool_calls,
            # The engine asked to continue in a child run when the summary reached its depth cap.
            "child_runs": len(result.sessions) - 1,
            "child_run_requests": sum(child.stats().requests for child in result.sessions[1:]),
            "crosses_midnight": len({f.split(",")[1].split()[0] for f in frames if "," in f}) > 1,
            "report": str(report) if report else None,
        }
        comparison = _compare(log, window=window) if provider == "anthropic" else None
        if comparison is not None:
            summary["comparison"] = comparison_json(comparison)
        if report is not None:
            from contextwright.compare import comparison_rows
            from contextwright.report.html import write_report

            write_report(
                report,
                stats,
                records,
                title=f"Contextwright demo: {turns} turns at a {window:,}-token window",
                comparison=comparison_rows(comparison) if comparison is not None else None,
            )
    finally:
        engine.close()
    if not quiet:
        console.print(_table(summary))
        if "comparison" in summary:
            console.print(comparison_table(summary["comparison"], window=window, what="The same session"))
        console.print(
            f"Report: [bold]{report}[/]   Inspect a request: [bold]contextwright inspect {db} --session {SESSION_ID} --request 0[/]"
        )
    return summary


def _compare(log: Any, *, window: int) -> list[Any]:
    """The demo session against the common strategies, on the same timeline, offline."""
    from contextwright.compare import compare_transcript
    from contextwright.importers.from_log import transcript_from_log

    return list(compare_transcript(transcript_from_log(log, SESSION_ID), window=window))


def _orphans(request: Any) -> int:
    calls = {p.id for m in request.messages for p in m.parts if isinstance(p, ToolCallPart)}
    results = {p.call_id for m in request.messages for p in m.parts if isinstance(p, ToolResultPart)}
    return len(calls ^ results)


def _table(summary: dict[str, Any]) -> Table:
    table = Table(
        "",
        "",
        title=f"Demo: {summary['turns']} turns, {summary['provider']} wire, {summary['window']:,}-token window",
        show_header=False,
    )
    rows = [
        ("requests built", f"{summary['requests']:,}"),
        ("epochs", str(summary["epochs"])),
        ("prefix hashes per epoch", ", ".join(f"epoch {k}: {v}" for k, v in summary["prefix_hashes_per_epoch"].items())),
        ("orphaned tool pairs", str(summary["orphaned_tool_pairs"])),
        ("peak request", f"{summary['peak_request_tokens']:,} tokens of {summary['window']:,}"),
        (
            "cache-read share (token-weighted)",
            "n/a" if summary["cache_read_share"] is None else f"{summary['cache_read_share']:.1%}",
        ),
        ("cost (simulated usage, list prices)", "n/a" if summary["cost_usd"] is None else f"${summary['cost_usd']}"),
        ("compactions", ", ".join(f"{k}: {v}" for k, v in summary["compactions"].items()) or "0"),
        ("pruning passes", str(summary["prune_passes"])),
        ("denied calls (revoked tool)", str(summary["denied_tool_calls"])),
        ("clock crossed midnight", "yes" if summary["crosses_midnight"] else "no"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table
