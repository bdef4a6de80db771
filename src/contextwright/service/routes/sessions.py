"""Open, list and read sessions."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request, Response

from contextwright.canonical import parse_canonical
from contextwright.errors import InvalidSessionId
from contextwright.log.base import validate_session_id
from contextwright.service.routes._common import READ_PROBLEMS, WRITE_PROBLEMS, bearer, calls_out, principal, sessions_of
from contextwright.service.schemas import OpenSessionIn, SessionList, SessionListItem, SessionOut
from contextwright.service.sessions import Sessions
from contextwright.service.store import MAX_CLIENT_SESSION_ID, Principal, RegisteredSession

router = APIRouter(prefix="/v1", tags=["sessions"], dependencies=[bearer])

SessionPath = Annotated[str, Path(min_length=1, max_length=MAX_CLIENT_SESSION_ID, description="The session id you chose.")]


def session_out(sessions: Sessions, record: RegisteredSession) -> SessionOut:
    """A session with its current state."""
    with sessions.session(record) as session:
        return SessionOut(
            session_id=record.session_id,
            created_at=record.created_at,
            model=parse_canonical(record.model),
            agent=parse_canonical(record.agent),
            last_seq=session.history.last_seq,
            requests=session.history.requests_built,
            awaiting_model=session.adapter.awaiting_model,
            pending_tool_calls=calls_out(session.pending_tool_calls()),
        )


@router.post(
    "/sessions",
    status_code=201,
    response_model=SessionOut,
    responses={200: {"model": SessionOut, "description": "The same session was open already"}, **WRITE_PROBLEMS},
)
def open_session(body: OpenSessionIn, request: Request, response: Response) -> SessionOut:
    """Open a session with an agent spec and a model; the same spec again finds it (200)."""
    sessions = sessions_of(request)
    record, created = sessions.open(
        principal(request),
        body.session_id,
        body.agent.model_dump(mode="json"),
        body.model.model_dump(mode="json", exclude_none=True),
    )
    if not created:
        response.status_code = 200
    return session_out(sessions, record)


@router.get("/sessions", response_model=SessionList, responses=READ_PROBLEMS)
def list_sessions(request: Request, who: Annotated[Principal, Depends(principal)]) -> SessionList:
    """The tenant's sessions, oldest first."""
    sessions = sessions_of(request)
    items = []
    for record in sessions.store.sessions(who.tenant):
        if not _loggable(record):
            continue
        model = parse_canonical(record.model)
        items.append(
            SessionListItem(
                session_id=record.session_id,
                created_at=record.created_at,
                model=model["id"],
                provider=model["provider"],
                last_seq=sessions.log.last_seq(record.log_session_id),
            )
        )
    return SessionList(sessions=items)


def _loggable(record: RegisteredSession) -> bool:
    """False for a registry row of an open the log refused (earlier services wrote the row first): no events can be under it."""
    try:
        validate_session_id(record.log_session_id)
    except InvalidSessionId:
        return False
    return True


@router.get("/sessions/{session_id}", response_model=SessionOut, responses=READ_PROBLEMS)
def get_session(session_id: SessionPath, request: Request) -> SessionOut:
    """A session: spec, last seq, requests built, and what it needs next."""
    sessions = sessions_of(request)
    return session_out(sessions, sessions.find(principal(request), session_id))
