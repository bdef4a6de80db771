"""Mapping of OpenAI chat-format messages, shared by the formats that record them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contextwright.importers._common import (
    Reader,
    RecordProblem,
    base64_size,
    entries,
    json_arguments,
    placeholder,
    text_of,
    url_placeholder,
)
from contextwright.importers.model import ToolCall, ToolResult, TranscriptMessage

_SYSTEM_ROLES = ("system", "developer")
_TEXT_PARTS = ("text", "input_text", "output_text")


def map_chat_messages(
    reader: Reader,
    raw: Sequence[Any],
    *,
    lines: Sequence[int] | None = None,
    where: str = "messages",
) -> tuple[str | None, list[TranscriptMessage]]:
    """Map chat messages; return the leading system prompt and the remaining messages.

    ``lines`` gives each message's line in the file (JSONL); without it the 1-based
    index in ``raw`` is used. System messages after the first non-system message stay
    in the conversation as ``system`` messages.
    """
    system_parts: list[str] = []
    messages: list[TranscriptMessage] = []
    legacy_calls: dict[str, str] = {}
    leading = True
    for index, item in enumerate(raw):
        line = lines[index] if lines is not None else index + 1
        try:
            if not isinstance(item, dict):
                raise RecordProblem(f"{where}[{index}] is {type(item).__name__}, expected an object")
            role = item.get("role")
            if leading and role in _SYSTEM_ROLES:
                system_parts.append(content_text(item.get("content"), where=f"{where}[{index}]"))
                continue
            leading = False
            messages.append(_map_message(item, role, line, f"{where}[{index}]", legacy_calls))
        except RecordProblem as problem:
            reader.reject(line, str(problem))
    system = "\n\n".join(system_parts) if system_parts else None
    return system, messages


def _map_message(item: dict[str, Any], role: object, line: int, where: str, legacy_calls: dict[str, str]) -> TranscriptMessage:
    text = content_text(item.get("content"), where=where)
    if role == "user" or role in _SYSTEM_ROLES:
        return TranscriptMessage(role="user" if role == "user" else "system", text=text, source_line=line)
    if role == "assistant":
        calls = [
            map_tool_call(call, where=f"{where}.tool_calls")
            for call in entries(item.get("tool_calls"), where=f"{where}.tool_calls")
        ]
        legacy = item.get("function_call")
        if isinstance(legacy, dict):
            # The pre-tools API had no call ids; derive one from the line so it is stable.
            call_id = f"function_call-{line}"
            name = text_of(legacy.get("name"), where=f"{where}.function_call.name")
            legacy_calls[name] = call_id
            calls.append(ToolCall(id=call_id, name=name, arguments=json_arguments(legacy.get("arguments"))))
        refusal = item.get("refusal")
        if isinstance(refusal, str) and refusal and not text:
            text = refusal
        return TranscriptMessage(role="assistant", text=text, tool_calls=tuple(calls), source_line=line)
    if role == "tool":
        answered = item.get("tool_call_id")
        if not isinstance(answered, str):
            raise RecordProblem(f"{where} is a tool message without a tool_call_id")
        result = ToolResult(call_id=answered, output=text)
        return TranscriptMessage(role="tool", text="", tool_results=(result,), source_line=line)
    if role == "function":
        function = item.get("name")
        if not isinstance(function, str) or function not in legacy_calls:
            raise RecordProblem(f"{where} is a function result for no earlier function_call")
        result = ToolResult(call_id=legacy_calls.pop(function), output=text)
        return TranscriptMessage(role="tool", text="", tool_results=(result,), source_line=line)
    raise RecordProblem(f"{where} has unknown role {role!r}")


def map_tool_call(call: object, *, where: str) -> ToolCall:
    """Map one ``tool_calls`` entry (``{"id", "type": "function", "function": {...}}``)."""
    if not isinstance(call, dict) or not isinstance(call.get("id"), str):
        raise RecordProblem(f"{where} has an entry without a string id")
    function = call.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise RecordProblem(f"{where} entry {call['id']!r} has no function name")
    return ToolCall(id=call["id"], name=function["name"], arguments=json_arguments(function.get("arguments")))


def content_text(content: object, *, where: str) -> str:
    """Flatten message content (text or a list of parts); binary parts become placeholders."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise RecordProblem(f"{where}.content is {type(content).__name__}, expected text or parts")
    parts: list[str] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in _TEXT_PARTS:
            parts.append(text_of(part.get("text"), where=f"{where} text part"))
        elif kind == "refusal":
            parts.append(text_of(part.get("refusal"), where=f"{where} refusal part"))
        elif kind in ("image_url", "input_image"):
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            parts.append(url_placeholder("image", url) if isinstance(url, str) else placeholder("image", None, None))
        elif kind == "input_audio":
            audio = part.get("input_audio") if isinstance(part.get("input_audio"), dict) else {}
            data = audio.get("data")
            size = base64_size(data) if isinstance(data, str) else None
            media = f"audio/{audio['format']}" if isinstance(audio.get("format"), str) else None
            parts.append(placeholder("audio", media, size))
        elif kind == "file":
            file = part.get("file") if isinstance(part.get("file"), dict) else {}
            data = file.get("file_data")
            size = base64_size(data) if isinstance(data, str) else None
            parts.append(placeholder("file", file.get("filename"), size))
        else:
            raise RecordProblem(f"{where} has a content part of unknown type {kind!r}")
    return "\n\n".join(parts)
