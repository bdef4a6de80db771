"""Tenants' sessions on the runtime: find, open, and run one operation with its guarantees.

Every HTTP request runs on a :class:`~contextwright.runtime.Session` that has read the
log's tail first: nothing a request depends on lives only in the worker.
``expected_seq`` and idempotency keys are enforced on the log itself (see
:class:`GuardedLog`), so they hold across workers and across retries. Each session is
opened on a guarded log of its own, and an operation is bound to that log explicitly
(:meth:`GuardedLog.guarding`): the runtime appends through the log it was given, and
nothing reaches it through ambient state.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from contextwright.assembly.envelope import FRAMING_TEXT
from contextwright.budget.estimator import TokenEstimator
from contextwright.canonical import canonical_json, content_hash, parse_canonical
from contextwright.clock import Clock
from contextwright.derive._surface import Surface
from contextwright.errors import (
    IdempotencyConflict,
    MalformedPayload,
    PayloadLimitExceeded,
    SeqConflict,
    StorageUnavailable,
    UsageError,
)
from contextwright.events.catalog import CompactionTrigger
from contextwright.events.envelope import Event, NewEvent
from contextwright.events.limits import MAX_PAYLOAD_DEPTH, check_payload
from contextwright.log.base import ArtifactRow, EventLog, PreparedEvent, StoredCheckpoint, StoredRow, VerifyReport
from contextwright.models import ResolvedModel, resolve
from contextwright.plan.plan import DEFAULT_CACHE_TTL
from contextwright.relief.compactor import CompactionResult, Compactor
from contextwright.relief.compactor import compact as default_compact
from contextwright.runtime import AgentSpec, Engine, Session, Tool
from contextwright.runtime.engine_texts import is_engine_framing
from contextwright.service.errors import LeaseBusy, SessionNotFound
from contextwright.service.leases import Leases
from contextwright.service.store import Principal, RegisteredSession, ServiceStore

T = TypeVar("T")

MAX_RETRIES = 8
"""Retries of one operation after lost database connections, before the client is told (503)."""
MAX_CONFLICT_RETRIES = 64
"""Retries of one operation that keeps losing seq races and is safe to run again, before the client
is told (409). Generous: two workers writing one session as fast as they can made a write lose 5 to
7 times in a row routinely, and more now and then, and a 409 the client did not ask for (it named
no seq) only makes it retry itself."""
CONFLICT_BACKOFF_CAP = 0.05
"""Longest pause, in seconds, between two attempts after a seq conflict: short, so that a write that
lost several times is not left waiting while the writers that won keep writing."""


_STORED_KEY_REST = re.compile(r"[0-9a-f]{16}#\d+\.\d+\Z")
"""What follows ``<client key>:`` in a stored idempotency key: the body's fingerprint, then the event's batch position."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Guarantees:
    """What the client asked this write to hold to."""

    expected_seq: int | None = None
    idempotency_key: str | None = None
    fingerprint: str = ""
    """Hash of the operation and its body: the same key with another body is a conflict."""

    @property
    def key_base(self) -> str | None:
        """The prefix of every idempotency key this write stores: the client's key and the body's fingerprint."""
        return None if self.idempotency_key is None else f"{self.idempotency_key}:{self.fingerprint[7:23]}"


def guarantees(operation: str, body: Any, *, expected_seq: int | None, idempotency_key: str | None) -> Guarantees:
    """The guarantees of one write; the body is fingerprinted without the two guarantee fields."""
    plain = {k: v for k, v in body.items() if k not in ("expected_seq", "idempotency_key")}
    return Guarantees(expected_seq=expected_seq, idempotency_key=idempotency_key, fingerprint=content_hash([operation, plain]))


class Operation:
    """One operation's guarantees, where its next append must land, and what it holds."""

    def __init__(self, guarantees: Guarantees, *, chained: bool) -> None:
        self.session_id: str | None = None
        """The log session the operation is on; appends to other sessions (child runs) pass unguarded."""
        self.key = guarantees.key_base
        self.position: int | None = guarantees.expected_seq
        """Where the next append must land: the client's seq, else the seq read when the operation began."""
        self.chained = chained
        """Every append must follow the one before (the operation derives each from what it read)."""
        self.batch = 0
        self.attempted = 0
        """Appends tried (a failed one may still have been stored)."""
        self.appended = 0
        """Appends that landed."""
        self.leases = ExitStack()
        """Leases taken during the operation, released when it ends."""
        self.held: set[str] = set()
        """The names of those leases."""


