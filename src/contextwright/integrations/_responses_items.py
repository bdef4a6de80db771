"""Responses API items (the OpenAI Agents SDK's and the Responses wire's history) into engine events, and back.

Shared by the Agents SDK filter and the OpenAI client wrapper; standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contextwright.integrations.errors import IntegrationError
from contextwright.providers.responses import parse_response
from contextwright.runtime.session import Session


def record_items(session: Session, items: Sequence[Any]) -> None:
    """Record Responses items as engine events: messages, tool calls with their answers and reasoning, tool results."""
    answer: list[Any] = []

    def flush() -> None:
        # One model turn: its reasoning, text and calls, read the way a Responses answer is.
        if answer:
            message, _ = parse_response({"object": "response", "output": list(answer)})
            session.adapter.record_assistant(message)
            answer.clear()

    for item in items:
        if not isinstance(item, Mapping):
            raise IntegrationError(f"a Responses input item must be a mapping, not {type(item).__name__}")
        kind = item.get("type", "message")
        role = item.get("role")
        if kind == "message" and role == "assistant":
            answer.append({"type": "message", "role": "assistant", "content": _output_parts(item.get("content"))})
        elif kind in ("function_call", "reasoning"):
            answer.append(item)
        elif kind == "function_call_output":
            flush()
            if item["call_id"] in {call.id for call in session.pending_tool_calls()}:
                session.tool_result(item["call_id"], text_of(item.get("output")))
            # Otherwise the engine answered it already (its control tools, calls to revoked tools).
        elif kind == "message" and role == "user":
            flush()
            session.user(text_of(item.get("content")) or "(empty message)")
        elif kind == "message" and role in ("system", "developer"):
            # The engine owns the system prompt; a later system note reaches the model as an operator message.
            flush()
            if session.adapter.has_history:
                session.user(text_of(item.get("content")), author="operator")
        # Hosted tool calls and other item kinds stay in the caller's history; the engine has no part for them.
    flush()


def _output_parts(content: Any) -> list[dict[str, Any]]:
    """An assistant message's content as output parts (the caller may have typed it as a plain string)."""
    return [{"type": "output_text", "text": text_of(content)}]


def with_reasoning(rendered: list[dict[str, Any]], sdk_items: list[Any]) -> list[Any]:
    """The engine's items with each reasoning item of the caller's history put back before the call or message it preceded."""
    before: dict[tuple[str, str], list[Any]] = {}
    pending: list[Any] = []
    for item in sdk_items:
        kind = item.get("type", "message") if isinstance(item, Mapping) else None
        if kind == "reasoning":
            pending.append(item)
            continue
        if pending:
            anchor = _anchor(item)
            if anchor is not None:
                before.setdefault(anchor, []).extend(pending)
            pending = []
    # Reasoning the engine already renders itself is not added twice.
    present = {item.get("id") for item in rendered if isinstance(item, Mapping) and item.get("type") == "reasoning"}
    out: list[Any] = []
    for item in rendered:
        anchor = _anchor(item)
        if anchor is not None:
            out.extend(r for r in before.pop(anchor, ()) if r.get("id") not in present)
        out.append(item)
    return out


def _anchor(item: Any) -> tuple[str, str] | None:
    if not isinstance(item, Mapping):
        return None
    if item.get("type") == "function_call":
        return ("call", str(item.get("call_id")))
    if item.get("role") == "assistant":
        return ("text", text_of(item.get("content")))
    return None


def text_of(content: Any) -> str:
    """The text of a content value: a string, or the text of its parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, Mapping):
            parts.append(str(part.get("text") or part.get("refusal") or ""))
        else:
            parts.append(str(part))
    return "\n".join(p for p in parts if p)
