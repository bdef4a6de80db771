"""Build the next request, inspect request N, compact by hand."""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast

from fastapi import APIRouter, Path, Query, Request

from contextwright.errors import UsageError
from contextwright.events.catalog import RequestBuilt
from contextwright.providers.capabilities import capabilities_for
from contextwright.providers.wire import Ttl
from contextwright.providers.wires import WIRES, default_wire, wire_named
from contextwright.runtime import BuiltRequest, Session
from contextwright.service.problems import Problem
from contextwright.service.routes._common import (
    READ_PROBLEMS,
    WRITE_PROBLEMS,
    bearer,
    event_out,
    note_retries,
    principal,
    sessions_of,
)
from contextwright.service.routes.sessions import SessionPath
from contextwright.service.schemas import (
    BuildIn,
    BuiltOut,
    CompactOut,
    DiffOut,
    InspectOut,
    MissesOut,
    MissPoint,
    PrefixIn,
    PrefixOut,
    WhyOut,
)
from contextwright.service.sessions import Guarantees, Sessions
from contextwright.telemetry._request_diff import diff_requests
from contextwright.telemetry.misses import attribute_session, engine_changes
from contextwright.telemetry.why import Explainer, artifact_reader

router = APIRouter(prefix="/v1/sessions/{session_id}", tags=["requests"], dependencies=[bearer])

_MISS_RULE_SETS: dict[str, Literal["anthropic", "openai"]] = {"anthropic": "anthropic", "openai": "openai"}
"""The providers whose cache rules the miss attribution follows, and its rule set for each."""


def _wire(name: str | None, provider: str) -> str:
    """The wire to render for, checked before anything is built: a refused render must not follow a recorded build."""
    wire = name or default_wire(provider)
    try:
        chosen = wire_named(wire)
    except UsageError as exc:
        raise Problem("invalid-request", exc.message, errors=[{"loc": ["wire"], "msg": exc.message, "type": "enum"}]) from exc
    # Each wire says which providers' models it speaks; a renderer refuses another provider's model.
    if provider not in chosen.providers:
        usable = ", ".join(w.name for w in WIRES.values() if provider in w.providers)
        raise Problem(
            "invalid-request",
            f"a {provider} model renders only to {usable}, not {wire}",
            errors=[{"loc": ["wire"], "msg": f"not a {provider} wire", "type": "enum"}],
        )
    return wire


@router.post("/requests", status_code=201, response_model=BuiltOut, responses=WRITE_PROBLEMS)
def next_request(session_id: SessionPath, body: BuildIn, request: Request) -> BuiltOut:
    """Build the next request (relieving pressure if needed), record it, and render it for ``wire``."""
    sessions = sessions_of(request)
    record = sessions.find(principal(request), session_id)
    guard = Guarantees(expected_seq=body.expected_seq)

    def build(session: Session) -> tuple[BuiltRequest, str, int]:
        wire = _wire(body.wire, session.model.provider)
        Sessions.check_expected(session, guard)
        built = session.next_request()
        return built, wire, session.history.last_seq

    (built, wire, last_seq), retries = sessions.run(record, guard, build, rederive=True)
    note_retries(request, retries)
    return BuiltOut(
        index=built.index,
        wire=wire,
        body=built.render(wire, prefix_ttl=body.prefix_ttl),
        prefix_sha256=built.prefix_sha256,
        request_sha256=built.neutral.sha256(),
        total_tokens=built.result.total_tokens,
        tokens_by_class=dict(built.result.tokens_by_class),
        pressure=built.result.pressure,
        yields=list(built.result.yields),
        last_seq=last_seq,
    )


