"""The event catalogue: one frozen payload type per event type.

Payloads are JSON-shaped. Optional fields have defaults so that events written
before a field existed still decode. Register new types here, with
:func:`~contextwright.events.registry.event_type`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from contextwright.errors import InvalidToolCallId, MalformedPayload, UsageCountInvalid
from contextwright.events._schema import LEFT_OUT_WHEN_NONE
from contextwright.events.registry import event_type

TrustLevel = Literal["platform", "operator", "user", "tool", "external_untrusted"]
TRUST_LEVELS: tuple[TrustLevel, ...] = get_args(TrustLevel)
"""The trust levels from most to least trusted (the order of :data:`TrustLevel`)."""
"""Who vouches for a piece of content, from most to least trusted."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCall:
    """One tool call requested by the model."""

    id: str
    name: str
    arguments: dict[str, Any]
    namespace: str | None = field(default=None, metadata={LEFT_OUT_WHEN_NONE: True})
    """The namespace tool the called tool sits in (an OpenAI Responses call's ``namespace``), sent back with the call
    on that wire; None for a top-level tool (and left out of the stored payload then)."""

    def __post_init__(self) -> None:
        if not self.id:
            raise InvalidToolCallId(self.id, f"a tool call ({self.name or 'unnamed'}) needs a non-empty id")
        if not self.name:
            raise ValueError("a tool call needs a non-empty name")


@dataclass(frozen=True, kw_only=True, slots=True)
class ArtifactPointer:
    """A typed reference to a stored full text (tool output, elided span, archive)."""

    ref: str
    """Where the full text is: a content address (``sha256:<hex>``) or an event reference (``session#seq``)."""
    trust: TrustLevel
    size_chars: int
    kind: str = "text"


ReasoningProvider = Literal["anthropic", "openai"]
"""Whose signed reasoning a :class:`ReasoningBlock` holds; only that provider's wire sends it back."""
CompactionTrigger = Literal["pressure", "overflow", "manual", "cache_expired"]
"""Why a compaction ran: the body did not fit, the provider refused the request, a person asked,
or the provider's cache had expired, so folding cost no cache read."""

_REASONING_TYPES: dict[str, frozenset[str]] = {
    # https://platform.claude.com/docs/en/build-with-claude/extended-thinking (thinking, redacted_thinking)
    "anthropic": frozenset({"thinking", "redacted_thinking"}),
    # https://developers.openai.com/api/docs/guides/reasoning (reasoning items, encrypted_content)
    "openai": frozenset({"reasoning"}),
}


@dataclass(frozen=True, kw_only=True, slots=True)
class ReasoningBlock:
    """A provider's signed reasoning from an answer, kept verbatim: never read, edited or summarised."""

    provider: ReasoningProvider
    block: dict[str, Any]
    """The block exactly as the provider returned it (Anthropic ``thinking`` / ``redacted_thinking``, OpenAI ``reasoning``)."""
    position: int = 0
    """How many of the message's other parts (its text, then its tool calls, in that order) came before it."""

    def __post_init__(self) -> None:
        kind = self.block.get("type")
        if kind not in _REASONING_TYPES[self.provider]:
            allowed = ", ".join(sorted(_REASONING_TYPES[self.provider]))
            raise ValueError(f"{self.provider} reasoning must be a block of type {allowed}, not {kind!r}")
        if self.position < 0:
            raise ValueError("a reasoning block position cannot be negative")

    @property
    def kind(self) -> str:
        """The block's wire type (``thinking``, ``redacted_thinking`` or ``reasoning``)."""
        return str(self.block["type"])


@event_type("message.user")
@dataclass(frozen=True, kw_only=True, slots=True)
class UserMessage:
    """A message from the user (or the operator) to the agent."""

    text: str
    author: Literal["user", "operator"] = "user"
    steering: bool = False
    """A steering note given during a run: kept verbatim and never compacted."""


