"""The runtime: the only component that does I/O for a session."""

from contextwright.runtime.engine import Engine
from contextwright.runtime.ports import InMemoryMemory, MemoryPort, RecallPort
from contextwright.runtime.session import BuiltRequest, RoundPolicy, Session
from contextwright.runtime.spec import AgentSpec, Tool

__all__ = ["AgentSpec", "BuiltRequest", "Engine", "InMemoryMemory", "MemoryPort", "RecallPort", "RoundPolicy", "Session", "Tool"]