@router.get("/requests/{index}", response_model=InspectOut, responses=READ_PROBLEMS)
def inspect_request(
    session_id: SessionPath,
    index: Annotated[int, Path(ge=0, le=10_000_000)],
    request: Request,
    wire: Annotated[
        str | None, Query(description=f"One of {', '.join(WIRES)}; default: the model's provider's default wire.")
    ] = None,
    prefix_ttl: Annotated[
        str | None, Query(pattern="^(5m|1h)$", description="Cache TTL of the prefix; default: the agent's cache_ttl.")
    ] = None,
) -> InspectOut:
    """Exactly what the model saw on request ``index``: rebuilt from the log, checked against its recorded hash."""
    sessions = sessions_of(request)
    with sessions.session(sessions.find(principal(request), session_id)) as session:
        name = _wire(wire, session.model.provider)
        count = session.history.requests_built  # from the session's facts: no read of the history
        if index >= count:
            raise Problem("not-found", f"session {session_id!r} has {count} recorded requests; there is no request {index}")
        rebuilt, record = session.history.rebuild(index)
        # Cache markers depend on the request before in the same epoch, exactly as when it was sent.
        previous = None
        if index > 0 and _recorded(session, index - 1).epoch == record.epoch:
            previous = session.history.rebuild(index - 1)[0]
        model = session.model
        # The service's agent is frozen per session, so every epoch's plan has the agent's TTL.
        # The query's pattern admits only the two TTLs a wire takes.
        ttl = cast(Ttl, prefix_ttl or session.agent.cache_ttl)
    body = wire_named(name).render(rebuilt, capabilities_for(model), previous=previous, prefix_ttl=ttl)
    return InspectOut(
        index=index,
        epoch=record.epoch,
        wire=name,
        verified=rebuilt.sha256() == record.request_sha256,
        recorded_sha256=record.request_sha256,
        rebuilt_sha256=rebuilt.sha256(),
        prefix_sha256=record.prefix_sha256,
        total_tokens=record.total_tokens,
        tokens_by_class=dict(record.tokens_by_class),
        request=rebuilt.to_dict(),
        body=body,
    )


@router.get("/requests/{index}/diff", response_model=DiffOut, responses=READ_PROBLEMS)
def diff_request(
    session_id: SessionPath,
    index: Annotated[int, Path(ge=0, le=10_000_000)],
    request: Request,
    text_chars: Annotated[int, Query(ge=0, le=100_000, description="How much of each block's text to include.")] = 600,
) -> DiffOut:
    """What changed in request ``index`` against the request before it, block by block: status, provenance, cause, cache."""
    sessions = sessions_of(request)
    with sessions.session(sessions.find(principal(request), session_id)) as session:
        _check_index(session, session_id, index)
        after = session.inspect(index)
        before = session.inspect(index - 1) if index > 0 else None
        changes = diff_requests(after, before, session.history.events, index=index)
    return DiffOut(**changes.to_dict(text_chars=text_chars))


@router.get("/why", response_model=WhyOut, responses=READ_PROBLEMS)
def why(
    session_id: SessionPath,
    request: Request,
    text: Annotated[str, Query(min_length=1, max_length=4_000, description="The text to look for (whitespace folded).")],
    index: Annotated[
        int | None, Query(alias="request", ge=0, le=10_000_000, description="The request to explain; default: the last one.")
    ] = None,
) -> WhyOut:
    """Where ``text`` entered the session's log and what became of it by request ``request``: shown, compressed,
    bounded, pruned, compacted, read back, with the pointer to the original."""
    sessions = sessions_of(request)
    with sessions.session(sessions.find(principal(request), session_id)) as session:
        count = session.history.requests_built
        if index is not None:
            _check_index(session, session_id, index)
        elif count:
            index = count - 1
        neutral = session.inspect(index) if index is not None else None
        explainer = Explainer(session.history.events, read_artifact=artifact_reader(sessions.log))
        if not text.strip():
            raise Problem(
                "invalid-request",
                "give a text to look for: it is empty once whitespace is folded",
                errors=[{"loc": ["query", "text"], "msg": "blank", "type": "value_error"}],
            )
        answer = explainer.why(text, request_index=index, request=neutral)
    return WhyOut(**answer.to_dict())


