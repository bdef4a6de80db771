"""Decode and encode frozen dataclasses from and to JSON values, strictly.

The core must import only the standard library, so payload validation is done
here from the dataclass type hints: ``str``, ``int``, ``float``, ``bool``,
``None``, ``Literal``, unions, ``tuple[X, ...]``, ``dict[str, X]``, ``Any`` (any
JSON value) and nested dataclasses. Unknown keys and missing required keys are
errors; defaults fill absent optional keys.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union, get_args, get_origin

from contextwright.canonical import canonical_json
from contextwright.errors import CanonicalJsonError, EventError


class SchemaViolation(Exception):
    """Raised inside this module; callers translate it into their own typed error."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


Decoder = Callable[[Any, str], Any]


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def decode(cls: type, data: Any, path: str = "payload") -> Any:
    """Build an instance of dataclass ``cls`` from JSON ``data`` or raise SchemaViolation."""
    return _decoder(cls)(data, path)


def encode(value: Any) -> Any:
    """Turn a dataclass instance (recursively) into plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _encoder(type(value))(value)
    return _encode_value(value)


def _encode_value(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_encode_value(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _encode_value(item) for key, item in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _encoder(type(value))(value)
    return value


LEFT_OUT_WHEN_NONE = "contextwright.left_out_when_none"
"""Field metadata: the encoding leaves the field out while it is None (decoding gives None back for it).

