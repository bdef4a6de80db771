"""``contextwright demo``: a long scripted coding-agent session through the engine, offline."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from contextwright.assembly.request import ToolCallPart, ToolResultPart
from contextwright.cli._common import console, err_console, friendly_errors
from contextwright.cli._compare import comparison_json, print_comparison
from contextwright.clock import FixedClock
from contextwright.compare.nonces import reproducible_secret
from contextwright.errors import ContextwrightError, UsageError
from contextwright.log import open_log
from contextwright.models import ResolvedModel, anthropic, openai, with_window
from contextwright.providers.wires import default_wire
from contextwright.runtime.engine import SECRET_SETTING, Engine
from contextwright.runtime.ports import InMemoryMemory
from contextwright.telemetry.records import request_records, summarize

if TYPE_CHECKING:
    from contextwright.compare.strategies import TokenCounter
    from contextwright.testing.provider import ScriptedProvider

DEMO_START = "2026-03-01T23:35:00+00:00"
SESSION_ID = "demo-ticket-4711"
DEMO_MARK = "contextwright.demo"
"""Store setting that marks a store the demo made (the only kind of file ``demo --db`` replaces)."""


def counter_note(counter: TokenCounter) -> str:
    """How the demo's figures were counted, stated with them."""
    how = "exact o200k counts of what the model reads" if counter.counting == "o200k" else "the engine's heuristic estimator"
    return (
        "simulated usage: every request body priced by the offline Anthropic/OpenAI cache simulator, "
        f"tokens of every strategy counted by one shared counter ({how})"
    )


PLOTS_HINT = 'plots need matplotlib: pip install "contextwright[report]"'


