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
* **Limits at the door.** Payload depth, payload and batch size, and valid Unicode
  are checked before anything else (:mod:`contextwright.events.limits`), the same for
  every backend; reading never depends on how deep the caller's stack is.
* **Session rules.** An event that breaks a rule checkable from the log alone (a tool
  result without its call, a second result for one call, another session's plan or
  request) raises :class:`~contextwright.errors.SessionInvariantViolated` and nothing
  is written (:mod:`contextwright.log._invariants`).
* **Integrity.** Payloads are stored as canonical JSON with their SHA-256;
  reading a payload whose bytes no longer match raises
  :class:`~contextwright.errors.StorageCorrupted`. :meth:`EventLog.verify` checks
  every hash and counter the store keeps.
* **Transactions (optional).** Inside :meth:`EventLog.transaction`, the appends and
  artifacts a thread stores are one unit: all of them are committed at the block's end,
  or none (the block raised, the process died). A store that can
  (:attr:`EventLog.atomic_transactions`) also lets an append inside the block fail alone.
* **Checkpoints are a cache.** Beside the log a session may keep one checkpoint: its
  folded state as of some seq, with the payload hash of the event at that seq
  (:meth:`EventLog.put_checkpoint`). The log never depends on it; a checkpoint whose
  event or body no longer matches is not handed out (:meth:`EventLog.checkpoint`)
  and :meth:`EventLog.verify` reports it.
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import datetime as _dt
import hashlib
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextwright._threads import to_thread
from contextwright.canonical import HASH_PREFIX, parse_canonical, sha256_tagged
from contextwright.clock import Clock, SystemClock
from contextwright.errors import (
    ArtifactNotFound,
    ContextwrightError,
    IdempotencyConflict,
    InvalidIdempotencyKey,
    InvalidSessionId,
    PayloadLimitExceeded,
    StorageCorrupted,
    UsageError,
)
from contextwright.events.envelope import Event, NewEvent
from contextwright.events.limits import (
    MAX_BATCH_BYTES,
    MAX_BATCH_EVENTS,
    check_encoded_size,
    with_fresh_stack,
)
from contextwright.events.registry import (
    decode_stored_payload,
    payload_digest,
    validate_and_encode,
)
from contextwright.log._invariants import final_index, rebuild_index

MAX_SESSION_ID_LENGTH = 200
MAX_IDEMPOTENCY_KEY_LENGTH = 200


@dataclass(frozen=True, kw_only=True, slots=True)
class PreparedEvent:
    """An event validated and encoded, ready for an adapter to store."""

    type: str
    payload_json: str
    payload_sha256: str
    idempotency_key: str | None
    payload: Any = field(default=None, compare=False, repr=False)
    """The typed payload: the session rules read it and the append returns it (decoded from ``payload_json`` when absent)."""

    def typed_payload(self) -> Any:
        """The typed payload, as the session rules read it."""
        payload = self.payload
        if payload is None:
            payload = decode_stored_payload(self.type, parse_canonical(self.payload_json))
        return payload


@dataclass(frozen=True, kw_only=True, slots=True)
class ArtifactRow:
    """One stored artifact as ``verify`` reads it: its ref, its recorded size and its content."""

    ref: str
    size_chars: int
    content: str


@dataclass(frozen=True, kw_only=True, slots=True)
class VerifyReport:
    """What :meth:`EventLog.verify` checked and every problem it found (empty when the store is sound)."""

    sessions: int
    events: int
    artifacts: int
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredCheckpoint:
    """A session's folded state as of ``seq``, kept beside its log as a cache, never as a record."""

    session_id: str
    seq: int
    head_sha256: str
    """The payload hash of the event at ``seq`` when the checkpoint was written: the log it was folded from."""
    format: str
    """The writer's name for the body's layout; a reader that does not know it ignores the checkpoint."""
    body: str
    """The folded state as JSON text (control characters escaped, so every backend stores it as is)."""
    body_sha256: str
    """The body's hash, computed by the log when it was stored."""
    seal: str
    """The writer's own check over the rest (a keyed hash); the log keeps it and never reads it."""


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
    payload: Any = field(default=None, compare=False, repr=False)
    """The typed payload when the row was built from a validated event in this process (nothing to decode)."""


