"""Decoding of valid payloads without the bookkeeping that only an error needs.

The strict decoder of :mod:`contextwright.events._schema` carries the path of every
value (``payload.tool_calls[2].arguments.path``) so that an error can say where it is;
building that text for every field of every event is most of the cost of reading a
long log back. :func:`decode` here gives the same result for every payload it accepts,
and answers :class:`Unproven` for anything else (an error, or a value it does not
handle cheaply); the caller then runs the strict decoder, which gives the result or
the typed error with its path.

Whatever this module raises (Unproven, or anything else: a deep stack, a missing
field, a ``__post_init__`` check) only means "ask the strict decoder", which then
raises what it raises. So the one thing to keep true here is that a value returned
is the value the strict decoder returns.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Callable
from typing import Any

from contextwright.events import _schema

# Nested values in an ``Any`` field: deeper ones, and ints beyond 64 bits (which the
# canonical encoder may refuse past its digit limit), go the strict way.
_MAX_DEPTH = 100
_INT_BOUND = 1 << 64
_INF = float("inf")


class Unproven(Exception):
    """Only the strict decoder may answer: the payload may be wrong, or right in a way this module does not check."""


FastDecoder = Callable[[Any], Any]


def decode(cls: type, data: Any) -> Any:
    """The instance the strict decoder would build from ``data``; any exception means "ask the strict decoder"."""
    return _fast(cls)(data)


@functools.cache
def _fast(tp: Any) -> FastDecoder:
    kind, detail = _schema.field_shape(tp)
    if kind == "any":
        return _fast_any
    if kind == "dataclass":
        return _dataclass_decoder(detail)
    if kind == "literal":
        return _literal_decoder(detail)
    if kind == "union":
        return _union_decoder(detail)
    if kind == "tuple":
        return _tuple_decoder(detail)
    if kind == "mapping":
        return _mapping_decoder(detail)
    if kind == "none":
        return _fast_none
    return _SCALARS[detail]


@functools.cache
def _passthrough(tp: Any) -> frozenset[type]:
    """Exact types whose values the strict decoder of ``tp`` returns unchanged (and never refuses)."""
    if tp in (str, int, bool):
        return frozenset({tp})
    kind, detail = _schema.field_shape(tp)
    if kind == "none":
        return frozenset({type(None)})
    if kind == "union" and all(option in (str, int, bool, type(None), None) for option in detail):
        # These options accept disjoint exact types, so their order does not matter.
        return frozenset().union(*(_passthrough(option) for option in detail))
    return frozenset()


def _exact(tp: type) -> FastDecoder:
    """A decoder for values of exactly ``tp``, which the strict decoder returns unchanged."""

    def decode_exact(data: Any) -> Any:
        if type(data) is not tp:
            raise Unproven  # a subclass (bool for int) or another type: the strict decoder decides
        return data

    return decode_exact


_fast_none = _exact(type(None))


def _fast_float(data: Any) -> float:
    if type(data) is not float or not -_INF < data < _INF:
        raise Unproven  # an int is converted by the strict decoder, NaN and infinities refused
    return data


_SCALARS: dict[Any, FastDecoder] = {str: _exact(str), int: _exact(int), bool: _exact(bool), float: _fast_float}


def _literal_decoder(allowed: tuple[Any, ...]) -> FastDecoder:
    kind = type(allowed[0])

    def decode_literal(data: Any) -> Any:
        if type(data) is not kind or data not in allowed:
            raise Unproven
        return data

    return decode_literal


def _union_decoder(options: tuple[Any, ...]) -> FastDecoder:
    optional = type(None) in options or None in options
    compiled = [(_fast(option), _schema._decoder(option)) for option in options]

    def decode_union(data: Any) -> Any:
        if data is None and optional:
            return None
        for fast_option, strict_option in compiled:
            try:
                return fast_option(data)
            except Exception:  # see the module docstring: only the strict decoder's answer counts
                pass
            # The strict decoder takes the first option that accepts the value: if this one
            # does (in a way the fast one does not check), the later ones must not answer.
            try:
                return strict_option(data, "payload")
            except _schema.SchemaViolation:
                continue
        raise Unproven

    return decode_union


def _tuple_decoder(item_type: Any) -> FastDecoder:
    item = _fast(item_type)
    same = _passthrough(item_type)

    def decode_tuple(data: Any) -> Any:
        kind = type(data)
        if kind is not list and kind is not tuple:
            raise Unproven
        return tuple([value if type(value) in same else item(value) for value in data])

    return decode_tuple


def _mapping_decoder(value_type: Any) -> FastDecoder:
    item = _fast(value_type)
    same = _passthrough(value_type)

    def decode_mapping(data: Any) -> Any:
        if type(data) is not dict:
            raise Unproven
        for key in data:  # every key before any value, as the strict decoder checks them
            if type(key) is not str:
                raise Unproven
        out = {}
        for key in sorted(data):
            value = data[key]
            out[key] = value if type(value) in same else item(value)
        return types.MappingProxyType(out)

    return decode_mapping


def _fast_any(data: Any) -> Any:
    kind = type(data)
    if kind is str or kind is int or kind is bool or data is None:
        return data  # the strict decoder returns a lone atom as it is, whatever its size
    return _frozen_json(data, 0)


def _frozen_json(value: Any, depth: int) -> Any:
    """The read-only copy of a value that surely has a canonical form, or Unproven."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is int:
        if -_INT_BOUND < value < _INT_BOUND:
            return value
        raise Unproven
    if kind is float:
        if -_INF < value < _INF:
            return value
        raise Unproven
    if depth >= _MAX_DEPTH:
        raise Unproven
    if kind is dict:
        for key in value:
            if type(key) is not str:
                raise Unproven
        return types.MappingProxyType({key: _frozen_json(value[key], depth + 1) for key in sorted(value)})
    if kind is list or kind is tuple:
        return tuple([_frozen_json(item, depth + 1) for item in value])
    raise Unproven


