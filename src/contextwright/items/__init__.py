"""Context items: what may go into a request, where, and who pays for it."""

from contextwright.items.base import (
    LAYERS,
    REGIONS,
    ContextItem,
    ItemDeclarationError,
    Layer,
    Region,
    region_of,
)
from contextwright.items.region_a import (
    AgentInstructions,
    Framing,
    MemoryFact,
    MemorySnapshot,
    PlatformPolicy,
    PrefixItem,
    ToolSpec,
)

__all__ = [
    "LAYERS",
    "REGIONS",
    "AgentInstructions",
    "ContextItem",
    "Framing",
    "ItemDeclarationError",
    "Layer",
    "MemoryFact",
    "MemorySnapshot",
    "PlatformPolicy",
    "PrefixItem",
    "Region",
    "ToolSpec",
    "region_of",
]
