"""Request and response bodies of the API (pydantic, so the OpenAPI document comes from them).

Request bodies are strict (no coercion of ``"3"`` to ``3``) and closed (unknown
members are errors): a typo must not be silently ignored.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from contextwright.providers.capabilities import Provider
from contextwright.service.store import MAX_CLIENT_SESSION_ID

SessionId = Field(
    min_length=1, max_length=MAX_CLIENT_SESSION_ID, pattern=r"^[^\s/\x00-\x1f\x7f](?:[^/\x00-\x1f\x7f]*[^\s/\x00-\x1f\x7f])?$"
)
ToolTrust = Literal["operator", "user", "tool", "external_untrusted"]
"""The trust a tool result may carry: any level but the platform's, whose text is shown without an envelope."""
MAX_USAGE_TOKENS = 100_000_000
"""Largest token count one usage figure may hold: a hundred times the largest context window on offer."""
UsageTokens = Field(default=0, ge=0, le=MAX_USAGE_TOKENS)


class _Body(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class _Append(_Body):
    expected_seq: int | None = Field(
        default=None, ge=0, description="The last seq you have seen; 409 seq-conflict if the log moved on."
    )
    idempotency_key: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        pattern=r"^[\x21-\x7e]+$",
        description="Retry-safe: the same key and body replay the stored answer.",
    )


class ToolIn(_Body):
    """A tool the agent advertises."""

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    description: str = Field(max_length=10_000)
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class AgentIn(_Body):
    """The agent's frozen setup (region A)."""

    policy: str = Field(min_length=1)
    instructions: str = ""
    tools: list[ToolIn] = Field(default_factory=list, max_length=256)
    framing: str | None = None
    control_tools: bool = True
    cache_ttl: Literal["5m", "1h"] = Field(
        default="5m", description="How long the provider keeps the cached prefix: the plan's TTL, used by every request."
    )


class ModelIn(_Body):
    """The model: a known id, or any id with its window."""

    provider: Provider
    id: str = Field(min_length=1, max_length=200)
    context_window: int | None = Field(default=None, gt=0)
    max_output_tokens: int | None = Field(default=None, gt=0)
    output_reserve: int | None = Field(default=None, ge=0)
    min_cacheable_tokens: int | None = Field(default=None, ge=0)
    tokenizer: str | None = None
    token_family: str | None = None


class OpenSessionIn(_Body):
    """Open a session (or find the same one again)."""

    session_id: str = SessionId
    agent: AgentIn
    model: ModelIn

    @field_validator("session_id")
    @classmethod
    def _printable(cls, value: str) -> str:
        # The pattern cannot say "printable" for all of Unicode (U+200B, U+202E, ...); the log's own rule can.
        if not value.isprintable():
            raise ValueError("the session id must be printable text: no format or control characters such as U+200B or U+202E")
        return value


class UserMessageIn(_Append):
    """A user (or operator) message."""

    text: str = Field(min_length=1)
    steering: bool = False
    author: str = Field(default="user", min_length=1, max_length=100)


class ToolCallIn(_Body):
    """One tool call the model made."""

    id: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=200)
    arguments: dict[str, Any] = Field(default_factory=dict)


class AssistantIn(_Append):
    """The model's complete answer (a streamed answer is sent once it is complete)."""

    text: str = ""
    tool_calls: list[ToolCallIn] = Field(default_factory=list)
    model: str | None = None
    stop_reason: str | None = None


class ProviderResponseIn(_Append):
    """A raw provider response: an Anthropic message, a chat completion or a response, as JSON."""

    response: dict[str, Any]


class ToolResultIn(_Append):
    """The output of a tool call; stored whole, shown to the model bounded."""

    call_id: str = Field(min_length=1, max_length=200)
    output: str
    exit_code: int | None = None
    is_error: bool | None = None
    trust: ToolTrust = Field(default="tool", description="Never 'platform': a tool's output is not the platform's voice.")


class UsageIn(_Append):
    """Provider usage for the last request, in the one shape for every provider."""

    input_tokens: int = Field(ge=0, le=MAX_USAGE_TOKENS)
    output_tokens: int = Field(ge=0, le=MAX_USAGE_TOKENS)
    cache_read_tokens: int = UsageTokens
    cache_write_5m_tokens: int = UsageTokens
    cache_write_1h_tokens: int = UsageTokens
    model: str | None = None


class BuildIn(_Body):
    """Ask for the next request."""

    wire: str | None = Field(default=None, description="A wire of the model's provider; default: the provider's default wire.")
    prefix_ttl: Literal["5m", "1h"] | None = Field(
        default=None, description="Override the cache TTL of the prefix for this rendering; default: the agent's cache_ttl."
    )
    expected_seq: int | None = Field(default=None, ge=0)


# -- answers ----------------------------------------------------------------------------


class ToolCallOut(BaseModel):
    """A tool call waiting for its result."""

    id: str
    name: str
    arguments: dict[str, Any]