class GuardedLog(EventLog):
    """The engine's log in the service: an operation's appends land where it read the log to be,
    and every event it appends carries a key derived from its idempotency key.

    The session appends after the seq it just read; checking that seq against the
    operation's position inside the log's own optimistic append makes the check atomic:
    the first append must land on the client's ``expected_seq`` (or, without one, on the
    seq the operation began from), and a chained operation's later appends each right
    after the one before. So a decision made on what one worker read never lands after
    another worker's write.

    One guarded log serves one cached session (over the worker's shared inner log), and
    that session runs one operation at a time: :attr:`operation` is the one bound by
    :meth:`guarding`, explicitly, for the operation's length; outside it, appends pass
    through unchanged.
    """

    def __init__(self, inner: EventLog) -> None:
        super().__init__(clock=inner.clock)
        self.inner = inner
        self.operation: Operation | None = None
        """The operation in progress on this log, bound by :meth:`guarding`; None between operations."""

    @contextmanager
    def guarding(self, guarantees: Guarantees, *, chained: bool = False) -> Iterator[Operation]:
        """Appends inside the block hold to ``guarantees``; leases taken in it are released at its end.

        One operation at a time: binding a second before the first ended is a :class:`UsageError`
        (two operations on one session must be serialised by the caller)."""
        if self.operation is not None:
            raise UsageError("an operation is already in progress on this guarded log")
        operation = self.operation = Operation(guarantees, chained=chained)
        try:
            with operation.leases:
                yield operation
        finally:
            self.operation = None

    def append(self, session_id: str, events: Iterable[Any], *, expected_seq: int) -> list[Event]:
        """The inner log's append, held to the bound operation's guarantees."""
        batch = list(events)
        operation = self.operation
        if operation is None or operation.session_id not in (None, session_id):
            return self.inner.append(session_id, batch, expected_seq=expected_seq)
        wanted = operation.position
        if wanted is not None and (operation.appended == 0 or operation.chained) and wanted != expected_seq:
            raise SeqConflict(session_id, expected_seq=wanted, actual_seq=expected_seq)
        if operation.key is not None:
            operation.batch += 1
            batch = [
                NewEvent.of(e.payload if isinstance(e, NewEvent) else e, idempotency_key=f"{operation.key}#{operation.batch}.{i}")
                for i, e in enumerate(batch)
            ]
        operation.attempted += 1
        stored = self.inner.append(session_id, batch, expected_seq=expected_seq)
        operation.appended += 1
        operation.position = max([expected_seq, *(e.seq for e in stored)])
        return stored

    def sessions(self) -> list[str]:
        """The inner log's sessions."""
        return self.inner.sessions()

    def _append(self, session_id: str, events: Sequence[PreparedEvent], *, expected_seq: int) -> list[Event]:
        raise AssertionError("GuardedLog.append delegates whole appends to the inner log")

    def _read(self, session_id: str, *, after_seq: int, limit: int | None) -> list[StoredRow]:
        return self.inner._read(session_id, after_seq=after_seq, limit=limit)

    def _read_keyed(self, session_id: str, key_prefix: str) -> list[StoredRow]:
        return self.inner._read_keyed(session_id, key_prefix)

    def _last_seq(self, session_id: str) -> int:
        return self.inner._last_seq(session_id)

    def _put_artifact(self, ref: str, kind: str, content: str) -> None:
        self.inner._put_artifact(ref, kind, content)

    def _get_artifact(self, ref: str) -> str | None:
        return self.inner._get_artifact(ref)

    def _setting(self, key: str, default: str) -> str:
        return self.inner._setting(key, default)

    def verify(self) -> VerifyReport:
        """The inner log's verify."""
        return self.inner.verify()

    def _event_session_ids(self) -> list[str]:
        return self.inner._event_session_ids()

    def _artifact_rows(self) -> Iterator[ArtifactRow]:
        return self.inner._artifact_rows()

    def _index_state(self, session_id: str) -> tuple[dict[str, bool], dict[int, str], int]:
        return self.inner._index_state(session_id)

    def _put_checkpoint(self, checkpoint: StoredCheckpoint) -> None:
        self.inner._put_checkpoint(checkpoint)

    def _get_checkpoint(self, session_id: str) -> StoredCheckpoint | None:
        return self.inner._get_checkpoint(session_id)

    def _checkpoint_rows(self) -> Iterator[StoredCheckpoint]:
        return self.inner._checkpoint_rows()


