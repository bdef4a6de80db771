"""``contextwright compact``: manual, strict compaction of a recorded session."""

from __future__ import annotations

import typer

from contextwright.cli._common import console, friendly_errors
from contextwright.cli._store import STORE_HELP, open_existing
from contextwright.runtime.engine import Engine
from contextwright.runtime.reopen import reopen


def compact(
    store: str = typer.Argument(..., help=STORE_HELP),
    session: str = typer.Option(..., "--session", "-s", help="The session id."),
) -> None:
    """Fold the session's history before its current run into a summary, archive first.

    Strict: if the archive cannot be written, nothing changes and the command fails.
    """
    with friendly_errors(), open_existing(store, read_only=False) as log:
        event = reopen(Engine(log), session).compact(trigger="manual")
    if event is None:
        console.print("Nothing to compact: everything visible belongs to the current run or is pinned.")
        return
    payload = event.payload
    console.print(
        f"[green]✓[/] compacted {len(payload.source_event_seqs):,} events up to seq {payload.upto_seq} into a "
        f"{len(payload.summary):,}-character summary (depth {payload.depth}); archive {payload.archive.ref if payload.archive else 'not written'}"
    )
