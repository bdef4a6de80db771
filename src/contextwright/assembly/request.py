"""The neutral request: what the model will see, before any provider's wire format.

Every part carries its trust level, its provenance (``ref``: the log event it
came from) and the budget class and layer that pay for it, so renderers,
telemetry and ``inspect`` never have to guess. Renderers turn a
:class:`NeutralRequest` into an Anthropic, OpenAI Chat or OpenAI Responses body.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from contextwright.canonical import canonical_json, sha256_tagged

Role = Literal["user", "assistant"]


@dataclass(frozen=True, kw_only=True, slots=True)
class TextPart:
    """Text in a message; non-platform text is already inside its envelope."""

    kind: Literal["text"] = "text"
    text: str
    trust: str
    source: str
    ref: str
    budget_class: str
    layer: str
    volatile: bool = False
    """Part of the volatile tail: never a cache anchor."""
    phase: str | None = None
    """An answer's text: what the provider labelled it (:attr:`~contextwright.events.catalog.AssistantMessage.phase`),
    sent back with it on that wire; left out of the canonical request when None."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallPart:
    """A tool call the model made."""

    kind: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: dict[str, Any]
    ref: str
    layer: str = "stage_local"
    namespace: str | None = None
    """The namespace tool the called tool sits in (:attr:`~contextwright.events.catalog.ToolCall.namespace`);
    left out of the canonical request when None."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResultPart:
    """The (enveloped) result of one tool call."""

    kind: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    text: str
    is_error: bool
    trust: str
    ref: str
    layer: str = "stage_local"
    budget_class: str = "tool_results"


@dataclass(frozen=True, kw_only=True, slots=True)
class ReasoningPart:
    """A provider's signed reasoning from an answer, verbatim: sent back only on that provider's wire, never edited."""

    kind: Literal["reasoning"] = "reasoning"
    provider: str
    """Whose reasoning it is (``anthropic`` or ``openai``); other wires leave it out."""
    block: dict[str, Any]
    """The block as the provider returned it (thinking, redacted_thinking or a reasoning item)."""
    ref: str
    layer: str = "stage_local"
    budget_class: str = "reasoning"
    stale: bool = False
    """The history before it changed after it was produced: models that check its prefix would reject it."""


Part = TextPart | ToolCallPart | ToolResultPart | ReasoningPart


@dataclass(frozen=True, kw_only=True, slots=True)
class Message:
    """One message of the conversation, in provider-valid order."""

    role: Role
    parts: tuple[Part, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class SystemBlock:
    """One region-A block of the system prompt, in assembly order."""

    budget_class: str
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolDefinition:
    """A pinned tool as sent to the provider."""

    name: str
    description: str
    input_schema: dict[str, Any]
    native: dict[str, Any] | None = None
    """The client's own declaration, for the wire it names (:attr:`~contextwright.items.region_a.ToolSpec.native`);
    left out of the canonical request when None, so requests without one keep their bytes."""

    def to_dict(self) -> dict[str, Any]:
        """The tool as its prefix hash covers it: the pinned form (``ToolSpec.to_dict``), ``native`` only where set."""
        plain = {"name": self.name, "description": self.description, "input_schema": self.input_schema}
        if self.native is not None:
            plain["native"] = self.native
        return plain


@dataclass(frozen=True, kw_only=True, slots=True)
class NeutralRequest:
    """A complete, provider-independent request."""

    session_id: str
    epoch: int
    model: str
    provider: str
    max_output_tokens: int
    system: tuple[SystemBlock, ...]
    tools: tuple[ToolDefinition, ...]
    messages: tuple[Message, ...]
    prefix_sha256: str
    stable_messages: int
    """How many leading messages are history (byte-stable in later requests)."""
    cache_key: str
    """A stable key per (session, epoch), for providers that route caches by key."""
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values (the canonical form that :meth:`sha256` covers)."""
        plain: dict[str, Any] = _plain(self)
        return plain

    def canonical(self) -> str:
        """Canonical JSON text of the request."""
        return canonical_request(self)

    def sha256(self) -> str:
        """Tagged SHA-256 of the canonical request."""
        return sha256_tagged(self.canonical())

    def tool_call_ids(self) -> list[str]:
        """Every tool call id, in order."""
        return [p.id for m in self.messages for p in m.parts if isinstance(p, ToolCallPart)]


