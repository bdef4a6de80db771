"""Server-sent event streams as the providers send them, built from a whole answer's JSON.

For tests of streamed calls over ``httpx2.MockTransport``: each function takes the
JSON a provider returns for a non-streamed call (an Anthropic message, a chat
completion, a Responses response) and returns the byte stream the same provider
sends when ``stream`` is on, event by event (text in several deltas, tool input as
partial JSON, usage where the provider puts it), so the SDK's own accumulator
rebuilds the same answer. :func:`sse_events` gives the events one by one, for
streams that should break midway.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["anthropic_events", "chat_events", "encode", "responses_events", "sse_events", "stream_bytes"]


def _pieces(text: str, size: int = 7) -> list[str]:
    """``text`` in a few deltas, as a provider would send it (never none: an empty text is one empty delta)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def encode(event: str | None, data: Any) -> bytes:
    """One SSE frame: an ``event:`` line when named, a ``data:`` line, a blank line."""
    head = f"event: {event}\n" if event else ""
    body = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return f"{head}data: {body}\n\n".encode()


def anthropic_events(message: Mapping[str, Any]) -> Iterator[tuple[str | None, Any]]:
    """The Messages stream of ``message``: start, ping, blocks with their deltas, message_delta with usage, stop."""
    usage = dict(message.get("usage") or {})
    start = {**copy.deepcopy(dict(message)), "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {**usage, "output_tokens": 1}
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(message.get("content") or ()):
        kind = block["type"]
        if kind == "text":
            yield "content_block_start", _block_start(index, {"type": "text", "text": ""})
            for piece in _pieces(block["text"]):
                yield "content_block_delta", _delta(index, {"type": "text_delta", "text": piece})
        elif kind == "tool_use":
            yield "content_block_start", _block_start(index, {**block, "input": {}})
            for piece in _pieces(json.dumps(block.get("input") or {}), size=5):
                yield "content_block_delta", _delta(index, {"type": "input_json_delta", "partial_json": piece})
        elif kind == "thinking":
            yield "content_block_start", _block_start(index, {"type": "thinking", "thinking": "", "signature": ""})
            for piece in _pieces(block["thinking"]):
                yield "content_block_delta", _delta(index, {"type": "thinking_delta", "thinking": piece})
            yield "content_block_delta", _delta(index, {"type": "signature_delta", "signature": block["signature"]})
        else:  # redacted_thinking and server-tool blocks arrive whole
            yield "content_block_start", _block_start(index, dict(block))
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    final_usage = {k: usage[k] for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens") if k in usage}
    final_usage["output_tokens"] = usage.get("output_tokens", 0)
    delta = {"stop_reason": message.get("stop_reason"), "stop_sequence": message.get("stop_sequence")}
    yield "message_delta", {"type": "message_delta", "delta": delta, "usage": final_usage}
    yield "message_stop", {"type": "message_stop"}


def chat_events(completion: Mapping[str, Any], *, include_usage: bool = True) -> Iterator[tuple[str | None, Any]]:
    """The chat-completions stream of ``completion``: role, content and tool-call deltas, finish, usage, [DONE]."""
    head = {k: completion[k] for k in ("id", "created", "model") if k in completion}
    head["object"] = "chat.completion.chunk"
    choice = completion["choices"][0]
    message = choice.get("message") or {}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    yield None, chunk({"role": "assistant", "content": ""})
    if message.get("content"):
        for piece in _pieces(message["content"]):
            yield None, chunk({"content": piece})
    for index, call in enumerate(message.get("tool_calls") or ()):
        opening = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        yield None, chunk({"tool_calls": [opening]})
        for piece in _pieces(call["function"].get("arguments") or "", size=5):
            yield None, chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield None, chunk({}, finish=choice.get("finish_reason"))
    if include_usage and completion.get("usage"):
        yield None, {**head, "choices": [], "usage": completion["usage"]}
    yield None, "[DONE]"


def responses_events(response: Mapping[str, Any]) -> Iterator[tuple[str | None, Any]]:
    """The Responses stream of ``response``: created, each output item with its deltas, completed with usage."""
    sequence = iter(range(1_000_000))
    opening = {**copy.deepcopy(dict(response)), "status": "in_progress", "output": [], "usage": None}

    def event(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
        return kind, {"type": kind, "sequence_number": next(sequence), **fields}

    yield event("response.created", response=opening)
    yield event("response.in_progress", response=opening)
    for index, item in enumerate(response.get("output") or ()):
        if item["type"] == "message":
            yield event("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "content": []})
            for part_index, part in enumerate(item.get("content") or ()):
                empty = {**part, "text": ""}
                common = {"item_id": item["id"], "output_index": index, "content_index": part_index}
                yield event("response.content_part.added", **common, part=empty)
                for piece in _pieces(part.get("text", "")):
                    yield event("response.output_text.delta", **common, delta=piece, logprobs=[])
                yield event("response.output_text.done", **common, text=part.get("text", ""), logprobs=[])
                yield event("response.content_part.done", **common, part=part)
        elif item["type"] == "function_call":
            yield event("response.output_item.added", output_index=index, item={**item, "arguments": "", "status": "in_progress"})
            for piece in _pieces(item.get("arguments") or "", size=5):
                yield event("response.function_call_arguments.delta", item_id=item.get("id"), output_index=index, delta=piece)
            yield event(
                "response.function_call_arguments.done",
                item_id=item.get("id"),
                output_index=index,
                arguments=item.get("arguments") or "",
                name=item.get("name"),
            )
        else:
            yield event("response.output_item.added", output_index=index, item=item)
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=dict(response))


def sse_events(payload: Mapping[str, Any], *, include_usage: bool = True) -> list[bytes]:
    """The SSE frames of ``payload``, whichever provider's JSON it is."""
    if payload.get("type") == "message":
        events: Iterator[tuple[str | None, Any]] = anthropic_events(payload)
    elif "choices" in payload:
        events = chat_events(payload, include_usage=include_usage)
    else:
        events = responses_events(payload)
    return [encode(name, data) for name, data in events]


def stream_bytes(payload: Mapping[str, Any], *, include_usage: bool = True) -> bytes:
    """The whole SSE body of ``payload``."""
    return b"".join(sse_events(payload, include_usage=include_usage))


def _block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}
