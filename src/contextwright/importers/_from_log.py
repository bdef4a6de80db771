"""Turn a Contextwright session's own log back into a neutral :class:`Transcript`.

The log keeps everything that happened, so a session the engine ran (the demo's, a
production one) can be replayed through baseline strategies and compared with what
the engine actually sent. Mapping rules:

* ``message.user`` becomes a ``user`` message; one written by the operator is marked
  ``meta`` (it came from the harness, not the person asking);
* ``message.assistant`` becomes an ``assistant`` message with its tool calls and model;
  the ``model.response`` that follows it supplies its ``usage``;
* ``tool.result`` becomes a ``tool`` message. With an artifact reader (see
  :func:`transcript_from_log`) the output is the full original stored as the result's
  artifact, because a naive harness would have sent all of it; without one it is
  the bounded text the engine recorded;
* the first plan event gives the agent instructions (as ``system``) and the agent's
  tools; the engine's own control tools are left out, since a replay adds them again;
* every message carries the ``at`` of its event; everything else (plans, frames,
  pruning, compaction, telemetry) is derived state and is not part of a transcript.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from contextwright.canonical import to_plain
from contextwright.clock import format_instant
from contextwright.derive._working_state import TOOL_NAME as WORKING_STATE_TOOL
from contextwright.errors import ArtifactNotFound, UsageError
from contextwright.events.envelope import Event
from contextwright.importers._common import Reader, build_transcript
from contextwright.importers.model import ToolCall, ToolResult, Transcript, TranscriptMessage
from contextwright.log.base import EventLog
from contextwright.tool_outputs.arrival import READ_TOOL_NAME

__all__ = ["FORMAT", "transcript_from_events", "transcript_from_log"]

FORMAT = "contextwright-log"
"""The :attr:`Transcript.format` of transcripts made from a Contextwright log."""

_CONTROL_TOOLS = frozenset({WORKING_STATE_TOOL, READ_TOOL_NAME})

ReadArtifact = Callable[[str], str]


def transcript_from_log(log: EventLog, session_id: str) -> Transcript:
    """The transcript of ``session_id`` in ``log``, with every tool output restored in full."""
    events = log.read(session_id)
    if not events:
        raise UsageError(f"session {session_id!r} has no events in this log", session_id=session_id)
    return transcript_from_events(events, session_id=session_id, read_artifact=log.get_artifact)


def transcript_from_events(events: Iterable[Event], *, session_id: str, read_artifact: ReadArtifact | None = None) -> Transcript:
    """The transcript of one session's ``events``; ``read_artifact`` restores full tool outputs."""
    messages: list[TranscriptMessage] = []
    system: str | None = None
    tools: tuple[dict[str, Any], ...] = ()
    planned = False
    for event in events:
        if event.session_id != session_id:
            raise UsageError(
                f"event {event.ref} belongs to session {event.session_id!r}, not {session_id!r}",
                session_id=session_id,
            )
        at = format_instant(event.at)
        payload = event.payload
        match event.type:
            case "context.plan.created" if not planned:
                planned = True
                system, tools = _agent_from_plan(payload.plan)
            case "message.user":
                messages.append(
                    TranscriptMessage(
                        role="user",
                        text=payload.text,
                        at=at,
                        source_line=event.seq,
                        meta=payload.author == "operator",
                    )
                )
            case "message.assistant":
                calls = tuple(
                    ToolCall(id=call.id, name=call.name, arguments=to_plain(call.arguments)) for call in payload.tool_calls
                )
                messages.append(
                    TranscriptMessage(
                        role="assistant",
                        text=payload.text,
                        tool_calls=calls,
                        at=at,
                        model=payload.model,
                        source_line=event.seq,
                    )
                )
            case "tool.result":
                output = _full_output(payload, read_artifact)
                result = ToolResult(
                    call_id=payload.call_id,
                    output=output,
                    is_error=payload.is_error,
                    exit_code=payload.exit_code,
                )
                messages.append(TranscriptMessage(role="tool", text="", tool_results=(result,), at=at, source_line=event.seq))
            case "model.response":
                _attach_usage(messages, payload.usage)
            case _:
                pass  # derived state (plans, frames, relief, telemetry) is not conversation
    reader = Reader(path=f"log:{session_id}", lenient=False)
    return build_transcript(reader, format=FORMAT, session_id=session_id, messages=messages, system=system, tools=tools)


def _full_output(payload: Any, read_artifact: ReadArtifact | None) -> str:
    pointer = payload.artifact
    if read_artifact is None or pointer is None:
        return str(payload.output)
    try:
        return read_artifact(pointer.ref)
    except ArtifactNotFound:
        # A store that lost the artifact still has what the model saw; better than nothing.
        return str(payload.output)


def _agent_from_plan(plan: Any) -> tuple[str | None, tuple[dict[str, Any], ...]]:
    prefix = plan["prefix"]
    instructions = str(prefix["instructions"]) or None
    tools = tuple(
        {
            "name": t["name"],
            "description": t["description"],
            "input_schema": to_plain(t["input_schema"]),
        }
        for t in prefix["tools"]
        if t["name"] not in _CONTROL_TOOLS
    )
    return instructions, tools


def _attach_usage(messages: list[TranscriptMessage], usage: Any) -> None:
    """Give the usage to the latest assistant message, unless it has one already."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant":
            if message.usage is None:
                messages[index] = replace(message, usage=_plain_usage(usage))
            return


def _plain_usage(usage: Any) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_5m_tokens": usage.cache_write_5m_tokens,
        "cache_write_1h_tokens": usage.cache_write_1h_tokens,
    }
