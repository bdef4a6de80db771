"""What every route shares: the principal, the sessions, event JSON, documented error answers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import Request, Security
from fastapi.security import HTTPBearer

from contextwright.clock import format_instant
from contextwright.errors import ContextwrightError
from contextwright.events.catalog import ToolCall
from contextwright.events.envelope import Event
from contextwright.events.registry import encode_payload
from contextwright.runtime import Session
from contextwright.service.problems import MEDIA_TYPE, PROBLEM_TYPES
from contextwright.service.schemas import AppendOut, EventOut, ToolCallOut
from contextwright.service.sessions import Guarantees, Sessions
from contextwright.service.store import Principal

# Declares bearer auth in the OpenAPI document; the gate has already checked the key.
bearer = Security(HTTPBearer(auto_error=False, description="An API key from 'contextwright keys create TENANT'."))

_PROBLEM_SCHEMA = {
    "type": "object",
    "required": ["type", "title", "status", "detail"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "instance": {"type": "string"},
    },
}


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the problem answers a route can give (the gate's are always added)."""
    every = sorted({401, 429, 500, 503, *statuses})
    out: dict[int | str, dict[str, Any]] = {}
    for status in every:
        titles = sorted({t.title for t in PROBLEM_TYPES.values() if t.status == status})
        out[status] = {"description": "; ".join(titles), "content": {MEDIA_TYPE: {"schema": _PROBLEM_SCHEMA}}}
    return out


WRITE_PROBLEMS = problems(400, 404, 409, 413, 415, 422)
READ_PROBLEMS = problems(404, 422)


def principal(request: Request) -> Principal:
    """The caller, as the gate authenticated it."""
    return request.state.principal


def sessions_of(request: Request) -> Sessions:
    """The app's sessions."""
    return request.app.state.sessions


def event_out(event: Event) -> EventOut:
    """An event as JSON (without the log's session id, which carries the tenant)."""
    return EventOut(
        seq=event.seq,
        type=event.type,
        at=format_instant(event.at),
        payload=encode_payload(event.payload),
        payload_sha256=event.payload_sha256,
        idempotency_key=event.idempotency_key,
    )


def calls_out(calls: list[ToolCall]) -> list[ToolCallOut]:
    """Pending tool calls as JSON."""
    return [ToolCallOut(id=c.id, name=c.name, arguments=dict(c.arguments)) for c in calls]


def write(
    request: Request,
    session_id: str,
    guard: Guarantees,
    action: Callable[[Session], Any],
) -> tuple[AppendOut, bool]:
    """Run one write on the principal's session with its guarantees; return the answer and whether it is new.

    A keyed write is stored once however often it arrives. Two copies racing on two
    workers in the same instant may both be answered as new; both carry the same events.
    """
    sessions = sessions_of(request)
    record = sessions.find(principal(request), session_id)

    def once(session: Session) -> tuple[AppendOut, bool]:
        replay = sessions.replayed(session, guard)
        if replay is not None:
            stored, created = replay, False
        else:
            before = session.history.last_seq
            try:
                Sessions.check_expected(session, guard)
                action(session)
            except ContextwrightError:
                # The same request, sent twice at once to two workers: the other one stored it after
                # the lookup above. The append then conflicts, or the action already sees the other
                # copy (an answer whose tool calls are open refuses a second answer): either way
                # the write is done, and its events are the answer.
                replay = sessions.replayed(session, guard)  # None for a write without a key
                if replay is None:
                    raise
            if replay is not None:
                stored, created = replay, False
            else:
                stored, created = session.history.after(before), True
            if guard.key_base is not None:
                stored = [e for e in stored if (e.idempotency_key or "").startswith(guard.key_base + "#")]
        answer = AppendOut(
            events=[event_out(e) for e in stored],
            last_seq=session.history.last_seq,
            replayed=replay is not None,
            pending_tool_calls=calls_out(session.pending_tool_calls()),
        )
        return answer, created

    result, retries = sessions.run(record, guard, once)
    note_retries(request, retries)
    return result


def note_retries(request: Request, retries: int) -> None:
    """Tell the gate how often the operation was retried (it answers with a ``Contextwright-Retries`` header)."""
    request.state.retries = retries
