"""What a user hands the engine about their agent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextwright.assembly.envelope import FRAMING_TEXT
from contextwright.errors import UsageError
from contextwright.items.region_a import (
    AgentInstructions,
    Framing,
    MemoryFact,
    MemorySnapshot,
    PlatformPolicy,
    ToolSpec,
)
from contextwright.plan.plan import CACHE_TTLS, DEFAULT_CACHE_TTL, CacheTtl, Prefix
from contextwright.runtime.engine_texts import CURRENT, EngineTexts, is_engine_framing
from contextwright.tool_outputs.arrival import ToolOutputPolicy


def Tool(name: str, description: str, input_schema: Mapping[str, Any] | None = None) -> ToolSpec:
    """A tool to advertise to the model (``input_schema`` defaults to an object with no properties)."""
    return ToolSpec(
        name=name,
        description=description,
        input_schema=dict(input_schema) if input_schema is not None else {"type": "object", "properties": {}},
    )


CONTROL_TOOLS: tuple[ToolSpec, ...] = CURRENT.control_tools
"""Tools the engine itself provides (in their newest texts); they are pinned after the agent's tools."""


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentSpec:
    """The agent's frozen setup: policy, instructions and tools (region A)."""

    policy: str
    instructions: str = ""
    tools: Sequence[ToolSpec] = field(default_factory=tuple)
    framing: str = FRAMING_TEXT
    """The envelope rules. The engine's own framing, in any version, stands for the engine's: a session
    pins the version its plan holds (:mod:`contextwright.runtime.engine_texts`)."""
    control_tools: bool = True
    """Pin the engine's control tools (working state, artifact reading) after the agent's tools."""
    tool_output: Mapping[str, ToolOutputPolicy] = field(default_factory=dict)
    """Per-tool output bounds; tools not named here use ``default_tool_output``."""
    default_tool_output: ToolOutputPolicy = ToolOutputPolicy()
    cache_ttl: CacheTtl = DEFAULT_CACHE_TTL
    """How long the provider keeps this agent's cached prefix: "1h" for long-lived orchestrators, "5m" for short workers."""

    def __post_init__(self) -> None:
        if self.cache_ttl not in CACHE_TTLS:
            raise UsageError(f"cache_ttl must be one of {', '.join(CACHE_TTLS)}, not {self.cache_ttl!r}")

    def output_policy(self, tool_name: str) -> ToolOutputPolicy:
        """How outputs of ``tool_name`` are compressed and capped."""
        return self.tool_output.get(tool_name, self.default_tool_output)

    def prefix(self, memory: Sequence[MemoryFact] = (), *, texts: EngineTexts = CURRENT) -> Prefix:
        """The region-A prefix of a session that opens with ``memory``, in the engine's ``texts`` (the newest by default)."""
        tools = tuple(self.tools) + (texts.control_tools if self.control_tools else ())
        names = [t.name for t in tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise UsageError(f"tool name(s) used twice: {', '.join(duplicates)}")
        return Prefix(
            policy=PlatformPolicy(text=self.policy),
            framing=Framing(text=texts.framing if is_engine_framing(self.framing) else self.framing),
            instructions=AgentInstructions(text=self.instructions),
            tools=tools,
            memory=MemorySnapshot(facts=tuple(memory)),
        )
