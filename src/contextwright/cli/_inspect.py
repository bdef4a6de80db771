"""``contextwright inspect`` and ``contextwright stats``: what the model saw, and how a store did."""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.table import Table

from contextwright.assembly.request import ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from contextwright.cli._common import console, friendly_errors, print_rows
from contextwright.cli._demo import DEMO_MARK
from contextwright.cli._store import STORE_HELP, open_existing
from contextwright.errors import UsageError
from contextwright.providers.capabilities import capabilities_for
from contextwright.providers.wires import WIRES, wire_named
from contextwright.runtime.engine import Engine
from contextwright.runtime.reopen import reopen
from contextwright.telemetry._request_diff import RequestDiff, diff_requests
from contextwright.telemetry.records import request_records, store_summary


def inspect(
    store: str = typer.Argument(..., help=STORE_HELP),
    session: str = typer.Option(..., "--session", "-s", help="The session id."),
    request: int | None = typer.Option(
        None,
        "--request",
        "-r",
        min=0,
        help="Show this request whole (every block, tools included); without it, a table of all requests.",
    ),
    wire: str | None = typer.Option(
        None, "--wire", help=f"With --request: print the provider body instead ({', '.join(WIRES)}; one of the model's provider)."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="With --request: print the rebuilt neutral request as JSON (with --diff: the diff)."
    ),
    diff: bool = typer.Option(
        False, "--diff", help="With --request N: what changed against request N-1, block by block, with each block's provenance."
    ),
) -> None:
    """Show exactly what the model saw on a request, rebuilt from the log and checked against its hash."""
    with friendly_errors(), open_existing(store) as log:
        if diff:
            if request is None:
                raise UsageError("--diff needs --request N: it compares request N with the request before it")
            if wire is not None:
                raise UsageError("--diff shows blocks, not a provider body: leave out --wire")
            reopened = reopen(Engine(log), session)
            changes = request_diff(reopened, request)
            if as_json:
                typer.echo(json.dumps(changes.to_dict(), indent=2, ensure_ascii=False))
            else:
                print_diff(changes, session)
            return
        if wire is not None:
            wire_named(wire)  # an unknown name fails before any work
            if request is None:
                raise UsageError("--wire needs --request N: it prints one request's provider body")
        if as_json and request is None:
            raise UsageError("--json needs --request N: it prints one rebuilt request")
        engine = Engine(log)
        reopened = reopen(engine, session)
        if request is None:
            console.print(_requests_table(reopened.history.events, session))
            return
        neutral = reopened.inspect(request)
        if wire is not None:
            typer.echo(json.dumps(_wire_body(reopened, request, neutral, wire), indent=2, ensure_ascii=False))
            return
        if as_json:
            typer.echo(json.dumps(neutral.to_dict(), indent=2, ensure_ascii=False))
            return
    console.print(
        f"[green]✓[/] request {request} of {session} rebuilt from the log; it matches the recorded hash", soft_wrap=True
    )
    for line in _whole_request(neutral):
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def request_diff(session: Any, index: int) -> RequestDiff:
    """Request ``index`` of ``session`` against the one before it, both rebuilt and checked against their hashes."""
    count = session.history.requests_built
    if index >= count:
        raise UsageError(f"session {session.id!r} has {count} recorded requests; there is no request {index}")
    after = session.inspect(index)
    before = session.inspect(index - 1) if index > 0 else None
    return diff_requests(after, before, session.history.events, index=index)


_STATUS_STYLE = {"kept": "dim", "changed": "yellow", "moved": "cyan", "added": "green", "removed": "red"}


def print_diff(changes: RequestDiff, session: str) -> None:
    """The diff as a table of blocks (kept blocks folded into one line per run), then the counts."""
    against = "nothing (the first request)" if changes.previous is None else f"request {changes.previous}"
    console.print(
        f"Request {changes.index} of {session} against {against}: epoch {changes.epoch}"
        + (f" (was {changes.previous_epoch})" if changes.previous_epoch not in (None, changes.epoch) else "")
        + (", prefix changed" if changes.prefix_changed else ""),
        highlight=False,
        soft_wrap=True,
    )
    table = Table("status", "block", "from", "shaped by", "class", "trust", "cache", "cause", title="Blocks")
    kept_run: list[Any] = []

    def flush() -> None:
        if kept_run:
            first, last = kept_run[0].after, kept_run[-1].after
            span = first.where if first is last else f"{first.where} … {last.where}"
            table.add_row("kept", f"{len(kept_run)} block(s): {span}", "", "", "", "", kept_run[0].cache, "", style="dim")
            kept_run.clear()

    for change in changes.changes:
        if change.status == "kept" and (not kept_run or kept_run[-1].cache == change.cache):
            kept_run.append(change)
            continue
        flush()
        if change.status == "kept":
            kept_run.append(change)
            continue
        block = change.block
        table.add_row(
            change.status,
            f"{block.where}: {block.kind}" + (f" {block.call_id}" if block.call_id else ""),
            block.ref + (f" ({block.event_type})" if block.event_type else ""),
            block.shaped_by,
            f"{block.budget_class}/{block.layer}",
            block.trust,
            change.cache,
            change.cause,
            style=_STATUS_STYLE[change.status],
        )
    flush()
    console.print(table)
    counts = ", ".join(f"{changes.count(s)} {s}" for s in ("kept", "changed", "moved", "added", "removed"))
    first = "none" if changes.first_difference is None else f"block {changes.first_difference}"
    between = ", ".join(f"{t} ×{n}" for t, n in sorted(changes.events_between.items())) or "none"
    console.print(f"{counts}; first block not sent before: {first}", highlight=False, soft_wrap=True)
    causes = ", ".join(f"{kind.replace('_', ' ')} ×{n}" for kind, n in changes.causes.items()) or "none"
    console.print(f"Causes of the differences: {causes}", highlight=False, soft_wrap=True)
    console.print(f"Events between the two requests: {between}", highlight=False, soft_wrap=True)


