"""``contextwright replay``: real transcripts through the engine, with what they would have cost."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.progress import Progress

from contextwright.cli._common import console, err_console, friendly_errors, print_rows
from contextwright.cli._compare import comparison_json, print_comparison
from contextwright.cli._misses import Misses
from contextwright.cli._store import STORE_FORMS, NewStore, check_reachable
from contextwright.clock import TranscriptClock
from contextwright.compare.nonces import reproducible_secret
from contextwright.errors import UsageError
from contextwright.importers import FORMATS, Transcript, load_transcripts
from contextwright.log import EventLog, open_log, parse_store_url
from contextwright.models import ResolvedModel, anthropic, openai, with_window
from contextwright.plan.plan import CACHE_TTLS, CacheTtl
from contextwright.providers.usage import Usage
from contextwright.providers.wires import default_wire
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
    store: str = typer.Option(
        "memory://",
        "--store",
        help=f"Where to record the replayed sessions (memory://, the default, keeps nothing): {STORE_FORMS}. "
        "A transcript already stored there is skipped, so running the same replay again adds nothing.",
    ),
    replace: bool = typer.Option(
        False,
        "--replace",
        help="Replay transcripts the store already holds (an interrupted replay, or one with other settings) again, "
        "as a new session; the log is append-only, so the earlier copy stays under its own id.",
    ),
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
    ttl = _checked_options(provider=provider, cache_ttl=cache_ttl, usage=usage)
    with friendly_errors():
        _check_paths(paths)
        if dump_requests is not None:
            _prepare_folder(dump_requests)
        digests = [_file_digest(p) for p in paths]
        loaded = [
            (transcript, digest)
            for path, digest in zip(paths, digests, strict=True)
            for transcript in load_transcripts([path], format=format, lenient=lenient, strict=strict)
        ]
        if not as_json:  # JSON carries the same facts per transcript ("empty", "unsupported_blocks")
            _warn_about([transcript for transcript, _ in loaded])
        model = with_window(anthropic("claude-sonnet-4-6") if provider == "anthropic" else openai("gpt-4.1"), window)
        clock = TranscriptClock(DEFAULT_START)
        check_reachable(store)
        new_store = NewStore(store)
        log = open_log(store, clock=clock)
        new_store.announce()
        settings = {"window": window, "provider": provider, "usage": usage, "cache_ttl": ttl}
        try:
            plans, notes = _plan(log, loaded, settings=settings, replace=replace)
        except BaseException:
            log.close()
            raise
        transcripts = [plan.transcript for plan in plans]  # a transcript given twice is replayed once
        secret = reproducible_secret("replay", digests, seed=seed)
        run = _Run.start(
            log,
            secret,
            store=store,
            model=model,
            clock=clock,
            ttl=ttl,
            settings=settings,
            quiet=as_json,
            dump_requests=dump_requests,
        )
        tally = _Tally(store=store, kept=parse_store_url(store)[0] != "memory")
        try:
            rows = run.all(plans, tally, shown=not as_json and console.is_terminal)
            tally.replaying = False
            comparison = None
            if compare_strategies and provider == "anthropic" and any(row["requests"] for row in rows):
                comparison = _comparison(transcripts, window=window, seed=seed, quiet=as_json)
            if report is not None and run.first_session is not None:
                _write_report(
                    report,
                    *run.first_session,
                    window=window,
                    comparison=comparison,
                    transcripts=len(transcripts),
                    attributions=run.misses.by_session.get(run.first_session[0], {}),
                )
        except KeyboardInterrupt:
            tally.interrupted(log)
            raise typer.Exit(code=130) from None
        finally:
            run.engine.close()
        if not any(row["requests"] for row in rows):
            raise UsageError("nothing to replay: no transcript holds a model call")
    if as_json:
        typer.echo(json.dumps({"transcripts": rows, "comparison": comparison}, indent=2))
        return
    for note in notes:
        console.print(note, markup=False, highlight=False)
    _print_table(rows, window=window, provider=provider, usage=usage, model=model.id, transcripts=transcripts)
    _print_comparison_notes(
        comparison, asked=compare_strategies, provider=provider, usage=usage, window=window, transcripts=len(transcripts)
    )
    if dump_requests is not None:
        _print_dump_notes(dump_requests, plans, store=store, wire=run.wire, usage=usage)
    if report is not None:
        console.print(f"Report: {report}")


def _checked_options(*, provider: str, cache_ttl: str, usage: str) -> CacheTtl:
    """The agent profile's cache TTL, once the choices that take a fixed set of values are known good (else exit 2)."""
    if provider not in ("anthropic", "openai"):
        err_console.print(f"[bold red]error:[/] --provider must be anthropic or openai, not {provider!r}")
        raise typer.Exit(code=2)
    if cache_ttl not in CACHE_TTLS:
        err_console.print(f"[bold red]error:[/] --cache-ttl must be one of {', '.join(CACHE_TTLS)}, not {cache_ttl!r}")
        raise typer.Exit(code=2)
    if usage not in ("recorded", "simulated"):
        err_console.print(f"[bold red]error:[/] --usage must be recorded or simulated, not {usage!r}")
        raise typer.Exit(code=2)
    if usage == "simulated" and provider != "anthropic":
        err_console.print("[bold red]error:[/] --usage simulated simulates the Anthropic cache; use it with --provider anthropic")
        raise typer.Exit(code=2)
    return "1h" if cache_ttl == "1h" else "5m"


