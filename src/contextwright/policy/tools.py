"""Tool authorization is checked when a call happens, not by editing the prompt.

A tool definition in the prefix grants nothing. Revoking a tool mid-session
records a ``tool.revoked`` event; the tool stays advertised (the prefix and its
cache are untouched) and any later call to it is answered with a denial as its
tool result. Only an operator-forced *immediate* revocation removes the tool
from the prefix, which rotates the epoch (see the planner).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from contextwright.events.catalog import ToolCall, ToolResult
from contextwright.events.envelope import Event


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolPolicy:
    """The set of revoked tools, derived from the log."""

    revoked: frozenset[str] = frozenset()

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> ToolPolicy:
        """Fold ``tool.revoked`` / ``tool.restored`` events in order."""
        revoked: set[str] = set()
        for event in events:
            if event.type == "tool.revoked":
                revoked.add(event.payload.tool)
            elif event.type == "tool.restored":
                revoked.discard(event.payload.tool)
        return cls(revoked=frozenset(revoked))

    def allows(self, tool_name: str) -> bool:
        """True unless the tool was revoked."""
        return tool_name not in self.revoked


def denial_for(call: ToolCall, policy: ToolPolicy) -> ToolResult | None:
    """The tool result that denies ``call``, or None when the call is allowed."""
    if policy.allows(call.name):
        return None
    return ToolResult(
        call_id=call.id,
        tool_name=call.name,
        output=f"Permission denied: the tool '{call.name}' has been revoked for this session. Do not call it again.",
        is_error=True,
        denied=True,
        trust="platform",
    )
