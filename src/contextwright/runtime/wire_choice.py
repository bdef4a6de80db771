"""Which wire format an SDK method speaks, read from the method itself.

``client.messages.*`` speaks the Anthropic wire, ``client.chat.completions.*`` the
chat wire and ``client.responses.*`` the Responses wire, for sync and async clients,
their ``beta`` resources and their ``with_raw_response`` / ``with_streaming_response``
wrappers. The resource's module says which: the SDKs keep one module per resource.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from contextwright.runtime.errors import WireMismatch

# (package, a dotted part of the resource module) → wire; the first match wins.
_RESOURCE_WIRES: tuple[tuple[str, str, str], ...] = (
    ("anthropic", ".messages", "anthropic"),
    ("openai", ".chat.completions", "openai_chat"),
    ("openai", ".responses", "openai_responses"),
)

WIRE_PROVIDERS: dict[str, str] = {"anthropic": "anthropic", "openai_chat": "openai", "openai_responses": "openai"}
"""The provider each wire belongs to (wires not named here are not checked)."""

_CALLS = {
    "anthropic": "client.messages.create / client.messages.stream",
    "openai_chat": "client.chat.completions.create / client.chat.completions.stream",
    "openai_responses": "client.responses.create / client.responses.stream",
}


def inferred_wire(call: Callable[..., Any]) -> str | None:
    """The wire ``call`` speaks, or None when it is not a method of a known SDK resource."""
    target = _target(call)
    owner = getattr(call, "__self__", None)
    module = type(owner).__module__ if owner is not None else getattr(target, "__module__", None) or ""
    for package, part, wire in _RESOURCE_WIRES:
        if module.startswith(package + ".resources") and part in module:
            return wire
    return None


def method_name(call: Callable[..., Any]) -> str:
    """The SDK method's own name (``create``, ``stream``), through partials and response wrappers."""
    return str(getattr(_target(call), "__name__", ""))


def _target(call: Callable[..., Any]) -> Any:
    while isinstance(call, functools.partial):
        call = call.func
    return inspect.unwrap(call)


def default_wire(provider: str) -> str:
    """The wire used for a provider when the call says nothing (plain functions, fakes)."""
    return "anthropic" if provider == "anthropic" else "openai_chat"


def choose_wire(call: Callable[..., Any], *, provider: str, model: str, wire: str | None = None) -> str:
    """``wire`` if given, else the one ``call`` speaks, else the provider's default; checked against the model's provider."""
    chosen = wire or inferred_wire(call) or default_wire(provider)
    expected = WIRE_PROVIDERS.get(chosen)
    if expected is not None and expected != provider:
        fitting = [name for name, owner in WIRE_PROVIDERS.items() if owner == provider]
        hint = "; ".join(f"wire={name!r} ({_CALLS[name]})" for name in fitting)
        source = "was asked for" if wire else "is what this SDK method speaks"
        raise WireMismatch(
            f"the {chosen} wire {source}, but {model} is a {provider} model: use {hint or 'a wire of that provider'}",
            wire=chosen,
            provider=provider,
            fitting=fitting,
        )
    return chosen