def _check_paths(paths: list[Path]) -> None:
    for path in paths:
        if not path.exists():
            raise UsageError(f"no such file: {path}")
        if path.is_dir():
            raise UsageError(f"{path} is a directory; give the transcript files (for example {path}/*.jsonl)")


@dataclass(kw_only=True, slots=True)
class _Run:
    """What every transcript of one replay shares: the store, the engine, the model and its wire, the clock."""

    log: EventLog
    engine: Engine
    model: ResolvedModel
    wire: str
    clock: TranscriptClock
    ttl: CacheTtl
    settings: dict[str, Any]
    provider_usage: Callable[[BuiltRequest], Usage] | None
    misses: Misses
    dump_requests: Path | None = None
    first_session: tuple[str, list[Any]] | None = None
    """The first session with events (stored) or requests (replayed): the one the report shows."""

    @classmethod
    def start(
        cls,
        log: EventLog,
        secret: bytes,
        *,
        store: str,
        model: ResolvedModel,
        clock: TranscriptClock,
        ttl: CacheTtl,
        settings: dict[str, Any],
        quiet: bool,
        dump_requests: Path | None = None,
    ) -> _Run:
        """An engine on ``log`` with the store's envelope secret (``secret`` when the store has none yet)."""
        stored = log.setting(SECRET_SETTING, secret.hex())
        if stored != secret.hex() and not quiet:
            err_console.print(f"note: {store} keeps its own envelope secret; request bytes differ from a fresh replay")
        provider = settings["provider"]
        wire = default_wire(provider)
        return cls(
            log=log,
            engine=Engine(log, clock=clock, secret=bytes.fromhex(stored)),
            model=model,
            wire=wire,
            clock=clock,
            ttl=ttl,
            settings=settings,
            provider_usage=_simulated_usage(model.id, clock) if settings["usage"] == "simulated" else None,
            misses=Misses(model_id=model.id, provider=provider, wire=wire, window=settings["window"]),
            dump_requests=dump_requests,
        )

    def all(self, plans: list[_Plan], tally: _Tally, *, shown: bool) -> list[dict[str, Any]]:
        """One row per plan: a stored transcript read back from the store, any other one replayed."""
        rows: list[dict[str, Any]] = []
        # The bar is transient: on a console that is no terminal it would never show, yet its thread
        # would still lay it out ten times a second.
        with Progress(console=console, disable=not shown, transient=True) as progress, _young_collections():
            task = progress.add_task("Replaying", total=len(plans))
            for plan in plans:
                if plan.skip:
                    rows.append(self.stored(plan))
                    progress.advance(task)
                    continue
                rows.append(self.replayed(plan, tally))
                progress.advance(task)
                gc.collect(0)  # what only this transcript's session held is garbage now, cycles included
        return rows

    def stored(self, plan: _Plan) -> dict[str, Any]:
        """The row of a transcript the store already holds with these settings."""
        events = self.log.read(plan.session_id)
        if self.first_session is None and events:
            self.first_session = (plan.session_id, events)
        found = self.misses.stored(self.engine, plan.session_id, events)
        return _row(
            plan.transcript,
            plan.session_id,
            events,
            overflows=plan.overflows,
            stored=plan.skip,
            misses=found,
            rule_sets=self.misses.by_rule_set.get(plan.session_id),
        )

    def replayed(self, plan: _Plan, tally: _Tally) -> dict[str, Any]:
        """Replay one transcript into the store, marked complete once its last event is in, and its row."""
        tally.current = plan
        self.clock.restart(next((m.at for m in plan.transcript.messages if m.at), None))
        result = replay_transcript(
            plan.transcript,
            engine=self.engine,
            model=self.model,
            session_id=plan.session_id,
            follow_times=self.clock.follow,
            cache_ttl=self.ttl,
            provider_usage=self.provider_usage,
        )
        _mark_stored(self.log, plan, settings=self.settings, overflows=result.overflows)
        tally.current = None
        tally.done.append(plan)
        session = result.session
        if self.first_session is None and result.requests:
            self.first_session = (session.id, session.history.events)
        if self.dump_requests is not None:
            for built in result.requests:
                body = json.dumps(built.body(self.wire), indent=1, ensure_ascii=False, sort_keys=True)
                _write(self.dump_requests / f"{_safe(session.id)}-{built.index:04d}.json", body)
        found = self.misses.built(session.id, session.history.events, result.requests)
        return _row(
            plan.transcript,
            session.id,
            session.history.events,
            overflows=result.overflows,
            misses=found,
            rule_sets=self.misses.by_rule_set.get(session.id),
        )


