"""OpenHands event streams (V0 ``event_to_dict`` format).

A file is either a JSON array of events, an evaluation record whose ``history`` is that
array (``instance_id`` becomes the session id), or JSONL of evaluation records (one
session per line). Mapping rules:

* the ``system`` action gives the system prompt and the tool schemas;
* ``message`` actions are user or assistant text, by ``source``;
* every other agent action is a tool call. The id is ``tool_call_metadata.tool_call_id``
  when present, else ``event-<id>``; name and arguments come from the recorded model
  response when it holds the call, else from the action (``thought`` becomes the text).
  Actions from one model response (``total_calls_in_response`` > 1) share one
  assistant message, which carries that response's text, usage and model;
* an observation whose ``cause`` is such an action is its tool result (``error``
  observations are marked ``is_error``; ``extras.metadata.exit_code`` is kept);
* bookkeeping events (``recall``, agent state changes) are skipped; any other event
  without a cause, such as an ``error`` the framework reported back to the model,
  becomes a ``meta`` user message;
* timestamps are naive in this format and are read as UTC.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from contextwright.importers._common import (
    PathLike,
    Reader,
    RecordProblem,
    build_transcript,
    entries,
    iter_jsonl,
    json_arguments,
    read_text,
    text_of,
    to_utc,
    url_placeholder,
)
from contextwright.importers._openai import content_text
from contextwright.importers.model import ToolCall, ToolResult, Transcript, TranscriptMessage

FORMAT = "openhands-events"

_SKIPPED_ACTIONS = frozenset({"recall", "change_agent_state", "null", "condensation"})
_SKIPPED_OBSERVATIONS = frozenset({"agent_state_changed", "recall", "null", "condensation"})


def _is_event(value: object) -> bool:
    return isinstance(value, dict) and "source" in value and ("action" in value or "observation" in value)


def looks_like(document: object) -> bool:
    """True for an event array or an evaluation record holding one in ``history``."""
    events = document.get("history") if isinstance(document, dict) else document
    return isinstance(events, list) and bool(events) and _is_event(events[0])


def parse(path: PathLike, *, lenient: bool = False) -> list[Transcript]:
    """Read an event array, one evaluation record, or JSONL of evaluation records."""
    reader = Reader(path=str(path), lenient=lenient)
    text = read_text(path)
    stem = Path(path).stem
    try:
        document: Any = json.loads(text)
    except RecursionError:
        raise reader.fail("JSON nested too deep to read") from None
    except json.JSONDecodeError:
        records = [(line, value) for line, value in iter_jsonl(reader, text) if looks_like(value)]
        if not records:
            raise reader.fail("neither a JSON event array nor JSONL of evaluation records") from None
        return [_session(reader, value, f"{stem}:{line}") for line, value in records]
    if not looks_like(document):
        raise reader.fail("not an OpenHands event array or evaluation record with 'history'")
    return [_session(reader, document, stem)]


@dataclass(kw_only=True, slots=True)
class _Draft:
    """An assistant message collecting the calls of one model response."""

    line: int
    at: str | None
    text: str
    calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    model: str | None = None

    def build(self) -> TranscriptMessage:
        return TranscriptMessage(
            role="assistant",
            text=self.text,
            tool_calls=tuple(self.calls),
            at=self.at,
            usage=self.usage,
            model=self.model,
            source_line=self.line,
        )


@dataclass(kw_only=True, slots=True)
class _State:
    """What the event walk has seen so far."""

    out: list[TranscriptMessage | _Draft] = field(default_factory=list)
    calls_by_event: dict[int, str] = field(default_factory=dict)
    drafts_by_response: dict[str, _Draft] = field(default_factory=dict)
    system: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)


def _session(file_reader: Reader, document: Any, default_id: str) -> Transcript:
    reader = Reader(path=file_reader.path, lenient=file_reader.lenient)
    events = document["history"] if isinstance(document, dict) else document
    state = _State()
    for index, event in enumerate(events):
        line = index + 1
        try:
            _map_event(event, line, state)
        except RecordProblem as problem:
            reader.reject(line, f"event {index}: {problem}")
    session = document.get("instance_id") if isinstance(document, dict) else None
    return build_transcript(
        reader,
        format=FORMAT,
        session_id=session if isinstance(session, str) else default_id,
        messages=[item.build() if isinstance(item, _Draft) else item for item in state.out],
        system=state.system,
        tools=state.tools,
    )


def _map_event(event: object, line: int, state: _State) -> None:
    if not isinstance(event, dict):
        raise RecordProblem(f"is {type(event).__name__}, expected an object")
    at = to_utc(event["timestamp"]) if event.get("timestamp") else None
    if "action" in event:
        _map_action(event, line, at, state)
    elif "observation" in event:
        _map_observation(event, line, at, state)
    else:
        raise RecordProblem("has neither 'action' nor 'observation'")


def _map_action(event: dict[str, Any], line: int, at: str | None, state: _State) -> None:
    action = event["action"]
    args = _object(event.get("args"))
    source = event.get("source")
    if action == "system" and state.system is None:
        state.system = text_of(args.get("content"), where="system action content")
        state.tools = [tool for tool in entries(args.get("tools"), where="system action tools") if isinstance(tool, dict)]
    elif action == "message":
        text = text_of(args.get("content", event.get("message")), where="message content")
        images = [
            url_placeholder("image", url)
            for url in entries(args.get("image_urls"), where="message image_urls")
            if isinstance(url, str)
        ]
        text = "\n\n".join([text, *images]) if images else text
        role: Literal["user", "assistant"] = "user" if source == "user" else "assistant"
        state.out.append(TranscriptMessage(role=role, text=text, at=at, source_line=line))
    elif action in _SKIPPED_ACTIONS:
        return
    elif source == "agent":
        _map_tool_action(event, action, args, line, at, state)
    else:
        # A user or environment action no model asked for: visible only as a notice.
        notice = text_of(event.get("message"), where="message")
        state.out.append(TranscriptMessage(role="user", text=notice, at=at, source_line=line, meta=True))


def _map_tool_action(
    event: dict[str, Any],
    action: str,
    args: dict[str, Any],
    line: int,
    at: str | None,
    state: _State,
) -> None:
    event_id = event.get("id")
    if not isinstance(event_id, int):
        raise RecordProblem(f"{action!r} action has no integer id")
    metadata = _object(event.get("tool_call_metadata"))
    call_id = _text(metadata.get("tool_call_id"), f"event-{event_id}")
    name = _text(metadata.get("function_name"), action)
    response = _object(metadata.get("model_response"))
    message = _response_message(response)
    recorded = next(
        (
            c
            for c in entries(message.get("tool_calls"), where="model_response tool_calls")
            if isinstance(c, dict) and c.get("id") == call_id
        ),
        None,
    )
    if recorded is not None and isinstance(recorded.get("function"), dict):
        arguments = json_arguments(recorded["function"].get("arguments"))
    else:
        arguments = {key: value for key, value in args.items() if key != "thought"}
    call = ToolCall(id=call_id, name=name, arguments=arguments)
    state.calls_by_event[event_id] = call_id

    response_id = _text(response.get("id"), None)
    draft = state.drafts_by_response.get(response_id) if response_id else None
    if draft is None:
        text = content_text(message.get("content"), where="model_response")
        if not text:
            text = text_of(args.get("thought"), where="thought")
        draft = _Draft(
            line=line,
            at=at,
            text=text,
            usage=dict(response["usage"]) if isinstance(response.get("usage"), dict) else None,
            model=_text(response.get("model"), None),
        )
        if response_id:
            state.drafts_by_response[response_id] = draft
        state.out.append(draft)
    draft.calls.append(call)


_D = TypeVar("_D", str, None)


def _object(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def _text(value: object, default: _D) -> str | _D:
    """``value`` when it is a string, else ``default``."""
    return value if isinstance(value, str) else default


def _response_message(response: dict[str, Any]) -> dict[str, Any]:
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):
            return message
    return {}


def _map_observation(event: dict[str, Any], line: int, at: str | None, state: _State) -> None:
    kind = event["observation"]
    content = text_of(event.get("content"), where="observation content")
    cause = event.get("cause")
    if isinstance(cause, int) and cause in state.calls_by_event:
        extras = _object(event.get("extras"))
        metadata = _object(extras.get("metadata"))
        exit_code = metadata.get("exit_code")
        result = ToolResult(
            call_id=state.calls_by_event[cause],
            output=content,
            is_error=kind == "error",
            exit_code=exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None,
        )
        state.out.append(TranscriptMessage(role="tool", text="", tool_results=(result,), at=at, source_line=line))
    elif kind in _SKIPPED_OBSERVATIONS:
        return
    else:
        state.out.append(TranscriptMessage(role="user", text=content, at=at, source_line=line, meta=True))
