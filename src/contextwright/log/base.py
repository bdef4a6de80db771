"""The event log port: the system of record for every session.

Every adapter (in-memory, SQLite, PostgreSQL) implements the same contract,
checked by :mod:`contextwright.testing.contract`:

* **Append-only, gapless.** Each session's events are numbered ``1, 2, 3, ...``
  with no gaps and no reuse. Events are never updated or deleted.
* **Optimistic concurrency.** :meth:`EventLog.append` takes the last ``seq`` the
  writer has seen. If another writer appended first, it raises
  :class:`~contextwright.errors.SeqConflict` and writes nothing.
* **Atomic batches.** A multi-event append is stored whole or not at all.
* **Idempotency.** An event may carry an idempotency key, unique per session.
  Appending a batch whose keys were all used before, with the same types and
  payloads, returns the stored events and writes nothing (even if
  ``expected_seq`` is stale by then, so retries after a lost reply are safe).
  A used key with different content, or a batch mixing used and new keys,
  raises :class:`~contextwright.errors.IdempotencyConflict`.
* **Validated input.** Unknown event types, malformed payloads and bad session
  ids raise typed errors before anything is written.
* **Injected time.** ``Event.at`` comes from the log's clock, one instant per batch.
* **Integrity.** Payloads are stored as canonical JSON with their SHA-256;
  reading a payload whose bytes no longer match raises
  :class:`~contextwright.errors.StorageCorrupted`.
"""

from __future__ import annotations

import abc
import asyncio
import datetime as _dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from contextwright.canonical import parse_canonical, sha256_tagged
from contextwright.clock import Clock, SystemClock
from contextwright.errors import (
    ArtifactNotFound,
    IdempotencyConflict,
    InvalidSessionId,
    StorageCorrupted,
    UsageError,
)
from contextwright.events.envelope import Event, NewEvent
from contextwright.events.registry import (
    coerce_payload,
    decode_payload,
    payload_digest,
    payload_json,
)

MAX_SESSION_ID_LENGTH = 200
MAX_IDEMPOTENCY_KEY_LENGTH = 200


@dataclass(frozen=True, kw_only=True, slots=True)
class PreparedEvent:
    """An event validated and encoded, ready for an adapter to store."""

    type: str
    payload_json: str
    payload_sha256: str
    idempotency_key: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredRow:
    """One event as an adapter reads it back, before decoding."""

    session_id: str
    seq: int
    type: str
    payload_json: str
    payload_sha256: str
    at: _dt.datetime
    idempotency_key: str | None