def _comparison(transcripts: list[Transcript], *, window: int, seed: int, quiet: bool) -> list[dict[str, Any]]:
    """The same transcripts priced under common strategies (loads the comparison's modules only when asked)."""
    from contextwright.compare import compare

    with console.status("Pricing the same transcripts under common strategies") if not quiet else contextlib.nullcontext():
        return comparison_json(compare(transcripts, window=window, seed=seed))


def _print_comparison_notes(
    comparison: list[dict[str, Any]] | None, *, asked: bool, provider: str, usage: str, window: int, transcripts: int
) -> None:
    if asked and provider != "anthropic":
        console.print(
            "No comparison with common strategies: it simulates the Anthropic cache, and these requests were "
            "rendered for OpenAI (run without --provider openai to see it).",
            highlight=False,
        )
    if not comparison:
        return
    what = "One transcript" if transcripts == 1 else f"{transcripts} transcripts (totals)"
    print_comparison(comparison, window=window, what=what)
    if usage == "recorded":
        # The table's engine row heard each request's counted input as a live loop would; the replay did not.
        console.print(
            "The contextwright row runs the engine with each request's counted input reported back as usage "
            "(as a live loop does); the replay above used the recorded usage (--usage simulated to match).",
            highlight=False,
        )


def _print_dump_notes(folder: Path, plans: list[_Plan], *, store: str, wire: str, usage: str) -> None:
    skipped = sum(plan.skip for plan in plans)
    if skipped == len(plans):
        console.print(f"No request bodies written to {folder}: every transcript was already stored", highlight=False)
    else:
        console.print(f"Request bodies written to {folder}", highlight=False)
    if skipped:
        # A skipped transcript builds nothing; its requests are in the store, rebuilt by inspect.
        console.print(
            f"{skipped} already stored transcript(s) were not replayed, so their bodies are not written: "
            f"contextwright inspect {store} -s SESSION -r N --wire {wire} prints one from the store.",
            highlight=False,
        )
    if usage == "recorded" and skipped < len(plans):
        # Recorded usage belongs to the original requests and tunes nothing, so relief sized these
        # bodies with the estimator's conservative bound; a live loop hears each request's usage.
        console.print(
            "They were built without provider usage: the engine's estimates stayed at their conservative "
            "bound, so relief may start earlier than in a live loop (--usage simulated builds them as one would).",
            highlight=False,
        )


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


