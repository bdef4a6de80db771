"""The wire formats a neutral request renders to, in one table.

Each wire is one renderer module with the same call shape, so a caller picks a
wire by name instead of by a chain of ``if`` statements. A new wire registers here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from contextwright.assembly.request import NeutralRequest
from contextwright.errors import UsageError
from contextwright.providers import anthropic, litellm, openai_chat, openai_responses
from contextwright.providers.anthropic import Ttl
from contextwright.providers.capabilities import ProviderCapabilities

__all__ = ["WIRES", "Wire", "WireName", "wire_named"]

WireName = Literal["anthropic", "openai_chat", "openai_responses", "litellm"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Wire:
    """One wire format: its name and how a neutral request renders to its SDK keyword arguments."""

    name: str
    render: Callable[..., dict[str, Any]]
    """``render(request, caps, *, previous, prefix_ttl) -> dict``: keyword arguments for the SDK call."""


def _anthropic(
    request: NeutralRequest, caps: ProviderCapabilities, *, previous: NeutralRequest | None = None, prefix_ttl: Ttl = "5m"
) -> dict[str, Any]:
    return anthropic.render(request, caps, previous=previous, prefix_ttl=prefix_ttl)


def _openai_chat(
    request: NeutralRequest, caps: ProviderCapabilities, *, previous: NeutralRequest | None = None, prefix_ttl: Ttl = "5m"
) -> dict[str, Any]:
    # OpenAI caches by prefix without markers: neither the previous request nor a TTL changes the body.
    return openai_chat.render(request, caps)


def _openai_responses(
    request: NeutralRequest, caps: ProviderCapabilities, *, previous: NeutralRequest | None = None, prefix_ttl: Ttl = "5m"
) -> dict[str, Any]:
    return openai_responses.render(request, caps)


def _litellm(
    request: NeutralRequest, caps: ProviderCapabilities, *, previous: NeutralRequest | None = None, prefix_ttl: Ttl = "5m"
) -> dict[str, Any]:
    return litellm.render(request, caps, previous=previous, prefix_ttl=prefix_ttl)


WIRES: Mapping[str, Wire] = MappingProxyType(
    {
        "anthropic": Wire(name="anthropic", render=_anthropic),
        "openai_chat": Wire(name="openai_chat", render=_openai_chat),
        "openai_responses": Wire(name="openai_responses", render=_openai_responses),
        "litellm": Wire(name="litellm", render=_litellm),
    }
)


def wire_named(name: str) -> Wire:
    """The wire called ``name``, or a :class:`UsageError` that lists the known ones."""
    try:
        return WIRES[name]
    except KeyError:
        known = ", ".join(sorted(WIRES))
        raise UsageError(f"unknown wire format {name!r}: use one of {known}") from None
