"""Events: the envelope, the catalogue of payload types, and the registry."""

from contextwright.events import catalog
from contextwright.events.catalog import (
    ArtifactPointer,
    ArtifactStored,
    AssistantMessage,
    Compacted,
    EpochRotated,
    MemoryCorrected,
    MemoryErased,
    MemoryWritten,
    ModelResponse,
    PlanCreated,
    RequestBuilt,
    ToolCall,
    ToolResult,
    TrustLevel,
    UsageRecord,
    UserMessage,
    WorkingStateUpdated,
)
from contextwright.events.envelope import Event, NewEvent
from contextwright.events.registry import decode_payload, event_type, known_types, payload_json

__all__ = [
    "ArtifactPointer",
    "ArtifactStored",
    "AssistantMessage",
    "Compacted",
    "EpochRotated",
    "Event",
    "MemoryCorrected",
    "MemoryErased",
    "MemoryWritten",
    "ModelResponse",
    "NewEvent",
    "PlanCreated",
    "RequestBuilt",
    "ToolCall",
    "ToolResult",
    "TrustLevel",
    "UsageRecord",
    "UserMessage",
    "WorkingStateUpdated",
    "catalog",
    "decode_payload",
    "event_type",
    "known_types",
    "payload_json",
]