@dataclass(kw_only=True, slots=True)
class _Plan:
    """What the replay does with one transcript, decided from the store before any work starts."""

    transcript: Transcript
    digest: str
    """The transcript's own hash: its file's bytes and its session id there."""
    session_id: str
    skip: bool = False
    """Already stored with these settings: shown from the store, not replayed."""
    overflows: int = 0
    """For a skipped transcript: the overflows its stored replay met."""


def _plan(
    log: EventLog, loaded: list[tuple[Transcript, str]], *, settings: dict[str, Any], replace: bool
) -> tuple[list[_Plan], list[str]]:
    """One plan per distinct transcript, and a line for each one not simply replayed.

    A transcript's session id is stable: its readable id (format and session id), claimed in
    the store by the first transcript to use it; another transcript with the same readable
    id (an earlier version, or a file of the same name) gets that id and a hash of its
    content. A replay is marked complete once its last event is in: so a transcript already
    stored is skipped, and one stored only in part (an interrupted replay) or with other
    settings is refused, naming --replace, rather than appended to (its times would run
    backwards and every figure would count twice). The log is append-only: --replace
    replays into the next free id (``ID~2``, ...), and the earlier copy stays.
    """
    plans: list[_Plan] = []
    notes: list[str] = []
    refused: list[str] = []
    seen: dict[str, Transcript] = {}
    for transcript, file_digest in loaded:
        name = _name(transcript)
        digest = hashlib.sha256(f"{file_digest}\n{transcript.session_id}".encode("utf-8", "surrogatepass")).hexdigest()
        if digest in seen:
            notes.append(f"{name}: the same transcript as {_name(seen[digest])}, replayed once")
            continue
        seen[digest] = transcript
        readable = _readable_id(transcript)
        base = readable
        # The first transcript to claim an id keeps it (a setting is written once, and races have one winner).
        if log.setting(_owner_key(readable), digest) != digest:
            base = f"{readable}@{digest[:10]}"
        current, free = _generations(log, base)
        if current is None:
            plans.append(_Plan(transcript=transcript, digest=digest, session_id=base))
            if base != readable:
                notes.append(
                    f"{name}: session {readable} holds another transcript with the same id (an earlier version of "
                    f"this one?); this one is stored as {base}"
                )
            continue
        marker = log.setting(_marker_key(current), "")  # a session with events and no marker: interrupted
        recorded = json.loads(marker) if marker else None
        if replace:
            plans.append(_Plan(transcript=transcript, digest=digest, session_id=free))
            notes.append(f"{name}: replayed again as session {free}; the earlier copy {current} stays in the append-only log")
        elif recorded is not None and recorded["settings"] == settings:
            plans.append(
                _Plan(transcript=transcript, digest=digest, session_id=current, skip=True, overflows=recorded["overflows"])
            )
            notes.append(f"{name}: already stored as session {current}, skipped (--replace replays it again)")
        elif recorded is None:
            refused.append(f"{name} is partly stored as session {current} (an interrupted replay)")
        else:
            differ = ", ".join(
                f"--{k.replace('_', '-')} {recorded['settings'].get(k)} (not {settings[k]})"
                for k in settings
                if recorded["settings"].get(k) != settings[k]
            )
            refused.append(f"{name} is stored as session {current}, replayed with {differ}")
    if refused:
        raise UsageError(
            "; ".join(refused)
            + ". Nothing was replayed: add --replace to replay "
            + ("it" if len(refused) == 1 else "them")
            + " again as a new session (the log is append-only: the earlier copy stays), or give another --store"
        )
    return plans, notes


