"""Tenants' sessions on the runtime: find, open, and run one operation with its guarantees.

Every HTTP request runs on a :class:`~contextwright.runtime.Session` that has read the
log's tail first: nothing a request depends on lives only in the worker.
``expected_seq`` and idempotency keys are enforced on the log itself (see
:class:`GuardedLog`), so they hold across workers and across retries.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from contextwright.assembly.envelope import FRAMING_TEXT
from contextwright.budget.estimator import TokenEstimator
from contextwright.canonical import canonical_json, content_hash, parse_canonical
from contextwright.clock import Clock
from contextwright.errors import IdempotencyConflict, SeqConflict
from contextwright.events.envelope import Event, NewEvent
from contextwright.log.base import ArtifactRow, EventLog, PreparedEvent, StoredRow, VerifyReport
from contextwright.models import ResolvedModel, resolve
from contextwright.runtime import AgentSpec, Engine, Session, Tool
from contextwright.service.errors import SessionNotFound
from contextwright.service.store import Principal, RegisteredSession, ServiceStore


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


class _Guard:
    """One operation's guarantees, and how far the operation got."""

    def __init__(self, guarantees: Guarantees) -> None:
        self.expected = guarantees.expected_seq
        self.key = guarantees.key_base
        self.batch = 0


_CURRENT: ContextVar[_Guard | None] = ContextVar("contextwright_service_guard", default=None)


class GuardedLog(EventLog):
    """The engine's log in the service: the current operation's first append must land on its
    ``expected_seq``, and every event it appends carries a key derived from its idempotency key.

    The session appends after the seq it just read; checking that seq against the
    client's inside the log's own optimistic append makes the check atomic. The
    operation's guarantees live in a context variable, so one log (and the sessions
    cached on it) serves every request thread.
    """

    def __init__(self, inner: EventLog) -> None:
        super().__init__(clock=inner.clock)
        self.inner = inner

    @contextmanager
    def guarding(self, guarantees: Guarantees) -> Iterator[None]:
        """Appends inside the block hold to ``guarantees``."""
        token = _CURRENT.set(_Guard(guarantees))
        try:
            yield
        finally:
            _CURRENT.reset(token)

    def append(self, session_id: str, events: Iterable[Any], *, expected_seq: int) -> list[Event]:
        """The inner log's append, held to the current operation's guarantees."""
        batch = list(events)
        guard = _CURRENT.get()
        if guard is not None and guard.expected is not None:
            wanted, guard.expected = guard.expected, None
            if wanted != expected_seq:
                raise SeqConflict(session_id, expected_seq=wanted, actual_seq=expected_seq)
        if guard is not None and guard.key is not None:
            guard.batch += 1
            batch = [
                NewEvent.of(e.payload if isinstance(e, NewEvent) else e, idempotency_key=f"{guard.key}#{guard.batch}.{i}")
                for i, e in enumerate(batch)
            ]
        return self.inner.append(session_id, batch, expected_seq=expected_seq)

    def sessions(self) -> list[str]:
        """The inner log's sessions."""
        return self.inner.sessions()

    def _append(self, session_id: str, events: Sequence[PreparedEvent], *, expected_seq: int) -> list[StoredRow]:
        raise AssertionError("GuardedLog.append delegates whole appends to the inner log")

    def _read(self, session_id: str, *, after_seq: int, limit: int | None) -> list[StoredRow]:
        return self.inner._read(session_id, after_seq=after_seq, limit=limit)

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


def agent_spec(data: dict[str, Any]) -> AgentSpec:
    """The agent spec of a registered session."""
    options: dict[str, Any] = {}
    if data.get("framing") is not None:
        options["framing"] = data["framing"]
    return AgentSpec(
        policy=data["policy"],
        instructions=data.get("instructions", ""),
        tools=tuple(Tool(t["name"], t["description"], t.get("input_schema")) for t in data.get("tools", ())),
        control_tools=data.get("control_tools", True),
        **options,
    )


