"""LangChain messages to engine events and the engine's request back to LangChain messages."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from langchain.agents.middleware.types import ModelRequest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from contextwright.canonical import content_hash
from contextwright.events.catalog import AssistantMessage, ToolCall
from contextwright.providers.responses import parse_response
from contextwright.providers.usage import Usage
from contextwright.runtime.session import Session

THINKING_TYPES = ("thinking", "redacted_thinking")


def fingerprint(message: BaseMessage) -> str:
    """A content hash of what a message says (its id is left out: reducers assign ids after the fact)."""
    shape: dict[str, Any] = {"type": message.type, "content": message.content}
    if isinstance(message, AIMessage):
        shape["tool_calls"] = [[c.get("id"), c.get("name"), c.get("args")] for c in message.tool_calls]
    if isinstance(message, ToolMessage):
        shape["tool_call_id"] = message.tool_call_id
    return content_hash(json.loads(json.dumps(shape, default=str)))


def record_messages(session: Session, messages: list[Any]) -> None:
    """Record new graph messages in order."""
    for message in messages:
        _record_message(session, message)


def _record_message(session: Session, message: BaseMessage) -> None:
    if isinstance(message, HumanMessage):
        session.user(_text(message.content) or "(empty message)")
    elif isinstance(message, AIMessage):
        session.adapter.record_assistant(assistant_message(message))
    elif isinstance(message, ToolMessage):
        if message.tool_call_id in {c.id for c in session.pending_tool_calls()}:
            session.tool_result(message.tool_call_id, _text(message.content), is_error=message.status == "error")
        # Otherwise the engine answered it already (a control tool, or a call to a revoked tool).
    elif isinstance(message, SystemMessage):
        session.user(_text(message.content), author="operator")


def assistant_message(message: AIMessage) -> AssistantMessage:
    """The engine's assistant message for an ``AIMessage``: text, tool calls and thinking blocks where they stood."""
    model = message.response_metadata.get("model_name")
    calls = {str(c["id"]): c for c in message.tool_calls}
    if isinstance(message.content, list) and any(
        isinstance(b, Mapping) and b.get("type") in THINKING_TYPES for b in message.content
    ):
        # Read the content as the Messages API answer it was, with LangChain's parsed tool calls in place.
        blocks: list[Any] = []
        for block in message.content:
            if isinstance(block, str):
                blocks.append({"type": "text", "text": block})
            elif isinstance(block, Mapping) and block.get("type") in ("text", *THINKING_TYPES):
                blocks.append(dict(block))
            elif isinstance(block, Mapping) and block.get("type") == "tool_use" and str(block.get("id")) in calls:
                call = calls.pop(str(block.get("id")))
                blocks.append({"type": "tool_use", "id": call["id"], "name": call["name"], "input": dict(call.get("args") or {})})
        blocks += [
            {"type": "tool_use", "id": c["id"], "name": c["name"], "input": dict(c.get("args") or {})} for c in calls.values()
        ]
        answer, _ = parse_response({"type": "message", "role": "assistant", "content": blocks, "model": model})
        return answer
    tool_calls = tuple(
        ToolCall(id=c["id"] or "", name=c["name"], arguments=dict(c.get("args") or {})) for c in message.tool_calls
    )
    return AssistantMessage(text=_text(message.content), tool_calls=tool_calls, model=model)


def usage_of(message: AIMessage) -> Usage | None:
    """The usage of an ``AIMessage``, with cache reads and writes split out of its input count."""
    meta = message.usage_metadata
    if not meta:
        return None
    details: dict[str, Any] = dict(meta.get("input_token_details") or {})
    read = int(details.get("cache_read") or 0)
    write_1h = int(details.get("ephemeral_1h_input_tokens") or 0)
    write_5m = int(details.get("ephemeral_5m_input_tokens") or 0)
    if not (write_1h or write_5m):
        write_5m = int(details.get("cache_creation") or 0)
    # LangChain's input_tokens include cache reads and writes (as the OTel conventions say).
    uncached = max(0, meta.get("input_tokens", 0) - read - write_5m - write_1h)
    return Usage(
        input_tokens=uncached,
        cache_read_tokens=read,
        cache_write_5m_tokens=write_5m,
        cache_write_1h_tokens=write_1h,
        output_tokens=meta.get("output_tokens", 0),
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or ():
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "\n".join(p for p in parts if p)


def to_langchain(message: Mapping[str, Any], anthropic_native: bool) -> list[Any]:
    """LangChain messages for one Anthropic-wire message of the engine's request."""
    content = message["content"]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content]
    if message["role"] == "assistant":
        calls = [
            {"id": b["id"], "name": b["name"], "args": dict(b["input"]), "type": "tool_call"}
            for b in blocks
            if b["type"] == "tool_use"
        ]
        text_blocks = [b for b in blocks if b["type"] == "text"]
        # Thinking as the engine rendered it from the log: in place, and left out where it went stale.
        said = [b for b in blocks if b["type"] in ("text", *THINKING_TYPES)]
        if anthropic_native:
            return [AIMessage(content=list[str | dict[Any, Any]](said), tool_calls=calls)]
        has_thinking = len(said) > len(text_blocks)
        return [AIMessage(content=list[str | dict[Any, Any]](said) if has_thinking else _text(text_blocks), tool_calls=calls)]
    if anthropic_native:
        # ChatAnthropic passes tool_result and text blocks of a human message through, cache markers included.
        return [HumanMessage(content=list[str | dict[Any, Any]](blocks))]
    out: list[Any] = []
    texts: list[str] = []
    for block in blocks:
        if block["type"] == "tool_result":
            out.append(
                ToolMessage(
                    content=_text(block.get("content")) if not isinstance(block.get("content"), str) else block["content"],
                    tool_call_id=block["tool_use_id"],
                    status="error" if block.get("is_error") else "success",
                )
            )
        elif block["type"] == "text":
            texts.append(block["text"])
    if texts:
        out.append(HumanMessage(content="\n\n".join(texts)))
    return out


def from_chat_body(request: ModelRequest, body: Mapping[str, Any]) -> ModelRequest:
    """The request with the engine's Chat Completions body as LangChain messages (an OpenAI plan)."""
    system: SystemMessage | None = None
    messages: list[Any] = []
    for message in body["messages"]:
        role, text = message["role"], message.get("content") or ""
        if role in ("system", "developer") and system is None and not messages:
            system = SystemMessage(content=_text(text))
        elif role == "assistant":
            calls = [
                {
                    "id": c["id"],
                    "name": c["function"]["name"],
                    "args": json.loads(c["function"]["arguments"] or "{}"),
                    "type": "tool_call",
                }
                for c in message.get("tool_calls") or ()
            ]
            messages.append(AIMessage(content=_text(text), tool_calls=calls))
        elif role == "tool":
            messages.append(ToolMessage(content=_text(text), tool_call_id=message["tool_call_id"]))
        else:
            messages.append(HumanMessage(content=_text(text)))
    return request.override(system_message=system, messages=messages, tools=[dict(t) for t in body.get("tools", ())])


def openai_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """An Anthropic-wire tool as an OpenAI function tool (for chat models other than ChatAnthropic)."""
    return {
        "type": "function",
        "function": {"name": tool["name"], "description": tool.get("description", ""), "parameters": dict(tool["input_schema"])},
    }
