"""``contextwright replay``: real transcripts through the engine, with what they would have cost."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.progress import Progress

from contextwright.cli._common import console, err_console, friendly_errors, print_rows
from contextwright.cli._compare import comparison_json, print_comparison
from contextwright.cli.store import check_reachable
from contextwright.clock import TranscriptClock
from contextwright.compare.nonces import reproducible_secret
from contextwright.errors import UsageError
from contextwright.importers import FORMATS, Transcript, load_transcripts
from contextwright.log import open_log
from contextwright.models import anthropic, openai, with_window
from contextwright.plan.plan import CACHE_TTLS, CacheTtl
from contextwright.providers.usage import Usage
from contextwright.replay import replay as replay_transcript
from contextwright.runtime.engine import SECRET_SETTING, Engine
from contextwright.runtime.session import BuiltRequest
from contextwright.telemetry.records import request_records, summarize

DEFAULT_START = "2026-01-01T00:00:00+00:00"


def replay(
    paths: list[Path] = typer.Argument(
        ..., help="Transcript files (Claude Code JSONL, OpenHands, SWE-agent .traj, OpenAI chat JSON, ...)."
    ),
    format: str = typer.Option("auto", "--format", "-f", help=f"auto, or one of: {', '.join(FORMATS)}."),
    provider: str = typer.Option("anthropic", "--provider", help="anthropic or openai: which wire to render and simulate."),
    window: int = typer.Option(200_000, "--window", min=8_000, help="Context window in tokens."),
    store: str = typer.Option("memory://", "--store", help="Where to record the replayed sessions (memory:// keeps nothing)."),
    dump_requests: Path | None = typer.Option(
        None, "--dump-requests", help="Write every provider request body here, one JSON file each (the folder is created)."
    ),
    report: Path | None = typer.Option(
        None, "--report", help="Write an HTML report of the first transcript's session (the comparison covers all of them)."
    ),
    lenient: bool = typer.Option(
        False, "--lenient/--no-lenient", help="Skip malformed records (counted in the 'skipped' column) instead of stopping."
    ),
    strict: bool = typer.Option(
        False,
        "--strict/--no-strict",
        help="Fail on content blocks of unknown types; by default they are kept as opaque text parts, with a warning.",
    ),
    seed: int = typer.Option(
        0,
        "--seed",
        help="Mixed into the envelope secret, which is derived from the transcripts' bytes: the same files and seed "
        "give the same request bytes, peaks and hashes on every run.",
    ),
    compare_strategies: bool = typer.Option(
        True, "--compare/--no-compare", help="Also price the same transcripts under common strategies (Anthropic wire)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
    cache_ttl: str = typer.Option(
        "5m", "--cache-ttl", help="The agent profile's prefix cache TTL: 5m, or 1h for a long-lived agent (Anthropic)."
    ),
    usage: str = typer.Option(
        "recorded",
        "--usage",
        help="recorded: keep the transcript's provider usage for stats; it belongs to the original requests and "
        "tunes nothing. simulated: report each request's own usage back to the session as a live provider would, "
        "from the offline cache simulator (o200k counts, cache reads and writes at the transcript's times), so the "
        "session reconciles its estimates as in a live loop and stats shows what these requests would cost "
        "(Anthropic wire; needs tiktoken). The comparison always hears its engine's usage.",
    ),
) -> None:
    """Replay transcripts through the engine at a given window and show what each request would have been.

    Reproducible: envelope nonces come from a secret derived from the transcripts' bytes and --seed,
    not from a random one, so two runs on the same files write the same bytes. Recorded times and
    provider usage are kept, so `stats` on a --store shows the original cache share and cost.
    """
    if provider not in ("anthropic", "openai"):
        err_console.print(f"[bold red]error:[/] --provider must be anthropic or openai, not {provider!r}")
        raise typer.Exit(code=2)
    if cache_ttl not in CACHE_TTLS:
        err_console.print(f"[bold red]error:[/] --cache-ttl must be one of {', '.join(CACHE_TTLS)}, not {cache_ttl!r}")
        raise typer.Exit(code=2)
    ttl: CacheTtl = "1h" if cache_ttl == "1h" else "5m"
    if usage not in ("recorded", "simulated"):
        err_console.print(f"[bold red]error:[/] --usage must be recorded or simulated, not {usage!r}")
        raise typer.Exit(code=2)
    if usage == "simulated" and provider != "anthropic":
        err_console.print("[bold red]error:[/] --usage simulated simulates the Anthropic cache; use it with --provider anthropic")
        raise typer.Exit(code=2)
    rows: list[dict[str, Any]] = []
    with friendly_errors():
        for path in paths:
            if not path.exists():
                raise UsageError(f"no such file: {path}")
            if path.is_dir():
                raise UsageError(f"{path} is a directory; give the transcript files (for example {path}/*.jsonl)")
        if dump_requests is not None:
            _prepare_folder(dump_requests)
        transcripts = load_transcripts(list(paths), format=format, lenient=lenient, strict=strict)
        if not as_json:  # JSON carries the same facts per transcript ("empty", "unsupported_blocks")
            _warn_about(transcripts)
        model = with_window(anthropic("claude-sonnet-4-6") if provider == "anthropic" else openai("gpt-4.1"), window)
        wire = "anthropic" if provider == "anthropic" else "openai_chat"
        clock = TranscriptClock(DEFAULT_START)
        secret = reproducible_secret("replay", [_file_digest(p) for p in paths], seed=seed)
        check_reachable(store)
        log = open_log(store, clock=clock)
        stored = log.setting(SECRET_SETTING, secret.hex())
        if stored != secret.hex() and not as_json:
            err_console.print(f"note: {store} keeps its own envelope secret; request bytes differ from a fresh replay")
        engine = Engine(log, clock=clock, secret=bytes.fromhex(stored))
        provider_usage = _simulated_usage(model.id, clock) if usage == "simulated" else None
        first_session = None
        try:
            # The bar is transient: on a console that is no terminal it would never show, yet its thread
            # would still lay it out ten times a second.
            shown = not as_json and console.is_terminal
            with Progress(console=console, disable=not shown, transient=True) as progress, _young_collections():
                task = progress.add_task("Replaying", total=len(transcripts))
                for transcript in transcripts:
                    clock.restart(next((m.at for m in transcript.messages if m.at), None))
                    result = replay_transcript(
                        transcript,
                        engine=engine,
                        model=model,
                        follow_times=clock.follow,
                        cache_ttl=ttl,
                        provider_usage=provider_usage,
                    )
                    if first_session is None and result.requests:
                        first_session = result.session
                    if dump_requests is not None:
                        for built in result.requests:
                            body = json.dumps(built.body(wire), indent=1, ensure_ascii=False, sort_keys=True)
                            _write(dump_requests / f"{_safe(result.session.id)}-{built.index:04d}.json", body)
                    rows.append(_row(transcript, result))
                    progress.advance(task)
                    del result  # what only this transcript's session held is garbage now, cycles included
                    gc.collect(0)
            comparison = None
            if compare_strategies and provider == "anthropic" and any(row["requests"] for row in rows):
                from contextwright.compare import compare

                with (
                    console.status("Pricing the same transcripts under common strategies")
                    if not as_json
                    else contextlib.nullcontext()
                ):
                    comparison = comparison_json(compare(transcripts, window=window, seed=seed))
            if report is not None and first_session is not None:
                _write_report(report, first_session, window=window, comparison=comparison, transcripts=len(transcripts))
        finally:
            engine.close()
        if not any(row["requests"] for row in rows):
            raise UsageError("nothing to replay: no transcript holds a model call")
    if as_json:
        typer.echo(json.dumps({"transcripts": rows, "comparison": comparison}, indent=2))
        return
    _print_table(rows, window=window, provider=provider)
    if comparison:
        what = "One transcript" if len(transcripts) == 1 else f"{len(transcripts)} transcripts (totals)"
        print_comparison(comparison, window=window, what=what)
        if usage == "recorded":
            # The table's engine row heard each request's counted input as a live loop would; the replay did not.
            console.print(
                "The contextwright row runs the engine with each request's counted input reported back as usage "
                "(as a live loop does); the replay above used the recorded usage (--usage simulated to match).",
                highlight=False,
            )
    if dump_requests is not None:
        console.print(f"Request bodies written to {dump_requests}", highlight=False)
        if usage == "recorded":
            # Recorded usage belongs to the original requests and tunes nothing, so relief sized these
            # bodies with the estimator's conservative bound; a live loop hears each request's usage.
            console.print(
                "They were built without provider usage: the engine's estimates stayed at their conservative "
                "bound, so relief may start earlier than in a live loop (--usage simulated builds them as one would).",
                highlight=False,
            )
    if report is not None:
        console.print(f"Report: {report}")


@contextlib.contextmanager
def _young_collections() -> Iterator[None]:
    """Pause the collector's own schedule; the block collects the young generation after each transcript.

    A replay allocates objects that mostly live until the end (the log, the sessions); on its
    own schedule the collector scans each of them again in every older generation. Collected
    once per transcript, each is scanned once, and the cycles a transcript leaves are freed
    before the next one starts.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _row(transcript: Transcript, result: Any) -> dict[str, Any]:
    events = result.session.events
    stats = summarize(events) if events else None  # a transcript can hold no messages at all
    return {
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
        "unsupported_blocks": dict(transcript.unsupported_blocks),
        "cache_read_share": None if stats is None or stats.cache_read_share is None else round(stats.cache_read_share, 4),
        "cost_usd": None if stats is None or stats.total_cost_usd is None else str(round(stats.total_cost_usd, 4)),
        "empty": not _has_conversation(transcript),
    }