def _dataclass_decoder(cls: type) -> FastDecoder:
    hints = _schema._hints(cls)
    fields = [f for f in dataclasses.fields(cls) if f.init]
    setters = _slot_setters(cls, fields)
    if setters is None:
        return _keyword_decoder(cls, hints, fields)
    specs = {f.name: (_fast(hints[f.name]), _passthrough(hints[f.name]), setters[f.name]) for f in fields}
    # What __init__ does for an absent field: its default, a fresh value from its factory, or a TypeError.
    absent = [(f.name, setters[f.name], f.default, f.default_factory) for f in fields]
    post_init = getattr(cls, "__post_init__", None)
    new = object.__new__

    def decode_dataclass(data: Any) -> Any:
        if type(data) is not dict:
            raise Unproven  # an instance of cls, or another mapping: the strict decoder converts it
        built: Any = new(cls)
        for name, value in data.items():
            field_decoder, same, set_slot = specs[name]  # an unknown field raises KeyError: the strict decoder names it
            set_slot(built, value if type(value) in same else field_decoder(value))
        if len(data) < len(absent):
            for name, set_slot, default, factory in absent:
                if name in data:
                    continue
                if default is not dataclasses.MISSING:
                    set_slot(built, default)
                elif factory is not dataclasses.MISSING:
                    set_slot(built, factory())
                else:
                    raise Unproven  # a missing required field
        if post_init is not None:
            post_init(built)
        return built

    return decode_dataclass


def _slot_setters(cls: type, fields: list[dataclasses.Field[Any]]) -> dict[str, Callable[[Any, Any], None]] | None:
    """The slot setters of a frozen dataclass whose generated ``__init__`` only sets its fields and calls ``__post_init__``.

    That ``__init__`` sets each field through ``object.__setattr__``, which for a slot is
    the slot's setter; setting them directly skips the keyword call. None when the class
    has anything else (not frozen, InitVars, ClassVars, non-init fields, its own __init__
    or __new__, no slots).
    """
    params = getattr(cls, "__dataclass_params__", None)
    code = getattr(cls.__dict__.get("__init__"), "__code__", None)
    if (
        params is None
        or not params.init
        or not params.frozen  # a plain __init__ assigns through the class's own __setattr__
        or any("__new__" in vars(base) for base in cls.__mro__[:-1])
        or len(fields) != len(getattr(cls, "__dataclass_fields__", {}))
        or code is None
        or code.co_filename != "<string>"  # written in the class body, not generated
    ):
        return None
    slots: dict[str, Any] = {f.name: cls.__dict__.get(f.name) for f in fields}
    if not all(type(slot) is types.MemberDescriptorType for slot in slots.values()):
        return None
    return {name: slot.__set__ for name, slot in slots.items()}


def _keyword_decoder(cls: type, hints: dict[str, Any], fields: list[dataclasses.Field[Any]]) -> FastDecoder:
    specs = {f.name: (_fast(hints[f.name]), _passthrough(hints[f.name])) for f in fields}

    def decode_dataclass(data: Any) -> Any:
        if type(data) is not dict:
            raise Unproven
        kwargs = {}
        for name, value in data.items():
            field_decoder, same = specs[name]
            kwargs[name] = value if type(value) in same else field_decoder(value)
        return cls(**kwargs)

    return decode_dataclass
