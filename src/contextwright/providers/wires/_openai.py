"""What the two OpenAI wires (Chat Completions and Responses) share: the body skeleton, user turns and usage.

Both wires send the system blocks, joined in assembly order, as one leading instruction
message (``caps.instruction_role``), then the conversation in log order, then the tool
definitions; a user message's tool results go before its text (the results must directly
follow the call that asked for them). Only the shape of an item differs, so each wire module
passes its own item mappers to :func:`openai_body`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
from contextwright.events.catalog import Usage
from contextwright.providers._render_common import RenderError, check_request, is_blank, joined_system
from contextwright.providers.capabilities import ProviderCapabilities
from contextwright.providers.usage import count, malformed


def openai_body(
    request: NeutralRequest,
    caps: ProviderCapabilities,
    *,
    items_key: str,
    map_message: Callable[[Message], list[dict[str, Any]]],
    map_tool: Callable[[ToolDefinition], dict[str, Any]],
) -> dict[str, Any]:
    """``{"model", items_key: [...], "tools"}``: the instruction message, the conversation, the tools."""
    check_request(request, caps, provider="openai")
    items: list[dict[str, Any]] = []
    instructions = joined_system(request)
    if instructions:
        items.append({"role": caps.instruction_role, "content": instructions})
    for message in request.messages:
        items.extend(map_message(message))
    if not items:
        raise RenderError("the request has nothing to send", session_id=request.session_id)
    body: dict[str, Any] = {"model": request.model, items_key: items}
    if request.tools:
        body["tools"] = [map_tool(tool) for tool in request.tools]
    return body


def user_items(message: Message, result: Callable[[ToolResultPart], dict[str, Any]]) -> list[dict[str, Any]]:
    """A user message: its tool results (``result`` of each) first, then one user message per text part."""
    results: list[dict[str, Any]] = []
    texts: list[dict[str, Any]] = []
    for part in message.parts:
        match part:
            case ToolResultPart():
                results.append(result(part))
            case TextPart():
                if not is_blank(part.text):
                    texts.append({"role": "user", "content": part.text})
            case ToolCallPart() | ReasoningPart():
                raise RenderError(f"{part.kind} part in a user message")  # check_request rules this out
            case _:
                assert_never(part)
    return results + texts


def openai_usage(*, prompt: int, input_details: Mapping[str, Any], output: int, reasoning: int) -> Usage:
    """The usage of an OpenAI answer from its prompt count, the prompt's details, the output and its reasoning part."""
    # https://developers.openai.com/api/docs/guides/prompt-caching: the prompt count
    # includes cached and written tokens; older models report no writes (None -> 0).
    cached = count(input_details, "cached_tokens", provider="openai")
    written = count(input_details, "cache_write_tokens", provider="openai")
    if cached + written > prompt:
        raise malformed(
            "openai",
            f"cached ({cached}) + cache_write ({written}) tokens exceed the prompt ({prompt})",
        )
    written_1h = litellm_1h_writes(input_details, written)
    return Usage(
        input_tokens=prompt - cached - written,
        cache_read_tokens=cached,
        cache_write_5m_tokens=written - written_1h,
        cache_write_1h_tokens=written_1h,
        output_tokens=output,
        reasoning_output_tokens=reasoning,
    )


def litellm_1h_writes(input_details: Mapping[str, Any], written: int) -> int:
    """The 1-hour part of the writes, from LiteLLM's Anthropic TTL split (0 when absent)."""
    split = input_details.get("cache_creation_token_details")
    if not isinstance(split, Mapping):
        return 0
    written_1h = count(split, "ephemeral_1h_input_tokens", provider="litellm")
    if written_1h > written:
        raise malformed("litellm", f"1-hour cache writes ({written_1h}) exceed all cache writes ({written})")
    return written_1h