class EventLog(abc.ABC):
    """Port for an append-only, per-session event log (see the module docstring)."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        self.clock: Clock = clock or SystemClock()

    atomic_transactions: bool = False
    """True when :meth:`transaction` makes its writes one unit; False when each write is stored on its own."""

    # -- the contract ---------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Make this thread's appends and artifacts inside the block one unit: all stored, or none.

        The writes are committed together when the block ends, in one commit (one sync to disk
        instead of one per write); when it raises, or the process dies inside it, none of them
        is stored. Reads on this thread inside the block see its own writes. An append that
        raises inside the block writes nothing and the block may go on. Nested blocks join the
        outermost. A store holds its write lock (SQLite: the file; PostgreSQL: the rows of the
        sessions appended to) until the block ends, so keep blocks short, and never wait inside
        one for a write another thread or process makes.

        Stores without :attr:`atomic_transactions` (the in-memory log, which a dead process
        loses whole) store each write on its own; the block changes nothing there."""
        yield

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
        return self._append(session_id, prepare_events(events), expected_seq=expected_seq)

    def write_mark(self) -> object | None:
        """A value that stays equal, on this thread, while no event can have been appended to the store.

        Only this thread's open :meth:`transaction` on a store whose lock covers the whole store
        (SQLite) can promise that: no one else may write until it ends, and each of its own appends
        changes the mark. A reader that read a session's tail under one mark needs no second
        read under the same mark. None (the default): no promise, read again."""
        return None

    def read(self, session_id: str, *, after_seq: int = 0, limit: int | None = None) -> list[Event]:
        """Return the session's events with ``seq > after_seq`` in order, at most ``limit``.

        An unknown session reads as empty.
        """
        validate_session_id(session_id)
        if after_seq < 0:
            raise UsageError(f"after_seq must be >= 0, got {after_seq}")
        if limit is not None and limit < 0:
            raise UsageError(f"limit must be >= 0, got {limit}")
        return with_fresh_stack(decode_rows, self._read(session_id, after_seq=after_seq, limit=limit))

    def read_keyed(self, session_id: str, key_prefix: str) -> list[Event]:
        """The session's events whose idempotency key starts with ``key_prefix``, in seq order.

        Reads those events alone (an index range on the SQL backends), however long the session.
        ``key_prefix`` follows the rules of a key (:class:`InvalidIdempotencyKey` otherwise).
        """
        validate_session_id(session_id)
        validate_idempotency_key(key_prefix)
        return with_fresh_stack(decode_rows, self._read_keyed(session_id, key_prefix))

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
        ref = artifact_ref(content)
        self._put_artifact(ref, kind, content)
        return ref

    def get_artifact(self, ref: str) -> str:
        """The text stored under ``ref``; :class:`ArtifactNotFound` if there is none."""
        content = self._get_artifact(ref)
        if content is None:
            raise ArtifactNotFound(f"no artifact {ref!r} in this store", ref=ref)
        if artifact_ref(content) != ref:
            raise StorageCorrupted(f"artifact {ref!r} does not match its hash", ref=ref)
        return content

    def put_checkpoint(self, session_id: str, *, seq: int, format: str, body: str, seal: str) -> StoredCheckpoint:
        """Keep ``body`` as the session's checkpoint at ``seq`` (the event there must exist).

        One checkpoint per session: a checkpoint of the same format further along is kept
        instead (so a slower writer never moves it back); any other is replaced."""
        validate_session_id(session_id)
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
            raise UsageError(f"a checkpoint's seq must be an integer >= 1, got {seq!r}")
        for name, value in (("format", format), ("body", body), ("seal", seal)):
            if not isinstance(value, str):
                raise UsageError(f"a checkpoint's {name} must be text, not {type(value).__name__}")
        head = self._read(session_id, after_seq=seq - 1, limit=1)
        if not head or head[0].seq != seq:
            raise UsageError(f"session {session_id!r} has no event at seq {seq} to checkpoint")
        checkpoint = StoredCheckpoint(
            session_id=session_id,
            seq=seq,
            head_sha256=head[0].payload_sha256,
            format=format,
            body=body,
            body_sha256=sha256_tagged(body.encode("utf-8", "surrogatepass")),
            seal=seal,
        )
        self._put_checkpoint(checkpoint)
        return checkpoint

    def checkpoint(self, session_id: str) -> StoredCheckpoint | None:
        """The session's checkpoint, when it still matches the log: the event at its seq has the
        payload hash it was folded from and its body has the hash it was stored with (None otherwise).

        Whether the body is one the caller can use (its format, its seal) is the caller's to check."""
        validate_session_id(session_id)
        stored = self._get_checkpoint(session_id)
        if stored is None or _checkpoint_problem(stored, self._read(session_id, after_seq=stored.seq - 1, limit=1)):
            return None
        return stored

    def _put_checkpoint(self, checkpoint: StoredCheckpoint) -> None:  # noqa: B027 - a log may keep no checkpoints
        """Store ``checkpoint`` under the rule of :meth:`put_checkpoint` (by default nothing is kept)."""

    def _get_checkpoint(self, session_id: str) -> StoredCheckpoint | None:
        """The session's stored checkpoint, unchecked."""
        return None

    def _checkpoint_rows(self) -> Iterator[StoredCheckpoint]:
        """Every stored checkpoint, one at a time, for :meth:`verify`."""
        return iter(())

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

    def verify(self) -> VerifyReport:
        """Check everything a hash or a counter covers; report problems instead of raising.

        Per session: each payload against its SHA-256, that it decodes, that seqs run
        1, 2, 3, ... without a gap, that the stored last seq is the last event's, and that
        the index behind the session rules matches the events. Per artifact: its content
        against its ref and its recorded size. Per checkpoint: that its event exists and has
        the payload hash it was folded from, and its body the hash it was stored with.
        """
        problems: list[str] = []
        events = 0
        ids = sorted(set(self.sessions()) | set(self._event_session_ids()))
        for session_id in ids:
            rows = self._read(session_id, after_seq=0, limit=None)
            events += len(rows)
            problems += _verify_rows(session_id, rows)
            last = self._last_seq(session_id)
            if last != (rows[-1].seq if rows else 0):
                problems.append(
                    f"{session_id}: last seq is recorded as {last}, but the last event is seq {rows[-1].seq if rows else 0}"
                )
            try:
                expected = final_index(rebuild_index((r.seq, r.type, r.payload_json) for r in rows))
            except ContextwrightError:
                continue  # the payload problem is reported above
            if self._index_state(session_id) != self._index_view(expected):
                problems.append(f"{session_id}: the index of tool calls, plans and requests does not match the events")
        artifacts = 0
        for artifact in self._artifact_rows():
            artifacts += 1
            try:
                digest = artifact_ref(artifact.content)
            except UsageError:
                digest = "unencodable"
            if digest != artifact.ref:
                problems.append(f"artifact {artifact.ref}: content does not match its hash")
            if artifact.size_chars != len(artifact.content):
                problems.append(
                    f"artifact {artifact.ref}: size is recorded as {artifact.size_chars:,} characters, content has {len(artifact.content):,}"
                )
        for stored in self._checkpoint_rows():
            problem = _checkpoint_problem(stored, self._read(stored.session_id, after_seq=stored.seq - 1, limit=1))
            if problem:
                problems.append(f"{stored.session_id}: the checkpoint at seq {stored.seq} {problem}")
        return VerifyReport(sessions=len(ids), events=events, artifacts=artifacts, problems=tuple(problems))

    @abc.abstractmethod
    def _event_session_ids(self) -> list[str]:
        """Every session id that has stored events (even one the sessions table lost)."""

    @abc.abstractmethod
    def _artifact_rows(self) -> Iterator[ArtifactRow]:
        """Every stored artifact, one at a time (artifacts can be large)."""

    @abc.abstractmethod
    def _index_state(self, session_id: str) -> tuple[dict[str, bool], dict[int, str], int]:
        """The stored index of a session: call id → answered, epoch → prefix hash, requests built."""

    def _index_view(self, index: tuple[dict[str, bool], dict[int, str], int]) -> tuple[dict[str, bool], dict[int, str], int]:
        """``index`` as :meth:`_index_state` reports it (an adapter that keeps only open calls drops the answered ones)."""
        return index

    def close(self) -> None:  # noqa: B027 - a no-op by default; adapters with connections override it
        """Release connections; the log must not be used afterwards."""

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what adapters implement ---------------------------------------------

    @abc.abstractmethod
    def _append(self, session_id: str, events: Sequence[PreparedEvent], *, expected_seq: int) -> list[Event]:
        """Store ``events`` atomically under the contract and return them as stored.

        Use :func:`resolve_replay` for batches with idempotency keys and :func:`new_events`
        for what a fresh append returns.
        """

    @abc.abstractmethod
    def _read(self, session_id: str, *, after_seq: int, limit: int | None) -> list[StoredRow]:
        """Rows with seq > after_seq, ascending, at most ``limit``."""

    @abc.abstractmethod
    def _read_keyed(self, session_id: str, key_prefix: str) -> list[StoredRow]:
        """Rows whose idempotency key starts with ``key_prefix``, ascending by seq (see :func:`key_prefix_range`)."""

    @abc.abstractmethod
    def _last_seq(self, session_id: str) -> int:
        """The greatest seq of the session, 0 when empty."""