def _has_conversation(transcript: Transcript) -> bool:
    return any(m.role in ("user", "assistant") and (m.text.strip() or m.tool_calls) for m in transcript.messages)


def _warn_about(transcripts: list[Transcript]) -> None:
    """One warning line per transcript with no conversation or with content blocks of unknown types."""
    for t in transcripts:
        name = f"{t.source} ({t.session_id})" if sum(1 for o in transcripts if o.source == t.source) > 1 else t.source
        name = escape(name)
        if not _has_conversation(t):
            err_console.print(f"[yellow]warning:[/] {name}: no conversation (no user or model message); nothing to replay")
        for kind, count in t.unsupported_blocks.items():
            err_console.print(
                f"[yellow]warning:[/] {name}: {count} content block(s) of unknown type {escape(repr(kind))} kept as opaque text "
                "(--strict fails instead)",
                highlight=False,
            )


def _print_table(rows: list[dict[str, Any]], *, window: int, provider: str) -> None:
    headers = [
        "file",
        "format",
        "messages",
        "requests",
        "over window",
        "peak request",
        "compactions",
        "prunes",
        "cache read",
        "cost",
    ]
    if any(row["skipped_records"] for row in rows):
        headers.append("skipped")
    cells = []
    for row in rows:
        line = [
            Path(row["file"]).name + (" (empty)" if row["empty"] else ""),
            row["format"],
            str(row["messages"]),
            str(row["requests"]),
            str(row["overflows"]),
            f"{row['peak_request_tokens']:,}",
            str(row["compactions"]),
            str(row["prunes"]),
            "n/a" if row["cache_read_share"] is None else f"{row['cache_read_share']:.1%}",
            "n/a" if row["cost_usd"] is None else f"${row['cost_usd']}",
        ]
        if len(headers) > 10:
            line.append(str(row["skipped_records"]))
        cells.append(line)
    title = f"Replayed at a {window:,}-token window ({provider} wire); cache read and cost as the transcripts recorded them"
    print_rows(headers, cells, title=title, numeric=headers[2:4] + headers[4:])


