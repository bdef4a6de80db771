"""Replay a real transcript through a session, as if the engine had been there.

Each imported message becomes what the agent loop would have recorded: user
messages, the model's answers (preceded by the request the engine would have
built), and tool results. The transcript's system prompt becomes the agent's
instructions and its tool schemas the pinned tools (or minimal schemas for the
tools it called, when the format does not record them).

Third-party agents ship longer prompts and more tools than our default caps
allow, so replays raise those two caps (:data:`REPLAY_BUDGETS`); everything
else runs with the defaults.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from contextwright.assembly.assemble import BudgetExceeded
from contextwright.assembly.envelope import escape
from contextwright.assembly.request import NeutralRequest
from contextwright.canonical import to_plain
from contextwright.errors import ContextwrightError
from contextwright.events.catalog import AssistantMessage, ModelResponse, ToolCall
from contextwright.importers.model import Transcript
from contextwright.items.region_a import ToolSpec
from contextwright.models import ResolvedModel
from contextwright.plan.budgets import BudgetConfig
from contextwright.plan.plan import DEFAULT_CACHE_TTL, CacheTtl
from contextwright.providers.tool_names import safe_tool_name
from contextwright.providers.usage import Usage
from contextwright.providers.wires import wire_named
from contextwright.runtime.engine import Engine
from contextwright.runtime.errors import EscalationRequired
from contextwright.runtime.session import BuiltRequest, Session
from contextwright.runtime.spec import CONTROL_TOOLS, AgentSpec, Tool

REPLAY_POLICY = "You are a software engineering agent working in the user's repository with the tools provided."
REPLAY_BUDGETS = BudgetConfig(instructions_tokens=24_000, tools_count=64, tools_tokens=24_000)
_CONSTRAINT = re.compile(r"[^.!?\n]*\b(must|must not|never|do not|don't|always|only|should not|without)\b[^.!?\n]*[.!?]?", re.I)


@dataclass(kw_only=True, slots=True)
class ReplayResult:
    """What replaying one transcript produced."""

    session: Session
    transcript: Transcript
    requests: list[BuiltRequest] = field(default_factory=list)
    overflows: int = 0
    """Model calls for which no request could be built within the window."""
    unanswerable: int = 0
    """Model answers that followed another answer with nothing new to respond to."""


def constraints_in(task: str | None) -> list[str]:
    """Sentences of the task that state a constraint (must, never, do not, only, ...)."""
    if not task:
        return []
    found = [m.group(0).strip() for m in _CONSTRAINT.finditer(task)]
    return [c for c in dict.fromkeys(found) if len(c) > 12]


def agent_for(transcript: Transcript, *, cache_ttl: CacheTtl = DEFAULT_CACHE_TTL) -> tuple[AgentSpec, dict[str, str]]:
    """The agent spec a transcript implies (with the profile's ``cache_ttl``), and the tool-name mapping applied to it."""
    names: dict[str, str] = {}
    tools: list[ToolSpec] = []
    for schema in transcript.tools:
        spec = _tool_from_schema(schema)
        if spec is not None and spec.name not in {t.name for t in tools}:
            tools.append(spec)
    # The engine pins its own control tools; a transcript of one of our sessions names them too.
    control = {t.name for t in CONTROL_TOOLS}
    tools = [t for t in tools if t.name not in control]
    known = {t.name for t in tools} | control
    for message in transcript.messages:
        for call in message.tool_calls:
            name = safe_tool_name(call.name)
            names[call.name] = name
            if name not in known:
                known.add(name)
                tools.append(
                    Tool(name, f"The {call.name} tool, as used in the recorded session.", {"type": "object", "properties": {}})
                )
    return AgentSpec(policy=REPLAY_POLICY, instructions=transcript.system or "", tools=tools, cache_ttl=cache_ttl), names


def replay(
    transcript: Transcript,
    *,
    engine: Engine,
    model: ResolvedModel,
    session_id: str | None = None,
    on_request: Callable[[BuiltRequest], None] | None = None,
    cache_ttl: CacheTtl = DEFAULT_CACHE_TTL,
    follow_times: Callable[[str], None] | None = None,
    provider_usage: Callable[[BuiltRequest], Usage] | None = None,
    budgets: BudgetConfig = REPLAY_BUDGETS,
) -> ReplayResult:
    """Replay ``transcript`` into a new session on ``engine`` (as an agent profile with ``cache_ttl``).

    ``follow_times`` is called with each message's recorded time before the message is
    recorded (to move a clock along the transcript). Provider usage recorded with a
    model answer is kept as that request's ``model.response``, marked replayed: it
    belongs to the original request, so it does not tune the engine's estimates.
    ``provider_usage`` plays a live provider instead: its report for each request built
    is recorded as that request's ``model.response`` (not replayed, so the session
    reconciles its estimates from it, as a live loop does) in place of the recorded one.
    ``budgets`` replaces the replay's own (:data:`REPLAY_BUDGETS`), for what-if comparisons.
    """
    agent, names = agent_for(transcript, cache_ttl=cache_ttl)
    sid = session_id or _session_id(transcript)
    session = engine.session(sid, agent=agent, model=model)
    session.setup.budgets = budgets
    result = ReplayResult(session=session, transcript=transcript)
    task = transcript.task.strip() if transcript.task else None
    for message in transcript.messages:
        if follow_times is not None and message.at is not None:
            follow_times(message.at)
        if message.role in ("user", "system"):
            if message.text.strip():
                # Injected messages (reminders, command echoes) come from the harness, not the user;
                # the expanded prompt of a command that opened the session is the user's task all the same.
                asked = message.role == "user" and (not message.meta or message.text.strip() == task)
                task = None if asked else task
                session.user(message.text, author="user" if asked else "operator")
        elif message.role == "assistant":
            calls = tuple(
                ToolCall(id=c.id, name=names.get(c.name, safe_tool_name(c.name)), arguments=to_plain(c.arguments))
                for c in message.tool_calls
            )
            if not message.text.strip() and not calls:
                continue
            built = None
            if session.adapter.awaiting_model:
                try:
                    built = session.next_request()
                except (BudgetExceeded, EscalationRequired):
                    result.overflows += 1
                else:
                    result.requests.append(built)
                    if on_request is not None:
                        on_request(built)
            else:
                result.unanswerable += 1
            session.adapter.record_assistant(AssistantMessage(text=message.text, tool_calls=calls, model=message.model))
            if built is not None and provider_usage is not None:
                _keep_usage(engine, session, built, provider_usage(built), model=None, replayed=False)
            elif built is not None and (usage := _recorded_usage(message.usage)) is not None:
                _keep_usage(engine, session, built, usage, model=message.model)
        for tool_result in message.tool_results:
            pending = {c.id for c in session.pending_tool_calls()}
            if tool_result.call_id in pending:
                session.tool_result(
                    tool_result.call_id, tool_result.output, is_error=tool_result.is_error, exit_code=tool_result.exit_code
                )
    return result


def _recorded_usage(raw: Any) -> Usage | None:
    """The usage a transcript recorded, in whichever provider's shape; None when absent or unreadable."""
    if not isinstance(raw, dict):
        return None
    try:
        if "prompt_tokens" in raw:
            return wire_named("openai_chat").parse_usage(raw)
        if "input_tokens_details" in raw:
            return wire_named("openai_responses").parse_usage(raw)
        if "input_tokens" in raw:
            return wire_named("anthropic").parse_usage(raw)
    except ContextwrightError:
        return None  # a transcript's odd usage must not stop its replay
    return None


def _keep_usage(
    engine: Engine, session: Session, built: BuiltRequest, usage: Usage, *, model: str | None, replayed: bool = True
) -> None:
    # Appended as an event rather than through Session.record, and marked replayed: the recorded
    # numbers belong to the original requests, so they must not tune the engine's token estimates.
    response = ModelResponse(
        provider=session.model.provider,
        model=model or session.model.id,
        usage=usage,
        request_index=built.index,
        estimated_input_tokens=built.result.total_tokens,
        replayed=replayed,
    )
    engine.log.append(session.id, [response], expected_seq=engine.log.last_seq(session.id))


def _tool_from_schema(schema: Any) -> ToolSpec | None:
    function = schema.get("function", schema) if hasattr(schema, "get") else None
    if not function or not function.get("name"):
        return None
    parameters = function.get("parameters") or function.get("input_schema") or {"type": "object", "properties": {}}
    if parameters.get("type") != "object":
        parameters = {"type": "object", "properties": {}}
    return Tool(safe_tool_name(function["name"]), function.get("description") or "", to_plain(parameters))


def _session_id(transcript: Transcript) -> str:
    raw = f"{transcript.format}:{transcript.session_id}"
    return "".join(ch if ch.isprintable() else "_" for ch in raw)[:200].strip() or "replay"


def visible_in(request: NeutralRequest, text: str) -> bool:
    """True when ``text`` reaches the model verbatim (inside its envelope) in ``request``."""
    needle = escape(text.strip())
    return any(needle in getattr(part, "text", "") for message in request.messages for part in message.parts)
