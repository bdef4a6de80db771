"""A transcript prepared for the baselines: Anthropic content blocks, atomic groups, model calls and their times.

The baselines must see the same conversation and make the same model calls as the
engine's :func:`~contextwright.replay.replay`, so this module walks a
transcript with replay's rules:

* user (and system) messages with text are user turns; blank ones are skipped;
* an assistant message with neither text nor tool calls is skipped; any other is a
  model call when there is something to answer (anything but the model's own reply
  came last, and no tool call still waits for its result), otherwise it is recorded
  without a call;
* a tool result is kept only when it answers a call that is still waiting;
* tools and the system prompt are the ones replay gives the agent (its policy line
  and the transcript's instructions; the transcript's tools, or minimal schemas for
  the tools it called).

Times: when every assistant message has a timestamp, a model call starts at its
assistant message's ``at`` (clamped so time never runs backwards). Otherwise the
whole transcript gets a fixed pace of :data:`MODEL_CALL_PACE` between assistant
messages from :data:`PACE_START`; mixing recorded and invented times would put
made-up gaps next to real ones.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Literal

from contextwright.canonical import to_plain
from contextwright.clock import parse_instant
from contextwright.importers.model import Transcript
from contextwright.replay import agent_for, safe_tool_name

__all__ = ["MODEL_CALL_PACE", "PACE_START", "ModelCall", "Timeline", "Unit", "timeline_of"]

MODEL_CALL_PACE: Final = timedelta(seconds=15)
"""Time between model calls when a transcript has no (or incomplete) timestamps."""
PACE_START: Final = datetime(2026, 1, 1, tzinfo=UTC)
"""When the first model call of an untimed transcript starts."""

_TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
_NOT_ID_CHAR = re.compile(r"[^a-zA-Z0-9_-]")


@dataclass(frozen=True, kw_only=True, slots=True)
class Unit:
    """One transcript message as Anthropic content blocks (without cache markers)."""

    role: Literal["user", "assistant"]
    """The wire role (tool results travel in user turns)."""
    blocks: tuple[Mapping[str, Any], ...]
    """Content blocks; copied before a body is assembled, never mutated."""
    group: int
    """Atomic group: a user turn, or an assistant message with the results of its calls."""
    kind: Literal["user", "assistant", "tool_result"]
    """What the message is."""
    text: str
    """Its plain text (tool output, message text, or the names of the tools called)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelCall:
    """One model call: it sees the first ``upto`` units and starts at ``at``."""

    upto: int
    """How many units of :attr:`Timeline.units` are history for this call."""
    at: datetime
    """When the request starts (timezone-aware)."""
    ordinal: int
    """Index of its assistant message among the transcript's non-empty assistant messages."""
    after_task: bool
    """True when the task statement is among the units this call sees."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Timeline:
    """A transcript as the baselines replay it."""

    units: tuple[Unit, ...]
    """The conversation in order."""
    calls: tuple[ModelCall, ...]
    """The model calls, in order."""
    assistant_times: tuple[datetime, ...]
    """Start time of the call behind each non-empty assistant message (by ordinal)."""
    tools: tuple[dict[str, Any], ...]
    """Anthropic tool definitions."""
    system: str
    """The system prompt text."""
    task: str | None
    """The task statement, when the transcript has one."""
    timed: bool
    """True when the times come from the transcript, False for the fixed pace."""


def timeline_of(transcript: Transcript) -> Timeline:
    """Walk ``transcript`` with replay's rules and return what the baselines need."""
    agent, names = agent_for(transcript)
    tools = tuple(_tool(spec.name, spec.description, spec.input_schema) for spec in agent.tools)
    system = "\n\n".join(part for part in (agent.policy, agent.instructions) if part.strip())
    task = transcript.task.strip() if transcript.task and transcript.task.strip() else None
    assistants = [m for m in transcript.messages if m.role == "assistant" and (m.text.strip() or m.tool_calls)]
    times = _times([m.at for m in assistants])
    units: list[Unit] = []
    calls: list[ModelCall] = []
    pending: set[str] = set()
    answerable = False
    task_seen = False
    group = -1
    ordinal = -1
    for message in transcript.messages:
        if message.role in ("user", "system"):
            if message.text.strip():
                group += 1
                units.append(
                    Unit(
                        role="user",
                        blocks=({"type": "text", "text": message.text},),
                        group=group,
                        kind="user",
                        text=message.text,
                    )
                )
                task_seen = task_seen or (task is not None and message.text.strip() == task)
                answerable = not pending
        elif message.role == "assistant":
            if not message.text.strip() and not message.tool_calls:
                continue
            ordinal += 1
            if answerable and not pending:
                calls.append(ModelCall(upto=len(units), at=times[ordinal], ordinal=ordinal, after_task=task_seen))
            group += 1
            blocks: list[dict[str, Any]] = []
            if message.text.strip():
                blocks.append({"type": "text", "text": message.text})
            for call in message.tool_calls:
                name = names.get(call.name, safe_tool_name(call.name))
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": wire_id(call.id),
                        "name": name,
                        "input": to_plain(call.arguments),
                    }
                )
            units.append(
                Unit(
                    role="assistant",
                    blocks=tuple(blocks),
                    group=group,
                    kind="assistant",
                    text=" ".join([message.text, *(c.name for c in message.tool_calls)]).strip(),
                )
            )
            pending = {call.id for call in message.tool_calls}
            answerable = False
        for result in message.tool_results:
            if result.call_id not in pending:
                continue  # replay records only results that answer a waiting call
            pending.discard(result.call_id)
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": wire_id(result.call_id)}
            if result.output.strip():
                block["content"] = result.output
            block["is_error"] = result.is_error
            units.append(
                Unit(
                    role="user",
                    blocks=(block,),
                    group=group,
                    kind="tool_result",
                    text=result.output,
                )
            )
            answerable = not pending
    return Timeline(
        units=tuple(units),
        calls=tuple(calls),
        assistant_times=times,
        tools=tools,
        system=system,
        task=task,
        timed=all(m.at for m in assistants),
    )


def wire_id(call_id: str) -> str:
    """A tool-use id the Messages API accepts: unchanged when valid, else cleaned plus a hash."""
    if _TOOL_ID.match(call_id):
        return call_id
    digest = hashlib.sha256(call_id.encode("utf-8")).hexdigest()[:12]
    return f"{_NOT_ID_CHAR.sub('_', call_id)}_{digest}"


def _times(stamps: list[str | None]) -> tuple[datetime, ...]:
    present = [stamp for stamp in stamps if stamp]
    if stamps and len(present) == len(stamps):
        out: list[datetime] = []
        for stamp in present:
            at = parse_instant(stamp)
            out.append(max(at, out[-1]) if out else at)  # the simulator refuses time running backwards
        return tuple(out)
    return tuple(PACE_START + i * MODEL_CALL_PACE for i in range(len(stamps)))


def _tool(name: str, description: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if description:
        out["description"] = description
    out["input_schema"] = to_plain(schema)
    return out
