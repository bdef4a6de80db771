"""The system prompt and tools a drop-in caller passes, reconciled with the session's prefix (never dropped silently).

A client drop-in (the Anthropic middleware, the OpenAI wrapper) sends the engine's system
text and tools, pinned in the prefix for the epoch. The caller's own ``system`` /
``instructions`` and ``tools`` are read on every call:

* on the session's first request, what the ``AgentSpec`` leaves open is taken from the
  call and pinned (an empty ``instructions`` takes the caller's system text; a tool the
  spec does not name is added after the spec's), recorded as a prefix edit whose note
  says where it came from;
* what the spec (or the first call) already pinned must agree with the call: a system
  text that is neither the policy nor the instructions, a tool missing on either side
  or described differently, a tool the engine cannot pin (a provider's server tool) is a
  :class:`~contextwright.integrations.errors.PrefixMismatch` naming each difference,
  raised before anything is recorded or sent.

A caller that passes no ``system`` or no ``tools`` leaves that part to the spec.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from contextwright.errors import UsageError
from contextwright.integrations.errors import PrefixMismatch
from contextwright.items.region_a import ToolSpec
from contextwright.runtime.session import Session
from contextwright.runtime.spec import CONTROL_TOOLS, AgentSpec

__all__ = ["CallerPrefix", "settle_prefix"]


@dataclass(frozen=True, kw_only=True, slots=True)
class CallerPrefix:
    """What one call passed for the prefix: ``None`` where it passed nothing."""

    system: str | None = None
    tools: tuple[ToolSpec, ...] | None = None
    unpinnable: tuple[str, ...] = ()
    """Tools the call passed that are not function tools (named by name or type)."""


def tool_spec(name: object, description: object, schema: object) -> ToolSpec | str:
    """A function tool as a :class:`ToolSpec`, or the reason it cannot be one."""
    if not isinstance(name, str):
        return "a tool without a name"
    try:
        return ToolSpec(
            name=name,
            description=description if isinstance(description, str) else "",
            input_schema=dict(schema) if isinstance(schema, dict) else {"type": "object", "properties": {}},
        )
    except UsageError as exc:
        return f"tool {name!r} ({exc})"


def settle_prefix(session: Session, caller: CallerPrefix, *, adapter: str) -> None:
    """Pin what the first call adds to the spec, or raise :class:`PrefixMismatch` naming what differs."""
    agent = session.agent
    first = session.history.requests_built == 0
    # A process that resumes a session whose first call pinned them (its spec no longer holds them) may adopt them again.
    plan = None if first else session.setup.plan
    adoptable = first or plan is not None
    adopted: list[str] = []
    problems: list[str] = [f"{name} cannot be pinned in the prefix (only function tools can)" for name in caller.unpinnable]
    instructions = agent.instructions
    system = (caller.system or "").strip()
    if system and system not in (agent.policy.strip(), agent.instructions.strip()):
        if adoptable and not agent.instructions.strip():
            instructions = caller.system or ""
            adopted.append(f"the call's system prompt ({_excerpt(system)}) is not pinned in the session's prefix")
        else:
            problems.append(
                f"the call's system prompt ({_excerpt(system)}) is neither the AgentSpec's policy "
                f"({_excerpt(agent.policy)}) nor its instructions ({_excerpt(agent.instructions) or 'empty'})"
            )
    tools = list(agent.tools)
    if caller.tools is not None:
        control = {tool.name for tool in CONTROL_TOOLS}
        pinned = {tool.name: tool for tool in agent.tools}
        passed = [tool for tool in caller.tools if tool.name not in control]
        for tool in passed:
            mine = pinned.get(tool.name)
            if mine is None:
                tools.append(tool)
                adopted.append(f"tool {tool.name!r} is passed by the call but not pinned in the session's prefix")
            elif mine.description != tool.description:
                problems.append(
                    f"tool {tool.name!r}: the call describes it as {_excerpt(tool.description)}, "
                    f"the prefix as {_excerpt(mine.description)}"
                )
            elif mine.input_schema != tool.input_schema:
                problems.append(f"tool {tool.name!r}: the call's input schema differs from the prefix's")
        names = {tool.name for tool in passed}
        missing = [tool.name for tool in agent.tools if tool.name not in names]
        if missing:
            problems.append(f"the prefix pins tool(s) the call does not pass: {', '.join(missing)}")
    derived = replace(agent, instructions=instructions, tools=tuple(tools))
    resumed = not first and derived != agent and plan is not None and _pinned(plan.prefix, derived)
    if adopted and not first and not resumed:
        problems.extend(adopted)
    if problems:
        where = "the first call" if first else "this call"
        raise PrefixMismatch(
            f"session {session.id!r}: {where} passes a system prompt or tools that differ from the session's prefix: "
            + "; ".join(problems)
            + ". Pass the same system prompt and tools as the AgentSpec (or leave instructions and tools out of the "
            "spec so the first call pins them); to change them on purpose, call session.edit_prefix(...)",
            session_id=session.id,
            differences=tuple(problems),
        )
    if resumed:
        # What the first call pinned, already in the session's plan: the same prefix, no new epoch.
        session.adapter.adopt_agent(derived)
    elif derived != agent:
        added = [tool.name for tool in tools[len(agent.tools) :]]
        parts = (["system prompt"] if instructions != agent.instructions else []) + (
            [f"tool(s) {', '.join(added)}"] if added else []
        )
        session.setup.edit_prefix(derived, note=f"{adapter}: {' and '.join(parts)} taken from the first call")


def _pinned(prefix: Any, agent: AgentSpec) -> bool:
    """Whether ``prefix`` (a plan's) already holds ``agent``'s instructions and tools, as a first call pinned them."""
    held = {tool.name: tool for tool in prefix.tools}
    return prefix.instructions.text == agent.instructions and all(held.get(tool.name) == tool for tool in agent.tools)


def _excerpt(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…") if text else ""


def function_tools(specs: Sequence[ToolSpec | str]) -> tuple[tuple[ToolSpec, ...], tuple[str, ...]]:
    """Split converted tools into the pinnable ones and the reasons the others are not."""
    return tuple(s for s in specs if isinstance(s, ToolSpec)), tuple(s for s in specs if isinstance(s, str))
