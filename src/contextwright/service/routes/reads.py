"""Read a session back: events (paged), artifacts, stats and the per-request series."""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request

from contextwright.clock import format_instant
from contextwright.service.problems import Problem
from contextwright.service.routes._common import READ_PROBLEMS, bearer, event_out, principal, sessions_of
from contextwright.service.routes.sessions import SessionPath
from contextwright.service.schemas import ArtifactOut, EventPage, SeriesOut, SeriesPoint, StatsOut
from contextwright.telemetry.records import request_records, summarize

router = APIRouter(prefix="/v1/sessions/{session_id}", tags=["reading"], dependencies=[bearer])


@router.get("/events", response_model=EventPage, responses=READ_PROBLEMS)
def list_events(
    session_id: SessionPath,
    request: Request,
    after_seq: Annotated[int, Query(ge=0, le=2**62)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> EventPage:
    """The session's events after ``after_seq``, at most ``limit``."""
    sessions = sessions_of(request)
    record = sessions.find(principal(request), session_id)
    events = sessions.log.read(record.log_session_id, after_seq=after_seq, limit=limit + 1)
    page = events[:limit]
    return EventPage(
        events=[event_out(e) for e in page],
        next_after_seq=page[-1].seq if len(events) > limit else None,
    )


@router.get("/artifacts/{ref}", response_model=ArtifactOut, responses=READ_PROBLEMS)
def read_artifact(session_id: SessionPath, ref: Annotated[str, Path(max_length=80)], request: Request) -> ArtifactOut:
    """A full text the session points at (tool outputs, elided spans, archives); never another session's."""
    sessions = sessions_of(request)
    record = sessions.find(principal(request), session_id)
    # Artifacts are content-addressed store-wide: only refs this session recorded are readable through it.
    if ref not in _refs(sessions.log.read(record.log_session_id)):
        raise Problem("not-found", f"session {session_id!r} has no artifact {ref!r}")
    content = sessions.log.get_artifact(ref)
    return ArtifactOut(ref=ref, size_chars=len(content), content=content)


def _refs(events: list[Any]) -> set[str]:
    refs: set[str] = set()
    for event in events:
        if event.type == "artifact.stored":
            refs.add(event.payload.pointer.ref)
        elif event.type == "context.compacted":
            refs.update(p.ref for p in event.payload.elided)
            if event.payload.archive is not None:
                refs.add(event.payload.archive.ref)
    return refs


@router.get("/stats", response_model=StatsOut, responses=READ_PROBLEMS)
def stats(session_id: SessionPath, request: Request) -> StatsOut:
    """Requests, tokens, cache-read share, cost, compactions, yields and overflow recoveries."""
    sessions = sessions_of(request)
    record = sessions.find(principal(request), session_id)
    events = sessions.log.read(record.log_session_id)
    summary = _plain(dataclasses.asdict(summarize(events))) if events else None
    if summary is not None:
        summary["session_id"] = session_id
    return StatsOut(session_id=session_id, last_seq=events[-1].seq if events else 0, summary=summary)


@router.get("/series", response_model=SeriesOut, responses=READ_PROBLEMS)
def series(session_id: SessionPath, request: Request) -> SeriesOut:
    """One point per request built: context tokens by class, cache reads, cost, relief, for live charts."""
    sessions = sessions_of(request)
    record = sessions.find(principal(request), session_id)
    events = sessions.log.read(record.log_session_id)
    points = [
        SeriesPoint(
            index=r.request_index,
            seq=r.seq,
            at=format_instant(r.at),
            epoch=r.epoch,
            total_tokens=r.total_tokens,
            context_window=r.context_window,
            tokens_by_class=dict(r.tokens_by_class),
            pressure=r.pressure,
            yields=list(r.yields),
            changes=list(r.changes),
            compactions=r.compactions_so_far,
            overflow_recovery="compacted:overflow" in r.changes,
            input_tokens=r.input_tokens,
            cache_read_tokens=r.cache_read_tokens,
            output_tokens=r.output_tokens,
            cache_read_share=r.cache_read_share,
            cost_usd=None if r.cost_usd is None else str(r.cost_usd),
        )
        for r in request_records(events)
    ]
    return SeriesOut(session_id=session_id, last_seq=events[-1].seq if events else 0, points=points)


def _plain(value: Any) -> Any:
    """JSON values of a summary: decimals as strings (exact), instants in the log's format."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dt.datetime):
        return format_instant(value)
    return value