def _readable_id(transcript: Transcript) -> str:
    raw = f"{transcript.format}:{transcript.session_id}"
    return "".join(ch if ch.isprintable() else "_" for ch in raw)[:180].strip() or "replay"


def _generations(log: EventLog, base: str) -> tuple[str | None, str]:
    """The latest session replaying this transcript (None if none), and the next free id."""
    current, generation = None, 1
    while True:
        session_id = base if generation == 1 else f"{base}~{generation}"
        if log.last_seq(session_id) == 0:
            return current, session_id
        current, generation = session_id, generation + 1


def _owner_key(session_id: str) -> str:
    return "replay.owner:" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def _marker_key(session_id: str) -> str:
    return "replay.stored:" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def _mark_stored(log: EventLog, plan: _Plan, *, settings: dict[str, Any], overflows: int) -> None:
    """Record that ``plan``'s session holds its whole replay (written after its last event)."""
    value = {"settings": settings, "transcript": plan.digest, "overflows": overflows}
    log.setting(_marker_key(plan.session_id), json.dumps(value, sort_keys=True))


def _name(transcript: Transcript) -> str:
    return Path(transcript.source).name


@dataclass(kw_only=True, slots=True)
class _Tally:
    """Which transcripts a replay has stored, to say so when it is interrupted."""

    store: str
    kept: bool
    done: list[_Plan] = field(default_factory=list)
    current: _Plan | None = None
    replaying: bool = True

    def interrupted(self, log: EventLog) -> None:
        """Say on stderr what an interrupted replay left in the store."""
        say = err_console.print
        if not self.kept:
            say("Interrupted: nothing was kept (the store is memory://).", markup=False, highlight=False)
            return
        if not self.replaying:
            say(f"Interrupted while pricing the comparison; every transcript is stored in {self.store}.", markup=False)
            return
        stored = ", ".join(f"{_name(p.transcript)} ({p.session_id})" for p in self.done) or "none"
        say(f"Interrupted. Stored completely in {self.store}: {stored}.", markup=False, highlight=False)
        plan = self.current
        if plan is not None and log.last_seq(plan.session_id) > 0:
            say(
                f"{_name(plan.transcript)} was interrupted: partly stored as session {plan.session_id}. "
                "Run the same command again with --replace to replay it whole as a new session.",
                markup=False,
                highlight=False,
            )
        elif plan is not None:
            say(f"{_name(plan.transcript)} was interrupted before anything of it was stored.", markup=False)


