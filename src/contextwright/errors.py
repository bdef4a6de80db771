"""Every error Contextwright raises on purpose, in one tree.

::

    ContextwrightError
    ├── MissingDependencyError (also ImportError)  an optional extra is not installed
    ├── UsageError                                 the API was called wrongly (a bug in the caller)
    │   ├── CanonicalJsonError (also ValueError)   a value has no canonical JSON form
    │   ├── InvalidToolCallId (also ValueError)    a tool call id is empty or repeats in one answer
    │   └── SharedBodyChanged (also TypeError)     a shared part of a rendered body was changed in place
    ├── EventError                                 an event is not acceptable
    │   ├── UnknownEventType
    │   └── MalformedPayload
    │       └── PayloadLimitExceeded                 deeper or larger than the door allows
    ├── LogError                                   the event log refused or failed
    │   ├── InvalidSessionId
    │   ├── InvalidIdempotencyKey
    │   ├── SessionInvariantViolated               the event breaks a rule of its session's log
    │   ├── SeqConflict                            optimistic concurrency: someone appended first
    │   ├── IdempotencyConflict                    a used key came back with different content
    │   ├── ArtifactNotFound
    │   ├── StoreNotFound / NotAStore / SchemaTooNew
    │   ├── CheckpointRejected                     a stored checkpoint cannot stand for its log
    │   └── StorageError                           the database failed
    │       ├── StorageUnavailable                 cannot connect / locked / out of space
    │       ├── StoreReadOnly                      the store can be read here, not written
    │       └── StorageCorrupted                   the stored bytes are not what was written
    ├── PlanError
    │   └── PrefixOverBudget
    ├── BuildError
    │   └── OrphanedToolPair
    ├── ProviderError
    │   └── ContextLengthExceeded
    │       └── OverflowNotRecovered
    └── RuntimeFailure
        ├── EscalationRequired                     continue in a child run
        └── ArchiveFailed                          manual compaction refused

Errors carry structured fields (``session_id``, ``expected_seq``, ...) so that callers
can act on them without parsing messages. Driver errors never escape: each storage
adapter maps them in one place (``contextwright.log._errors``).
"""

from __future__ import annotations

from typing import Any


class ContextwrightError(Exception):
    """Root of every error Contextwright raises on purpose."""

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields
        for name, value in fields.items():
            setattr(self, name, value)

    def __reduce__(self) -> tuple[Any, ...]:
        # Keeps errors picklable across processes (multiprocessing, workers).
        return (_rebuild, (type(self), self.message, self.fields))


def _rebuild(cls: type[ContextwrightError], message: str, fields: dict[str, Any]) -> Any:
    error = cls.__new__(cls)
    ContextwrightError.__init__(error, message, **fields)
    return error


class MissingDependencyError(ContextwrightError, ImportError):
    """An optional extra is needed for this feature and is not installed."""

    def __init__(self, feature: str, extra: str, module: str) -> None:
        hint = f'pip install "contextwright[{extra}]"'
        super().__init__(
            f"{feature} needs the '{module}' package, which is not installed. Install it with: {hint}",
            feature=feature,
            extra=extra,
            module=module,
            hint=hint,
        )
        self.name = module


class UsageError(ContextwrightError):
    """The API was called in a way it does not support; fix the calling code."""


class UsageCountInvalid(UsageError, ValueError):
    """A token count of a usage is negative or not an integer, or the reasoning part exceeds the output."""


class CanonicalJsonError(UsageError, ValueError):
    """A value has no canonical JSON form (NaN, non-string keys, unsupported types)."""

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(f"{message} (at {path})", path=path)


class InvalidToolCallId(UsageError, ValueError):
    """A tool call's id is empty, or two calls of one answer share it; ``call_id`` names it.

    A ``ValueError`` too, so that decoding a stored answer still reports it as a malformed payload."""

    call_id: str
    problem: str

    def __init__(self, call_id: str, problem: str) -> None:
        super().__init__(f"tool call id {call_id!r}: {problem}", call_id=call_id, problem=problem)


class SharedBodyChanged(UsageError, TypeError):
    """A rendered body's messages, blocks and their values are shared between requests and read-only."""


class EventError(ContextwrightError):
    """An event is not acceptable to the log."""


class UnknownEventType(EventError):
    """The event type is not in the catalogue."""

    def __init__(self, event_type: str, *, known: tuple[str, ...] = ()) -> None:
        hint = f"; known types: {', '.join(known)}" if known else ""
        super().__init__(f"unknown event type {event_type!r}{hint}", event_type=event_type)


class MalformedPayload(EventError):
    """The payload does not match the schema of its event type."""

    def __init__(self, event_type: str, problem: str, *, path: str = "payload") -> None:
        super().__init__(
            f"malformed {event_type!r} payload at {path}: {problem}",
            event_type=event_type,
            path=path,
            problem=problem,
        )


class PayloadLimitExceeded(MalformedPayload):
    """A payload is nested deeper, or is larger, than the log accepts (see ``contextwright.events.limits``)."""

    limit: int

    def __init__(self, event_type: str, problem: str, *, path: str = "payload", limit: int) -> None:
        super().__init__(event_type, problem, path=path)
        self.fields["limit"] = limit
        self.limit = limit


