"""Fakes for tests and prototypes: a steppable clock, a sample agent, an engine on any store."""

from __future__ import annotations

from typing import Any

from contextwright.clock import FixedClock
from contextwright.models import ResolvedModel, anthropic, with_window
from contextwright.runtime.engine import Engine
from contextwright.runtime.ports import InMemoryMemory
from contextwright.runtime.session import Session
from contextwright.runtime.spec import AgentSpec, Tool

FakeClock = FixedClock
"""A clock that moves only when told to (alias of :class:`~contextwright.clock.FixedClock`)."""

TEST_SECRET = bytes(range(32))
TOOLS = ("run_tests", "read_file", "grep", "edit_file", "build", "deploy_preview")
"""The sample agent's tools (the demo script calls them)."""


def sample_agent(*, tools: tuple[str, ...] = TOOLS) -> AgentSpec:
    """A coding agent with the demo's tools."""
    return AgentSpec(
        policy="You are a careful coding agent working in the user's repository. Never push to main.",
        instructions="Run the tests before you claim that something works. Keep changes small.",
        tools=[Tool(name, f"The {name.replace('_', ' ')} tool.", {"type": "object", "properties": {}}) for name in tools],
    )


def sample_model(window: int = 200_000) -> ResolvedModel:
    """Claude Sonnet 4.6, optionally with a smaller window."""
    model = anthropic("claude-sonnet-4-6")
    return model if window == model.context_window else with_window(model, window)


def open_session(
    session_id: str = "s1",
    *,
    url: str = "memory://",
    clock: FixedClock | None = None,
    window: int = 200_000,
    memory: InMemoryMemory | None = None,
    agent: AgentSpec | None = None,
    **engine_options: Any,
) -> tuple[Engine, Session, FixedClock]:
    """An engine on ``url`` with a fixed clock and a fixed secret (and ``engine_options``), and a session on it."""
    clock = clock or FixedClock("2026-03-01T22:30:00Z")
    engine = Engine.open(url, clock=clock, secret=TEST_SECRET, **engine_options)
    session = engine.session(session_id, agent=agent or sample_agent(), model=sample_model(window), memory=memory, recall=memory)
    return engine, session, clock