def _wire_body(session: Any, index: int, neutral: Any, wire: str) -> dict[str, Any]:
    """The provider body of a rebuilt request (cache markers placed against the request before it)."""
    provider = session.model.provider
    if provider not in wire_named(wire).providers:
        choices = " or ".join(w.name for w in WIRES.values() if provider in w.providers)
        raise UsageError(f"session {session.id!r} talks to {provider} ({session.model.id}): use --wire {choices}")
    previous = None
    if index > 0:
        before = session.inspect(index - 1)
        previous = before if before.epoch == neutral.epoch else None
    return wire_named(wire).render(neutral, capabilities_for(session.model), previous=previous)


def _whole_request(neutral: Any) -> list[str]:
    """Every block of a neutral request, in order, with nothing cut."""
    lines = [
        f"  {neutral.sha256()}",
        f"prefix {neutral.prefix_sha256}, epoch {neutral.epoch}, model {neutral.model}, "
        f"{len(neutral.system)} system block(s), {len(neutral.tools)} tool(s), {len(neutral.messages)} message(s)",
    ]
    for number, block in enumerate(neutral.system):
        lines += ["", f"── system block {number} ({block.budget_class}, platform) ──", block.text]
    lines += ["", f"── tools ({len(neutral.tools)}) ──"]
    for tool in neutral.tools:
        lines.append(f"{tool.name}: {tool.description}")
        lines.append("  input schema: " + json.dumps(tool.input_schema, sort_keys=True, ensure_ascii=False))
    for index, message in enumerate(neutral.messages):
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                head = f"tool call {part.id}, history"
                body = f"{part.name}({json.dumps(part.arguments, sort_keys=True, ensure_ascii=False)})"
            elif isinstance(part, ToolResultPart):
                head, body = f"tool result for {part.call_id}, {part.budget_class}, {part.trust}", part.text
            elif isinstance(part, TextPart):
                head = f"{'text (tail)' if part.volatile else 'text'}, {part.budget_class}, {part.trust}"
                body = part.text
            elif isinstance(part, ReasoningPart):
                # Opaque and signed: show what it is and its size, never its text.
                kind = str(part.block.get("type", "reasoning"))
                head = f"reasoning, {part.budget_class}"
                body = f"[{part.provider} {kind}, {len(json.dumps(part.block)):,} chars{' (stale)' if part.stale else ''}]"
            else:
                head, body = type(part).__name__, str(part)
            lines += ["", f"── message {index} ({message.role}): {head} ──", body]
    return lines


def stats(
    store: str = typer.Argument(..., help=STORE_HELP),
    misses: bool = typer.Option(
        False,
        "--misses",
        help="Also rebuild every request and name its cache misses: uncached input by cause under the session's "
        "provider's rules (offline simulation), and how many predictions are more than 10 points from the "
        "provider's reported cache reads. Slower: every request is rebuilt.",
    ),
) -> None:
    """Sessions, requests, cache-read share, cost, epochs, compactions, yields and overflow recoveries.

    Wide terminals get one table; narrow ones one block per session, so nothing is cut.
    """
    with friendly_errors(), open_existing(store) as log:
        summaries = store_summary(log)
        if misses:
            from contextwright.cli._misses import attributed_summary

            engine = Engine(log)
            summaries = [attributed_summary(engine, s) if s.requests else s for s in summaries]
        # The demo's usage comes from the offline simulator, not a provider: say so. Only a
        # read-only log answers a setting without storing it; demo stores are SQLite files.
        simulated = getattr(log, "read_only", False) and log.setting(DEMO_MARK, "") != ""
    rows = [_stats_row(s) for s in summaries]
    title = f"{len(summaries)} session(s) in {store}" + (": usage and cost simulated by the demo" if simulated else "")
    print_rows(_STATS_HEADERS, rows, title=title, numeric=_STATS_HEADERS[1:3] + ("cache read", "cost"))
    sources = list(dict.fromkeys(source for s in summaries for source in s.priced_by))
    if sources:
        console.print("Costs priced with: " + "; ".join(sources), highlight=False)
    for summary in summaries:
        for alarm in summary.cache_alarms:
            console.print(f"Cache alarm, {summary.session_id}, {alarm.describe()}", highlight=False, markup=False)
    if misses:
        from contextwright.cli._misses import client_miss_lines, miss_lines

        for summary in summaries:
            for line in miss_lines(summary):
                console.print(line, highlight=False, markup=False)
        with open_existing(store) as log:
            for line in client_miss_lines(log):
                console.print(line, highlight=False, markup=False)


_STATS_HEADERS = (
    "session",
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
)


def _stats_row(s: Any) -> tuple[str, ...]:
    return (
        s.session_id,
        f"{s.requests:,}",
        str(s.epochs),
        ", ".join(f"e{k}:{v}" for k, v in sorted(s.prefix_hashes_by_epoch.items())) or "-",
        "n/a" if s.cache_read_share is None else f"{s.cache_read_share:.1%}",
        "n/a" if s.total_cost_usd is None else f"${s.total_cost_usd:.4f}",
        str(sum(s.compactions_by_trigger.values())),
        str(s.prunes),
        ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in sorted(s.yields_by_kind.items())) or "-",
        str(s.dedupe_hits),
        "n/a" if s.relief_compression_ratio is None else f"{s.relief_compression_ratio:.2f}",
        str(s.overflow_recoveries),
    )


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