@router.get("/misses", response_model=MissesOut, responses=READ_PROBLEMS)
def misses(session_id: SessionPath, request: Request) -> MissesOut:
    """Every request's uncached input put on its causes (new content, relief pass, compaction, prefix epoch, expiry,
    ...), by the offline cache simulator of the model's provider run over the rebuilt bodies in order.

    Each request is rebuilt from the log, so this costs one rebuild per request: ask for it when it is looked at."""
    sessions = sessions_of(request)
    with sessions.session(sessions.find(principal(request), session_id)) as session:
        events = session.history.events
        model = session.model
        rule_set = _MISS_RULE_SETS.get(model.provider)
        if rule_set is None:
            known = ", ".join(sorted(_MISS_RULE_SETS))
            raise Problem(
                "invalid-operation",
                f"cache misses are attributed under the {known} cache rules only; "
                f"session {session_id!r} talks to {model.provider} ({model.id})",
            )
        renderer, caps = wire_named(default_wire(model.provider)), capabilities_for(model)
        times = {e.payload.request_index: e.at for e in events if e.type == "context.request.built"}
        bodies: list[tuple[int, Any, dict[str, Any]]] = []
        previous = None
        for index in range(session.history.requests_built):
            neutral = session.history.rebuild(index)[0]
            same_epoch = previous if previous is not None and previous.epoch == neutral.epoch else None
            bodies.append((index, times[index], renderer.render(neutral, caps, previous=same_epoch)))
            previous = neutral
        estimator = session.setup.estimator

        def count(text: str) -> int:
            return estimator.estimate(text, model=model.id)

        found = attribute_session(bodies, rule_set=rule_set, count_tokens=count, changes=engine_changes(events))
    return MissesOut(
        session_id=session_id,
        rule_set=rule_set,
        points=[
            MissPoint(
                index=index,
                uncached_tokens=a.uncached_tokens,
                by_cause=dict(a.by_cause),
                main_cause=a.main_cause,
                predicted_cache_read_tokens=a.predicted.cache_read_tokens,
            )
            for index, a in sorted(found.items())
        ],
    )


def _check_index(session: Session, session_id: str, index: int) -> None:
    count = session.history.requests_built  # from the session's facts: no read of the history
    if index >= count:
        raise Problem("not-found", f"session {session_id!r} has {count} recorded requests; there is no request {index}")


def _recorded(session: Session, index: int) -> RequestBuilt:
    """The record of an earlier request: the session keeps only the last one, so this reads the log."""
    built = [e.payload for e in session.history.events if e.type == "context.request.built"]
    record: RequestBuilt = built[index]
    return record


@router.post("/prefix", response_model=PrefixOut, responses=WRITE_PROBLEMS)
def renew_prefix(session_id: SessionPath, body: PrefixIn, request: Request) -> PrefixOut:
    """Pin the session's prefix as this release writes it, in a new epoch (SPEC P5: an explicit edit).

    A session goes on with the engine texts its plan pinned across upgrades, so this is needed
    only by one whose pinned texts this release does not know: its requests are refused with
    ``session-state`` (the prefix differs from its epoch's) until it is renewed. A prefix that
    is the pinned one records nothing."""
    sessions = sessions_of(request)
    record = sessions.find(principal(request), session_id)
    guard = Guarantees(expected_seq=body.expected_seq)

    def renew(session: Session) -> PrefixOut:
        Sessions.check_expected(session, guard)
        before = session.setup.plan
        plan = session.setup.edit_prefix(session.agent, note=body.note or "prefix renewed over HTTP")
        return PrefixOut(
            rotated=plan is not None and before is not None and plan.epoch != before.epoch,
            epoch=None if plan is None else plan.epoch,
            prefix_sha256=None if plan is None else plan.prefix_sha256,
            last_seq=session.history.last_seq,
        )

    answer, retries = sessions.run(record, guard, renew, rederive=True)
    note_retries(request, retries)
    return answer


@router.post("/compact", response_model=CompactOut, responses=WRITE_PROBLEMS)
def compact(session_id: SessionPath, request: Request) -> CompactOut:
    """Fold the history before the current run into a summary now; archive first, or refuse and change nothing."""
    sessions = sessions_of(request)

    def compact_now(session: Session) -> CompactOut:
        event = session.compact()
        return CompactOut(
            compacted=event is not None, event=None if event is None else event_out(event), last_seq=session.history.last_seq
        )

    answer, retries = sessions.run(sessions.find(principal(request), session_id), Guarantees(), compact_now, rederive=True)
    note_retries(request, retries)
    return answer
