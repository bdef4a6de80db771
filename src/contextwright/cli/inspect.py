"""``contextwright inspect`` and ``contextwright stats``: what the model saw, and how a store did."""

from __future__ import annotations

import json

import typer
from rich.table import Column, Table

from contextwright.assembly.request import ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from contextwright.cli._common import console, friendly_errors, shorten
from contextwright.cli.store import STORE_HELP, open_existing
from contextwright.runtime.engine import Engine
from contextwright.runtime.resume import reopen
from contextwright.telemetry.records import request_records, store_summary


def inspect(
    store: str = typer.Argument(..., help=STORE_HELP),
    session: str = typer.Option(..., "--session", "-s", help="The session id."),
    request: int | None = typer.Option(
        None, "--request", "-r", min=0, help="Show this request whole; without it, a table of all requests."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the rebuilt neutral request as JSON."),
) -> None:
    """Show exactly what the model saw on a request, rebuilt from the log and checked against its hash."""
    with friendly_errors(), open_existing(store) as log:
        engine = Engine(log)
        reopened = reopen(engine, session)
        if request is None:
            console.print(_requests_table(reopened.events, session))
            return
        neutral = reopened.inspect(request)
        if as_json:
            typer.echo(json.dumps(neutral.to_dict(), indent=2, ensure_ascii=False))
            return
        console.print(
            f"[green]✓[/] request {request} of {session} rebuilt from the log; it matches the recorded hash", soft_wrap=True
        )
        console.print(f"  {neutral.sha256()}", soft_wrap=True)
        console.print(
            f"prefix {neutral.prefix_sha256}, epoch {neutral.epoch}, model {neutral.model}, {len(neutral.messages)} messages"
        )
        table = Table("#", "role", "part", "class", "trust", "text", title=f"Request {request}")
        for block in neutral.system:
            table.add_row("", "system", "text", block.budget_class, "platform", shorten(block.text, 90))
        for index, message in enumerate(neutral.messages):
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    table.add_row(
                        str(index),
                        message.role,
                        "tool call",
                        "history",
                        "",
                        f"{part.name}({shorten(json.dumps(part.arguments, sort_keys=True), 70)})",
                    )
                elif isinstance(part, ToolResultPart):
                    table.add_row(str(index), message.role, "tool result", part.budget_class, part.trust, shorten(part.text, 90))
                elif isinstance(part, TextPart):
                    label = "text (tail)" if part.volatile else "text"
                    table.add_row(str(index), message.role, label, part.budget_class, part.trust, shorten(part.text, 90))
                elif isinstance(part, ReasoningPart):
                    # Opaque and signed: show what it is and its size, never its text.
                    kind = str(part.block.get("type", "reasoning"))
                    note = f"{part.provider} {kind}, {len(json.dumps(part.block)):,} chars" + (" (stale)" if part.stale else "")
                    table.add_row(str(index), message.role, "reasoning", part.budget_class, "", note)
        console.print(table)


def stats(store: str = typer.Argument(..., help=STORE_HELP)) -> None:
    """Sessions, requests, cache-read share, cost, epochs, compactions, yields and overflow recoveries."""
    with friendly_errors(), open_existing(store) as log:
        summaries = store_summary(log)
    table = Table(
        Column("session", no_wrap=True),
        "requests",
        "epochs",
        "prefix hashes",
        "cache read",
        "cost",
        "compactions",
        "prunes",
        "yields",
        "dedupe hits",
        "relief ratio",
        "overflows recovered",
        title=f"{len(summaries)} session(s) in {store}",
    )
    for s in summaries:
        table.add_row(
            s.session_id,
            f"{s.requests:,}",
            str(s.epochs),
            ", ".join(f"e{k}:{v}" for k, v in sorted(s.prefix_hashes_by_epoch.items())) or "-",
            "n/a" if s.cache_read_share is None else f"{s.cache_read_share:.1%}",
            "n/a" if s.total_cost_usd is None else f"${s.total_cost_usd:.4f}",
            str(sum(s.compactions_by_trigger.values())),
            str(s.prunes),
            ", ".join(f"{k}: {v}" for k, v in sorted(s.yields_by_kind.items())) or "-",
            str(s.dedupe_hits),
            "n/a" if s.relief_compression_ratio is None else f"{s.relief_compression_ratio:.2f}",
            str(s.overflow_recoveries),
        )
    console.print(table)


def _requests_table(events: list, session: str) -> Table:
    records = request_records(events)
    table = Table(
        "request",
        "at (UTC)",
        "epoch",
        "prefix",
        "tokens",
        "pressure",
        "yields",
        "cache read",
        "changes",
        title=f"Requests of {session}",
    )
    for r in records:
        usage = r.usage
        share = f"{usage.cache_read_share:.0%}" if usage is not None and usage.total_input else "n/a"
        table.add_row(
            str(r.request_index),
            r.at.strftime("%Y-%m-%d %H:%M:%S"),
            str(r.epoch),
            r.prefix_sha256[7:19],
            f"{r.total_tokens:,}",
            r.pressure,
            ", ".join(r.yields) or "-",
            share,
            ", ".join(r.changes) or "-",
        )
    return table
