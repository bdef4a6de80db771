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
  bytes; a call of a tool the client declared free-form, a pinned ``type: custom``
  tool, goes as the custom call the provider answered with, its ``input`` the one
  argument the log keeps); the results follow as ``tool`` messages, directly after it; each user
  text part is its own user message, so the end of stable history is a message
  boundary that stays put when the volatile tail changes;
* ``prompt_cache_key`` = ``request.cache_key`` and, where the model accepts it,
  ``prompt_cache_retention``.

Chat Completions has no error flag on tool messages: ``is_error`` is carried by the
enveloped result text only. It has no field for reasoning either, so reasoning parts
(Anthropic thinking, OpenAI reasoning items) are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
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
from contextwright.events.catalog import AssistantMessage, ToolCall, Usage
from contextwright.providers._render_common import (
    TEXT_SEPARATOR,
    RenderError,
    arguments_json,
    cache_options,
    is_blank,
    json_copy,
    native_declaration,
    parsed_arguments,
    reasoning_block,
)
from contextwright.providers.capabilities import ProviderCapabilities
from contextwright.providers.errors import MalformedProviderResponse, from_sdk_exception, is_sdk_api_error, sdk_family
from contextwright.providers.tool_names import wire_tool_name
from contextwright.providers.usage import count, nested_count, usage_mapping
from contextwright.providers.wire import Ttl, Wire
from contextwright.providers.wires._openai import openai_body, openai_usage, user_items

__all__ = ["WIRE", "RenderError", "parse_answer", "parse_usage", "render", "translate_error"]


def render(
    request: NeutralRequest,
    caps: ProviderCapabilities,
    *,
    previous: NeutralRequest | None = None,
    prefix_ttl: Ttl = "5m",
) -> dict[str, Any]:
    """Return the keyword arguments for ``openai.OpenAI().chat.completions.create(**body)``.

    OpenAI caches by prefix without markers: neither the previous request nor a TTL changes the body.
    """
    body = openai_body(request, caps, items_key="messages", map_message=_map_message, map_tool=_map_tool)
    free_form = _free_form_tools(request)
    if free_form:
        body["messages"] = [_with_custom_calls(item, free_form) for item in body["messages"]]
    body["max_completion_tokens"] = request.max_output_tokens
    body.update(cache_options(request, caps))
    return body


def _free_form_tools(request: NeutralRequest) -> frozenset[str]:
    """The names of the pinned tools a client declared free-form (``type: custom``) for this wire."""
    return frozenset(
        wire_tool_name(t.name)
        for t in request.tools
        if t.native is not None and t.native.get("wire") == "openai_chat" and t.native["tool"].get("type") == "custom"
    )


def _with_custom_calls(item: dict[str, Any], free_form: frozenset[str]) -> dict[str, Any]:
    """An assistant message whose calls of free-form tools go as the custom calls the provider answered with.

    The log keeps such a call as a function call whose one argument, ``input``, holds the text; its result
    goes back as any tool message does."""
    calls = item.get("tool_calls")
    if not calls or not any(call["function"]["name"] in free_form for call in calls):
        return item
    out = []
    for call in calls:
        function = call["function"]
        if function["name"] in free_form:
            text = parsed_arguments(function["arguments"]).get("input", "")
            call = {"id": call["id"], "type": "custom", "custom": {"name": function["name"], "input": str(text)}}
        out.append(call)
    return {**item, "tool_calls": out}


def _map_tool(tool: ToolDefinition) -> dict[str, Any]:
    declared = native_declaration(tool, "openai_chat")
    if declared is not None:
        return declared  # type: ignore[no-any-return]  # a JSON object, checked when the tool was pinned
    function: dict[str, Any] = {"name": wire_tool_name(tool.name)}
    if tool.description:
        function["description"] = tool.description
    function["parameters"] = json_copy(tool.input_schema)
    return {"type": "function", "function": function}


