"""Commands that look inside a store: sessions, events, verify."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import typer
from rich.markup import escape
from rich.table import Table

from contextwright._optional import require
from contextwright.canonical import canonical_json
from contextwright.cli._common import console, err_console, friendly_errors, shorten
from contextwright.errors import NotAStore, StorageUnavailable, StoreNotFound, UsageError
from contextwright.events.envelope import Event
from contextwright.events.registry import encode_payload
from contextwright.log import EventLog, open_log, parse_store_url

STORE_FORMS = (
    "a SQLite file path (./agent.db, /var/cw/agent.db), sqlite:///relative/path.db, "
    "sqlite:////absolute/path.db (four slashes), or postgresql://user@host/db (add ?schema=name)"
)
"""The store URLs every command takes, for help texts."""
STORE_HELP = f"The store: {STORE_FORMS}."


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


def sqlite_file(store: str) -> Path | None:
    """The absolute path of a SQLite store's file; None for other stores."""
    backend, location, _ = parse_store_url(store)
    return Path(location).absolute() if backend == "sqlite" else None


def describe_store(store: str) -> str:
    """Where a store is, for people: a SQLite file's absolute path, a server URL without its password."""
    path = sqlite_file(store)
    if path is not None:
        return str(path)
    parts = urlsplit(store)
    if parts.password is None:
        return store
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


def must_exist(store: str, *, why: str = "") -> None:
    """Raise :class:`StoreNotFound` (with the absolute path, then ``why``) unless a SQLite store's file exists."""
    path = sqlite_file(store)
    if path is None:
        return
    if not path.exists():
        raise StoreNotFound(f"no store at {path}{why}{_relative_hint(store)}", path=str(path))
    if path.is_dir():
        raise NotAStore(f"{path} is a directory, not a store file", path=str(path))


class NewStore:
    """Notes, before a command opens a store for writing, whether it will create it; then says where it went.

    A SQLite URL is easy to misread (sqlite:///tmp/x.db is the relative tmp/x.db): a store that
    appears is always named by its absolute path, and the four-slash form is offered when the
    relative reading created folders where an absolute path was likely meant.
    """

    def __init__(self, store: str) -> None:
        self.store = store
        self.path = sqlite_file(store)
        self.created = self.path is not None and not self.path.exists()
        self._new_folder = self.path is not None and not self.path.parent.exists()

    def announce(self) -> None:
        """Print (on stderr) where a store this command created is."""
        if not self.created or self.path is None:
            return
        folder = f" (the folder {self.path.parent} was created for it)" if self._new_folder else ""
        err_console.print(f"Created a new store: {self.path}{folder}{_relative_hint(self.store)}", markup=False, highlight=False)


def _relative_hint(store: str) -> str:
    """For sqlite:///tmp/x.db where /tmp exists: how to write the absolute path instead."""
    backend, location, _ = parse_store_url(store)
    if backend != "sqlite" or not store.startswith("sqlite://") or Path(location).is_absolute():
        return ""
    top = Path(location).parts[0] if Path(location).parts else ""
    if not top or not Path("/", top).exists() or (Path(top).exists() and Path(top).resolve() == Path("/", top).resolve()):
        return ""
    return (
        f"; note: {store} is the relative path {location} (three slashes); for /{location} write "
        f"sqlite:////{location} (four slashes) or the plain path /{location}"
    )


def open_existing(store: str, *, read_only: bool = True) -> EventLog:
    """Open a store that must already exist; by default read-only, so looking never changes a file."""
    check_reachable(store)
    must_exist(store)
    return open_log(store, create=False, read_only=read_only)


def sessions(
    store: str = typer.Argument(..., help=STORE_HELP),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON object per session (session_id, events, requests, first_event, last_event)."
    ),
) -> None:
    """List the sessions in a store with their event counts."""
    with friendly_errors(), open_existing(store) as log:
        table = Table("session", "events", "first event", "last event", title=f"Sessions in {store}")
        for session_id in log.sessions():
            first = log.read(session_id, limit=1)[0]
            last = log.read(session_id, after_seq=log.last_seq(session_id) - 1)[0]
            if as_json:
                requests = sum(1 for e in log.read(session_id) if e.type == "context.request.built")
                row = {"session_id": session_id, "events": last.seq, "requests": requests}
                row |= {"first_event": first.at.isoformat(), "last_event": last.at.isoformat()}
                typer.echo(json.dumps(row, ensure_ascii=False))
                continue
            table.add_row(session_id, str(last.seq), first.at.isoformat(), last.at.isoformat())
        if not as_json:
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