@event_type("message.assistant")
@dataclass(frozen=True, kw_only=True, slots=True)
class AssistantMessage:
    """What the model answered: text and tool calls, in that order, with any signed reasoning where it stood."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    model: str | None = None
    stop_reason: str | None = None
    reasoning: tuple[ReasoningBlock, ...] = ()
    """Thinking or reasoning blocks, verbatim; they travel with this message and only to their provider."""
    phase: str | None = field(default=None, metadata={LEFT_OUT_WHEN_NONE: True})
    """What the provider labelled the text as (an OpenAI Responses message's ``phase``: ``commentary`` or
    ``final_answer``), sent back with it on that wire; None when unlabelled (and left out of the stored payload then)."""

    def __post_init__(self) -> None:
        calls = self.tool_calls
        if not isinstance(calls, tuple) or not all(isinstance(c, ToolCall) for c in calls):
            raise MalformedPayload(
                "message.assistant",
                f"tool_calls must be a tuple of ToolCall, not {type(calls).__name__}",
                path="payload.tool_calls",
            )
        if len(calls) > 1 and len({call.id for call in calls}) != len(calls):
            ids = [call.id for call in calls]
            repeated = next(call_id for i, call_id in enumerate(ids) if call_id in ids[:i])
            raise InvalidToolCallId(repeated, "two tool calls of one message share it; ids must be unique within a message")
        if self.reasoning == ():
            return  # the usual message: the checks below are about reasoning blocks alone
        parts = (1 if self.text else 0) + len(calls)
        if any(block.position > parts for block in self.reasoning):
            raise ValueError(f"a reasoning block position is past the message's {parts} other parts")
        positions = [block.position for block in self.reasoning]
        if positions != sorted(positions):
            raise ValueError("reasoning blocks must be listed in the order they were produced")


@event_type("tool.result")
@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResult:
    """The result of one tool call, as the model will see it (capped and compressed)."""

    call_id: str
    tool_name: str
    output: str
    is_error: bool = False
    exit_code: int | None = None
    trust: TrustLevel = "tool"
    denied: bool = False
    """The call was refused by the call-time policy check (for example a revoked tool)."""
    artifact: ArtifactPointer | None = None
    """Where the full original output is stored, when the model sees less than all of it."""


@event_type("context.plan.created")
@dataclass(frozen=True, kw_only=True, slots=True)
class PlanCreated:
    """The first context plan of a session, pinned before the first model request."""

    epoch: int
    plan: dict[str, Any]
    prefix_sha256: str


@event_type("context.epoch.rotated")
@dataclass(frozen=True, kw_only=True, slots=True)
class EpochRotated:
    """A new context plan replacing the previous epoch's (model change, revocation, prefix edit)."""

    epoch: int
    plan: dict[str, Any]
    prefix_sha256: str
    reason: Literal["model_changed", "forced_revocation", "prefix_edited", "cache_ttl_changed", "memory_erased"]
    previous_prefix_sha256: str
    note: str = ""
    """Why, in the operator's words (an explicit prefix edit says what changed)."""


@event_type("context.request.built")
@dataclass(frozen=True, kw_only=True, slots=True)
class RequestBuilt:
    """A request was built: its hashes, its size by class and layer, and what yielded."""

    epoch: int
    request_index: int
    prefix_sha256: str
    request_sha256: str
    provider: str
    total_tokens: int
    tokens_by_class: dict[str, int]
    tokens_by_layer: dict[str, int] = field(default_factory=dict)
    yields: tuple[str, ...] = ()
    pressure: Literal["none", "soft", "hard"] = "none"
    dedupe_hits: int = 0
    """Surface entries shown once or not at all because they repeated or were superseded."""
    inputs: dict[str, Any] | None = None
    """What is needed to rebuild the request byte for byte (volatile inputs, cut points, how bounded views were sized)."""
    exact_tokens: int | None = None
    """Tokens counted exactly (the prefix, where a real tokenizer or a provider count measured it).

    None in requests recorded before the split existed; reconciliation skips those."""
    raw_estimate_tokens: int | None = None
    """The uncorrected heuristic estimate of the rest of the request (what reconciliation learns on)."""
    estimate_factor: float | None = None
    """The correction factor applied to the estimated part (folded from the log before this request)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SummaryLine:
    """One line of a compaction summary and the trust of the text it was extracted from."""

    text: str
    trust: TrustLevel


@event_type("context.compacted")
@dataclass(frozen=True, kw_only=True, slots=True)
class Compacted:
    """A compaction was adopted: the surface before ``upto_seq`` is replaced by a summary."""

    epoch: int
    upto_seq: int
    summary: str
    depth: int
    source_event_seqs: tuple[int, ...]
    elided: tuple[ArtifactPointer, ...] = ()
    archive: ArtifactPointer | None = None
    trigger: CompactionTrigger = "pressure"
    archive_failed: bool = False
    lines: tuple[SummaryLine, ...] = ()
    """The summary's lines after its header, each with the lowest trust of what it came from.

    Empty in compactions recorded before lines carried trust: those render as one block."""


@event_type("context.compaction.rejected")
@dataclass(frozen=True, kw_only=True, slots=True)
class CompactionRejected:
    """A plugged compactor's proposal broke the trust labels a summary must keep; the extractive one was used instead."""

    epoch: int
    compactor: str
    """The plugged compactor's dotted name."""
    problems: tuple[str, ...]
    """Each breach, named by line number, label and reference (never by the text)."""


