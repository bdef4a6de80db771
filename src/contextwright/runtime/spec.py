"""What a user hands the engine about their agent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextwright.assembly.envelope import FRAMING_TEXT
from contextwright.derive.working_state import TOOL_NAME as WORKING_STATE_TOOL
from contextwright.derive.working_state import UPDATE_TOOL_DESCRIPTION, UPDATE_TOOL_SCHEMA
from contextwright.items.region_a import (
    AgentInstructions,
    Framing,
    MemoryFact,
    MemorySnapshot,
    PlatformPolicy,
    ToolSpec,
)
from contextwright.plan.plan import CACHE_TTLS, DEFAULT_CACHE_TTL, CacheTtl, Prefix
from contextwright.pressure.tool_output import (
    READ_TOOL_DESCRIPTION,
    READ_TOOL_NAME,
    READ_TOOL_SCHEMA,
    ToolOutputPolicy,
)


def Tool(name: str, description: str, input_schema: Mapping[str, Any] | None = None) -> ToolSpec:
    """A tool to advertise to the model (``input_schema`` defaults to an object with no properties)."""
    return ToolSpec(
        name=name,
        description=description,
        input_schema=dict(input_schema) if input_schema is not None else {"type": "object", "properties": {}},
    )


CONTROL_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(name=WORKING_STATE_TOOL, description=UPDATE_TOOL_DESCRIPTION, input_schema=UPDATE_TOOL_SCHEMA),
    ToolSpec(name=READ_TOOL_NAME, description=READ_TOOL_DESCRIPTION, input_schema=READ_TOOL_SCHEMA),
)
"""Tools the engine itself provides; they are pinned after the agent's tools."""


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentSpec:
    """The agent's frozen setup: policy, instructions and tools (region A)."""

    policy: str
    instructions: str = ""
    tools: Sequence[ToolSpec] = field(default_factory=tuple)
    framing: str = FRAMING_TEXT
    control_tools: bool = True
    """Pin the engine's control tools (working state, artifact reading) after the agent's tools."""
    tool_output: Mapping[str, ToolOutputPolicy] = field(default_factory=dict)
    """Per-tool output bounds; tools not named here use ``default_tool_output``."""
    default_tool_output: ToolOutputPolicy = ToolOutputPolicy()
    cache_ttl: CacheTtl = DEFAULT_CACHE_TTL
    """How long the provider keeps this agent's cached prefix: "1h" for long-lived orchestrators, "5m" for short workers."""

    def __post_init__(self) -> None:
        if self.cache_ttl not in CACHE_TTLS:
            from contextwright.errors import UsageError

            raise UsageError(f"cache_ttl must be one of {', '.join(CACHE_TTLS)}, not {self.cache_ttl!r}")

    def output_policy(self, tool_name: str) -> ToolOutputPolicy:
        """How outputs of ``tool_name`` are compressed and capped."""
        return self.tool_output.get(tool_name, self.default_tool_output)

    def prefix(self, memory: Sequence[MemoryFact] = ()) -> Prefix:
        """The region-A prefix of a session that opens with ``memory``."""
        tools = tuple(self.tools) + (CONTROL_TOOLS if self.control_tools else ())
        names = [t.name for t in tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            from contextwright.errors import UsageError

            raise UsageError(f"tool name(s) used twice: {', '.join(duplicates)}")
        return Prefix(
            policy=PlatformPolicy(text=self.policy),
            framing=Framing(text=self.framing),
            instructions=AgentInstructions(text=self.instructions),
            tools=tools,
            memory=MemorySnapshot(facts=tuple(memory)),
        )
