"""Context items: what may go into a request, where, and who pays for it."""

from contextwright.items.base import (
    LAYERS,
    REGIONS,
    ContextItem,
    ItemDeclarationError,
    Layer,
    Region,
    item_for_budget_class,
    item_types,
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
from contextwright.items.region_b import BodyItem

__all__ = [
    "LAYERS",
    "REGIONS",
    "AgentInstructions",
    "BodyItem",
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
    "item_for_budget_class",
    "item_types",
    "region_of",
]