class LogError(ContextwrightError):
    """The event log refused an operation or failed to perform it."""


class InvalidSessionId(LogError, UsageError):
    """A session id is empty, too long, or contains control characters."""

    def __init__(self, session_id: object, problem: str) -> None:
        super().__init__(f"invalid session id {session_id!r}: {problem}", session_id=session_id)


class InvalidIdempotencyKey(LogError, UsageError):
    """An idempotency key is empty, too long, not a string, or holds control characters or lone surrogates."""

    idempotency_key: object

    def __init__(self, key: object, problem: str) -> None:
        super().__init__(f"invalid idempotency key {key!r}: {problem}", idempotency_key=key)


class SessionInvariantViolated(LogError):
    """An event breaks a rule of its session that the log can check from the log alone.

    ``rule`` names it: ``orphaned_tool_result``, ``unknown_tool_call``, ``second_tool_result``,
    ``foreign_plan`` or ``foreign_request``."""

    session_id: str
    rule: str
    index: int

    def __init__(self, session_id: str, *, rule: str, problem: str, index: int) -> None:
        super().__init__(
            f"session {session_id!r}: event {index} of the batch refused ({rule}): {problem}",
            session_id=session_id,
            rule=rule,
            index=index,
        )


class SeqConflict(LogError):
    """Optimistic concurrency: the session's last seq is not the one the writer expected."""

    session_id: str
    expected_seq: int
    actual_seq: int

    def __init__(self, session_id: str, *, expected_seq: int, actual_seq: int) -> None:
        super().__init__(
            f"session {session_id!r}: expected last seq {expected_seq}, but it is {actual_seq}; read the new events and retry",
            session_id=session_id,
            expected_seq=expected_seq,
            actual_seq=actual_seq,
        )


class IdempotencyConflict(LogError):
    """An idempotency key was reused for an event with different content."""

    session_id: str
    idempotency_key: str

    def __init__(self, session_id: str, key: str, problem: str) -> None:
        super().__init__(
            f"session {session_id!r}: idempotency key {key!r} {problem}",
            session_id=session_id,
            idempotency_key=key,
        )


class ArtifactNotFound(LogError):
    """No artifact is stored under the given reference."""


class StoreNotFound(LogError):
    """The store named by a URL or path does not exist."""


class NotAStore(LogError):
    """The database exists but is not a Contextwright store."""


class SchemaTooNew(LogError):
    """The store was written by a newer Contextwright with migrations this one does not know."""


class CheckpointRejected(LogError):
    """A stored checkpoint cannot stand for its log (another format, stale, tampered, undecodable).

    A checkpoint is a cache: whoever meets this folds the log itself instead."""


class StorageError(LogError):
    """The database failed to carry out an operation."""


class StorageUnavailable(StorageError):
    """The database cannot be reached right now (connection, lock, disk space)."""


class StoreReadOnly(StorageError):
    """The store can be read but not written here (file or directory permissions, an immutable
    file, a read-only mount): reading works, every write is refused and nothing is written."""


class StorageCorrupted(StorageError):
    """Stored bytes fail their integrity check."""


class PlanError(ContextwrightError):
    """A context plan cannot be made."""


class PrefixOverBudget(PlanError):
    """A frozen-prefix class is larger than its absolute cap; the session cannot open."""

    def __init__(self, budget_class: str, *, size: int, cap: int, unit: str = "tokens") -> None:
        setting = _CAP_SETTINGS.get((budget_class, unit))
        raise_it = (
            f"raise the cap: pass budgets=contextwright.BudgetConfig({setting}=...) to Engine.open or engine.session"
            if setting
            else "raise the cap"
        )
        super().__init__(
            f"{budget_class} is {size:,} {unit}, cap {cap:,}; shorten it or {raise_it}",
            budget_class=budget_class,
            size=size,
            cap=cap,
            unit=unit,
            setting=setting,
        )


_CAP_SETTINGS = {
    ("policy", "tokens"): "policy_tokens",
    ("framing", "tokens"): "framing_tokens",
    ("instructions", "tokens"): "instructions_tokens",
    ("tools", "tokens"): "tools_tokens",
    ("tools", "tools"): "tools_count",
    ("memory_snapshot", "tokens"): "memory_tokens",
    ("memory_snapshot", "items"): "memory_items",
}
"""The BudgetConfig field that holds each prefix class's cap, by (class, unit)."""


class BuildError(ContextwrightError):
    """A request cannot be built or failed validation before sending."""


class OrphanedToolPair(BuildError):
    """A tool call without its result, or a result without its call."""


class ProviderError(ContextwrightError):
    """A model provider returned an error."""


class ContextLengthExceeded(ProviderError):
    """The provider rejected a request as longer than the model's context window."""


class OverflowNotRecovered(ContextLengthExceeded):
    """The provider rejected a request as too long again after a forced compaction."""


class RuntimeFailure(ContextwrightError):
    """A session could not continue as asked."""


class EscalationRequired(RuntimeFailure):
    """Pressure could not be relieved within the summary-depth cap: continue in a child run."""


class ArchiveFailed(RuntimeFailure):
    """A manual compaction refused to run because its archive could not be written."""