class EventLog(abc.ABC):
    """Port for an append-only, per-session event log (see the module docstring)."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        self.clock: Clock = clock or SystemClock()

    # -- the contract ---------------------------------------------------------

    def append(
        self,
        session_id: str,
        events: Iterable[NewEvent | Any],
        *,
        expected_seq: int,
    ) -> list[Event]:
        """Append ``events`` after ``expected_seq`` and return them as stored.

        ``events`` are :class:`NewEvent` values or bare typed payloads. Raises
        ``SeqConflict`` if the session's last seq is not ``expected_seq``,
        ``IdempotencyConflict`` for a misused key, ``EventError`` subclasses for
        bad events, ``InvalidSessionId`` for a bad id, ``StorageError`` subclasses
        when the database fails. Nothing is written when it raises.
        """
        validate_session_id(session_id)
        if not isinstance(expected_seq, int) or isinstance(expected_seq, bool) or expected_seq < 0:
            raise UsageError(f"expected_seq must be an integer >= 0, got {expected_seq!r}")
        prepared = prepare_events(events)
        rows = self._append(session_id, prepared, expected_seq=expected_seq)
        return [decode_row(row) for row in rows]

    def read(self, session_id: str, *, after_seq: int = 0, limit: int | None = None) -> list[Event]:
        """Return the session's events with ``seq > after_seq`` in order, at most ``limit``.

        An unknown session reads as empty.
        """
        validate_session_id(session_id)
        if after_seq < 0:
            raise UsageError(f"after_seq must be >= 0, got {after_seq}")
        if limit is not None and limit < 0:
            raise UsageError(f"limit must be >= 0, got {limit}")
        return [decode_row(row) for row in self._read(session_id, after_seq=after_seq, limit=limit)]

    def last_seq(self, session_id: str) -> int:
        """The session's greatest seq, or 0 if it has no events."""
        validate_session_id(session_id)
        return self._last_seq(session_id)

    @abc.abstractmethod
    def sessions(self) -> list[str]:
        """Ids of all sessions with at least one event, sorted."""

    def put_artifact(self, content: str, *, kind: str = "text") -> str:
        """Store a full text, content-addressed; return its ref (``sha256:<hex>``). Idempotent.

        Artifacts are never deleted by relief: pointers in the surface keep naming them.
        """
        if not isinstance(content, str):
            raise UsageError(f"artifact content must be text, not {type(content).__name__}")
        ref = sha256_tagged(content)
        self._put_artifact(ref, kind, content)
        return ref

    def get_artifact(self, ref: str) -> str:
        """The text stored under ``ref``; :class:`ArtifactNotFound` if there is none."""
        content = self._get_artifact(ref)
        if content is None:
            raise ArtifactNotFound(f"no artifact {ref!r} in this store", ref=ref)
        if sha256_tagged(content) != ref:
            raise StorageCorrupted(f"artifact {ref!r} does not match its hash", ref=ref)
        return content

    @abc.abstractmethod
    def _put_artifact(self, ref: str, kind: str, content: str) -> None:
        """Insert unless present."""

    @abc.abstractmethod
    def _get_artifact(self, ref: str) -> str | None:
        """The content, or None."""

    def setting(self, key: str, default: str) -> str:
        """A store-wide setting; the first caller's ``default`` is stored and wins races."""
        if not key or len(key) > 200:
            raise UsageError("a setting key must be 1-200 characters")
        return self._setting(key, default)

    @abc.abstractmethod
    def _setting(self, key: str, default: str) -> str:
        """Insert ``default`` under ``key`` unless present; return the stored value."""

    def close(self) -> None:  # noqa: B027 - a no-op by default; adapters with connections override it
        """Release connections; the log must not be used afterwards."""

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what adapters implement ---------------------------------------------

    @abc.abstractmethod
    def _append(self, session_id: str, events: Sequence[PreparedEvent], *, expected_seq: int) -> list[StoredRow]:
        """Store ``events`` atomically under the contract; use :func:`resolve_replay`."""

    @abc.abstractmethod
    def _read(self, session_id: str, *, after_seq: int, limit: int | None) -> list[StoredRow]:
        """Rows with seq > after_seq, ascending, at most ``limit``."""

    @abc.abstractmethod
    def _last_seq(self, session_id: str) -> int:
        """The greatest seq of the session, 0 when empty."""


class AsyncEventLog:
    """Async twin of an :class:`EventLog`: the same logic, run off the event loop.

    Each call runs the sync method in a worker thread, so both modes share every
    line of validation and SQL (adapters are thread-safe).
    """

    def __init__(self, log: EventLog) -> None:
        self.sync = log

    async def append(self, session_id: str, events: Iterable[Any], *, expected_seq: int) -> list[Event]:
        """Async :meth:`EventLog.append`."""
        return await asyncio.to_thread(self.sync.append, session_id, list(events), expected_seq=expected_seq)

    async def read(self, session_id: str, *, after_seq: int = 0, limit: int | None = None) -> list[Event]:
        """Async :meth:`EventLog.read`."""
        return await asyncio.to_thread(self.sync.read, session_id, after_seq=after_seq, limit=limit)

    async def last_seq(self, session_id: str) -> int:
        """Async :meth:`EventLog.last_seq`."""
        return await asyncio.to_thread(self.sync.last_seq, session_id)

    async def sessions(self) -> list[str]:
        """Async :meth:`EventLog.sessions`."""
        return await asyncio.to_thread(self.sync.sessions)

    async def close(self) -> None:
        """Async :meth:`EventLog.close`."""
        await asyncio.to_thread(self.sync.close)