class SessionOut(BaseModel):
    """A session: its spec, where its log is, and what it needs next."""

    session_id: str
    created_at: str
    model: dict[str, Any]
    agent: dict[str, Any]
    last_seq: int
    requests: int
    awaiting_model: bool
    pending_tool_calls: list[ToolCallOut]


class SessionListItem(BaseModel):
    """One line of the sessions list."""

    session_id: str
    created_at: str
    model: str
    provider: str
    last_seq: int


class SessionList(BaseModel):
    """The tenant's sessions."""

    sessions: list[SessionListItem]


class EventOut(BaseModel):
    """One event of the log."""

    seq: int
    type: str
    at: str
    payload: dict[str, Any]
    payload_sha256: str
    idempotency_key: str | None


class AppendOut(BaseModel):
    """What an append stored (or, for a replayed idempotency key, had stored)."""

    events: list[EventOut]
    last_seq: int
    replayed: bool
    pending_tool_calls: list[ToolCallOut]


class BuiltOut(BaseModel):
    """The next request, rendered for a wire."""

    index: int
    wire: str
    body: dict[str, Any]
    prefix_sha256: str
    request_sha256: str
    total_tokens: int
    tokens_by_class: dict[str, int]
    pressure: str
    yields: list[str]
    last_seq: int


class InspectOut(BaseModel):
    """What the model saw on request N, rebuilt from the log and checked against its recorded hash."""

    index: int
    epoch: int
    wire: str
    verified: bool
    recorded_sha256: str
    rebuilt_sha256: str
    prefix_sha256: str
    total_tokens: int
    tokens_by_class: dict[str, int]
    request: dict[str, Any]
    body: dict[str, Any]


class EventPage(BaseModel):
    """A page of events; ask again with ``after_seq=next_after_seq`` while it is not null."""

    events: list[EventOut]
    next_after_seq: int | None


class ArtifactOut(BaseModel):
    """A stored full text this session points at."""

    ref: str
    size_chars: int
    content: str


class PrefixIn(_Body):
    """Pin the session's prefix as this release writes it, in a new epoch if it differs."""

    note: str = Field(default="", max_length=2000, description="Why, recorded with the new epoch.")
    expected_seq: int | None = Field(default=None, ge=0)


class PrefixOut(BaseModel):
    """The session's plan after a prefix renewal."""

    rotated: bool = Field(description="A new epoch was started (false: the prefix was already the one pinned).")
    epoch: int | None = Field(description="The current epoch; null before the session's first request.")
    prefix_sha256: str | None
    last_seq: int


class CompactOut(BaseModel):
    """The result of a manual compaction."""

    compacted: bool
    event: EventOut | None
    last_seq: int


class SeriesPoint(BaseModel):
    """One request of the live series."""

    index: int
    seq: int
    at: str
    epoch: int
    total_tokens: int
    context_window: int | None
    tokens_by_class: dict[str, int]
    pressure: str
    yields: list[str]
    changes: list[str]
    compactions: int
    overflow_recovery: bool
    input_tokens: int | None
    cache_read_tokens: int | None
    output_tokens: int | None
    cache_read_share: float | None
    cost_usd: str | None


class SeriesOut(BaseModel):
    """Per-request series of a session, for charts."""

    session_id: str
    last_seq: int
    points: list[SeriesPoint]


class StatsOut(BaseModel):
    """A session at a glance (the fields of ``SessionSummary``)."""

    session_id: str
    last_seq: int
    summary: dict[str, Any] | None


class DiffOut(BaseModel):
    """Request N against request N−1, block by block, with each block's provenance and cache standing."""

    index: int
    previous: int | None
    epoch: int
    previous_epoch: int | None
    prefix_changed: bool
    first_difference: int | None
    counts: dict[str, int]
    """Blocks by status: kept, changed, moved, added, removed."""
    causes: dict[str, int]
    """Blocks that differ, by cause: new, pruned, compacted, stage_closed, recall_yield, bounded, epoch ..."""
    events_between: dict[str, int]
    """Events recorded between the two requests' cut points, by type."""
    changes: list[dict[str, Any]]
    """Each block of N in order (status, cache, cause, the block before and after), then the removed ones."""


class WhyOut(BaseModel):
    """Where a text entered the session's log and what became of it by request N."""

    text: str
    request_index: int | None
    fate: str
    hidden: bool
    summary: str
    entered: dict[str, Any] | None
    steps: list[dict[str, Any]]
    hidden_by: dict[str, Any] | None
    pointer: str | None
    shown_in: list[str]
    left: list[str]
    later: list[dict[str, Any]]


class MissPoint(BaseModel):
    """One request's uncached input tokens, by cause (they add up to ``uncached_tokens``)."""

    index: int
    uncached_tokens: int
    by_cause: dict[str, int]
    main_cause: str | None
    predicted_cache_read_tokens: int


class MissesOut(BaseModel):
    """Per request, what the offline cache simulator could not read from cache, and why."""

    session_id: str
    rule_set: str
    """Whose caching rules were applied (``anthropic`` or ``openai``)."""
    points: list[MissPoint]