def demo(
    db: Path = typer.Option(
        Path("contextwright-demo.db"),
        "--db",
        help="SQLite file to write. Only a store an earlier demo made is replaced; any other existing file is an error.",
    ),
    turns: int = typer.Option(50, "--turns", min=1, max=500, help="User turns in the scripted session."),
    window: int = typer.Option(64_000, "--window", min=16_000, help="Context window in tokens (the model's own is larger)."),
    provider: str = typer.Option(
        "anthropic",
        "--provider",
        help="anthropic or openai (the demo simulates these providers' caches only): the provider whose default wire "
        "and cache rules to simulate (the comparison needs anthropic).",
    ),
    seed: int = typer.Option(
        7,
        "--seed",
        help="Seed of the script generator. The envelope secret is derived from the seed and the other settings, "
        "so the same settings give the same bytes.",
    ),
    report: Path = typer.Option(Path("contextwright-demo.html"), "--report", help="Where to write the HTML report."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON instead of tables."),
) -> None:
    """Run a scripted coding-agent session through the engine on SQLite, with no network, and report on it.

    Usage, cache reads and cost are simulated offline (no provider is called); every figure
    comes from one counter, and the summary and the comparison agree.
    """
    if provider not in DEMO_MODELS:
        err_console.print(f"[bold red]error:[/] {_unsupported(provider)}")
        raise typer.Exit(code=2)
    with friendly_errors():
        summary = run_demo(db, turns=turns, window=window, provider=provider, seed=seed, report=report, quiet=as_json)
    if as_json:
        typer.echo(json.dumps(summary, indent=2, sort_keys=True, default=str))


class UnsupportedDemoProvider(UsageError):
    """The demo simulates the caches of the providers in :data:`DEMO_MODELS` only."""


DEMO_MODELS: dict[str, Callable[[], ResolvedModel]] = {
    "anthropic": lambda: anthropic("claude-sonnet-4-6"),
    "openai": lambda: openai("gpt-4.1"),
}
"""The providers the demo runs on (the offline cache simulation and the scripted provider speak theirs), and its model for each."""


def _unsupported(provider: str) -> str:
    return f"--provider must be {' or '.join(DEMO_MODELS)} (the providers the demo simulates), not {provider!r}"


def check_demo_target(db: Path) -> None:
    """Refuse to write anywhere but a new file in an existing folder, or a store an earlier demo made."""
    if not db.parent.is_dir():
        raise UsageError(f"folder {db.parent} does not exist; create it first (the demo does not create folders)")
    if not db.exists():
        return
    if db.is_dir():
        raise UsageError(f"{db} is a directory; give --db a file name")
    try:
        with open_log(db, create=False, read_only=True) as log:
            sessions = log.sessions()
            # Stores of earlier versions carry no mark, but hold the demo's session alone.
            ours = sessions == [SESSION_ID] or (sessions == [] and log.setting(DEMO_MARK, "") == SESSION_ID)
    except ContextwrightError:
        ours = False
    if not ours:
        raise UsageError(
            f"{db} exists and is not a store made by the demo; it was left untouched (choose another --db)", path=str(db)
        )


def demo_secret(*, turns: int, window: int, provider: str, seed: int) -> bytes:
    """The demo's envelope secret: a hash of its settings, so the same settings give the same bytes."""
    settings = json.dumps({"turns": turns, "window": window, "provider": provider, "seed": seed}, sort_keys=True)
    return reproducible_secret("demo", [settings], seed=seed)


def run_demo(
    db: Path, *, turns: int, window: int, provider: str, seed: int, report: Path | None, quiet: bool = False
) -> dict[str, Any]:
    """Drive the scripted session into ``db`` and return the summary (and write the report)."""
    # Imported here: the other commands (replay above all) never load the demo's driver and fakes.
    from contextwright.compare.strategies import TokenCounter
    from contextwright.testing.provider import ScriptedProvider

    if provider not in DEMO_MODELS:
        raise UnsupportedDemoProvider(_unsupported(provider), provider=provider, supported=list(DEMO_MODELS))
    _clear_target(db, report)
    clock = FixedClock(DEMO_START)
    model = with_window(DEMO_MODELS[provider](), window)
    log = open_log(f"sqlite:///{db}", clock=clock)  # closed with the engine below
    log.setting(DEMO_MARK, SESSION_ID)
    # Stored like any store's secret, so that inspect can rebuild the requests later.
    log.setting(SECRET_SETTING, demo_secret(turns=turns, window=window, provider=provider, seed=seed).hex())
    engine = Engine(log, clock=clock)
    try:
        # One counter for everything the demo reports: the provider's simulated usage, the summary
        # and the comparison all count tokens with it. Output is not simulated (it is the same for
        # every strategy), so costs are input costs.
        counter = TokenCounter(model.id)
        scripted = ScriptedProvider(provider=provider, clock=clock, count_tokens=counter, output_tokens=0)
        wire = default_wire(provider)
        session, result = _run_script(engine, model, scripted, clock=clock, turns=turns, seed=seed, wire=wire, quiet=quiet)
        events = session.history.events
        # The usage came from the simulator, not a provider: say so wherever it is shown.
        records = [replace(r, usage_source="simulated") if r.usage_source else r for r in request_records(events)]
        stats = summarize(events, records=records)
        summary = _summary(
            db,
            model.id,
            provider,
            window=window,
            turns=turns,
            events=events,
            stats=stats,
            records=records,
            result=result,
            report=report,
            counter=counter_note(counter),
        )
        if provider == "anthropic":
            summary["comparison"] = comparison_json(_compare(log, result.requests, scripted, window=window, counter=counter))
        else:
            summary["comparison_skipped"] = NO_OPENAI_COMPARISON
        if report is not None:
            _write_demo_report(report, stats, records, summary, turns=turns, window=window)
    finally:
        engine.close()
    if not quiet:
        _print_summary(summary, window=window, db=db, report=report)
    return summary


def _clear_target(db: Path, report: Path | None) -> None:
    """Remove an earlier demo's store (and nothing else) once the report's place is known to be writable."""
    check_demo_target(db)
    if report is not None and (not report.parent.is_dir() or report.is_dir()):
        raise UsageError(f"cannot write the report to {report}: its folder does not exist, or it is a folder")
    for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        path.unlink(missing_ok=True)


def _run_script(
    engine: Engine,
    model: Any,
    scripted: ScriptedProvider,
    *,
    clock: FixedClock,
    turns: int,
    seed: int,
    wire: str | None,
    quiet: bool,
) -> tuple[Any, Any]:
    """The demo's session and what driving the seeded script through it with ``scripted`` as the provider gave."""
    from contextwright.demo._drive import drive
    from contextwright.demo.script import demo_script
    from contextwright.testing.fakes import sample_agent

    memory = InMemoryMemory(
        {"mem-style": "Billing code uses Decimal for money amounts.", "mem-python": "The project supports Python 3.10."}
    )
    session = engine.session(SESSION_ID, agent=sample_agent(), model=model, memory=memory, recall=memory)
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
            wire=wire,
            on_step=lambda _step: progress.advance(task),
        )
    return session, result


NO_OPENAI_COMPARISON = "the strategies are compared on the Anthropic wire only; run again with --provider anthropic"


