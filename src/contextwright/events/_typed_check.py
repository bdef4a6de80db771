"""A fast, exact check of typed payloads, compiled once per payload class.

A payload built in Python by our own constructors is a frozen dataclass whose
``__post_init__`` already ran; what is left to verify is that each field holds what
its type hint says. :func:`check` does that in one pass and returns what the strict
path (limits walk, encode, decode) would: the plain JSON values and the typed payload
(the same instance when nothing needed freezing).

It never refuses anything itself. Whatever it cannot prove equal to the strict path's
answer in one cheap pass (a wrong type, a subclass, an int in a float field, a lone
surrogate, a payload deeper or larger than a small bound) makes it answer ``None``,
and the caller takes the strict path, which raises the typed error naming the problem.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
from collections.abc import Callable
from typing import Any

from contextwright.canonical import has_surrogate
from contextwright.events import _schema

# Far below the limits of events.limits, so a payload checked here can never break them
# (the byte limit is checked on the encoded bytes by the caller).
_MAX_DEPTH = 32
_MAX_VALUES = 100_000


class _Unproven(Exception):
    """The value needs the strict path: it may be wrong, or right in a way only decoding shows."""


# A checker takes (value, depth, budget) and returns (plain JSON value, typed value).
# ``budget`` is a one-item list of values still allowed, shared by the whole payload.
Checker = Callable[[Any, int, list[int]], tuple[Any, Any]]


def check(payload: Any) -> tuple[dict[str, Any], Any] | None:
    """(plain JSON values, typed payload) of a valid typed ``payload``, or None when only the strict path may answer."""
    try:
        cls: Any = type(payload)
        plain, typed = _checker(cls)(payload, 0, [_MAX_VALUES])
    except Exception:  # anything unexpected (a key type sorting refuses, a deep stack) goes the strict way
        return None
    return plain, typed


@functools.cache
def _checker(tp: Any) -> Checker:
    try:
        kind, detail = _schema.field_shape(tp)
    except TypeError:
        return _unproven  # the strict path reports it
    if kind == "any":
        return _check_any
    if kind == "dataclass":
        return _dataclass_checker(detail)
    if kind == "literal":
        return _literal_checker(detail)
    if kind == "union":
        return _union_checker(detail)
    if kind == "tuple":
        return _tuple_checker(_checker(detail))
    if kind == "mapping":
        return _mapping_checker(_checker(detail))
    if kind == "none":
        return _check_none
    return _SCALARS[detail]


def _unproven(value: Any, depth: int, budget: list[int]) -> tuple[Any, Any]:
    raise _Unproven


def _check_str(value: Any, depth: int, budget: list[int]) -> tuple[Any, Any]:
    if type(value) is not str or (not value.isascii() and has_surrogate(value)):
        raise _Unproven
    return value, value


def _check_int(value: Any, depth: int, budget: list[int]) -> tuple[Any, Any]:
    if type(value) is not int:
        raise _Unproven
    return value, value


def _check_bool(value: Any, depth: int, budget: list[int]) -> tuple[Any, Any]:
    if type(value) is not bool:
        raise _Unproven
    return value, value


def _check_float(value: Any, depth: int, budget: list[int]) -> tuple[Any, Any]:
    # An int here is stored as a float: the strict path converts it.
    if type(value) is not float or not math.isfinite(value):
        raise _Unproven
    return value, value


def _check_none(value: Any, depth: int, budget: list[int]) -> tuple[Any, Any]:
    if value is not None:
        raise _Unproven
    return None, None


_SCALARS: dict[Any, Checker] = {str: _check_str, int: _check_int, bool: _check_bool, float: _check_float}


def _literal_checker(allowed: tuple[Any, ...]) -> Checker:
    kind = type(allowed[0])

    def check_literal(value: Any, depth: int, budget: list[int]) -> tuple[Any, Any]:
        if type(value) is not kind or value not in allowed:
            raise _Unproven
        return value, value

    return check_literal


def _union_checker(options: tuple[Any, ...]) -> Checker:
    compiled = [(_checker(option), _schema._decoder(option)) for option in options]

    def check_union(value: Any, depth: int, budget: list[int]) -> tuple[Any, Any]:
        if value is None and type(None) in options:
            return None, None
        for check_option, decode_option in compiled:
            try:
                return check_option(value, depth, budget)
            except _Unproven:
                pass
            # Decoding takes the first option that accepts the value: if this one would
            # (after a conversion), the later options must not answer instead.
            try:
                decode_option(_schema.encode(value), "payload")
            except (_schema.SchemaViolation, RecursionError):
                continue
            raise _Unproven
        raise _Unproven

    return check_union


def _tuple_checker(item: Checker) -> Checker:
    def check_tuple(value: Any, depth: int, budget: list[int]) -> tuple[Any, Any]:
        if type(value) is not tuple:
            raise _Unproven  # a list is converted by the strict path
        budget[0] -= len(value)
        if depth >= _MAX_DEPTH or budget[0] < 0:
            raise _Unproven
        plain = []
        typed = []
        same = True
        for element in value:
            p, t = item(element, depth + 1, budget)
            plain.append(p)
            typed.append(t)
            same = same and t is element
        return plain, value if same else tuple(typed)

    return check_tuple


def _mapping_checker(item: Checker) -> Checker:
    def check_mapping(value: Any, depth: int, budget: list[int]) -> tuple[Any, Any]:
        kind = type(value)
        if kind is not dict and kind is not types.MappingProxyType:
            raise _Unproven
        budget[0] -= len(value)
        if depth >= _MAX_DEPTH or budget[0] < 0:
            raise _Unproven
        plain = {}
        typed = {}
        for key in sorted(value):  # raises TypeError on mixed key types; type(key) below refuses the rest
            if type(key) is not str or (not key.isascii() and has_surrogate(key)):
                raise _Unproven
            plain[key], typed[key] = item(value[key], depth + 1, budget)
        # Always a new proxy, as decoding makes: one passed in may wrap a dict its caller still changes.
        return plain, types.MappingProxyType(typed)

    return check_mapping


def _check_any(value: Any, depth: int, budget: list[int]) -> tuple[Any, Any]:
    kind = type(value)
    if kind is str:
        return _check_str(value, depth, budget)
    if kind is int or kind is bool or value is None:
        return value, value
    if kind is float:
        return _check_float(value, depth, budget)
    if kind is dict or kind is types.MappingProxyType:
        return _any_mapping(value, depth, budget)
    if kind is list or kind is tuple:
        budget[0] -= len(value)
        if depth >= _MAX_DEPTH or budget[0] < 0:
            raise _Unproven
        pairs = [_check_any(element, depth + 1, budget) for element in value]
        typed = tuple(t for _, t in pairs)
        same = kind is tuple and all(t is element for t, element in zip(typed, value, strict=True))
        return [p for p, _ in pairs], value if same else typed
    raise _Unproven


_any_mapping = _mapping_checker(_check_any)


def _dataclass_checker(cls: type) -> Checker:
    fields = dataclasses.fields(cls)
    if not all(f.init for f in fields):
        return _unproven  # rebuilt by the class, not read from the data: only decoding knows
    hints = _schema._hints(cls)
    specs = tuple((f.name, _checker(hints[f.name])) for f in fields)
    budget_cost = len(specs)
    build = _builder(cls, [f.name for f in fields])
    optional = _schema.left_out_when_none(cls)  # left out of the plain values while None, as the encoding does

    def check_dataclass(value: Any, depth: int, budget: list[int]) -> tuple[Any, Any]:
        if type(value) is not cls:
            raise _Unproven
        budget[0] -= budget_cost
        if depth >= _MAX_DEPTH or budget[0] < 0:
            raise _Unproven
        plain = {}
        typed = {}
        same = True
        for name, field_checker in specs:
            current = getattr(value, name)
            plain[name], typed[name] = field_checker(current, depth + 1, budget)
            same = same and typed[name] is current
        if optional:
            for name in optional:
                if plain[name] is None:
                    del plain[name]
        if same:
            return plain, value
        try:  # what decoding's construction does, so __post_init__ sees the frozen values
            return plain, build(typed)
        except Exception:  # whatever it is, the strict path reports it with its typed error
            raise _Unproven from None

    return check_dataclass


def _builder(cls: type, names: list[str]) -> Callable[[dict[str, Any]], Any]:
    """``cls(**values)`` for a frozen dataclass whose fields are all ``init`` fields, at about half the cost.

    The generated ``__init__`` of a frozen dataclass sets each field through
    ``object.__setattr__`` and takes keywords; this sets the slots (or the instance
    dict) directly and then runs ``__post_init__``, the same checks on the same values.
    """
    post_init = getattr(cls, "__post_init__", None)
    slots: list[Any] = [cls.__dict__.get(name) for name in names]
    if not all(type(slot) is types.MemberDescriptorType for slot in slots):
        return lambda values: cls(**values)
    setters = [(name, slot.__set__) for name, slot in zip(names, slots, strict=True)]
    new = object.__new__

    def build(values: dict[str, Any]) -> Any:
        built: Any = new(cls)
        for name, set_slot in setters:
            set_slot(built, values[name])
        if post_init is not None:
            post_init(built)
        return built

    return build
