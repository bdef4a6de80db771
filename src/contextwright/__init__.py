"""Contextwright: a context engine for LLM agents.

Open an engine on a store, open a session with your agent's setup, and ask the
session for each request::

    import contextwright as cw

    engine = cw.Engine.open("sqlite:///agent.db")
    session = engine.session("ticket-4711", agent=cw.AgentSpec(policy="..."), model=cw.models.anthropic("claude-sonnet-4-6"))
"""

from contextwright import errors, models
from contextwright._version import __version__
from contextwright.clock import Clock, FixedClock, SystemClock
from contextwright.errors import ContextwrightError
from contextwright.events import Event, NewEvent
from contextwright.log import EventLog, open_log
from contextwright.plan.budgets import BudgetConfig
from contextwright.runtime import (
    AgentSpec,
    BuiltRequest,
    Engine,
    InMemoryMemory,
    MemoryPort,
    RecallPort,
    RoundPolicy,
    Session,
    Tool,
)
from contextwright.tool_outputs.arrival import ToolOutputPolicy

__all__ = [
    "AgentSpec",
    "BudgetConfig",
    "BuiltRequest",
    "Clock",
    "ContextwrightError",
    "Engine",
    "Event",
    "EventLog",
    "FixedClock",
    "InMemoryMemory",
    "MemoryPort",
    "NewEvent",
    "RecallPort",
    "RoundPolicy",
    "Session",
    "SystemClock",
    "Tool",
    "ToolOutputPolicy",
    "__version__",
    "errors",
    "models",
    "open_log",
]