For a field added to a payload class after payloads of it were stored: a payload that does
not use it keeps the bytes, and so the hash, it had before the field existed."""


@functools.cache
def left_out_when_none(cls: type) -> frozenset[str]:
    """The fields of dataclass ``cls`` the encoding leaves out while they are None (:data:`LEFT_OUT_WHEN_NONE`)."""
    return frozenset(f.name for f in dataclasses.fields(cls) if f.metadata.get(LEFT_OUT_WHEN_NONE))


@functools.cache
def _encoder(cls: type) -> Callable[[Any], dict[str, Any]]:
    names = tuple(f.name for f in dataclasses.fields(cls))
    optional = left_out_when_none(cls)

    def encode_instance(value: Any) -> dict[str, Any]:
        return {name: _encode_value(getattr(value, name)) for name in names}

    def encode_leaving_out(value: Any) -> dict[str, Any]:
        return {name: _encode_value(item) for name in names if (item := getattr(value, name)) is not None or name not in optional}

    return encode_leaving_out if optional else encode_instance


@functools.cache
def decoding_keeps_json(tp: Any) -> bool:
    """True when decoding the encoding of a valid ``tp`` value gives back the same JSON.

    Only a ``float`` field changes it (an int there is stored as a float), and a field
    outside ``__init__`` (rebuilt by the class, not read from the data).
    """
    if tp is float:
        return False
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = _hints(tp)
        return all(f.init and decoding_keeps_json(hints[f.name]) for f in dataclasses.fields(tp))
    return all(decoding_keeps_json(arg) for arg in get_args(tp) if not isinstance(arg, (str, int, bool)) and arg is not None)


def field_shape(tp: Any) -> tuple[str, Any]:
    """How a payload field type is read, as (kind, detail).

    Kinds: ``any``; ``dataclass`` (the class); ``literal`` (the allowed values); ``union``
    (the options); ``tuple`` (the item type of ``tuple[X, ...]``); ``mapping`` (the value
    type); ``none``; ``scalar`` (``str``, ``int``, ``float`` or ``bool``). Raises TypeError
    for a type payloads cannot hold.
    """
    if tp is Any:
        return "any", None
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return "dataclass", tp
    origin = get_origin(tp)
    if origin is Literal:
        return "literal", get_args(tp)
    if origin in (Union, types.UnionType):
        return "union", get_args(tp)
    if origin is tuple:
        args = get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return "tuple", args[0]
        raise TypeError(f"fixed-length tuples are not supported in payloads: {tp!r}")
    if origin in (dict, Mapping, typing.Mapping) or tp is dict:
        _, value_type = get_args(tp) or (str, Any)
        return "mapping", value_type
    if tp is type(None) or tp is None:
        return "none", None
    if tp in _SCALARS:
        return "scalar", tp
    raise TypeError(f"unsupported payload field type {tp!r}")


# Decoders are compiled once per type: payload validation sits on the append and
# replay paths, so walking type hints for every event would dominate both.
@functools.cache
def _decoder(tp: Any) -> Decoder:
    kind, detail = field_shape(tp)
    if kind == "any":
        return _decode_any
    if kind == "dataclass":
        return _dataclass_decoder(detail)
    if kind == "literal":
        return _literal_decoder(detail)
    if kind == "union":
        return _union_decoder(tuple(_decoder(option) for option in detail))
    if kind == "tuple":
        return _tuple_decoder(_decoder(detail))
    if kind == "mapping":
        return _mapping_decoder(_decoder(detail))
    if kind == "none":
        return _decode_none
    return _SCALARS[detail]


_JSON_ATOMS = frozenset({str, int, bool, type(None)})


def _decode_any(data: Any, path: str) -> Any:
    if type(data) in _JSON_ATOMS:
        return data  # always has a canonical form, and nothing to freeze
    try:
        canonical_json(data)
    except CanonicalJsonError as exc:
        raise SchemaViolation(path, exc.message) from None
    return _freeze(data)


def _literal_decoder(allowed: tuple[Any, ...]) -> Decoder:
    def decode_literal(data: Any, path: str) -> Any:
        if data not in allowed or type(data) is not type(allowed[0]):
            raise SchemaViolation(path, f"expected one of {list(allowed)}, got {data!r}")
        return data

    return decode_literal


def _union_decoder(options: tuple[Decoder, ...]) -> Decoder:
    optional = _decode_none in options

    def decode_union(data: Any, path: str) -> Any:
        # Every option that accepts null decodes it to None: answer without trying (and failing) the others first.
        if data is None and optional:
            return None
        problems = []
        for option in options:
            try:
                return option(data, path)
            except SchemaViolation as exc:
                problems.append(exc.problem)
        raise SchemaViolation(path, " or ".join(dict.fromkeys(problems)))

    return decode_union


def _tuple_decoder(item: Decoder) -> Decoder:
    def decode_tuple(data: Any, path: str) -> Any:
        if not isinstance(data, (list, tuple)):
            raise SchemaViolation(path, f"expected a list, got {_kind(data)}")
        return tuple(item(value, f"{path}[{i}]") for i, value in enumerate(data))

    return decode_tuple


def _mapping_decoder(value_decoder: Decoder) -> Decoder:
    def decode_mapping(data: Any, path: str) -> Any:
        if type(data) is not dict and not isinstance(data, Mapping):  # the ABC check is slow; most data are dicts
            raise SchemaViolation(path, f"expected an object, got {_kind(data)}")
        if not all(isinstance(key, str) for key in data):
            raise SchemaViolation(path, "object keys must be strings")
        out = {}
        for key in sorted(data):
            out[key] = value_decoder(data[key], f"{path}.{key}")
        return types.MappingProxyType(out)

    return decode_mapping


def _decode_none(data: Any, path: str) -> None:
    if data is not None:
        raise SchemaViolation(path, f"expected null, got {_kind(data)}")
    return None


def _decode_bool(data: Any, path: str) -> bool:
    if not isinstance(data, bool):
        raise SchemaViolation(path, f"expected a boolean, got {_kind(data)}")
    return data


def _decode_int(data: Any, path: str) -> int:
    if not isinstance(data, int) or isinstance(data, bool):
        raise SchemaViolation(path, f"expected an integer, got {_kind(data)}")
    return data


def _decode_float(data: Any, path: str) -> float:
    if isinstance(data, bool) or not isinstance(data, (int, float)):
        raise SchemaViolation(path, f"expected a number, got {_kind(data)}")
    if data != data or data in (float("inf"), float("-inf")):
        raise SchemaViolation(path, "NaN and Infinity are not allowed")
    return float(data)


def _decode_str(data: Any, path: str) -> str:
    if not isinstance(data, str):
        raise SchemaViolation(path, f"expected a string, got {_kind(data)}")
    return data


_SCALARS: dict[Any, Decoder] = {bool: _decode_bool, int: _decode_int, float: _decode_float, str: _decode_str}


def _dataclass_decoder(cls: type) -> Decoder:
    hints = _hints(cls)
    fields = [f for f in dataclasses.fields(cls) if f.init]
    known = frozenset(f.name for f in fields)
    specs = [
        (
            f.name,
            _decoder(hints[f.name]),
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
        )
        for f in fields
    ]

    def decode_dataclass(data: Any, path: str) -> Any:
        if isinstance(data, cls):
            data = encode(data)
        if type(data) is not dict and not isinstance(data, Mapping):
            raise SchemaViolation(path, f"expected an object, got {_kind(data)}")
        if not known.issuperset(data):
            unknown = sorted(map(str, set(data) - known))
            raise SchemaViolation(path, f"unknown field(s) {', '.join(unknown)}")
        kwargs = {}
        for name, field_decoder, required in specs:
            if name in data:
                kwargs[name] = field_decoder(data[name], f"{path}.{name}")
            elif required:
                raise SchemaViolation(path, f"missing required field {name!r}")
        try:
            return cls(**kwargs)
        except (TypeError, ValueError) as exc:  # __post_init__ checks report here
            raise SchemaViolation(path, str(exc)) from None
        except EventError as exc:  # a __post_init__ that raises a typed error of its own
            raise SchemaViolation(path, str(exc.fields.get("problem", exc.message))) from None

    return decode_dataclass


def _freeze(data: Any) -> Any:
    # Any-typed values are stored read-only so a frozen payload cannot be mutated
    # through a nested dict or list after it was hashed.
    if isinstance(data, Mapping):
        return types.MappingProxyType({k: _freeze(v) for k, v in sorted(data.items())})
    if isinstance(data, (list, tuple)):
        return tuple(_freeze(item) for item in data)
    return data


def _kind(data: Any) -> str:
    if data is None:
        return "null"
    if isinstance(data, bool):
        return "a boolean"
    if isinstance(data, (int, float)):
        return "a number"
    if isinstance(data, str):
        return "a string"
    if isinstance(data, Mapping):
        return "an object"
    if isinstance(data, (list, tuple)):
        return "a list"
    return type(data).__name__