class LeasedCompactor:
    """A compactor that first takes the session's compaction lease, for the rest of the operation.

    With the lease held it checks that the log has not moved since the operation read it
    (another worker may have compacted while this one waited); if it has, the operation
    is retried on the new tail instead of folding stale history.
    """

    def __init__(self, inner: Compactor, *, leases: Leases, log: GuardedLog, session_id: str, wait: float) -> None:
        self.inner = inner
        self.leases = leases
        self.log = log
        self.session_id = session_id
        self.wait = wait

    def __call__(self, surface: Surface, *, epoch: int, trigger: CompactionTrigger, **options: Any) -> CompactionResult:
        operation = self.log.operation
        name = f"compact:{self.session_id}"
        if operation is not None and name not in operation.held:
            lease = self.leases.acquire(name, wait=self.wait)
            if lease is None:
                raise LeaseBusy(
                    f"session {self.session_id!r} is being compacted by another worker", session_id=self.session_id, lease=name
                )
            operation.leases.enter_context(lease)
            operation.held.add(name)
            actual = self.log.last_seq(self.session_id)
            if operation.position is not None and actual != operation.position:
                raise SeqConflict(self.session_id, expected_seq=operation.position, actual_seq=actual)
        return self.inner(surface, epoch=epoch, trigger=trigger, **options)


def agent_spec(data: dict[str, Any]) -> AgentSpec:
    """The agent spec of a registered session."""
    options: dict[str, Any] = {}
    if data.get("framing") is not None:
        options["framing"] = data["framing"]
    if data.get("cache_ttl") is not None:
        options["cache_ttl"] = data["cache_ttl"]
    return AgentSpec(
        policy=data["policy"],
        instructions=data.get("instructions", ""),
        tools=tuple(Tool(t["name"], t["description"], t.get("input_schema")) for t in data.get("tools", ())),
        control_tools=data.get("control_tools", True),
        **options,
    )


_PLAN_CREATED = "context.plan.created"
_PLAN_TOOLS_PATH = re.compile(r"payload\.plan\.prefix\.tools\[(\d+)\]")
_SCHEMA_DEPTH = MAX_PAYLOAD_DEPTH - 5
"""How deep a tool's input schema may nest, itself included: the plan event holds it five levels down."""


def _unrecordable(spec: AgentSpec, error: MalformedPayload) -> str:
    """What in the agent the plan event cannot hold, said in the agent's terms."""
    problem = error.fields["problem"]
    match = _PLAN_TOOLS_PATH.match(error.fields["path"])
    if match is not None and int(match.group(1)) < len(spec.tools):
        name = spec.tools[int(match.group(1))].name
        if isinstance(error, PayloadLimitExceeded) and error.fields.get("limit") == MAX_PAYLOAD_DEPTH:
            return (
                f"tool {name!r}: input_schema is nested deeper than {_SCHEMA_DEPTH} levels, more than the session's plan can hold"
            )
        return f"tool {name!r} cannot be recorded in the session's plan: {problem}"
    return f"the agent cannot be recorded in the session's plan: {error.message}"


def resolved_model(data: dict[str, Any]) -> ResolvedModel:
    """Resolve a model body (provider, id, overrides) against the dated model table."""
    overrides = {k: v for k, v in data.items() if k not in ("provider", "id") and v is not None}
    return resolve(data["provider"], data["id"], **overrides)


@dataclass(frozen=True, kw_only=True, slots=True)
class _Cached:
    """A session a worker keeps: the lock its operations take in turn, and the guarded log it appends through."""

    lock: threading.Lock
    session: Session
    log: GuardedLog


