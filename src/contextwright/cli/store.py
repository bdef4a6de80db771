"""Commands that look inside a store: sessions, events, verify."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from contextwright.canonical import canonical_json
from contextwright.cli._common import console, friendly_errors, shorten
from contextwright.events.envelope import Event
from contextwright.events.registry import encode_payload
from contextwright.log import EventLog, open_log

STORE_HELP = "The store: a SQLite file path, sqlite:///file.db, or postgresql://... (add ?schema=name)."


def open_existing(store: str) -> EventLog:
    """Open a store that must already exist (never create one by accident)."""
    if "://" not in store and not Path(store).exists():
        from contextwright.errors import StoreNotFound

        raise StoreNotFound(f"no such file: {store}")
    return open_log(store, create=False)


def sessions(store: str = typer.Argument(..., help=STORE_HELP)) -> None:
    """List the sessions in a store with their event counts."""
    with friendly_errors(), open_existing(store) as log:
        table = Table("session", "events", "first event", "last event", title=f"Sessions in {store}")
        for session_id in log.sessions():
            first = log.read(session_id, limit=1)[0]
            last = log.read(session_id, after_seq=log.last_seq(session_id) - 1)[0]
            table.add_row(session_id, str(last.seq), first.at.isoformat(), last.at.isoformat())
        console.print(table)


def events(
    store: str = typer.Argument(..., help=STORE_HELP),
    session: str = typer.Option(..., "--session", "-s", help="The session id."),
    after: int = typer.Option(0, "--after", help="Show events after this seq."),
    limit: int = typer.Option(50, "--limit", "-n", help="Show at most this many events."),
) -> None:
    """Show a session's events as a table."""
    with friendly_errors(), open_existing(store) as log:
        console.print(events_table(log.read(session, after_seq=after, limit=limit), title=f"Session {session}"))


def verify(store: str = typer.Argument(..., help=STORE_HELP)) -> None:
    """Check every stored hash and counter: payloads, seqs, last seqs, the session-rules index, artifacts."""
    with friendly_errors(), open_existing(store) as log:
        report = log.verify()
    if report.problems:
        for problem in report.problems:
            console.print(f"[red]✗[/] {problem}")
        raise typer.Exit(code=1)
    console.print(
        f"[green]✓[/] {report.events:,} events in {report.sessions:,} sessions and {report.artifacts:,} artifacts verified: "
        "hashes and counters match and no seq is missing"
    )


def events_table(rows: list[Event], *, title: str) -> Table:
    """A rich table of events: seq, time, type and a one-line summary."""
    table = Table("seq", "at (UTC)", "type", "summary", title=title)
    for event in rows:
        table.add_row(str(event.seq), event.at.strftime("%Y-%m-%d %H:%M:%S"), event.type, summarize(event))
    return table


def summarize(event: Event) -> str:
    """One line that says what an event holds."""
    payload = event.payload
    match event.type:
        case "message.user":
            return shorten(payload.text)
        case "message.assistant":
            calls = ", ".join(f"{c.name}({shorten(canonical_json(encode_payload(c.arguments)), 30)})" for c in payload.tool_calls)
            return shorten((payload.text + (" → " + calls if calls else "")).strip())
        case "tool.result":
            status = "denied" if payload.denied else ("error" if payload.is_error else "ok")
            return f"{payload.tool_name} [{status}] {len(payload.output):,} chars: {shorten(payload.output, 40)}"
        case "memory.written" | "memory.corrected":
            return f"{payload.memory_id}: {shorten(payload.text, 50)}"
        case _:
            return shorten(canonical_json(encode_payload(payload)))