def _row(
    transcript: Transcript,
    session_id: str,
    events: list[Any],
    *,
    overflows: int,
    stored: bool = False,
    misses: dict[int, Any] | None = None,
    rule_sets: dict[str, Any] | None = None,
) -> dict[str, Any]:
    from contextwright.pricing.cache_sim.attribution import CAUSES
    from contextwright.telemetry.misses import session_misses

    stats = summarize(events) if events else None  # a transcript can hold no messages at all
    uncached, by_cause = session_misses((misses or {}).values())
    return {
        "file": transcript.source,
        "format": transcript.format,
        "session": session_id,
        "stored_before": stored,
        "messages": len(transcript.messages),
        "requests": stats.requests if stats else 0,
        "overflows": overflows,
        "peak_request_tokens": stats.peak_request_tokens if stats else 0,
        "compactions": sum(stats.compactions_by_trigger.values()) if stats else 0,
        "prunes": stats.prunes if stats else 0,
        "skipped_records": transcript.skipped,
        "unsupported_blocks": dict(transcript.unsupported_blocks),
        "cache_read_share": None if stats is None or stats.cache_read_share is None else round(stats.cache_read_share, 4),
        "cost_usd": None if stats is None or stats.total_cost_usd is None else str(round(stats.total_cost_usd, 4)),
        "empty": not _has_conversation(transcript),
        "uncached_input_tokens": uncached if misses else None,
        "uncached_by_cause": {cause: by_cause[cause] for cause in CAUSES if cause in by_cause} if misses else None,
        "cache_by_rule_set": rule_sets,
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


def _print_table(
    rows: list[dict[str, Any]], *, window: int, provider: str, usage: str, model: str, transcripts: list[Transcript]
) -> None:
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
        "uncached",
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
            "n/a" if row["uncached_input_tokens"] is None else f"{row['uncached_input_tokens']:,}",
        ]
        if len(headers) > 11:
            line.append(str(row["skipped_records"]))
        cells.append(line)
    if usage == "simulated":
        how = "cache read and cost simulated offline for these requests (Anthropic cache rules)"
    else:
        how = "cache read and cost from the usage the transcripts recorded"
    title = f"Replayed at a {window:,}-token window ({provider} wire); {how}"
    print_rows(headers, cells, title=title, numeric=headers[2:4] + headers[4:])
    _print_causes(rows, provider=provider)
    recorded = sorted({m.model for t in transcripts for m in t.messages if m.role == "assistant" and m.model})
    priced = any(row["cost_usd"] is not None for row in rows)
    if usage == "recorded" and priced and any(m != model for m in recorded):
        console.print(
            f"The cost prices the recorded token counts at the list prices of {model}, the model these requests "
            f"were built for; the transcripts recorded {', '.join(recorded[:3])}{', ...' if len(recorded) > 3 else ''}, "
            "so it is not what they cost.",
            highlight=False,
        )


def _print_causes(rows: list[dict[str, Any]], *, provider: str) -> None:
    """The uncached input of every transcript together, by cause, as shares of it."""
    total = sum(row["uncached_input_tokens"] or 0 for row in rows)
    if not total:
        return
    by_cause: dict[str, int] = {}
    for row in rows:
        for cause, tokens in (row["uncached_by_cause"] or {}).items():
            by_cause[cause] = by_cause.get(cause, 0) + tokens
    parts = ", ".join(f"{cause} {tokens / total:.1%}" for cause, tokens in sorted(by_cause.items(), key=lambda kv: -kv[1]))
    console.print(
        f"Uncached input, {total:,} tokens ({provider} cache rules, offline simulation), by cause: {parts}",
        highlight=False,
    )


def _write_report(
    report: Path,
    session_id: str,
    events: list[Any],
    *,
    window: int,
    comparison: Any,
    transcripts: int,
    attributions: dict[int, Any] | None = None,
) -> None:
    from contextwright.report.html import write_report
    from contextwright.telemetry.misses import with_misses

    if transcripts == 1:
        caption = "Each strategy on this transcript (offline cache simulation)"
    else:
        caption = f"Each strategy on all {transcripts} transcripts replayed together: totals, not this session alone"
    plots = _has_matplotlib()
    try:
        records = with_misses(request_records(events), attributions or {})
        write_report(
            report,
            summarize(events, records=records),
            records,
            title=f"Replay of {session_id} at {window:,} tokens",
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
    from contextwright.pricing.cache_sim import SimRequest

    # One simulator for the whole run, as one provider account serves every session.
    simulator = CacheRules().simulator(TokenCounter(model_id, counting="o200k"))

    def report(built: BuiltRequest) -> Usage:
        return simulator.request(SimRequest(at=clock.now(), body=built.anthropic())).usage

    return report
