"""Pieces shared by the wires: the render error, the byte-stable helpers and the answer readers' helpers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from contextwright.assembly.request import (
    Message,
    NeutralRequest,
    Part,
    ReasoningPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultPart,
)
from contextwright.canonical import canonical_json
from contextwright.errors import BuildError
from contextwright.events.catalog import ReasoningBlock, ReasoningProvider, ToolCall
from contextwright.providers.capabilities import ProviderCapabilities

TEXT_SEPARATOR = "\n\n"
"""Joins text blocks where a wire format has room for one string only (OpenAI system text)."""


class RenderError(BuildError):
    """A neutral request cannot be expressed in a provider's wire format."""


def check_request(request: NeutralRequest, caps: ProviderCapabilities, *, provider: str) -> None:
    """Reject what no renderer maps: wrong provider, bad stable count, parts in the wrong role."""
    check_shape(request, caps, provider=provider)
    # Tool names the providers reject are not refused here: each renderer sends
    # wire_tool_name() of them (providers/tool_names.py), so no recorded name wedges a session.
    for index, message in enumerate(request.messages):
        for part in message.parts:
            check_part_role(request, index, message, part)


def check_shape(request: NeutralRequest, caps: ProviderCapabilities, *, provider: str) -> None:
    """Reject a request for another provider, or one whose stable count is out of range."""
    if caps.provider != provider:
        raise RenderError(
            f"capabilities are for provider {caps.provider!r}, this renderer writes {provider!r} bodies",
            session_id=request.session_id,
        )
    if not 0 <= request.stable_messages <= len(request.messages):
        raise RenderError(
            f"stable_messages={request.stable_messages} is outside 0..{len(request.messages)}",
            session_id=request.session_id,
        )


def check_part_role(
    request: NeutralRequest,
    index: int,
    message: Message,
    part: Part,
) -> None:
    """Tool calls and reasoning come from the assistant and results go back as the user; nothing else maps."""
    if isinstance(part, ReasoningPart) and message.role != "assistant":
        raise RenderError(
            f"message {index}: {part.provider} reasoning in a {message.role} message; only the assistant reasons",
            session_id=request.session_id,
            message_index=index,
        )
    if isinstance(part, ToolCallPart) and message.role != "assistant":
        raise RenderError(
            f"message {index}: tool call {part.id!r} in a {message.role} message; only the assistant calls tools",
            session_id=request.session_id,
            message_index=index,
        )
    if isinstance(part, ToolResultPart) and message.role != "user":
        raise RenderError(
            f"message {index}: tool result {part.call_id!r} in a {message.role} message; results are user content",
            session_id=request.session_id,
            message_index=index,
        )


def is_blank(text: str) -> bool:
    """True for text that providers refuse as a content block (empty or whitespace only)."""
    return not text.strip()


def json_copy(value: Any) -> Any:
    """A deep copy with object keys sorted at every depth.

    Re-rendering the same log must give the same bytes, and key order inside tool
    arguments and schemas is part of the cached prefix
    (https://platform.claude.com/docs/en/build-with-claude/prompt-caching), so we
    never pass on a caller's insertion order.
    """
    return json.loads(canonical_json(value))


def arguments_json(arguments: dict[str, Any]) -> str:
    """Tool-call arguments as the canonical JSON string OpenAI expects."""
    return canonical_json(arguments)


def joined_system(request: NeutralRequest) -> str:
    """The system blocks in assembly order as one string (blank blocks skipped)."""
    return TEXT_SEPARATOR.join(block.text for block in request.system if not is_blank(block.text))


def cache_options(request: NeutralRequest, caps: ProviderCapabilities) -> dict[str, Any]:
    """The Chat Completions cache fields: routing key and, where accepted, the retention policy."""
    out = cache_key_option(request, caps)
    # Only the models listed in the same guide accept a retention policy; the field
    # is marked deprecated in favour of prompt_cache_options.ttl (gpt-5.6+), which the
    # SDK documents as independent of it, so it is still worth sending here.
    if caps.supports_cache_retention:
        out["prompt_cache_retention"] = caps.cache_retention
    return out


def cache_key_option(request: NeutralRequest, caps: ProviderCapabilities) -> dict[str, Any]:
    """``prompt_cache_key``: one key per (session, epoch), where the model takes one."""
    # Requests that share a prefix land on the same cache machines
    # (https://developers.openai.com/api/docs/guides/prompt-caching).
    if caps.supports_cache_key and request.cache_key:
        return {"prompt_cache_key": request.cache_key}
    return {}


def reasoning_block(
    provider: ReasoningProvider, block: Mapping[str, Any], texts: list[str], calls: list[ToolCall]
) -> ReasoningBlock:
    """A reasoning block of an answer, placed after the parts seen so far (the joined text counts once, then each call)."""
    # None-valued keys are SDK defaults for fields the provider did not send; everything else is kept as is.
    verbatim = {key: value for key, value in block.items() if value is not None}
    return ReasoningBlock(provider=provider, block=verbatim, position=(1 if any(texts) else 0) + len(calls))


def parsed_arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments of an answer as a mapping: JSON text is decoded, anything unreadable kept under ``_raw``."""
    if raw in (None, ""):
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return {"_raw": str(raw)}
    return value if isinstance(value, dict) else {"_raw": raw}


def native_declaration(tool: ToolDefinition, wire: str) -> Any:
    """The client's own declaration of ``tool`` when it was made for ``wire`` (keys sorted), else None.

    A hosted tool, a namespace or a free-form tool has no function form that means the same
    to the provider, so the wire it came from sends it as the client did."""
    if tool.native is None or tool.native.get("wire") != wire:
        return None
    return json_copy(tool.native["tool"])
