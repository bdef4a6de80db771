"""OpenHands recorded completion calls (``llm_completions/<instance>/*.json``).

Each file is one LiteLLM call: ``messages`` (OpenAI chat format) holds the whole history
sent, ``kwargs.tools`` the tool schemas, and ``response`` what came back. The response
becomes the last assistant message, with the call's ``usage``, ``model`` and the file's
``timestamp`` (the only time recorded; history messages have none). Its tool call has
no recorded result, so it is dropped and counted like any other dangling call.
Prompt-cache markers (``cache_control``) are request plumbing and are not kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextwright.importers._common import (
    PathLike,
    Reader,
    RecordProblem,
    build_transcript,
    entries,
    parse_json_document,
    read_text,
    to_utc,
)
from contextwright.importers._openai import content_text, map_chat_messages, map_tool_call
from contextwright.importers.model import Transcript, TranscriptMessage

FORMAT = "openhands-llm-completions"


def looks_like(document: object) -> bool:
    """True for a recorded completion call: ``messages`` plus a ``response`` object."""
    return (
        isinstance(document, dict) and isinstance(document.get("messages"), list) and isinstance(document.get("response"), dict)
    )


def parse(path: PathLike, *, lenient: bool = False) -> list[Transcript]:
    """Read one recorded completion call."""
    reader = Reader(path=str(path), lenient=lenient)
    document = parse_json_document(reader, read_text(path))
    if not looks_like(document):
        raise reader.fail("not a recorded completion call (needs 'messages' and 'response')")
    system, messages = map_chat_messages(reader, document["messages"])
    final_line = len(document["messages"]) + 1
    try:
        messages.append(_map_response(document, line=final_line))
    except RecordProblem as problem:
        reader.reject(final_line, str(problem))
    kwargs = document.get("kwargs")
    tools = kwargs.get("tools") if isinstance(kwargs, dict) else None
    return [
        build_transcript(
            reader,
            format=FORMAT,
            session_id=Path(path).stem,
            messages=messages,
            system=system,
            tools=[tool for tool in tools or () if isinstance(tool, dict)],
        )
    ]


def _map_response(document: dict[str, Any], *, line: int) -> TranscriptMessage:
    response = document["response"]
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise RecordProblem("response has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise RecordProblem("response.choices[0] has no message")
    where = "response.choices[0].message"
    calls = tuple(
        map_tool_call(call, where=f"{where}.tool_calls")
        for call in entries(message.get("tool_calls"), where=f"{where}.tool_calls")
    )
    stamp = document.get("timestamp")
    return TranscriptMessage(
        role="assistant",
        text=content_text(message.get("content"), where=where),
        tool_calls=calls,
        at=to_utc(stamp) if isinstance(stamp, int | float) else None,
        usage=dict(response["usage"]) if isinstance(response.get("usage"), dict) else None,
        model=response.get("model") if isinstance(response.get("model"), str) else None,
        source_line=line,
    )