class ThreadTransactionLog(EventLog):
    """An :class:`EventLog` whose :meth:`transaction` binds one connection to the thread; nested blocks join the outermost."""

    atomic_transactions = True

    _bound: threading.local
    """The connection of the thread's open :meth:`transaction` (``conn``) and how deep it is nested (``depth``)."""

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        if getattr(self._bound, "depth", 0):
            self._bound.depth += 1
            try:
                yield
            finally:
                self._bound.depth -= 1
            return
        with self._open_transaction():
            yield

    @abc.abstractmethod
    def _open_transaction(self) -> contextlib.AbstractContextManager[None]:
        """Open the outermost block: bind the thread's connection and set ``depth`` to 1 while it is open."""


class AsyncEventLog:
    """Async twin of an :class:`EventLog`: the same logic, run off the event loop.

    Each call runs the sync method in a worker thread, so both modes share every
    line of validation and SQL (adapters are thread-safe).
    """

    def __init__(self, log: EventLog) -> None:
        self.sync = log

    async def append(self, session_id: str, events: Iterable[Any], *, expected_seq: int) -> list[Event]:
        """Async :meth:`EventLog.append`."""
        return await to_thread(self.sync.append, session_id, list(events), expected_seq=expected_seq)

    async def read(self, session_id: str, *, after_seq: int = 0, limit: int | None = None) -> list[Event]:
        """Async :meth:`EventLog.read`."""
        return await to_thread(self.sync.read, session_id, after_seq=after_seq, limit=limit)

    async def last_seq(self, session_id: str) -> int:
        """Async :meth:`EventLog.last_seq`."""
        return await to_thread(self.sync.last_seq, session_id)

    async def sessions(self) -> list[str]:
        """Async :meth:`EventLog.sessions`."""
        return await to_thread(self.sync.sessions)

    async def verify(self) -> VerifyReport:
        """Async :meth:`EventLog.verify`."""
        return await to_thread(self.sync.verify)

    async def close(self) -> None:
        """Async :meth:`EventLog.close`."""
        await to_thread(self.sync.close)


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


