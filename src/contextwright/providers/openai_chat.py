"""Render a neutral request as an OpenAI Chat Completions body with a stable cache key.

``render(request, caps)`` returns the keyword arguments of
``client.chat.completions.create(**body)``. OpenAI caches exact prompt prefixes on
its own (https://developers.openai.com/api/docs/guides/prompt-caching), so the job
here is to keep the prefix first and byte-stable and to route every request of a
session and epoch to the same cache:

* one leading instruction message (``caps.instruction_role``) with the system
  blocks joined in assembly order: the frozen prefix comes first;
* then the conversation in order: an assistant message carries its text and its
  ``tool_calls`` (arguments as canonical JSON, so re-rendering gives the same
  bytes); the results follow as ``tool`` messages, directly after it; each user
  text part is its own user message, so the end of stable history is a message
  boundary that stays put when the volatile tail changes;
* ``prompt_cache_key`` = ``request.cache_key`` and, where the model accepts it,
  ``prompt_cache_retention``.

Chat Completions has no error flag on tool messages: ``is_error`` is carried by the
enveloped result text only. It has no field for reasoning either, so reasoning parts
(Anthropic thinking, OpenAI reasoning items) are left out.
"""

from __future__ import annotations

from typing import Any, assert_never

from contextwright.assembly.request import (
    Message,
    NeutralRequest,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultPart,
)
from contextwright.providers._render_common import (
    TEXT_SEPARATOR,
    RenderError,
    arguments_json,
    cache_options,
    check_request,
    is_blank,
    joined_system,
    json_copy,
)
from contextwright.providers.capabilities import ProviderCapabilities
from contextwright.providers.tool_names import wire_tool_name

__all__ = ["RenderError", "render"]


def render(request: NeutralRequest, caps: ProviderCapabilities) -> dict[str, Any]:
    """Return the keyword arguments for ``openai.OpenAI().chat.completions.create(**body)``."""
    check_request(request, caps, provider="openai")
    messages: list[dict[str, Any]] = []
    instructions = joined_system(request)
    if instructions:
        messages.append({"role": caps.instruction_role, "content": instructions})
    for message in request.messages:
        messages.extend(_map_message(message))
    if not messages:
        raise RenderError("the request has nothing to send", session_id=request.session_id)
    body: dict[str, Any] = {"model": request.model, "messages": messages}
    if request.tools:
        body["tools"] = [_map_tool(tool) for tool in request.tools]
    body["max_completion_tokens"] = request.max_output_tokens
    body.update(cache_options(request, caps))
    return body


def _map_tool(tool: ToolDefinition) -> dict[str, Any]:
    function: dict[str, Any] = {"name": wire_tool_name(tool.name)}
    if tool.description:
        function["description"] = tool.description
    function["parameters"] = json_copy(tool.input_schema)
    return {"type": "function", "function": function}


def _map_message(message: Message) -> list[dict[str, Any]]:
    if message.role == "assistant":
        return _map_assistant(message)
    results: list[dict[str, Any]] = []
    texts: list[dict[str, Any]] = []
    for part in message.parts:
        match part:
            case ToolResultPart():
                # Tool messages must directly follow the assistant message that made the
                # calls (https://developers.openai.com/api/docs/guides/function-calling), so they
                # go before any user text of the same neutral message.
                results.append({"role": "tool", "tool_call_id": part.call_id, "content": part.text})
            case TextPart():
                if not is_blank(part.text):
                    texts.append({"role": "user", "content": part.text})
            case ToolCallPart() | ReasoningPart():
                raise RenderError(f"{part.kind} part in a user message")  # check_request rules this out
            case _:
                assert_never(part)
    return results + texts


def _map_assistant(message: Message) -> list[dict[str, Any]]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in message.parts:
        match part:
            case TextPart():
                if not is_blank(part.text):
                    texts.append(part.text)
            case ToolCallPart():
                calls.append(
                    {
                        "id": part.id,
                        "type": "function",
                        "function": {
                            "name": wire_tool_name(part.name),
                            "arguments": arguments_json(part.arguments),
                        },
                    }
                )
            case ReasoningPart():
                pass  # no Chat Completions field carries reasoning back
            case ToolResultPart():
                raise RenderError(f"tool result {part.call_id!r} in an assistant message")  # ruled out earlier
            case _:
                assert_never(part)
    if not texts and not calls:
        return []
    out: dict[str, Any] = {
        "role": "assistant",
        "content": TEXT_SEPARATOR.join(texts) if texts else None,
    }
    if calls:
        out["tool_calls"] = calls
    return [out]