def _compare(log: Any, requests: list[Any], scripted: ScriptedProvider, *, window: int, counter: TokenCounter) -> list[Any]:
    """The demo session against the common strategies; the Contextwright row prices the requests it really sent."""
    from contextwright.compare import SentRequest, compare_transcript
    from contextwright.importers._from_log import transcript_from_log
    from contextwright.replay import visible_in

    transcript = transcript_from_log(log, SESSION_ID)
    task = transcript.task
    sent = [
        SentRequest(at=at, body=body, task=None if task is None else visible_in(built.neutral, task))
        for built, body, at in zip(requests, scripted.bodies, scripted.times, strict=True)
    ]
    return list(compare_transcript(transcript, window=window, sent_by_engine=sent, counter=counter))


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
        ("peak request (engine's estimate)", f"{summary['peak_estimated_tokens']:,} tokens of {summary['window']:,}"),
        ("peak input (simulated usage)", f"{summary['peak_request_tokens']:,} tokens"),
        (
            "cache-read share (simulated, token-weighted)",
            "n/a" if summary["cache_read_share"] is None else f"{summary['cache_read_share']:.1%}",
        ),
        (
            "input cost (simulated, list prices)",
            "n/a" if summary["input_cost_usd"] is None else f"${summary['input_cost_usd']}",
        ),
        ("compactions", ", ".join(f"{k}: {v}" for k, v in summary["compactions"].items()) or "0"),
        ("pruning passes", str(summary["prune_passes"])),
        ("denied calls (revoked tool)", str(summary["denied_tool_calls"])),
        ("clock crossed midnight", "yes" if summary["crosses_midnight"] else "no"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def _summary(
    db: Path,
    model_id: str,
    provider: str,
    *,
    window: int,
    turns: int,
    events: list[Any],
    stats: Any,
    records: list[Any],
    result: Any,
    report: Path | None,
    counter: str,
) -> dict[str, Any]:
    """What the demo reports of its session, before the comparison; ``counter`` says how tokens were counted."""
    frames = [e.payload.runtime for e in events if e.type == "context.frame.recorded"]
    return {
        "store": str(db),
        "session": SESSION_ID,
        "provider": provider,
        "model": model_id,
        "window": window,
        "turns": turns,
        "events": len(events),
        "requests": stats.requests,
        "epochs": stats.epochs,
        "prefix_hashes_per_epoch": {str(k): v for k, v in sorted(stats.prefix_hashes_by_epoch.items())},
        "orphaned_tool_pairs": sum(_orphans(r.neutral) for r in result.requests),
        "counter": counter,
        "peak_request_tokens": max((r.usage.total_input for r in records if r.usage is not None), default=0),
        "peak_estimated_tokens": stats.peak_request_tokens,
        "cache_read_share": None if stats.cache_read_share is None else round(stats.cache_read_share, 4),
        "input_cost_usd": None if stats.total_cost_usd is None else str(stats.total_cost_usd.quantize(Decimal("0.0001"))),
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


def _write_demo_report(report: Path, stats: Any, records: list[Any], summary: dict[str, Any], *, turns: int, window: int) -> None:
    """The HTML report of the demo session, with the comparison when there is one (a note in ``summary`` when no plots)."""
    from contextwright.report.html import write_report

    plots = importlib.util.find_spec("matplotlib") is not None
    if not plots:
        summary["report_note"] = PLOTS_HINT
    try:
        write_report(
            report,
            stats,
            records,
            title=f"Contextwright demo: {turns} turns at a {window:,}-token window",
            comparison=summary.get("comparison"),
            comparison_caption="The demo session under each strategy (offline cache simulation, the same counter as the summary)",
            plots=plots,
        )
    except OSError as exc:
        raise UsageError(f"cannot write the report to {report}: {exc.strerror or exc}") from None


def _print_summary(summary: dict[str, Any], *, window: int, db: Path, report: Path | None) -> None:
    console.print(_table(summary))
    console.print(f"Counter: {summary['counter']}.", highlight=False)
    if "comparison" in summary:
        print_comparison(summary["comparison"], window=window, what="The demo session")
    else:
        console.print(f"No strategy comparison: {NO_OPENAI_COMPARISON}.", highlight=False)
    if "report_note" in summary:
        console.print(f"The report has no plots: {PLOTS_HINT}", markup=False, highlight=False)
    console.print(
        f"Report: [bold]{report}[/]   Inspect a request: [bold]contextwright inspect {db} --session {SESSION_ID} --request 0[/]"
    )