def _write_report(report: Path, session: Any, *, window: int, comparison: Any, transcripts: int) -> None:
    from contextwright.report.html import write_report

    events = session.events
    if transcripts == 1:
        caption = "Each strategy on this transcript (offline cache simulation)"
    else:
        caption = f"Each strategy on all {transcripts} transcripts replayed together: totals, not this session alone"
    plots = _has_matplotlib()
    try:
        write_report(
            report,
            summarize(events),
            request_records(events),
            title=f"Replay of {session.id} at {window:,} tokens",
            comparison=comparison,
            comparison_caption=caption,
            plots=plots,
        )
    except OSError as exc:
        raise UsageError(f"cannot write the report {report}: {exc.strerror or exc}") from None
    if not plots:
        err_console.print(
            'note: the report has no plots; they need matplotlib: pip install "contextwright[report]"', markup=False
        )


def _has_matplotlib() -> bool:
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def _prepare_folder(folder: Path) -> None:
    """Create the dump folder and check it takes files before any work is done."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".contextwright-write-check"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"cannot write request bodies to {folder}: {exc.strerror or exc}") from None


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:120]


def _simulated_usage(model_id: str, clock: TranscriptClock) -> Callable[[BuiltRequest], Usage]:
    """Each request's usage as a live provider would report it: the offline cache simulator's, at the transcript's time."""
    # The comparison's modules load most of the engine: only a simulated replay pays for them.
    from contextwright.compare import CacheRules, TokenCounter
    from contextwright.providers.cache_sim import SimRequest

    # One simulator for the whole run, as one provider account serves every session.
    simulator = CacheRules().simulator(TokenCounter(model_id, counting="o200k"))

    def report(built: BuiltRequest) -> Usage:
        return simulator.request(SimRequest(at=clock.now(), body=built.anthropic())).usage

    return report
