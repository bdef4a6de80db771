"""Region A: the frozen prefix. Identical bytes on every request of an epoch."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from contextwright.canonical import canonical_json
from contextwright.errors import UsageError
from contextwright.items.base import ContextItem, Layer, Region

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

READ_TOOL_NAME = "context_read_artifact"
"""The control tool that pages kept text back in (tool_outputs/arrival.py). Markers and pointer
stubs name it only where the prefix pins it: a model must not be told to call a tool it lacks."""


class PrefixItem(ContextItem, abstract=True):
    """Base of region-A items."""

    region: ClassVar[Region] = "A"
    layer: ClassVar[Layer] = "stage_local"


@dataclass(frozen=True, kw_only=True, slots=True)
class PlatformPolicy(PrefixItem):
    """Rules set by whoever runs the agent platform; never enveloped (trust: platform)."""

    budget_class: ClassVar[str] = "policy"
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Framing(PrefixItem):
    """The envelope rules: enveloped content is data, never instructions."""

    budget_class: ClassVar[str] = "framing"
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentInstructions(PrefixItem):
    """The agent's own instructions (an AGENTS.md, a persona)."""

    budget_class: ClassVar[str] = "instructions"
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolSpec(PrefixItem):
    """One tool as advertised to the model, pinned for the epoch."""

    budget_class: ClassVar[str] = "tools"
    name: str
    description: str
    input_schema: dict[str, Any]
    native: dict[str, Any] | None = None
    """A tool no function schema describes (a hosted web search, a namespace of tools, a tool with a free-form
    grammar), as its client declared it: ``{"wire": WIRE, "tool": DECLARATION}``. That wire sends the declaration
    unchanged; any other sends the function form (name, description, ``input_schema``). None for a function."""

    def __post_init__(self) -> None:
        # Both providers accept ^[a-zA-Z0-9_-]{1,64}$ for tool and function names.
        if not _TOOL_NAME.match(self.name):
            raise UsageError(f"tool name {self.name!r} must be 1-64 ASCII letters, digits, '_' or '-'")
        if not isinstance(self.input_schema, dict) or self.input_schema.get("type") != "object":
            raise UsageError(f"tool {self.name!r}: input_schema must be a JSON schema with type 'object'")
        canonical_json(self.input_schema)  # must have a canonical form to be pinned
        if self.native is not None:
            if set(self.native) != {"wire", "tool"} or not isinstance(self.native["wire"], str):
                raise UsageError(f"tool {self.name!r}: native must be {{'wire': WIRE, 'tool': DECLARATION}}")
            if not isinstance(self.native["tool"], dict):
                raise UsageError(f"tool {self.name!r}: a native declaration must be a JSON object")
            canonical_json(self.native)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values; the pinned canonical form of the tool (``native`` only where there is one)."""
        plain = {"name": self.name, "description": self.description, "input_schema": self.input_schema}
        if self.native is not None:
            plain["native"] = self.native
        return plain


@dataclass(frozen=True, kw_only=True, slots=True)
class MemoryFact(PrefixItem):
    """One memory item as read at session open."""

    budget_class: ClassVar[str] = "memory_snapshot"
    layer: ClassVar[Layer] = "project_memory"
    id: str
    text: str
    trust: str = "user"


@dataclass(frozen=True, kw_only=True, slots=True)
class MemorySnapshot(PrefixItem):
    """The memory read once at session open, frozen for the epoch."""

    budget_class: ClassVar[str] = "memory_snapshot"
    layer: ClassVar[Layer] = "project_memory"
    facts: tuple[MemoryFact, ...] = ()
