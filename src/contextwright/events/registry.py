"""The one place where event types are registered, encoded and decoded.

A payload type is a frozen dataclass decorated with :func:`event_type`. The
registry maps the type name (``"message.user"``) to the class, validates raw
payloads strictly, and turns payloads into canonical JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from contextwright.canonical import canonical_bytes, canonical_json, plain_canonical_bytes, sha256_tagged
from contextwright.errors import MalformedPayload, UnknownEventType, UsageError
from contextwright.events import _fast_decode, _schema, _typed_check
from contextwright.events.limits import MAX_PAYLOAD_BYTES, check_payload

P = TypeVar("P")

_REGISTRY: dict[str, type] = {}


def event_type(name: str) -> Callable[[type[P]], type[P]]:
    """Class decorator: register a frozen dataclass as the payload of event type ``name``."""

    def register(cls: type[P]) -> type[P]:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise UsageError(f"event type {name!r} is already registered to {_REGISTRY[name].__name__}")
        params = getattr(cls, "__dataclass_params__", None)
        if params is None or not params.frozen:
            raise UsageError(f"{cls.__name__}: event payloads must be frozen dataclasses")
        cls.TYPE = name  # type: ignore[attr-defined]  # the decorator stamps the registered name on the class
        _REGISTRY[name] = cls
        return cls

    return register


def known_types() -> tuple[str, ...]:
    """All registered event type names, sorted."""
    return tuple(sorted(_REGISTRY))


def payload_class(name: str) -> type:
    """The payload class for ``name``; :class:`UnknownEventType` if there is none."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownEventType(name, known=known_types()) from None


def type_of(payload: Any) -> str:
    """The registered type name of a payload instance."""
    name = getattr(type(payload), "TYPE", None)
    if not isinstance(name, str) or _REGISTRY.get(name) is not type(payload):
        raise UsageError(f"{type(payload).__name__} is not a registered event payload")
    return name


def decode_payload(name: str, data: Any) -> Any:
    """Validate raw JSON ``data`` as the payload of ``name`` and return the typed payload.

    The limits of :mod:`contextwright.events.limits` are checked first, without
    recursion, so outsiders' data cannot exhaust the stack here."""
    payload_class(name)
    check_payload(name, data)
    return decode_stored_payload(name, data)


def decode_stored_payload(name: str, data: Any) -> Any:
    """Decode a payload that already passed the limits on its way into a log (the read path)."""
    cls = payload_class(name)
    try:
        return _fast_decode.decode(cls, data)
    except Exception:  # whatever the fast decoder cannot vouch for, the strict one decides, with the path of any error
        pass
    try:
        return _schema.decode(cls, data)
    except _schema.SchemaViolation as exc:
        raise MalformedPayload(name, exc.problem, path=exc.path) from None


def encode_payload(payload: Any) -> dict[str, Any]:
    """Plain JSON values of a typed payload."""
    plain: dict[str, Any] = _schema.encode(payload)
    return plain


def payload_json(payload: Any) -> str:
    """Canonical JSON text of a typed payload."""
    return canonical_json(encode_payload(payload))


def payload_digest(text: str) -> str:
    """Tagged SHA-256 of a payload's canonical JSON text."""
    return sha256_tagged(text)


def coerce_payload(name: str | None, payload: Any) -> tuple[str, Any]:
    """Accept a typed payload, or a type name with a raw mapping, and return (name, typed).

    This is the door: the limits of :mod:`contextwright.events.limits` are checked first,
    without recursion, so no payload can exhaust the stack on its way in."""
    name, typed, _ = coerce_and_encode(name, payload)
    return name, typed


def coerce_and_encode(name: str | None, payload: Any) -> tuple[str, Any, dict[str, Any] | None]:
    """:func:`coerce_payload`, plus the typed payload's plain JSON values when validating produced them.

    The third item equals ``encode_payload(typed)`` as JSON, or is None (for a raw mapping,
    whose defaults and coercions only the typed payload holds), so a caller encodes once.
    """
    if isinstance(payload, Mapping) or name is not None:
        if name is None:
            raise UsageError("a raw payload mapping needs its event type name")
        if not isinstance(name, str):
            raise UsageError(f"an event type name must be a string, not {type(name).__name__}")
        if isinstance(payload, Mapping):
            return name, decode_payload(name, payload), None
        if type_of(payload) != name:
            raise MalformedPayload(name, f"got a {type(payload).__name__} payload")
    # Re-validate typed payloads too: a dataclass built in Python is not type-checked.
    name = type_of(payload)
    check_payload(name, payload)
    plain = encode_payload(payload)
    typed = decode_stored_payload(name, plain)
    return name, typed, plain if _schema.decoding_keeps_json(payload_class(name)) else None


def validate_and_encode(name: str | None, payload: Any) -> tuple[str, Any, bytes]:
    """:func:`coerce_payload`, plus the typed payload's canonical JSON bytes.

    A typed payload whose fields hold what their type hints say is checked in one pass
    compiled for its class; anything else (raw mappings, and whatever that pass cannot
    prove) takes the strict path of :func:`coerce_and_encode`, with its typed errors.
    """
    # A registered payload class is a dataclass, never a Mapping, so the registry answers
    # before any ABC check (which costs more than the lookup).
    registered = getattr(type(payload), "TYPE", None)
    if (name is None or name == registered) and isinstance(registered, str) and _REGISTRY.get(registered) is type(payload):
        checked = _typed_check.check(payload)
        if checked is not None:
            data = plain_canonical_bytes(checked[0])
            if len(data) <= MAX_PAYLOAD_BYTES:  # over it, the strict path says which limit
                return registered, checked[1], data
    name, typed, plain = coerce_and_encode(name, payload)
    return name, typed, canonical_bytes(encode_payload(typed) if plain is None else plain)
