"""Every error answer is an RFC 9457 problem document with a stable type.

A type is ``/problems/<slug>`` on the service itself (a URI reference, resolved
against the request URL); ``GET /problems/<slug>`` describes it. Slugs and
statuses never change once shipped: clients branch on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from contextwright.assembly.assemble import BudgetExceeded
from contextwright.budget.allocator import WindowTooSmall
from contextwright.errors import (
    ArchiveFailed,
    ArtifactNotFound,
    BuildError,
    ContextwrightError,
    EventError,
    IdempotencyConflict,
    PlanError,
    PrefixOverBudget,
    ProviderError,
    RuntimeFailure,
    SeqConflict,
    SessionInvariantViolated,
    StorageCorrupted,
    StorageUnavailable,
    UsageError,
)
from contextwright.planner import PrefixChanged
from contextwright.providers._render_common import RenderError
from contextwright.runtime.errors import NothingToSend, RoundLimitExceeded, ToolCallUnknown
from contextwright.service.errors import LeaseBusy, SessionExists, SessionNotFound, Unauthenticated

MEDIA_TYPE = "application/problem+json"


@dataclass(frozen=True, kw_only=True, slots=True)
class ProblemType:
    """One kind of error answer: its slug, HTTP status, title and what to do about it."""

    slug: str
    status: int
    title: str
    advice: str

    @property
    def uri(self) -> str:
        """The stable ``type`` member of problem documents of this kind."""
        return f"/problems/{self.slug}"


_TYPES = (
    ProblemType(slug="malformed-json", status=400, title="The body is not valid JSON", advice="Send one JSON object."),
    ProblemType(
        slug="unauthenticated",
        status=401,
        title="No valid API key",
        advice="Send 'Authorization: Bearer cw_...' with a key from 'contextwright keys create TENANT'.",
    ),
    ProblemType(
        slug="not-found",
        status=404,
        title="Not found",
        advice="Check the path; sessions of other tenants are not visible.",
    ),
    ProblemType(slug="method-not-allowed", status=405, title="Method not allowed", advice="See the OpenAPI document."),
    ProblemType(
        slug="seq-conflict",
        status=409,
        title="The session moved on",
        advice="Another writer appended first: read the events after your seq (current_seq says where the log is) and retry.",
    ),
    ProblemType(
        slug="lease-held",
        status=409,
        title="Another worker is compacting this session",
        advice="Retry after the Retry-After interval: the next request builds on the compacted history.",
    ),
    ProblemType(
        slug="idempotency-conflict",
        status=409,
        title="Idempotency key reused for a different request",
        advice="Use a new key for a new request; retry a request only with its original body.",
    ),
    ProblemType(
        slug="session-exists",
        status=409,
        title="The session id is taken",
        advice="A session with this id was opened with another agent spec or model; pick another id.",
    ),
    ProblemType(
        slug="session-state",
        status=409,
        title="Not possible in the session's current state",
        advice=(
            "Read the session (pending tool calls, awaiting_model) and do what it needs next. When the "
            "prefix differs from its epoch's, POST /v1/sessions/{id}/prefix starts a new epoch."
        ),
    ),
    ProblemType(
        slug="run-stopped",
        status=409,
        title="The run was stopped or needs a decision",
        advice="A limit was reached or a compaction was refused; the detail says which.",
    ),
    ProblemType(
        slug="payload-too-large",
        status=413,
        title="The request body is too large",
        advice="Send at most limit_bytes bytes; store large outputs whole and send a bounded view.",
    ),
    ProblemType(
        slug="unsupported-media-type", status=415, title="Unsupported media type", advice="Send 'Content-Type: application/json'."
    ),
    ProblemType(
        slug="invalid-request",
        status=422,
        title="The request does not match the schema",
        advice="The errors member lists each field that is missing or has the wrong type.",
    ),
    ProblemType(
        slug="invalid-operation",
        status=422,
        title="The engine refused the request",
        advice="The detail names the problem and the fix.",
    ),
    ProblemType(
        slug="over-budget",
        status=422,
        title="The context does not fit its budget",
        advice="The detail names the class over its cap; shorten it or raise the cap.",
    ),
    ProblemType(
        slug="rate-limited",
        status=429,
        title="Too many requests for this key",
        advice="Wait Retry-After seconds; each key has its own token bucket, and so has each client address for requests without a valid key.",
    ),
    ProblemType(slug="internal", status=500, title="Internal error", advice="The server logged the cause."),
    ProblemType(
        slug="storage-corrupted",
        status=500,
        title="Stored data does not match its hash",
        advice="Run 'contextwright verify STORE' on the store.",
    ),
    ProblemType(
        slug="storage-unavailable",
        status=503,
        title="The store is unavailable",
        advice="Retry after Retry-After seconds.",
    ),
)

PROBLEM_TYPES: Mapping[str, ProblemType] = MappingProxyType({t.slug: t for t in _TYPES})
"""Every problem type the service answers with, by slug."""


class Problem(Exception):
    """An error answer: a problem type, a detail and extension members."""

    def __init__(self, slug: str, detail: str, *, headers: Mapping[str, str] | None = None, **extensions: Any) -> None:
        super().__init__(detail)
        self.type = PROBLEM_TYPES[slug]
        self.detail = detail
        self.headers = dict(headers or {})
        self.extensions = extensions

    def document(self, instance: str | None = None) -> dict[str, Any]:
        """The problem document (RFC 9457 members first, then extensions)."""
        doc: dict[str, Any] = {
            "type": self.type.uri,
            "title": self.type.title,
            "status": self.type.status,
            "detail": self.detail,
        }
        if instance is not None:
            doc["instance"] = instance
        doc.update(self.extensions)
        return doc


# Most specific first: the first class an error is an instance of decides.
_BY_ERROR: tuple[tuple[type[BaseException], str], ...] = (
    (Unauthenticated, "unauthenticated"),
    (SessionNotFound, "not-found"),
    (ArtifactNotFound, "not-found"),
    (SessionExists, "session-exists"),
    (SeqConflict, "seq-conflict"),
    (LeaseBusy, "lease-held"),
    (IdempotencyConflict, "idempotency-conflict"),
    (NothingToSend, "session-state"),
    (ToolCallUnknown, "session-state"),
    # The log refused an event that breaks its session's rules (a result without its open call, ...).
    (SessionInvariantViolated, "session-state"),
    (RoundLimitExceeded, "run-stopped"),
    (ArchiveFailed, "run-stopped"),
    (RuntimeFailure, "run-stopped"),
    (PrefixOverBudget, "over-budget"),
    (BudgetExceeded, "over-budget"),
    (WindowTooSmall, "over-budget"),
    # Another worker pinned the plan first: the session moved on under this request.
    (PrefixChanged, "session-state"),
    (RenderError, "invalid-operation"),
    (PlanError, "invalid-operation"),
    (BuildError, "invalid-operation"),
    (StorageUnavailable, "storage-unavailable"),
    (StorageCorrupted, "storage-corrupted"),
    (EventError, "invalid-operation"),
    (ProviderError, "invalid-operation"),
    (UsageError, "invalid-operation"),
)


def problem_for(error: ContextwrightError) -> Problem:
    """The problem answer for an error the engine raised on purpose."""
    slug = next((slug for cls, slug in _BY_ERROR if isinstance(error, cls)), "internal")
    # A compaction refused because the store was down changed nothing: the same request
    # succeeds once the store is back, so it is answered as the outage it is.
    outage = isinstance(error, ArchiveFailed) and isinstance(error.__cause__, StorageUnavailable)
    if outage:
        slug = "storage-unavailable"
    extensions: dict[str, Any] = {}
    headers: dict[str, str] = {}
    if isinstance(error, SeqConflict):
        extensions = {"current_seq": error.fields["actual_seq"], "expected_seq": error.fields["expected_seq"]}
    elif outage or isinstance(error, (StorageUnavailable, LeaseBusy)):
        headers["Retry-After"] = "1"
    detail = error.message if slug != "internal" else "an internal error occurred"
    if isinstance(error, PrefixChanged):
        detail += "; over HTTP: POST /v1/sessions/{session_id}/prefix"
    return Problem(slug, detail, headers=headers, **extensions)