_MESSAGES_SLOT = ',"messages":[]'
"""The messages' place in the canonical request with none: the first match is the top-level key, since the
keys sorted before it hold only a hash and numbers (and a quote inside a string is always escaped)."""


def message_json(message: Message) -> str:
    """Canonical JSON of one message, exactly as it appears inside the canonical request."""
    return canonical_json(_plain(message))


_PREFIX_SLOTS = ',"system":[],"tools":[]}'
"""The end of the canonical request with no system blocks and no tools: the last two keys in sorted order."""


def prefix_json(request: NeutralRequest) -> tuple[str, str]:
    """Canonical JSON of the request's system blocks and of its tools, each a list."""
    return canonical_json(_plain(request.system)), canonical_json(_plain(request.tools))


def canonical_request(
    request: NeutralRequest,
    encode: Callable[[Message], str] = message_json,
    encode_prefix: Callable[[NeutralRequest], tuple[str, str]] = prefix_json,
    *,
    encoded: Sequence[str] | None = None,
) -> str:
    """Canonical JSON of ``request``, with each message encoded by ``encode`` (which must equal :func:`message_json`)
    and the system blocks and tools by ``encode_prefix`` (which must equal :func:`prefix_json`).
    ``encoded`` gives the messages already encoded, in order, instead.

    Canonical JSON of a list is its items' canonical JSON joined by commas, so the request
    is its shell with the messages spliced in; that lets a caller encode each message once,
    and the prefix once per epoch.
    """
    opening, closing = request_shell(request, encode_prefix)
    messages = encoded if encoded is not None else [encode(message) for message in request.messages]
    return f"{opening}{','.join(messages)}{closing}"


def request_shell(
    request: NeutralRequest, encode_prefix: Callable[[NeutralRequest], tuple[str, str]] = prefix_json
) -> tuple[str, str]:
    """The canonical request's text before its first message and after its last one.

    Between them stand the messages' canonical JSON joined by commas (see :func:`canonical_request`)."""
    if request.metadata:  # its keys could look like the slots below: encode the shell whole
        shell = canonical_json(_plain_emptied(request, ("messages",)))
    else:
        bare = canonical_json(_plain_emptied(request, ("messages", "system", "tools")))
        if not bare.endswith(_PREFIX_SLOTS):  # the request's own fields are fixed, so only a changed shape lands here
            raise AssertionError("the canonical request does not end with its system and tools keys")
        system, tools = encode_prefix(request)
        shell = f'{bare[: -len(_PREFIX_SLOTS)]},"system":{system},"tools":{tools}}}'
    head, slot, rest = shell.partition(_MESSAGES_SLOT)
    if not slot:  # the request's own fields are fixed, so only a changed shape lands here
        raise AssertionError("the canonical request has no top-level messages key")
    return f'{head},"messages":[', f"]{rest}"


def _plain_emptied(request: NeutralRequest, emptied: tuple[str, ...]) -> dict[str, Any]:
    """``_plain(replace(request, **{name: () for name in emptied}))``, without building the copy."""
    return {name: [] if name in emptied else _plain(getattr(request, name)) for name in request.__dataclass_fields__}


_LEFT_OUT_WHEN_NONE: dict[type, frozenset[str]] = {
    ToolDefinition: frozenset({"native"}),
    ToolCallPart: frozenset({"namespace"}),
    TextPart: frozenset({"phase"}),
}
"""Fields added after requests were first recorded: absent from the canonical form while unset."""

_SCALARS = frozenset({str, int, float, bool, type(None)})
"""Types whose values are plain as they are (most of a message's values: asked first, they skip the attribute probes)."""


def _plain(value: Any) -> Any:
    if type(value) in _SCALARS:
        return value
    if hasattr(value, "__dataclass_fields__"):
        unset = _LEFT_OUT_WHEN_NONE.get(type(value))
        if unset is not None:
            return {
                name: _plain(getattr(value, name))
                for name in value.__dataclass_fields__
                if name not in unset or getattr(value, name) is not None
            }
        return {name: _plain(getattr(value, name)) for name in value.__dataclass_fields__}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "items"):
        return {k: _plain(v) for k, v in value.items()}
    return value
