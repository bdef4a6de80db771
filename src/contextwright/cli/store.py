"""Commands that look inside a store: sessions, events, verify."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from contextwright._optional import require
from contextwright.canonical import canonical_json
from contextwright.cli._common import console, friendly_errors, shorten
from contextwright.errors import NotAStore, StorageUnavailable, StoreNotFound, UsageError
from contextwright.events.envelope import Event
from contextwright.events.registry import encode_payload
from contextwright.log import EventLog, open_log, parse_store_url

STORE_HELP = "The store: a SQLite file path, sqlite:///file.db, or postgresql://... (add ?schema=name)."


POSTGRES_CONNECT_TIMEOUT = 5
"""Seconds the command line waits for a PostgreSQL server before it gives up."""


def check_reachable(store: str) -> None:
    """For a PostgreSQL URL: connect once, quickly, and report the real cause if that fails.

    The log's connection pool retries in the background and logs every attempt; a person at
    a terminal wants one line saying why (refused, no such database, bad password) at once.
    """
    backend, location, _ = parse_store_url(store)
    if backend != "postgres":
        return
    psycopg = require("psycopg", extra="postgres", feature="PostgreSQL stores")
    try:
        psycopg.connect(location, connect_timeout=POSTGRES_CONNECT_TIMEOUT).close()
    except psycopg.Error as exc:
        cause = " ".join(str(exc).split("\n")[0].split())
        raise StorageUnavailable(f"cannot connect to PostgreSQL: {cause}") from None


def open_existing(store: str, *, read_only: bool = True) -> EventLog:
    """Open a store that must already exist; by default read-only, so looking never changes a file."""
    check_reachable(store)
    if "://" not in store:
        path = Path(store)
        if not path.exists():
            raise StoreNotFound(f"no such file: {store}")
        if path.is_dir():
            raise NotAStore(f"{store} is a directory, not a store file")
    return open_log(store, create=False, read_only=read_only)


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
    limit: int = typer.Option(50, "--limit", "-n", min=1, help="Show at most this many events."),
) -> None:
    """Show a session's events as a table (a line at the end says how many more there are)."""
    with friendly_errors(), open_existing(store) as log:
        last = log.last_seq(session)
        if last == 0:
            known = log.sessions()
            hint = f"; sessions here: {', '.join(known[:5])}{', ...' if len(known) > 5 else ''}" if known else ""
            raise UsageError(f"no session {session!r} in {store}{hint}", session_id=session)
        rows = log.read(session, after_seq=after, limit=limit)
    console.print(events_table(rows, title=f"Session {session}"))
    shown_to = rows[-1].seq if rows else after
    if shown_to < last:
        console.print(
            f"{last - shown_to:,} more event(s) after seq {shown_to}: add --after {shown_to} (or a larger --limit)",
            highlight=False,
        )


def verify(store: str = typer.Argument(..., help=STORE_HELP)) -> None:
    """Check every stored hash and counter: payloads, seqs, last seqs, the session-rules index, artifacts."""
    with friendly_errors(), open_existing(store) as log:
        report = log.verify()
    if report.problems:
        for problem in report.problems:
            console.print(f"[red]✗[/] {escape(problem)}")
        raise typer.Exit(code=1)
    console.print(
        f"[green]✓[/] {report.events:,} events in {report.sessions:,} sessions and {report.artifacts:,} artifacts verified: "
        "hashes and counters match and no seq is missing"
    )


def events_table(rows: list[Event], *, title: str) -> Table:
    """A rich table of events: seq, time, type and a one-line summary."""
    table = Table("seq", "at (UTC)", "type", "summary", title=title)
    for event in rows:
        # Event text is data, never rich markup ("[ok]" would vanish as a tag).
        table.add_row(str(event.seq), event.at.strftime("%Y-%m-%d %H:%M:%S"), event.type, escape(summarize(event)))
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
