"""Render a neutral request as ``litellm.completion`` keyword arguments (OpenAI-shaped messages).

LiteLLM takes OpenAI Chat Completions messages for every provider and translates
them. Two cases:

* **Anthropic models**: the body is first rendered by
  :mod:`contextwright.providers.anthropic` (so breakpoint placement, at most
  ``caps.max_breakpoints`` markers with the prefix marker first, and the thinking
  rules are the same as on the native wire), then each Anthropic block is written
  in the OpenAI shape LiteLLM maps back to exactly that block
  (https://docs.litellm.ai/docs/completion/prompt_caching):

  - system blocks → one ``system`` message whose content parts keep ``cache_control``;
  - tools → ``{"type": "function", "function": {...}}`` with ``cache_control`` beside
    ``function`` (LiteLLM turns it into the tool's own marker);
  - ``tool_result`` blocks → ``tool`` messages, one per result, their marker on the
    message; user text blocks → one ``user`` message of text parts;
  - an assistant turn → ``content`` parts (``thinking`` / ``redacted_thinking``
    blocks verbatim, then text) and ``tool_calls`` (a marker goes on the call).
    LiteLLM places the calls after the content, which is the order the Messages API
    answers in.

  LiteLLM's tool messages have no error flag, so ``is_error`` is carried by the
  enveloped result text only.
* **OpenAI models**: the Chat Completions body of
  :mod:`contextwright.providers.openai_chat`, with the instructions as a ``system``
  message: LiteLLM rewrites ``developer`` to ``system`` for OpenAI chat models
  (litellm ``llms/openai/chat/gpt_transformation.py``), and sending what arrives keeps
  the body LiteLLM sends equal to this one.

The model is named ``<provider>/<model>``, LiteLLM's routing prefix.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from contextwright.assembly.request import NeutralRequest
from contextwright.providers._render_common import RenderError, arguments_json
from contextwright.providers.capabilities import ProviderCapabilities
from contextwright.providers.shared_json import mutable
from contextwright.providers.wire import Wire
from contextwright.providers.wires import anthropic, openai_chat

__all__ = ["WIRE", "RenderError", "render"]

_THINKING = frozenset({"thinking", "redacted_thinking"})


def render(
    request: NeutralRequest,
    caps: ProviderCapabilities,
    *,
    previous: NeutralRequest | None = None,
    prefix_ttl: Literal["5m", "1h"] = "5m",
) -> dict[str, Any]:
    """Return the keyword arguments for ``litellm.completion(**body)``."""
    if caps.provider == "openai":
        chat = openai_chat.render(request, replace(caps, instruction_role="system"))
        return {**chat, "model": f"openai/{request.model}"}
    # LiteLLM rewrites messages in place on some routes: it gets containers of its own, not the shared ones.
    native = mutable(anthropic.render(request, caps, previous=previous, prefix_ttl=prefix_ttl))
    messages: list[dict[str, Any]] = []
    if "system" in native:
        messages.append({"role": "system", "content": [dict(block) for block in native["system"]]})
    for turn in native["messages"]:
        messages.extend(_user(turn["content"]) if turn["role"] == "user" else [_assistant(turn["content"])])
    body: dict[str, Any] = {"model": f"anthropic/{request.model}", "messages": messages}
    if "tools" in native:
        body["tools"] = [_tool(tool) for tool in native["tools"]]
    body["max_tokens"] = native["max_tokens"]
    return body


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool["name"]}
    if "description" in tool:
        function["description"] = tool["description"]
    function["parameters"] = tool["input_schema"]
    out: dict[str, Any] = {"type": "function", "function": function}
    if "cache_control" in tool:
        out["cache_control"] = tool["cache_control"]
    return out


def _user(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    texts: list[dict[str, Any]] = []
    for block in blocks:
        if block["type"] == "tool_result":
            message: dict[str, Any] = {
                "role": "tool",
                "tool_call_id": block["tool_use_id"],
                "content": [{"type": "text", "text": block.get("content", "")}],
            }
            if "cache_control" in block:
                message["cache_control"] = block["cache_control"]
            out.append(message)
        else:
            texts.append(dict(block))
    if texts:
        out.append({"role": "user", "content": texts})
    return out


def _assistant(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for block in blocks:
        if block["type"] == "tool_use":
            call: dict[str, Any] = {
                "id": block["id"],
                "type": "function",
                "function": {"name": block["name"], "arguments": arguments_json(block["input"])},
            }
            if "cache_control" in block:
                call["cache_control"] = block["cache_control"]
            calls.append(call)
        elif calls and (block["type"] in _THINKING or block["type"] == "text"):
            # LiteLLM writes the calls after all content; a block after a call would move.
            raise RenderError("an assistant turn with text or thinking after a tool call cannot be sent through LiteLLM")
        else:
            content.append(dict(block))
    message: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        message["tool_calls"] = calls
    return message


WIRE = Wire(
    name="litellm",
    providers=("anthropic", "openai"),
    render=render,
    # LiteLLM answers in the chat completion shape, whatever the model: the chat wire reads them.
    recognizes=lambda data: False,
    parse_response=openai_chat.parse_answer,
    parse_usage=openai_chat.parse_usage,
    sdk_calls="litellm.completion",
)
"""LiteLLM's ``completion`` (OpenAI-shaped messages for every provider)."""
