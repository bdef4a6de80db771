"""Provider responses → the neutral assistant message and one usage shape.

Accepts the official SDKs' response objects (anything with ``model_dump()``, such
as the final message of a stream) or the same JSON as plain mappings, for Anthropic
Messages, OpenAI Chat Completions and OpenAI Responses.

Signed reasoning (Anthropic ``thinking`` / ``redacted_thinking`` blocks, OpenAI
Responses ``reasoning`` items) is kept verbatim as
:class:`~contextwright.events.catalog.ReasoningBlock` parts of the message, with its
place among the text and the tool calls, so it can be sent back as received.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from contextwright.events.catalog import AssistantMessage, ReasoningBlock, ReasoningProvider, ToolCall
from contextwright.providers.errors import MalformedProviderResponse
from contextwright.providers.usage import (
    Usage,
    parse_anthropic_usage,
    parse_openai_chat_usage,
    parse_openai_responses_usage,
)


def parse_response(response: Any) -> tuple[AssistantMessage, Usage | None]:
    """The assistant message and usage of a provider response (the kind is detected)."""
    data = response.model_dump() if hasattr(response, "model_dump") else response
    if not isinstance(data, Mapping):
        raise MalformedProviderResponse(
            f"a response must be an SDK object or a mapping, not {type(response).__name__}", provider="unknown"
        )
    if data.get("type") == "message" and "content" in data:
        return _anthropic(data)
    if "choices" in data:
        return _openai_chat(data)
    if data.get("object") == "response" or "output" in data:
        return _openai_responses(data)
    raise MalformedProviderResponse(
        "unrecognised response: not an Anthropic message, a chat completion or a response", provider="unknown"
    )


_ANTHROPIC_REASONING = frozenset({"thinking", "redacted_thinking"})


def _anthropic(data: Mapping[str, Any]) -> tuple[AssistantMessage, Usage | None]:
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[ReasoningBlock] = []
    for block in data.get("content") or ():
        kind = block.get("type")
        if kind == "text":
            texts.append(block.get("text", ""))
        elif kind == "tool_use":
            calls.append(ToolCall(id=block["id"], name=block["name"], arguments=dict(block.get("input") or {})))
        elif kind in _ANTHROPIC_REASONING:
            reasoning.append(_reasoning("anthropic", block, texts, calls))
        # server-tool blocks are not replayed into history
    usage = parse_anthropic_usage(data["usage"]) if data.get("usage") else None
    message = AssistantMessage(
        text="\n".join(t for t in texts if t),
        tool_calls=tuple(calls),
        model=data.get("model"),
        stop_reason=data.get("stop_reason"),
        reasoning=tuple(reasoning),
    )
    return message, usage


def _reasoning(provider: ReasoningProvider, block: Mapping[str, Any], texts: list[str], calls: list[ToolCall]) -> ReasoningBlock:
    """A reasoning block placed after the parts seen so far (the joined text counts once, then each call)."""
    # None-valued keys are SDK defaults for fields the provider did not send; everything else is kept as is.
    verbatim = {key: value for key, value in block.items() if value is not None}
    return ReasoningBlock(provider=provider, block=verbatim, position=(1 if any(texts) else 0) + len(calls))


def _openai_chat(data: Mapping[str, Any]) -> tuple[AssistantMessage, Usage | None]:
    choices = data.get("choices") or []
    if not choices:
        raise MalformedProviderResponse("chat completion has no choices", provider="openai")
    choice = choices[0]
    message = choice.get("message") or {}
    calls = tuple(
        ToolCall(id=c["id"], name=c["function"]["name"], arguments=_arguments(c["function"].get("arguments"), provider="openai"))
        for c in message.get("tool_calls") or ()
    )
    usage = parse_openai_chat_usage(data["usage"]) if data.get("usage") else None
    text = message.get("content") or ""
    # LiteLLM answers for Anthropic models carry the signed thinking as ``thinking_blocks``
    # (litellm types/utils.py, Message); Anthropic puts thinking before text and calls.
    reasoning = tuple(_reasoning("anthropic", block, [], []) for block in message.get("thinking_blocks") or ())
    return AssistantMessage(
        text=text, tool_calls=calls, model=data.get("model"), stop_reason=choice.get("finish_reason"), reasoning=reasoning
    ), usage


def _openai_responses(data: Mapping[str, Any]) -> tuple[AssistantMessage, Usage | None]:
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[ReasoningBlock] = []
    for item in data.get("output") or ():
        kind = item.get("type")
        if kind == "message":
            for part in item.get("content") or ():
                if part.get("type") in ("output_text", "text"):
                    texts.append(part.get("text", ""))
        elif kind == "function_call":
            calls.append(
                ToolCall(id=item["call_id"], name=item["name"], arguments=_arguments(item.get("arguments"), provider="openai"))
            )
        elif kind == "reasoning":
            reasoning.append(_reasoning("openai", item, texts, calls))
    usage = parse_openai_responses_usage(data["usage"]) if data.get("usage") else None
    return AssistantMessage(
        text="\n".join(t for t in texts if t),
        tool_calls=tuple(calls),
        model=data.get("model"),
        stop_reason=data.get("status"),
        reasoning=tuple(reasoning),
    ), usage


def _arguments(raw: Any, *, provider: str) -> dict[str, Any]:
    if raw in (None, ""):
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return {"_raw": str(raw)}
    return value if isinstance(value, dict) else {"_raw": raw}
