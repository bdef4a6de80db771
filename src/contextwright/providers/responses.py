"""Provider answers → the neutral assistant message and the one usage type, whatever the wire.

Accepts the official SDKs' response objects (anything with ``model_dump()``, such as the
final message of a stream) or the same JSON as plain mappings. The wire is detected: each
wire module says which answers are its own (``WIRE.recognizes``) and reads them
(``WIRE.parse_response``), so a new wire needs nothing here.

Signed reasoning (Anthropic ``thinking`` / ``redacted_thinking`` blocks, OpenAI Responses
``reasoning`` items) is kept verbatim as
:class:`~contextwright.events.catalog.ReasoningBlock` parts of the message, with its place
among the text and the tool calls, so it can be sent back as received.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextwright.events.catalog import AssistantMessage, Usage
from contextwright.providers.errors import MalformedProviderResponse
from contextwright.providers.wires import WIRES

__all__ = ["parse_response"]


def parse_response(response: Any) -> tuple[AssistantMessage, Usage | None]:
    """The assistant message and usage of a provider response (the wire is detected)."""
    data = response.model_dump() if hasattr(response, "model_dump") else response
    if not isinstance(data, Mapping):
        raise MalformedProviderResponse(
            f"a response must be an SDK object or a mapping, not {type(response).__name__}", provider="unknown"
        )
    for wire in WIRES.values():
        if wire.recognizes(data):
            return wire.parse_response(data)
    raise MalformedProviderResponse(f"unrecognised response: not an answer of any wire ({', '.join(WIRES)})", provider="unknown")