# -- logic shared by every adapter ---------------------------------------------


def validate_session_id(session_id: object) -> None:
    """Raise :class:`InvalidSessionId` unless ``session_id`` is a sane, printable string."""
    if not isinstance(session_id, str):
        raise InvalidSessionId(session_id, f"must be a string, not {type(session_id).__name__}")
    if not session_id:
        raise InvalidSessionId(session_id, "must not be empty")
    if len(session_id) > MAX_SESSION_ID_LENGTH:
        raise InvalidSessionId(session_id, f"longer than {MAX_SESSION_ID_LENGTH} characters")
    if not session_id.isprintable() or session_id != session_id.strip():
        raise InvalidSessionId(session_id, "must be printable, without surrounding whitespace")


def prepare_events(events: Iterable[NewEvent | Any]) -> list[PreparedEvent]:
    """Validate and encode a batch; raise before anything could be written."""
    if isinstance(events, (NewEvent, str, bytes)) or not isinstance(events, Iterable):
        raise UsageError("append takes a list of events")
    prepared: list[PreparedEvent] = []
    seen_keys: set[str] = set()
    for event in events:
        if isinstance(event, NewEvent):
            name, payload = coerce_payload(event.type, event.payload)
            key = event.idempotency_key
        else:
            name, payload = coerce_payload(None, event)
            key = None
        if key is not None:
            if not isinstance(key, str) or not key or len(key) > MAX_IDEMPOTENCY_KEY_LENGTH:
                raise UsageError(f"idempotency key must be a non-empty string up to {MAX_IDEMPOTENCY_KEY_LENGTH} characters")
            if key in seen_keys:
                raise UsageError(f"idempotency key {key!r} appears twice in one batch")
            seen_keys.add(key)
        text = payload_json(payload)
        prepared.append(PreparedEvent(type=name, payload_json=text, payload_sha256=payload_digest(text), idempotency_key=key))
    if not prepared:
        raise UsageError("append needs at least one event")
    return prepared


def resolve_replay(
    session_id: str, events: Sequence[PreparedEvent], stored_by_key: dict[str, StoredRow]
) -> list[StoredRow] | None:
    """Decide what a batch with idempotency keys means, given the rows stored under those keys.

    Returns the stored rows for a full replay, ``None`` when no key was used
    before (a normal append), and raises :class:`IdempotencyConflict` otherwise.
    """
    if not stored_by_key:
        return None
    replay: list[StoredRow] = []
    for event in events:
        key = event.idempotency_key
        row = stored_by_key.get(key) if key is not None else None
        if row is None or key is None:
            raise IdempotencyConflict(
                session_id,
                next(iter(stored_by_key)),
                "was used before, but this batch also holds events that are new",
            )
        if row.type != event.type or row.payload_sha256 != event.payload_sha256:
            raise IdempotencyConflict(session_id, key, f"was used for a different event (seq {row.seq})")
        replay.append(row)
    return replay


def decode_row(row: StoredRow) -> Event:
    """Turn a stored row into an :class:`Event`, checking the payload's integrity."""
    if payload_digest(row.payload_json) != row.payload_sha256:
        raise StorageCorrupted(
            f"session {row.session_id!r} seq {row.seq}: payload does not match its stored sha256",
            session_id=row.session_id,
            seq=row.seq,
        )
    payload = decode_payload(row.type, parse_canonical(row.payload_json))
    return Event(
        session_id=row.session_id,
        seq=row.seq,
        type=row.type,
        payload=payload,
        at=row.at,
        payload_sha256=row.payload_sha256,
        idempotency_key=row.idempotency_key,
    )