_HASH_CHUNK_CHARS = 1 << 16


def artifact_ref(content: str) -> str:
    """The content address of ``content``, hashed in chunks so a large text is never copied whole."""
    digest = hashlib.sha256()
    for start in range(0, len(content), _HASH_CHUNK_CHARS):
        try:
            digest.update(content[start : start + _HASH_CHUNK_CHARS].encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise UsageError(
                f"artifact content holds a lone surrogate at character {start + exc.start}, which is not valid Unicode"
            ) from None
    return HASH_PREFIX + digest.hexdigest()


def validate_idempotency_key(key: object) -> None:
    """Raise :class:`InvalidIdempotencyKey` unless ``key`` can be stored the same way by every backend."""
    if not isinstance(key, str):
        raise InvalidIdempotencyKey(key, f"must be a string, not {type(key).__name__}")
    if not key or len(key) > MAX_IDEMPOTENCY_KEY_LENGTH:
        raise InvalidIdempotencyKey(key, f"must be 1 to {MAX_IDEMPOTENCY_KEY_LENGTH} characters")
    for index, ch in enumerate(key):
        # NUL is refused by PostgreSQL's text type, and a lone surrogate has no UTF-8 form.
        if ch < " " or ch == "\x7f" or "\ud800" <= ch <= "\udfff":
            raise InvalidIdempotencyKey(key, f"holds the control character or lone surrogate U+{ord(ch):04X} at {index}")


def key_prefix_range(prefix: str) -> tuple[str, str]:
    """Bounds ``(low, high)`` such that a valid key starts with ``prefix`` exactly when ``low <= key < high``.

    A range an ordered index answers with a seek, with no pattern characters (``%``, ``_``) to
    escape. The order is code point order, which is UTF-8 byte order: SQLite's default collation,
    and PostgreSQL's under ``COLLATE "C"``.
    """
    chars = list(prefix)
    while chars:
        last = ord(chars.pop())
        if last < sys.maxunicode:
            # No key holds a surrogate (they have no UTF-8 form): the next code point after U+D7FF is U+E000.
            following = 0xE000 if last + 1 == 0xD800 else last + 1
            return prefix, "".join(chars) + chr(following)
    # Only the highest code point: every key is either below this text or a prefix of it, so below it.
    return prefix, chr(sys.maxunicode) * (MAX_IDEMPOTENCY_KEY_LENGTH + 1)


def prepare_events(events: Iterable[NewEvent | Any]) -> list[PreparedEvent]:
    """Validate and encode a batch; raise before anything could be written."""
    # A list, the usual batch, skips the Iterable ABC check.
    if type(events) is not list and (isinstance(events, (NewEvent, str, bytes)) or not isinstance(events, Iterable)):
        raise UsageError("append takes a list of events")
    prepared: list[PreparedEvent] = []
    seen_keys: set[str] = set()
    total = 0
    for event in events:
        if len(prepared) >= MAX_BATCH_EVENTS:
            raise UsageError(f"a batch holds at most {MAX_BATCH_EVENTS:,} events")
        if isinstance(event, NewEvent):
            key = event.idempotency_key
            if key is not None:
                validate_idempotency_key(key)
                if key in seen_keys:
                    raise UsageError(f"idempotency key {key!r} appears twice in one batch")
                seen_keys.add(key)
        one = with_fresh_stack(_prepare_one, event)
        total += len(one.payload_json)
        if total > MAX_BATCH_BYTES:
            raise PayloadLimitExceeded(one.type, f"the batch is over {MAX_BATCH_BYTES:,} bytes", limit=MAX_BATCH_BYTES)
        prepared.append(one)
    if not prepared:
        raise UsageError("append needs at least one event")
    return prepared


def _prepare_one(event: NewEvent | Any) -> PreparedEvent:
    if isinstance(event, NewEvent):
        name, payload, data = validate_and_encode(event.type, event.payload)
        key = event.idempotency_key
    else:
        name, payload, data = validate_and_encode(None, event)
        key = None
    check_encoded_size(name, len(data))
    return _prepared(name, data.decode("utf-8"), sha256_tagged(data), key, payload)


_PREPARED_FIELDS = ("type", "payload_json", "payload_sha256", "idempotency_key", "payload")
if tuple(f.name for f in dataclasses.fields(PreparedEvent)) != _PREPARED_FIELDS or hasattr(PreparedEvent, "__post_init__"):
    raise TypeError("PreparedEvent changed: update _prepared to set exactly its fields")
_set_prepared_type, _set_prepared_json, _set_prepared_sha256, _set_prepared_key, _set_prepared_payload = (
    PreparedEvent.__dict__[name].__set__ for name in _PREPARED_FIELDS
)


def _prepared(type_: str, payload_json: str, sha256: str, key: str | None, payload: Any) -> PreparedEvent:
    """``PreparedEvent(...)`` with its slots set directly, as :func:`_event` does (once per appended event)."""
    prepared: PreparedEvent = _new_object(PreparedEvent)
    _set_prepared_type(prepared, type_)
    _set_prepared_json(prepared, payload_json)
    _set_prepared_sha256(prepared, sha256)
    _set_prepared_key(prepared, key)
    _set_prepared_payload(prepared, payload)
    return prepared


def new_rows(session_id: str, events: Sequence[PreparedEvent], *, expected_seq: int, at: _dt.datetime) -> list[StoredRow]:
    """The rows a fresh append stores, numbered after ``expected_seq``, holding the typed payloads."""
    return [
        StoredRow(
            session_id=session_id,
            seq=expected_seq + offset,
            type=e.type,
            payload_json=e.payload_json,
            payload_sha256=e.payload_sha256,
            at=at,
            idempotency_key=e.idempotency_key,
            payload=e.payload,
        )
        for offset, e in enumerate(events, start=1)
    ]


def new_events(session_id: str, events: Sequence[PreparedEvent], *, expected_seq: int, at: _dt.datetime) -> list[Event]:
    """The events a fresh append returns, numbered after ``expected_seq``.

    They are built from the validated payloads, whose hashes were computed from the very
    bytes stored, so nothing is read back or decoded. ``at`` must be the instant exactly
    as the backend will read it back, so that they equal what a later read returns.
    """
    return [
        _event(
            session_id,
            expected_seq + offset,
            e.type,
            e.payload if e.payload is not None else e.typed_payload(),
            at,
            e.payload_sha256,
            e.idempotency_key,
        )
        for offset, e in enumerate(events, start=1)
    ]


_EVENT_FIELDS = ("session_id", "seq", "type", "payload", "at", "payload_sha256", "idempotency_key")
if tuple(f.name for f in dataclasses.fields(Event)) != _EVENT_FIELDS or hasattr(Event, "__post_init__"):
    raise TypeError("Event changed: update _event to set exactly its fields")
_set_session_id, _set_seq, _set_type, _set_payload, _set_at, _set_sha256, _set_key = (
    Event.__dict__[name].__set__ for name in _EVENT_FIELDS
)
_new_object = object.__new__


def _event(session_id: str, seq: int, type_: str, payload: Any, at: _dt.datetime, sha256: str, key: str | None) -> Event:
    """``Event(...)`` with its slots set directly, for the append path: the generated frozen
    ``__init__`` sets each field through ``object.__setattr__``, about twice the cost."""
    event: Event = _new_object(Event)
    _set_session_id(event, session_id)
    _set_seq(event, seq)
    _set_type(event, type_)
    _set_payload(event, payload)
    _set_at(event, at)
    _set_sha256(event, sha256)
    _set_key(event, key)
    return event


def resolve_replay(session_id: str, events: Sequence[PreparedEvent], stored_by_key: dict[str, StoredRow]) -> list[Event] | None:
    """Decide what a batch with idempotency keys means, given the rows stored under those keys.

    Returns the stored events (decoded and checked) for a full replay, ``None`` when no key
    was used before (a normal append), and raises :class:`IdempotencyConflict` otherwise.
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
    return with_fresh_stack(decode_rows, replay)


def decode_rows(rows: Sequence[StoredRow]) -> list[Event]:
    """Decode rows in order (one fresh stack for all of them when the caller's is too deep)."""
    return [decode_row(row) for row in rows]


def decode_row(row: StoredRow) -> Event:
    """Turn a stored row into an :class:`Event`, checking the payload's integrity.

    A row that carries its typed payload was just built from a validated event, whose hash
    was computed from those very bytes: it becomes an event without being read back.
    """
    return Event(
        session_id=row.session_id,
        seq=row.seq,
        type=row.type,
        payload=row.payload if row.payload is not None else checked_payload(row),
        at=row.at,
        payload_sha256=row.payload_sha256,
        idempotency_key=row.idempotency_key,
    )


def checked_payload(row: StoredRow) -> Any:
    """The typed payload decoded from the row's stored bytes, after checking them against the stored hash."""
    if payload_digest(row.payload_json) != row.payload_sha256:
        raise StorageCorrupted(
            f"session {row.session_id!r} seq {row.seq}: payload does not match its stored sha256",
            session_id=row.session_id,
            seq=row.seq,
        )
    try:
        return with_fresh_stack(_decode_stored, row.type, row.payload_json)
    except RecursionError:
        # Only a payload stored before the door had its depth limit can get here.
        raise PayloadLimitExceeded(
            row.type, f"session {row.session_id!r} seq {row.seq} is nested too deep to decode", limit=0
        ) from None


def _decode_stored(type_name: str, text: str) -> Any:
    return decode_stored_payload(type_name, parse_canonical(text))


def _checkpoint_problem(stored: StoredCheckpoint, head: Sequence[StoredRow]) -> str:
    """Why ``stored`` does not stand for the log whose rows from its seq on are ``head`` ("" when it does)."""
    if not head or head[0].seq != stored.seq:
        return "is past the last event"
    if head[0].payload_sha256 != stored.head_sha256:
        return "was folded from another event at that seq"
    if sha256_tagged(stored.body.encode("utf-8", "surrogatepass")) != stored.body_sha256:
        return "does not match its hash"
    return ""


def _verify_rows(session_id: str, rows: Sequence[StoredRow]) -> list[str]:
    problems: list[str] = []
    for expected, row in enumerate(rows, start=1):
        if row.seq != expected:
            problems.append(f"{session_id}: seq {row.seq} where {expected} was expected")
            break
    for row in rows:
        try:
            checked_payload(row)
        except ContextwrightError as exc:
            problems.append(f"{session_id}#{row.seq}: {exc.message}")
    return problems
