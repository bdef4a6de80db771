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
  assistant message each (with the ``phase`` the answer's messages had, when they
  shared one), tool calls ``function_call`` items (canonical JSON arguments; the
  ``namespace`` of a call to a tool inside a namespace tool) and tool results
  ``function_call_output`` items, all in log order, with the outputs of a user
  message before its text;
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
from contextwright.events.catalog import AssistantMessage, ReasoningBlock, ToolCall, Usage
from contextwright.providers._render_common import (
    RenderError,
    arguments_json,
    cache_key_option,
    is_blank,
    json_copy,
    native_declaration,
    parsed_arguments,
    reasoning_block,
)
from contextwright.providers.capabilities import ProviderCapabilities
from contextwright.providers.tool_names import wire_tool_name
from contextwright.providers.usage import count, nested_count, usage_mapping
from contextwright.providers.wire import Ttl, Wire
from contextwright.providers.wires._openai import openai_body, openai_usage, user_items
from contextwright.providers.wires.openai_chat import translate_error

__all__ = ["ENCRYPTED_REASONING", "WIRE", "RenderError", "parse_answer", "parse_usage", "render"]


def render(
    request: NeutralRequest,
    caps: ProviderCapabilities,
    *,
    previous: NeutralRequest | None = None,
    prefix_ttl: Ttl = "5m",
) -> dict[str, Any]:
    """Return the keyword arguments for ``openai.OpenAI().responses.create(**body)``."""
    body = openai_body(request, caps, items_key="input", map_message=_map_message, map_tool=_map_tool)
    free_form = _free_form_tools(request)
    if free_form:
        body["input"] = _as_custom_calls(body["input"], free_form)
    body["max_output_tokens"] = request.max_output_tokens
    body.update(cache_key_option(request, caps))
    if caps.supports_cache_options:
        body["prompt_cache_options"] = {"ttl": caps.cache_ttl}
    body["store"] = False
    if caps.reasoning_items:
        body["include"] = [ENCRYPTED_REASONING]
    return body


def _free_form_tools(request: NeutralRequest) -> frozenset[str]:
    """The names of the pinned tools a client declared free-form (``type: custom``) for this wire."""
    return frozenset(
        wire_tool_name(t.name)
        for t in request.tools
        if t.native is not None and t.native.get("wire") == "openai_responses" and t.native["tool"].get("type") == "custom"
    )


def _as_custom_calls(items: list[dict[str, Any]], free_form: frozenset[str]) -> list[dict[str, Any]]:
    """Calls of free-form tools, and their outputs, as the custom items the provider answered with.

    The log keeps such a call as a function call whose one argument, ``input``, holds the text."""
    custom_ids: set[str] = set()
    out: list[dict[str, Any]] = []
    for item in items:
        if item.get("type") == "function_call" and item["name"] in free_form:
            custom_ids.add(item["call_id"])
            text = parsed_arguments(item["arguments"]).get("input", "")
            custom = {"type": "custom_tool_call", "call_id": item["call_id"], "name": item["name"], "input": str(text)}
            item = {**custom, "namespace": item["namespace"]} if "namespace" in item else custom
        elif item.get("type") == "function_call_output" and item["call_id"] in custom_ids:
            item = {"type": "custom_tool_call_output", "call_id": item["call_id"], "output": item["output"]}
        out.append(item)
    return out


ENCRYPTED_REASONING = "reasoning.encrypted_content"
"""The ``include`` value that returns reasoning items a stateless (``store: false``) request can send back."""


def _map_tool(tool: ToolDefinition) -> dict[str, Any]:
    declared = native_declaration(tool, "openai_responses")
    if declared is not None:
        return declared  # type: ignore[no-any-return]  # a JSON object, checked when the tool was pinned
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
    return user_items(message, lambda part: {"type": "function_call_output", "call_id": part.call_id, "output": part.text})


def _map_assistant(message: Message) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for part in message.parts:
        match part:
            case TextPart():
                if not is_blank(part.text):
                    said: dict[str, Any] = {"role": "assistant", "content": part.text}
                    if part.phase is not None:
                        said["phase"] = part.phase
                    items.append(said)
            case ToolCallPart():
                call: dict[str, Any] = {
                    "type": "function_call",
                    "call_id": part.id,
                    "name": wire_tool_name(part.name),
                    "arguments": arguments_json(part.arguments),
                }
                if part.namespace is not None:
                    call["namespace"] = part.namespace
                items.append(call)
            case ReasoningPart():
                if part.provider == "openai":
                    items.append(json_copy(part.block))
            case ToolResultPart():
                raise RenderError(f"tool result {part.call_id!r} in an assistant message")  # ruled out earlier
            case _:
                assert_never(part)
    return items


# -- answers and usage ----------------------------------------------------------------------


def parse_answer(data: Mapping[str, Any]) -> tuple[AssistantMessage, Usage | None]:
    """The assistant message and usage of a response (as JSON)."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[ReasoningBlock] = []
    phases: set[Any] = set()
    for item in data.get("output") or ():
        kind = item.get("type")
        if kind == "message":
            said = [part.get("text", "") for part in item.get("content") or () if part.get("type") in ("output_text", "text")]
            texts.extend(said)
            if any(said):
                phases.add(item.get("phase"))
        elif kind == "function_call":
            namespace = item.get("namespace")
            calls.append(
                ToolCall(
                    id=item["call_id"],
                    name=item["name"],
                    arguments=parsed_arguments(item.get("arguments")),
                    namespace=namespace if isinstance(namespace, str) and namespace else None,
                )
            )
        elif kind == "reasoning":
            reasoning.append(reasoning_block("openai", item, texts, calls))
    usage = parse_usage(data["usage"]) if data.get("usage") else None
    # The text is kept as one: its phase is the messages' one when they share it.
    phase = next(iter(phases)) if len(phases) == 1 else None
    return AssistantMessage(
        text="\n".join(t for t in texts if t),
        tool_calls=tuple(calls),
        model=data.get("model"),
        stop_reason=data.get("status"),
        reasoning=tuple(reasoning),
        phase=phase if isinstance(phase, str) and phase else None,
    ), usage


def parse_usage(raw: Any) -> Usage:
    """Parse an OpenAI Responses ``usage`` (or a whole response) into :class:`Usage`."""
    usage = usage_mapping(raw, provider="openai", marker="input_tokens")
    prompt = count(usage, "input_tokens", provider="openai", required=True)
    details_in = usage.get("input_tokens_details")
    details_in = details_in if isinstance(details_in, Mapping) else {}
    return openai_usage(
        prompt=prompt,
        input_details=details_in,
        output=count(usage, "output_tokens", provider="openai"),
        reasoning=nested_count(usage, "output_tokens_details", "reasoning_tokens", provider="openai"),
    )


WIRE = Wire(
    name="openai_responses",
    providers=("openai",),
    render=render,
    recognizes=lambda data: data.get("object") == "response" or "output" in data,
    parse_response=parse_answer,
    parse_usage=parse_usage,
    sdk_resources=(("openai.resources", ".responses"),),
    sdk_calls="client.responses.create / client.responses.stream",
    translate_error=translate_error,
)
"""The OpenAI Responses wire."""