class Sessions:
    """The tenants' sessions in one store."""

    def __init__(
        self,
        *,
        log: EventLog,
        store: ServiceStore,
        clock: Clock,
        estimator: TokenEstimator,
        secret: bytes,
        leases: Leases | None = None,
        compactor: Compactor = default_compact,
        lease_wait: float = 10.0,
        cache_size: int = 256,
        cache_events: int = 30_000,
    ) -> None:
        self.log = log
        """The worker's log, shared: each cached session appends through a :class:`GuardedLog` of its own over it."""
        self.store = store
        self.clock = clock
        self.estimator = estimator
        self.secret = secret
        self.leases = leases
        self.compactor = compactor
        self.lease_wait = lease_wait
        """How long an operation that needs to compact waits for another worker's compaction of the session."""
        self.cache_size = cache_size
        """Sessions a worker keeps between requests, at most."""
        self.cache_events = cache_events
        """Events those sessions hold between them, at most (a few KiB each as folded), so that what
        the cache keeps is bounded by memory as well as by count, however long the sessions grow."""
        self._cache: OrderedDict[str, _Cached] = OrderedDict()
        self._cache_lock = threading.Lock()

    def open(
        self, principal: Principal, session_id: str, agent: dict[str, Any], model: dict[str, Any]
    ) -> tuple[RegisteredSession, bool]:
        """Register the session (validating id, spec and model first); the same spec again finds it.

        Everything the session will record about its setup is checked before the registry row
        is written: a refused open writes nothing.
        """
        # Defaults spelled out, so a body that omits them and one that repeats them are the same spec;
        # the default cache TTL left out, so sessions opened before the agent had one keep their spec.
        agent = {**agent, "framing": self._framing(principal, session_id, agent.get("framing"))}
        if agent.get("cache_ttl") in (None, DEFAULT_CACHE_TTL):
            agent.pop("cache_ttl", None)
        spec = agent_spec(agent)
        prefix = spec.prefix()  # duplicate tool names and other spec errors surface now, not at the first request
        try:
            # The plan event holds the prefix at this depth (payload.plan.prefix): what it cannot
            # hold (a tool schema nested too deep, text that is not valid Unicode) is refused now,
            # not by every build after the session was opened.
            check_payload(_PLAN_CREATED, {"plan": {"prefix": prefix.content()}})
        except MalformedPayload as exc:
            raise UsageError(_unrecordable(spec, exc), path=exc.fields["path"]) from exc
        resolved = resolved_model(model)
        agent_json = canonical_json(agent)
        model_json = canonical_json(resolved.to_dict())
        return self.store.register_session(
            principal.tenant,
            session_id,
            agent=agent_json,
            model=model_json,
            spec_sha256=content_hash([agent_json, model_json]),
        )

    def _framing(self, principal: Principal, session_id: str, framing: str | None) -> str:
        """The framing a body asks for, spelled out: the engine's unless the body brings its own.

        The engine's framing in any version stands for the engine's: a session registered before
        an upgrade reworded it keeps the words it was registered with, so the same body (or a
        newer client's, which spells out its own) finds it again instead of another spec.
        """
        if framing and not is_engine_framing(framing):
            return framing
        stored = self.store.session(principal.tenant, session_id)
        registered = parse_canonical(stored.agent).get("framing") if stored is not None else None
        return registered if isinstance(registered, str) and is_engine_framing(registered) else FRAMING_TEXT

    def find(self, principal: Principal, session_id: str) -> RegisteredSession:
        """The principal's session; another tenant's reads exactly like a missing one."""
        record = self.store.session(principal.tenant, session_id)
        if record is None:
            raise SessionNotFound(f"no session {session_id!r}", session_id=session_id)
        return record

    @contextmanager
    def session(self, record: RegisteredSession, guard: Guarantees | None = None) -> Iterator[Session]:
        """The runtime session of ``record`` for one operation, whose appends hold to ``guard``."""
        with self.operation(record, guard) as (session, _):
            yield session

    @contextmanager
    def operation(
        self, record: RegisteredSession, guard: Guarantees | None = None, *, chained: bool = False
    ) -> Iterator[tuple[Session, Operation]]:
        """The runtime session of ``record`` and the operation its appends belong to.

        Sessions are cached per worker, one operation at a time each: a cached session
        reads the log's tail before every operation (any worker may have appended), so
        the cache saves re-reading and re-deciding the past, never decides anything.
        """
        cached = self._cached(record)
        session = cached.session
        try:
            with cached.lock, cached.log.guarding(guard or Guarantees(), chained=chained) as operation:
                session.history.after(session.history.last_seq)  # reads the tail another worker may have appended
                operation.session_id = session.id
                if operation.position is None:
                    operation.position = session.history.last_seq
                yield session, operation
        finally:
            with self._cache_lock:
                self._evict()  # the session may have grown: the bound holds between operations

    def run(
        self, record: RegisteredSession, guard: Guarantees, action: Callable[[Session], T], *, rederive: bool = False
    ) -> tuple[T, int]:
        """Run ``action`` as one operation, again on the new tail when another worker got there first.

        A conflict is retried only where that is safe: the client named no ``expected_seq``,
        and either nothing of the operation was stored yet, or the operation derives each
        step from the log (``rederive``: building a request, compacting), so a retry picks
        up from what is stored. A lost database connection is retried while no append was
        tried. Otherwise the error goes to the client (409 with the current seq, or 503).
        Returns the result and the number of retries.
        """
        retries = 0
        while True:
            operation: Operation | None = None
            try:
                with self.operation(record, guard, chained=rederive) as (session, operation):
                    return action(session), retries
            except SeqConflict:
                safe = guard.expected_seq is None and (rederive or (operation is not None and operation.appended == 0))
                if not safe or retries >= MAX_CONFLICT_RETRIES:
                    raise
                pause = CONFLICT_BACKOFF_CAP
            except StorageUnavailable:
                if (operation is not None and operation.attempted > 0 and not rederive) or retries >= MAX_RETRIES:
                    raise
                pause = 0.2
            retries += 1
            # Jittered backoff: two workers that collided should not collide again in step.
            time.sleep(random.uniform(0, min(pause, 0.004 * 2**retries)))

    def _cached(self, record: RegisteredSession) -> _Cached:
        key = record.log_session_id
        with self._cache_lock:
            entry = self._cache.get(key)
            if entry is not None:
                self._cache.move_to_end(key)
                return entry
        # The session's own guarded log: its operations are bound to it, and to no other session's.
        guarded = GuardedLog(self.log)
        engine = Engine(guarded, clock=self.clock, estimator=self.estimator, secret=self.secret)
        session = engine.session(
            key,
            agent=agent_spec(parse_canonical(record.agent)),
            model=ResolvedModel.from_dict(parse_canonical(record.model)),
        )
        if self.leases is not None:
            session.setup.compactor = LeasedCompactor(
                self.compactor, leases=self.leases, log=guarded, session_id=key, wait=self.lease_wait
            )
        else:
            session.setup.compactor = self.compactor
        with self._cache_lock:
            entry = self._cache.setdefault(key, _Cached(lock=threading.Lock(), session=session, log=guarded))
            self._cache.move_to_end(key)
            self._evict()
        return entry

    def _evict(self) -> None:
        """Drop the least recently used sessions while the cache holds too many, or too many events.

        The session just used (the last) always stays. A dropped session that is still in an
        operation finishes it; the next request reads the session from the store again.
        """
        held = sum(entry.session.history.last_seq for entry in self._cache.values())
        while len(self._cache) > 1 and (len(self._cache) > self.cache_size or held > self.cache_events):
            _, dropped = self._cache.popitem(last=False)
            held -= dropped.session.history.last_seq

    def cached(self) -> list[str]:
        """The log ids of the sessions this worker keeps, least recently used first (for tests and monitoring)."""
        with self._cache_lock:
            return list(self._cache)

    def replayed(self, session: Session, guard: Guarantees) -> list[Event] | None:
        """The events an earlier request with this idempotency key stored, or None if there was none.

        Raises :class:`IdempotencyConflict` when the key was used with another body.
        """
        if guard.idempotency_key is None:
            return None
        base, prefix = guard.key_base, f"{guard.idempotency_key}:"
        # Looked up in the log's key index: a session reopened from a checkpoint keeps its history unread.
        # A client key may itself hold ":" (a write keyed "a:x" stores "a:x:<fingerprint>#…"), so only keys whose
        # rest is exactly a fingerprint and a batch position belong to this client key.
        found = [
            e for e in self.log.read_keyed(session.id, prefix) if _STORED_KEY_REST.match(e.idempotency_key or "", len(prefix))
        ]
        if not found:
            return None
        if any(e.idempotency_key is None or not e.idempotency_key.startswith(f"{base}#") for e in found):
            raise IdempotencyConflict(session.id, guard.idempotency_key, "was used for a request with a different body")
        if found[-1].seq > session.history.last_seq:
            # Another worker stored them after this operation synced: catch up, so the answer's last seq covers them.
            session.history.after(session.history.last_seq)
        return found

    @staticmethod
    def check_expected(session: Session, guard: Guarantees) -> None:
        """Fail early when the client's seq is already stale (the log re-checks it atomically)."""
        if guard.expected_seq is not None and guard.expected_seq != session.history.last_seq:
            raise SeqConflict(session.id, expected_seq=guard.expected_seq, actual_seq=session.history.last_seq)
