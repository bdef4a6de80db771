"""``contextwright replay``: real transcripts through the engine, with what they would have cost."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import typer
from rich.progress import Progress
from rich.table import Table

from contextwright.cli._common import console, err_console, friendly_errors
from contextwright.cli._compare import comparison_json, comparison_table
from contextwright.clock import FixedClock
from contextwright.importers import FORMATS, load_transcripts
from contextwright.models import anthropic, openai, with_window
from contextwright.replay import replay as replay_transcript
from contextwright.runtime.engine import Engine
from contextwright.telemetry.records import request_records, summarize


def replay(
    paths: list[Path] = typer.Argument(
        ..., help="Transcript files (Claude Code JSONL, OpenHands, SWE-agent .traj, OpenAI chat JSON, ...)."
    ),
    format: str = typer.Option("auto", "--format", "-f", help=f"auto, or one of: {', '.join(FORMATS)}."),
    provider: str = typer.Option("anthropic", "--provider", help="anthropic or openai: which wire to render and simulate."),
    window: int = typer.Option(200_000, "--window", min=8_000, help="Context window in tokens."),
    store: str = typer.Option("memory://", "--store", help="Where to record the replayed sessions (memory:// keeps nothing)."),
    dump_requests: Path | None = typer.Option(
        None, "--dump-requests", help="Write every provider request body here, one JSON file each."
    ),
    report: Path | None = typer.Option(None, "--report", help="Write an HTML report (the first transcript's session)."),
    lenient: bool = typer.Option(False, "--lenient", help="Skip malformed records (counted) instead of stopping."),
    compare_strategies: bool = typer.Option(
        True, "--compare/--no-compare", help="Also price the same transcripts under common strategies (Anthropic wire)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
) -> None:
    """Replay transcripts through the engine at a given window and show what each request would have been."""
    if provider not in ("anthropic", "openai"):
        err_console.print(f"[bold red]error:[/] --provider must be anthropic or openai, not {provider!r}")
        raise typer.Exit(code=2)
    rows: list[dict[str, Any]] = []
    with friendly_errors():
        for path in paths:
            if not path.exists():
                err_console.print(f"[bold red]error:[/] no such file: {path}")
                raise typer.Exit(code=1)
        transcripts = load_transcripts(list(paths), format=format, lenient=lenient)
        model = with_window(anthropic("claude-sonnet-4-6") if provider == "anthropic" else openai("gpt-4.1"), window)
        wire = "anthropic" if provider == "anthropic" else "openai_chat"
        engine = Engine.open(store, clock=FixedClock(step=1))
        if dump_requests is not None:
            dump_requests.mkdir(parents=True, exist_ok=True)
        first_session = None
        with Progress(console=console, disable=as_json, transient=True) as progress:
            task = progress.add_task("Replaying", total=len(transcripts))
            for transcript in transcripts:
                result = replay_transcript(transcript, engine=engine, model=model)
                if first_session is None and result.requests:
                    first_session = result.session
                if dump_requests is not None:
                    for built in result.requests:
                        name = f"{_safe(result.session.id)}-{built.index:04d}.json"
                        (dump_requests / name).write_text(
                            json.dumps(built.body(wire), indent=1, ensure_ascii=False, sort_keys=True), encoding="utf-8"
                        )
                events = result.session.events
                stats = summarize(events) if events else None  # a transcript can hold no messages at all
                rows.append(
                    {
                        "file": transcript.source,
                        "format": transcript.format,
                        "session": result.session.id,
                        "messages": len(transcript.messages),
                        "requests": stats.requests if stats else 0,
                        "overflows": result.overflows,
                        "peak_request_tokens": stats.peak_request_tokens if stats else 0,
                        "compactions": sum(stats.compactions_by_trigger.values()) if stats else 0,
                        "prunes": stats.prunes if stats else 0,
                        "skipped_records": transcript.skipped,
                    }
                )
                progress.advance(task)
        comparison = None
        if compare_strategies and provider == "anthropic" and any(row["requests"] for row in rows):
            from contextwright.compare import compare

            with (
                console.status("Pricing the same transcripts under common strategies")
                if not as_json
                else contextlib.nullcontext()
            ):
                comparison = comparison_json(compare(transcripts, window=window))
        if report is not None and first_session is not None:
            from contextwright.report.html import write_report

            events = first_session.events
            write_report(
                report,
                summarize(events),
                request_records(events),
                title=f"Replay of {first_session.id} at {window:,} tokens",
                comparison=comparison,
            )
    if as_json:
        typer.echo(json.dumps({"transcripts": rows, "comparison": comparison}, indent=2))
        return
    table = Table(
        "file",
        "format",
        "messages",
        "requests",
        "over window",
        "peak request",
        "compactions",
        "prunes",
        title=f"Replayed at a {window:,}-token window ({provider})",
    )
    for row in rows:
        table.add_row(
            Path(row["file"]).name,
            row["format"],
            str(row["messages"]),
            str(row["requests"]),
            str(row["overflows"]),
            f"{row['peak_request_tokens']:,}",
            str(row["compactions"]),
            str(row["prunes"]),
        )
    console.print(table)
    if comparison:
        console.print(comparison_table(comparison, window=window, what=f"{len(transcripts)} transcript(s)"))
    if dump_requests is not None:
        console.print(f"Request bodies written to {dump_requests}")
    if report is not None:
        console.print(f"Report: {report}")


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:120]