@event_type("context.working_state.updated")
@dataclass(frozen=True, kw_only=True, slots=True)
class WorkingStateUpdated:
    """The whole working state after a write by the control tool or the runtime."""

    state: dict[str, Any]
    source: Literal["tool", "runtime"]
    call_id: str | None = None


_USAGE_COUNTS = (
    "input_tokens",
    "cache_read_tokens",
    "cache_write_5m_tokens",
    "cache_write_1h_tokens",
    "output_tokens",
    "reasoning_output_tokens",
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Usage:
    """Token usage of one model request, split the same way for every provider.

    The one usage type: the wires parse into it, ``model.response`` events carry it, prices and
    the cache simulators read it. The providers disagree on what "input tokens" means, so the
    parts are kept apart and never double counted: :attr:`input_tokens` is always the uncached,
    unwritten remainder and :attr:`total_input` the whole prompt.
    """

    input_tokens: int = 0
    """Input tokens neither read from nor written to a cache (billed at the base input rate)."""
    output_tokens: int = 0
    """Generated tokens, reasoning/thinking included (what the provider bills as output)."""
    cache_read_tokens: int = 0
    """Input tokens served from a prompt cache."""
    cache_write_5m_tokens: int = 0
    """Input tokens written to a short-lived cache entry (Anthropic 5m; every OpenAI write)."""
    cache_write_1h_tokens: int = 0
    """Input tokens written to an Anthropic 1-hour cache entry."""
    reasoning_output_tokens: int = 0
    """The part of ``output_tokens`` spent on reasoning or thinking, where the provider reports it."""

    def __post_init__(self) -> None:
        for name in _USAGE_COUNTS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise UsageCountInvalid(f"Usage.{name} must be a non-negative integer, got {value!r}", field=name)
        if self.reasoning_output_tokens > self.output_tokens:
            raise UsageCountInvalid(
                f"Usage.reasoning_output_tokens ({self.reasoning_output_tokens}) is part of the output "
                f"and cannot exceed output_tokens ({self.output_tokens})",
                field="reasoning_output_tokens",
            )

    @property
    def cache_write_tokens(self) -> int:
        """All cache writes, whatever their TTL."""
        return self.cache_write_5m_tokens + self.cache_write_1h_tokens

    @property
    def total_input(self) -> int:
        """The whole prompt: uncached + cache read + cache writes."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def cache_read_share(self) -> float:
        """Fraction of the prompt read from cache (0.0 for an empty prompt)."""
        total = self.total_input
        return self.cache_read_tokens / total if total else 0.0

    def __add__(self, other: Usage) -> Usage:
        """Sum two usages field by field."""
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(**{name: getattr(self, name) + getattr(other, name) for name in _USAGE_COUNTS})


UsageRecord = Usage
"""The name :class:`Usage` had as the ``model.response`` payload's field type (kept for callers that use it)."""


@event_type("model.response")
@dataclass(frozen=True, kw_only=True, slots=True)
class ModelResponse:
    """Provider usage for one request, for reconciliation and telemetry."""

    provider: str
    model: str
    usage: Usage
    request_index: int | None = None
    estimated_input_tokens: int | None = None
    replayed: bool = False
    """The usage belongs to a replayed transcript's original request, not to this one: kept for
    reports, never folded into estimate corrections."""


@event_type("memory.written")
@dataclass(frozen=True, kw_only=True, slots=True)
class MemoryWritten:
    """A memory item was written during the session (it does not touch the frozen snapshot)."""

    memory_id: str
    text: str
    trust: TrustLevel = "user"


@event_type("memory.corrected")
@dataclass(frozen=True, kw_only=True, slots=True)
class MemoryCorrected:
    """A memory item was corrected; evidence already shown gets a correction line."""

    memory_id: str
    text: str
    previous_text: str | None = None


@event_type("memory.erased")
@dataclass(frozen=True, kw_only=True, slots=True)
class MemoryErased:
    """A memory item was erased; evidence already shown is removed from the surface."""

    memory_id: str
    reason: str = ""


@event_type("artifact.stored")
@dataclass(frozen=True, kw_only=True, slots=True)
class ArtifactStored:
    """A full text was stored in the artifact store (content-addressed)."""

    pointer: ArtifactPointer
    source_call_id: str | None = None


@event_type("tool.revoked")
@dataclass(frozen=True, kw_only=True, slots=True)
class ToolRevoked:
    """A tool may no longer be called; it stays in the prefix and calls are denied."""

    tool: str
    reason: str = ""


@event_type("tool.restored")
@dataclass(frozen=True, kw_only=True, slots=True)
class ToolRestored:
    """A revoked tool may be called again."""

    tool: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Evidence:
    """One piece of recalled evidence, as delivered to the model."""

    id: str
    text: str
    trust: TrustLevel = "user"
    source: str = "memory"


@event_type("context.recall.revision_failed")
@dataclass(frozen=True, kw_only=True, slots=True)
class RecallRevisionFailed:
    """The recall port's revision hook failed; evidence was read fresh instead of reused."""

    error: str
    """The exception's class name (events recorded before kept its message too): never the message,
    which may carry a connection string or the data asked for."""


@event_type("context.recall.unavailable")
@dataclass(frozen=True, kw_only=True, slots=True)
class RecallUnavailable:
    """The recall port raised: the request recorded after this was built without what it would have read."""

    operation: Literal["recall", "current"]
    """``recall``: evidence for the turn was not looked up; ``current``: evidence shown earlier was not checked."""
    error_class: str
    """The exception's class name only: its message may carry a connection string or the data asked for."""


@event_type("context.frame.recorded")
@dataclass(frozen=True, kw_only=True, slots=True)
class FrameRecorded:
    """The volatile context of a turn, composed once and kept as history from then on."""

    turn_seq: int
    """The seq of the user message this frame introduces."""
    runtime: str
    """Runtime metadata such as the date and time, as the model reads it."""
    working_state: dict[str, Any] | None = None
    recall: tuple[Evidence, ...] = ()


@event_type("context.pruned")
@dataclass(frozen=True, kw_only=True, slots=True)
class Pruned:
    """Tool results up to ``upto_seq`` are shown as pointers from now on (one batched pass)."""

    epoch: int
    upto_seq: int
    call_ids: tuple[str, ...]
    trigger: Literal["soft_pressure", "hard_pressure", "manual"] = "soft_pressure"


@event_type("memory.candidates")
@dataclass(frozen=True, kw_only=True, slots=True)
class MemoryCandidates:
    """Facts offered to memory formation at session end; never written directly."""

    facts: tuple[str, ...]
    withheld: int = 0
    """Facts not offered because untrusted content could have shaped them."""


@event_type("context.layer.truncated")
@dataclass(frozen=True, kw_only=True, slots=True)
class LayerTruncated:
    """Relief shrank a layer: what yielded, how many items, and how many tokens it saved."""

    epoch: int
    layer: Literal["live", "stage_local", "compressed_session", "project_memory"]
    relief: Literal["recall", "tool_results_to_pointers", "compaction"]
    items: int
    tokens_before: int
    tokens_after: int
    dedupe_hits: int = 0

    @property
    def compression_ratio(self) -> float | None:
        """tokens_after / tokens_before, when both are known."""
        if self.tokens_before <= 0 or self.tokens_after < 0:
            return None
        return self.tokens_after / self.tokens_before


@event_type("context.prefix.counted")
@dataclass(frozen=True, kw_only=True, slots=True)
class PrefixCounted:
    """The prefix of ``epoch`` counted exactly by the provider (opt-in, once per epoch).

    Later requests of the epoch take it as their exactly counted part, so reconciliation
    learns on the body's estimate alone."""

    epoch: int
    input_tokens: int
    """The provider's count of the prefix (system and tools) with a one-character user message."""
    counted_by: str
    """Which endpoint counted it, e.g. ``anthropic.messages.count_tokens``."""


@event_type("context.overflow")
@dataclass(frozen=True, kw_only=True, slots=True)
class ContextOverflow:
    """The provider rejected a request as longer than its window."""

    request_index: int
    recovered: bool
    """True when a forced compaction and one retry follow; False when the retry failed too."""
    message: str = ""


@event_type("stage.opened")
@dataclass(frozen=True, kw_only=True, slots=True)
class StageOpened:
    """A stage of work begins (plan, implement, review, ...) with a declared goal."""

    stage_id: str
    name: str
    goal: str


@event_type("stage.closed")
@dataclass(frozen=True, kw_only=True, slots=True)
class StageClosed:
    """A stage ends with an outcome; its decision point follows."""

    stage_id: str
    outcome: str
    rationale: str = ""


@event_type("decision.point")
@dataclass(frozen=True, kw_only=True, slots=True)
class DecisionPoint:
    """What a closed stage decided, harvested from its events by field extraction (no model call).

    It stands in for the stage's events in the compressed-session layer (L2)."""

    stage_id: str
    name: str
    goal: str
    outcome: str
    rationale: str = ""
    artifacts: tuple[str, ...] = ()
    """One line per artifact the stage produced: title, version and summary."""
    steering: tuple[str, ...] = ()
    """The user's steering notes given during the stage, verbatim."""
    failures: tuple[str, ...] = ()
    """Tool calls that failed and were not retried successfully (platform-known facts only)."""
    source_event_seqs: tuple[int, ...] = ()


@event_type("decision.graduated")
@dataclass(frozen=True, kw_only=True, slots=True)
class DecisionGraduated:
    """Decision points that left the compressed session (L2) for project memory (L3) under the L2 cap."""

    stage_ids: tuple[str, ...]


@event_type("artifact.declared")
@dataclass(frozen=True, kw_only=True, slots=True)
class ArtifactDeclared:
    """An artifact the agent produced (a plan, a checklist, a design): stored whole, shown in part."""

    artifact_id: str
    version: int
    title: str
    summary: str
    pointer: ArtifactPointer
    steps: tuple[str, ...] = ()
    """Declared steps make the artifact chunked: only the current step and its neighbours are shown."""
    current_step: int = 0


@event_type("artifact.step")
@dataclass(frozen=True, kw_only=True, slots=True)
class ArtifactStep:
    """The current step of a chunked artifact moved."""

    artifact_id: str
    current_step: int


@event_type("child.started")
@dataclass(frozen=True, kw_only=True, slots=True)
class ChildStarted:
    """A child run began in its own session (own plan, own epoch), seeded from a slice of this one."""

    child_session_id: str
    purpose: str
    call_id: str | None = None
    seed: str = ""


@event_type("child.finished")
@dataclass(frozen=True, kw_only=True, slots=True)
class ChildFinished:
    """A child run ended; only its final result comes back (as the answer to ``call_id``, if any)."""

    child_session_id: str
    result: str
    call_id: str | None = None


@event_type("framework.items.added")
@dataclass(frozen=True, kw_only=True, slots=True)
class FrameworkItemsAdded:
    """Items a framework stored in its own session (an Agents SDK ``Session``), kept exactly as given."""

    items: tuple[Any, ...]


@event_type("framework.item.popped")
@dataclass(frozen=True, kw_only=True, slots=True)
class FrameworkItemPopped:
    """The framework took back its most recent item; the item stays in the log, the fold drops it."""

    position: int
    """Where the popped item stood in the folded list (0-based), for the audit trail."""


@event_type("framework.items.cleared")
@dataclass(frozen=True, kw_only=True, slots=True)
class FrameworkItemsCleared:
    """The framework cleared its session; earlier items stay in the log, the fold starts empty."""

    count: int
    """How many items the fold held when it was cleared."""


@event_type("framework.history.seen")
@dataclass(frozen=True, kw_only=True, slots=True)
class FrameworkHistorySeen:
    """Messages of a caller's own history an adapter has recorded, as content hashes, in order.

    The next call's history must start with them; what follows is new."""

    fingerprints: tuple[str, ...]


@event_type("gateway.request.received")
@dataclass(frozen=True, kw_only=True, slots=True)
class GatewayRequestReceived:
    """A body a client sent through the gateway, stored as its change from the one it sent before under the same key.

    The gateway appends it to the run the request went to; no fold of the session reads it,
    so a run's requests rebuild as before. Rebuilt body by body across the key's runs
    (``telemetry.misses.client_requests``), it gives what the client changed between two
    requests even when the change started a new run."""

    key: str
    """The session key (the first run's session id)."""
    number: int
    """The request's place among the key's requests, from 1."""
    base: int | None = None
    """The number of the request this one is stored against; None: the whole body is here."""
    wire: str
    received_at: str
    """When the gateway received the request (ISO 8601)."""
    first_byte_ms: int | None = None
    """From receipt to the answer's first byte, when one came."""
    fields: dict[str, Any] = field(default_factory=dict)
    """Top-level keys whose value is new or changed (lists whose start is unchanged are in ``lists``)."""
    lists: dict[str, Any] = field(default_factory=dict)
    """List-valued keys that extend the base's list: ``{"kept": n, "items": [...]}``, the base's first n items, then these."""
    dropped: tuple[str, ...] = ()
    """Top-level keys the base had and this body has not."""


@event_type("gateway.request.passed")
@dataclass(frozen=True, kw_only=True, slots=True)
class GatewayRequestPassed:
    """A gateway in manage mode sent a client's request upstream as the client sent it, not the engine's; why.

    ``round_cap``: the run reached its round cap (``RoundPolicy.hard_cap`` model rounds since the
    last user message); ``unsent_content``: the conversation holds content the log keeps only a
    placeholder for or nothing of (an image, a document, a server or hosted tool's call, a
    Responses compaction item or item reference), which the engine's request could not show, its
    kinds named in ``message``; ``not_built``: the engine built no request for another reason, in
    ``message``.
    No fold reads it: the run rebuilds as before."""

    reason: Literal["round_cap", "unsent_content", "not_built"]
    message: str = ""


EventPayload = (
    UserMessage
    | AssistantMessage
    | ToolResult
    | PlanCreated
    | EpochRotated
    | RequestBuilt
    | Compacted
    | CompactionRejected
    | WorkingStateUpdated
    | ModelResponse
    | MemoryWritten
    | MemoryCorrected
    | MemoryErased
    | ArtifactStored
    | ToolRevoked
    | ToolRestored
    | FrameRecorded
    | Pruned
    | MemoryCandidates
    | LayerTruncated
    | ContextOverflow
    | PrefixCounted
    | StageOpened
    | StageClosed
    | DecisionPoint
    | DecisionGraduated
    | ArtifactDeclared
    | ArtifactStep
    | ChildStarted
    | ChildFinished
    | FrameworkItemsAdded
    | FrameworkItemPopped
    | FrameworkItemsCleared
    | FrameworkHistorySeen
    | GatewayRequestReceived
    | GatewayRequestPassed
    | RecallRevisionFailed
    | RecallUnavailable
)
"""Every event payload type, so folds can match them exhaustively (a test checks it against the registry)."""
