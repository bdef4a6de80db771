"""``contextwright demo``: a scripted coding-agent session, offline, on SQLite."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from pathlib import Path

import typer
from rich.progress import Progress
from rich.table import Table

from contextwright.cli._common import console, friendly_errors
from contextwright.cli.store import events_table
from contextwright.clock import FixedClock
from contextwright.demo import demo_script
from contextwright.events.catalog import MemoryCorrected, MemoryWritten, ToolResult
from contextwright.log.sqlite import SQLiteEventLog

DEMO_START = "2026-03-01T22:30:00+00:00"
SESSION_ID = "demo-ticket-4711"


def demo(
    db: Path = typer.Option(Path("contextwright-demo.db"), "--db", help="SQLite file to write (replaced if it exists)."),
    turns: int = typer.Option(12, "--turns", min=1, max=500, help="User turns in the scripted session."),
    seed: int = typer.Option(7, "--seed", help="Seed of the script generator."),
    show: int = typer.Option(25, "--show", min=0, help="How many events to print in the event table."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON instead of tables."),
) -> None:
    """Record a scripted coding-agent session into a SQLite store and show it."""
    with friendly_errors():
        summary = run_demo(db, turns=turns, seed=seed, show=0 if as_json else show, quiet=as_json)
    if as_json:
        typer.echo(json.dumps(summary, indent=2, sort_keys=True))


def run_demo(db: Path, *, turns: int, seed: int, show: int = 25, quiet: bool = False) -> dict:
    """Write the scripted session to ``db`` and return a summary."""
    if db.exists():
        db.unlink()
        for suffix in ("-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
    clock = FixedClock(DEMO_START)
    steps = demo_script(turns=turns, seed=seed)
    revoked: set[str] = set()
    with SQLiteEventLog(db, clock=clock, synchronous="NORMAL") as log, Progress(console=console, disable=quiet, transient=True) as progress:
        task = progress.add_task("Recording the scripted session", total=len(steps))
        seq = 0
        for step in steps:
            clock.advance(step.after_seconds)
            payload = step.payload
            if step.kind == "revoke_tool":
                revoked.add(step.detail["tool"])
                progress.advance(task)
                continue
            if step.kind == "memory_write":
                payload = MemoryWritten(memory_id=step.detail["id"], text=step.detail["text"])
            elif step.kind == "memory_correct":
                payload = MemoryCorrected(memory_id=step.detail["id"], text=step.detail["text"])
            elif step.kind == "tool" and payload.tool_name in revoked:
                # A revoked tool stays advertised; the call is refused when it happens.
                payload = ToolResult(
                    call_id=payload.call_id,
                    tool_name=payload.tool_name,
                    output=f"Permission denied: the tool '{payload.tool_name}' was revoked for this session.",
                    is_error=True,
                    denied=True,
                )
            seq = log.append(SESSION_ID, [payload], expected_seq=seq)[-1].seq
            progress.advance(task)
        stored = log.read(SESSION_ID)
    counts = Counter(e.type for e in stored)
    first, last = stored[0].at, stored[-1].at
    summary = {
        "store": str(db),
        "session": SESSION_ID,
        "events": len(stored),
        "events_by_type": dict(sorted(counts.items())),
        "tool_output_chars": sum(len(e.payload.output) for e in stored if e.type == "tool.result"),
        "denied_tool_calls": sum(1 for e in stored if e.type == "tool.result" and e.payload.denied),
        "first_event_at": first.isoformat(),
        "last_event_at": last.isoformat(),
        "crosses_midnight": first.date() != last.date(),
    }
    if not quiet:
        if show:
            console.print(events_table(stored[:show], title=f"The first {min(show, len(stored))} events of {SESSION_ID}"))
        console.print(_summary_table(summary))
        console.print(f"Look inside: [bold]contextwright events {db} --session {SESSION_ID}[/]")
    return summary


def _summary_table(summary: dict) -> Table:
    table = Table("", "", title="Demo summary", show_header=False)
    table.add_row("store", summary["store"])
    table.add_row("events", f"{summary['events']:,}")
    for name, count in summary["events_by_type"].items():
        table.add_row(f"  {name}", f"{count:,}")
    table.add_row("tool output", f"{summary['tool_output_chars']:,} chars")
    table.add_row("denied calls (revoked tool)", str(summary["denied_tool_calls"]))
    span = dt.datetime.fromisoformat(summary["last_event_at"]) - dt.datetime.fromisoformat(summary["first_event_at"])
    table.add_row("session time", f"{summary['first_event_at']} → {summary['last_event_at']} ({span})")
    return table