def _map_message(message: Message) -> list[dict[str, Any]]:
    if message.role == "assistant":
        return _map_assistant(message)
    # Tool messages must directly follow the assistant message that made the calls
    # (https://developers.openai.com/api/docs/guides/function-calling).
    return user_items(message, lambda part: {"role": "tool", "tool_call_id": part.call_id, "content": part.text})


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


# -- answers and usage ----------------------------------------------------------------------


def parse_answer(data: Mapping[str, Any]) -> tuple[AssistantMessage, Usage | None]:
    """The assistant message and usage of a chat completion (as JSON); LiteLLM answers read the same."""
    choices = data.get("choices") or []
    if not choices:
        raise MalformedProviderResponse("chat completion has no choices", provider="openai")
    choice = choices[0]
    message = choice.get("message") or {}
    calls = tuple(
        ToolCall(id=c["id"], name=c["function"]["name"], arguments=parsed_arguments(c["function"].get("arguments")))
        for c in message.get("tool_calls") or ()
    )
    usage = parse_usage(data["usage"]) if data.get("usage") else None
    text = message.get("content") or ""
    # LiteLLM answers for Anthropic models carry the signed thinking as ``thinking_blocks``
    # (litellm types/utils.py, Message); Anthropic puts thinking before text and calls.
    reasoning = tuple(reasoning_block("anthropic", block, [], []) for block in message.get("thinking_blocks") or ())
    return AssistantMessage(
        text=text, tool_calls=calls, model=data.get("model"), stop_reason=choice.get("finish_reason"), reasoning=reasoning
    ), usage


def parse_usage(raw: Any) -> Usage:
    """Parse an OpenAI Chat Completions ``usage`` (or a whole completion) into :class:`Usage`."""
    usage = usage_mapping(raw, provider="openai", marker="prompt_tokens")
    prompt = count(usage, "prompt_tokens", provider="openai", required=True)
    details_in = usage.get("prompt_tokens_details")
    details_in = dict(details_in) if isinstance(details_in, Mapping) else {}
    # LiteLLM also reports an Anthropic model's reads and writes in Anthropic's own top-level
    # names; they stand in when the OpenAI-shaped details leave them out.
    for openai_name, anthropic_name in (
        ("cached_tokens", "cache_read_input_tokens"),
        ("cache_write_tokens", "cache_creation_input_tokens"),
    ):
        if details_in.get(openai_name) is None and usage.get(anthropic_name) is not None:
            details_in[openai_name] = usage[anthropic_name]
    return openai_usage(
        prompt=prompt,
        input_details=details_in,
        output=count(usage, "completion_tokens", provider="openai"),
        reasoning=nested_count(usage, "completion_tokens_details", "reasoning_tokens", provider="openai"),
    )


def stream_options(extra: Mapping[str, Any]) -> dict[str, Any]:
    """A chat stream reports usage only when asked to; the log needs it like a non-streamed answer's."""
    if "stream_options" not in extra:
        return {**extra, "stream_options": {"include_usage": True}}
    return dict(extra)


def check_final(final: Any) -> str | None:
    """Why the stream's accumulated completion is incomplete: it ended before a finish reason."""
    choices = getattr(final, "choices", None)
    if choices is not None and (not choices or choices[0].finish_reason is None):
        return "the chat stream ended before a finish reason; nothing was recorded"
    return None


def translate_error(exc: BaseException, *, model: str | None = None, max_tokens: int | None = None) -> Exception | None:
    """The typed error for an openai SDK ``APIError`` (both OpenAI wires share the SDK's errors)."""
    if sdk_family(exc) == "openai" and is_sdk_api_error(exc):
        return from_sdk_exception(exc)
    return None


WIRE = Wire(
    name="openai_chat",
    providers=("openai",),
    render=render,
    recognizes=lambda data: "choices" in data,
    parse_response=parse_answer,
    parse_usage=parse_usage,
    sdk_resources=(("openai.resources", ".chat.completions"),),
    sdk_calls="client.chat.completions.create / client.chat.completions.stream",
    translate_error=translate_error,
    stream_options=stream_options,
    check_final=check_final,
)
"""The OpenAI Chat Completions wire."""
