"""Render a neutral request as an OpenAI Responses body with a stable cache key.

``render(request, caps)`` returns the keyword arguments of
``client.responses.create(**body)``:

* the system blocks, joined in assembly order, go into a **leading input message**
  with ``caps.instruction_role`` rather than into ``instructions``. Both render at
  the same place, right after the tool definitions, but the end of the initial
  developer block is a documented cache boundary and a message can carry an
  explicit breakpoint while ``instructions`` cannot
  (https://developers.openai.com/api/docs/guides/prompt-caching). The prefix stays
  first and byte-stable either way;
* user text parts become one user message each, assistant text parts one
  assistant message each, tool calls ``function_call`` items (canonical JSON
  arguments) and tool results ``function_call_output`` items, all in log order,
  with the outputs of a user message before its text;
* reasoning items from earlier answers go back verbatim where they stood (before
  the message and calls they led to), so a reasoning model continues its chain
  across tool calls; another provider's reasoning is never sent;
* ``prompt_cache_key`` = ``request.cache_key``; ``prompt_cache_options.ttl`` where the
  model accepts it (gpt-5.6 and later). The deprecated ``prompt_cache_retention`` is
  not sent: openai 3.57 (``types/responses/response_create_params.py``) says to use
  ``prompt_cache_options.ttl`` instead;
* ``store`` is off because the full context is sent every time, so reasoning models
  ask for ``include: ["reasoning.encrypted_content"]``: without storage, the
  encrypted reasoning is the only way to carry it to the next request
  (https://developers.openai.com/api/docs/guides/reasoning, "Encrypted reasoning items").

Function outputs have no error flag: ``is_error`` is carried by the enveloped text.
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
    RenderError,
    arguments_json,
    cache_key_option,
    check_request,
    is_blank,
    joined_system,
    json_copy,
)
from contextwright.providers.capabilities import ProviderCapabilities
from contextwright.providers.tool_names import wire_tool_name

__all__ = ["RenderError", "render"]


def render(request: NeutralRequest, caps: ProviderCapabilities) -> dict[str, Any]:
    """Return the keyword arguments for ``openai.OpenAI().responses.create(**body)``."""
    check_request(request, caps, provider="openai")
    items: list[dict[str, Any]] = []
    instructions = joined_system(request)
    if instructions:
        items.append({"role": caps.instruction_role, "content": instructions})
    for message in request.messages:
        items.extend(_map_message(message))
    if not items:
        raise RenderError("the request has nothing to send", session_id=request.session_id)
    body: dict[str, Any] = {"model": request.model, "input": items}
    if request.tools:
        body["tools"] = [_map_tool(tool) for tool in request.tools]
    body["max_output_tokens"] = request.max_output_tokens
    body.update(cache_key_option(request, caps))
    if caps.supports_cache_options:
        body["prompt_cache_options"] = {"ttl": caps.cache_ttl}
    body["store"] = False
    if caps.reasoning_items:
        body["include"] = [ENCRYPTED_REASONING]
    return body


ENCRYPTED_REASONING = "reasoning.encrypted_content"
"""The ``include`` value that returns reasoning items a stateless (``store: false``) request can send back."""


def _map_tool(tool: ToolDefinition) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "function", "name": wire_tool_name(tool.name)}
    if tool.description:
        out["description"] = tool.description
    out["parameters"] = json_copy(tool.input_schema)
    # Functions are strict by default in Responses (non-strict in Chat Completions,
    # https://developers.openai.com/api/docs/guides/migrate-to-responses), and strict
    # mode refuses schemas that are not closed objects. Pinned specs are arbitrary JSON
    # Schema, so say false explicitly; the SDK type requires the key anyway.
    out["strict"] = False
    return out


def _map_message(message: Message) -> list[dict[str, Any]]:
    if message.role == "assistant":
        return _map_assistant(message)
    outputs: list[dict[str, Any]] = []
    texts: list[dict[str, Any]] = []
    for part in message.parts:
        match part:
            case ToolResultPart():
                outputs.append({"type": "function_call_output", "call_id": part.call_id, "output": part.text})
            case TextPart():
                if not is_blank(part.text):
                    texts.append({"role": "user", "content": part.text})
            case ToolCallPart() | ReasoningPart():
                raise RenderError(f"{part.kind} part in a user message")  # check_request rules this out
            case _:
                assert_never(part)
    return outputs + texts


def _map_assistant(message: Message) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for part in message.parts:
        match part:
            case TextPart():
                if not is_blank(part.text):
                    items.append({"role": "assistant", "content": part.text})
            case ToolCallPart():
                items.append(
                    {
                        "type": "function_call",
                        "call_id": part.id,
                        "name": wire_tool_name(part.name),
                        "arguments": arguments_json(part.arguments),
                    }
                )
            case ReasoningPart():
                if part.provider == "openai":
                    items.append(json_copy(part.block))
            case ToolResultPart():
                raise RenderError(f"tool result {part.call_id!r} in an assistant message")  # ruled out earlier
            case _:
                assert_never(part)
    return items
