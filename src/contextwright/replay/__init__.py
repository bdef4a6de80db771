"""Transcript replay: drive a real session through an imported transcript."""

from contextwright.replay.transcript import (
    REPLAY_BUDGETS,
    REPLAY_POLICY,
    ReplayResult,
    agent_for,
    constraints_in,
    replay,
    safe_tool_name,
    visible_in,
)

__all__ = [
    "REPLAY_BUDGETS",
    "REPLAY_POLICY",
    "ReplayResult",
    "agent_for",
    "constraints_in",
    "replay",
    "safe_tool_name",
    "visible_in",
]