def resolved_model(data: dict[str, Any]) -> ResolvedModel:
    """Resolve a model body (provider, id, overrides) against the dated model table."""
    overrides = {k: v for k, v in data.items() if k not in ("provider", "id") and v is not None}
    return resolve(data["provider"], data["id"], **overrides)


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
        cache_size: int = 256,
    ) -> None:
        self.log = GuardedLog(log)
        self.store = store
        self.clock = clock
        self.estimator = estimator
        self.secret = secret
        self.cache_size = cache_size
        self._cache: OrderedDict[str, tuple[threading.Lock, Session]] = OrderedDict()
        self._cache_lock = threading.Lock()

    def open(
        self, principal: Principal, session_id: str, agent: dict[str, Any], model: dict[str, Any]
    ) -> tuple[RegisteredSession, bool]:
        """Register the session (validating spec and model first); the same spec again finds it."""
        # Defaults spelled out, so a body that omits them and one that repeats them are the same spec.
        agent = {**agent, "framing": agent.get("framing") or FRAMING_TEXT}
        spec = agent_spec(agent)
        spec.prefix()  # duplicate tool names and other spec errors surface now, not at the first request
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

    def find(self, principal: Principal, session_id: str) -> RegisteredSession:
        """The principal's session; another tenant's reads exactly like a missing one."""
        record = self.store.session(principal.tenant, session_id)
        if record is None:
            raise SessionNotFound(f"no session {session_id!r}", session_id=session_id)
        return record

    @contextmanager
    def session(self, record: RegisteredSession, guard: Guarantees | None = None) -> Iterator[Session]:
        """The runtime session of ``record`` for one operation, whose appends hold to ``guard``.

        Sessions are cached per worker, one operation at a time each: a cached session
        reads the log's tail before every operation (any worker may have appended), so
        the cache saves re-reading and re-deciding the past, never decides anything.
        """
        lock, session = self._cached(record)
        with lock, self.log.guarding(guard or Guarantees()):
            session.events  # noqa: B018 - reading them syncs the tail another worker may have appended
            yield session

    def _cached(self, record: RegisteredSession) -> tuple[threading.Lock, Session]:
        key = record.log_session_id
        with self._cache_lock:
            entry = self._cache.get(key)
            if entry is not None:
                self._cache.move_to_end(key)
                return entry
        engine = Engine(self.log, clock=self.clock, estimator=self.estimator, secret=self.secret)
        session = engine.session(
            key,
            agent=agent_spec(parse_canonical(record.agent)),
            model=ResolvedModel.from_dict(parse_canonical(record.model)),
        )
        with self._cache_lock:
            entry = self._cache.setdefault(key, (threading.Lock(), session))
            self._cache.move_to_end(key)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return entry

    def replayed(self, session: Session, guard: Guarantees) -> list[Event] | None:
        """The events an earlier request with this idempotency key stored, or None if there was none.

        Raises :class:`IdempotencyConflict` when the key was used with another body.
        """
        if guard.idempotency_key is None:
            return None
        base, prefix = guard.key_base, f"{guard.idempotency_key}:"
        found = [e for e in session.events if e.idempotency_key is not None and e.idempotency_key.startswith(prefix)]
        if not found:
            return None
        if any(not e.idempotency_key.startswith(f"{base}#") for e in found):  # type: ignore[union-attr]
            raise IdempotencyConflict(session.id, guard.idempotency_key, "was used for a request with a different body")
        return found

    @staticmethod
    def check_expected(session: Session, guard: Guarantees) -> None:
        """Fail early when the client's seq is already stale (the log re-checks it atomically)."""
        if guard.expected_seq is not None and guard.expected_seq != session.last_seq:
            raise SeqConflict(session.id, expected_seq=guard.expected_seq, actual_seq=session.last_seq)
