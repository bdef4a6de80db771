"""Tenants' sessions on the runtime: find, open, and run one operation with its guarantees.

Every HTTP request opens its :class:`~contextwright.runtime.Session` afresh from the
registry and the log: nothing a request depends on lives in the worker.
``expected_seq`` and idempotency keys are enforced on the log itself (see
:class:`GuardedLog`), so they hold across workers and across retries.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from contextwright.budget.estimator import TokenEstimator
from contextwright.canonical import canonical_json, content_hash
from contextwright.clock import Clock
from contextwright.errors import IdempotencyConflict, SeqConflict
from contextwright.events.envelope import Event, NewEvent
from contextwright.log.base import EventLog, PreparedEvent, StoredRow
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
        return None if self.idempotency_key is None else f"{self.idempotency_key}:{self.fingerprint[7:23]}"


def guarantees(operation: str, body: Any, *, expected_seq: int | None, idempotency_key: str | None) -> Guarantees:
    """The guarantees of one write; the body is fingerprinted without the two guarantee fields."""
    plain = {k: v for k, v in body.items() if k not in ("expected_seq", "idempotency_key")}
    return Guarantees(expected_seq=expected_seq, idempotency_key=idempotency_key, fingerprint=content_hash([operation, plain]))


class GuardedLog(EventLog):
    """The engine's log for one operation: its first append must land on ``expected_seq``,
    and every event carries a key derived from the client's idempotency key.

    The session appends after the seq it just read; checking that seq against the
    client's inside the log's own optimistic append makes the check atomic.
    """

    def __init__(self, inner: EventLog, guarantees: Guarantees) -> None:
        super().__init__(clock=inner.clock)
        self.inner = inner
        self._expected = guarantees.expected_seq
        self._key = guarantees.key_base
        self._batch = 0

    def append(self, session_id: str, events: Iterable[Any], *, expected_seq: int) -> list[Event]:
        batch = list(events)
        if self._expected is not None:
            wanted, self._expected = self._expected, None
            if wanted != expected_seq:
                raise SeqConflict(session_id, expected_seq=wanted, actual_seq=expected_seq)
        if self._key is not None:
            self._batch += 1
            batch = [
                NewEvent.of(e.payload if isinstance(e, NewEvent) else e, idempotency_key=f"{self._key}#{self._batch}.{i}")
                for i, e in enumerate(batch)
            ]
        return self.inner.append(session_id, batch, expected_seq=expected_seq)

    def sessions(self) -> list[str]:
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

    def __init__(self, *, log: EventLog, store: ServiceStore, clock: Clock, estimator: TokenEstimator, secret: bytes) -> None:
        self.log = log
        self.store = store
        self.clock = clock
        self.estimator = estimator
        self.secret = secret

    def open(
        self, principal: Principal, session_id: str, agent: dict[str, Any], model: dict[str, Any]
    ) -> tuple[RegisteredSession, bool]:
        """Register the session (validating spec and model first); the same spec again finds it."""
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

    def runtime(self, record: RegisteredSession, guard: Guarantees | None = None) -> Session:
        """A runtime session for one operation, on a log that enforces ``guard``."""
        from contextwright.canonical import parse_canonical

        log = GuardedLog(self.log, guard) if guard is not None else self.log
        engine = Engine(log, clock=self.clock, estimator=self.estimator, secret=self.secret)
        return engine.session(
            record.log_session_id,
            agent=agent_spec(parse_canonical(record.agent)),
            model=ResolvedModel.from_dict(parse_canonical(record.model)),
        )

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
