"""The wire formats a neutral request renders to, in one registry, and which one an SDK call speaks.

Every module of this package whose name does not start with ``_`` is one wire and exports
``WIRE``, a :class:`~contextwright.providers.wire.Wire` holding all the engine knows about
it (render, answers, usage, the SDK's rules and errors). The registry imports them in name
order, so a new wire is one module here plus its tests; nothing else names it.

The wire of an SDK call is read from the method itself: ``client.messages.*`` speaks the
Anthropic wire, ``client.chat.completions.*`` the chat wire, and so on, for sync and async
clients, their ``beta`` resources and their ``with_raw_response`` /
``with_streaming_response`` wrappers. The resource's module says which (each wire lists
its ``sdk_resources``): the SDKs keep one module per resource.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from contextwright.errors import UsageError
from contextwright.providers.wire import Wire, WireMismatch

__all__ = [
    "WIRES",
    "Wire",
    "call_arguments",
    "choose_wire",
    "default_wire",
    "inferred_wire",
    "method_name",
    "translated_error",
    "wire_named",
]


def _discover() -> Mapping[str, Wire]:
    found: dict[str, Wire] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        wire = getattr(module, "WIRE", None)
        if not isinstance(wire, Wire):
            raise UsageError(f"{module.__name__} is in the wires package but exports no WIRE")
        if wire.name in found:
            raise UsageError(f"two wire modules are named {wire.name!r}")
        found[wire.name] = wire
    return MappingProxyType(found)


WIRES: Mapping[str, Wire] = _discover()
"""Every wire, by name."""


def wire_named(name: str) -> Wire:
    """The wire called ``name``, or a :class:`UsageError` that lists the known ones."""
    try:
        return WIRES[name]
    except KeyError:
        known = ", ".join(sorted(WIRES))
        raise UsageError(f"unknown wire format {name!r}: use one of {known}") from None


def translated_error(exc: BaseException, *, model: str | None = None, max_tokens: int | None = None) -> Exception | None:
    """The typed error for an SDK exception (a provider error, or a refusal by the SDK's own rules), or None."""
    for wire in WIRES.values():
        translated = wire.translate_error(exc, model=model, max_tokens=max_tokens)
        if translated is not None:
            return translated
    return None


def inferred_wire(call: Callable[..., Any]) -> str | None:
    """The wire ``call`` speaks, or None when it is not a method of a known SDK resource."""
    target = _target(call)
    owner = getattr(call, "__self__", None)
    module = type(owner).__module__ if owner is not None else getattr(target, "__module__", None) or ""
    for wire in WIRES.values():
        for prefix, part in wire.sdk_resources:
            if module.startswith(prefix) and part in module:
                return wire.name
    return None


def method_name(call: Callable[..., Any]) -> str:
    """The SDK method's own name (``create``, ``stream``), through partials and response wrappers."""
    return str(getattr(_target(call), "__name__", ""))


def call_arguments(body: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """The engine's body plus the caller's own keywords (``timeout``, ``extra_headers``, ...); the body's keys are the engine's."""
    taken = sorted(set(body) & set(extra))
    if taken:
        raise UsageError(
            f"{', '.join(taken)} {'is' if len(taken) == 1 else 'are'} set by the engine from the plan; "
            "pass only other keywords (timeout, extra_headers, metadata, ...)",
            keys=taken,
        )
    return {**body, **extra}


def _target(call: Callable[..., Any]) -> Any:
    while isinstance(call, functools.partial):
        call = call.func
    return inspect.unwrap(call)


def default_wire(provider: str) -> str:
    """The wire used for a provider when the call says nothing (plain functions, fakes): its first own wire."""
    if provider == "openai":
        return "openai_chat"
    own = [wire.name for wire in WIRES.values() if wire.providers == (provider,)]
    return own[0] if own else "openai_chat"


def choose_wire(call: Callable[..., Any], *, provider: str, model: str, wire: str | None = None) -> str:
    """``wire`` if given, else the one ``call`` speaks, else the provider's default; checked against the model's provider."""
    chosen = wire or inferred_wire(call) or default_wire(provider)
    known = WIRES.get(chosen)
    if known is not None and provider not in known.providers:
        fitting = [name for name, other in WIRES.items() if other.providers == (provider,)]
        hint = "; ".join(f"wire={name!r} ({WIRES[name].sdk_calls})" for name in fitting)
        source = "was asked for" if wire else "is what this SDK method speaks"
        raise WireMismatch(
            f"the {chosen} wire {source}, but {model} is a {provider} model: use {hint or 'a wire of that provider'}",
            wire=chosen,
            provider=provider,
            fitting=fitting,
        )
    return chosen
