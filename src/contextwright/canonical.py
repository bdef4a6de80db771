"""The byte contract: canonical JSON and tagged hashes.

Everything that is hashed or compared byte for byte (event payloads, the prompt
prefix, rendered requests) goes through :func:`canonical_json`. The rules are:

* object keys sorted by code point, at every depth;
* no insignificant whitespace (``","`` and ``":"`` separators);
* UTF-8 output, non-ASCII characters written as themselves, not ``\\u`` escapes;
* ``NaN``, ``Infinity`` and ``-Infinity`` rejected (they are not JSON);
* only JSON types: ``dict`` with ``str`` keys, ``list``/``tuple``, ``str``, ``int``,
  ``float``, ``bool`` and ``None``.

Hashes are tagged with their algorithm (``sha256:<64 hex digits>``) so that a
stored hash says how to recompute it.

When ``orjson`` is installed (the ``fast`` extra) it writes the bytes; the standard
library writes them otherwise. Both give the same bytes for every value: a value the
fast encoder would write differently (small floats in exponent form, ints beyond 64
bits, subclasses of the JSON types, NaN, tuples) or accept wrongly (UUIDs, enums) is
handed to the pure-Python path, which is the reference. The fast encoder writes NaN and
the infinities as ``null``, so every output holding ``null`` is read back before it is
trusted, on every path: a non-finite number is refused, never stored as ``null``.

A lone surrogate (which ``json`` decodes from ``"\\ud800"``) has no UTF-8 form: the
functions that return bytes (and the hashes) refuse it with the same typed error.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from contextwright.errors import CanonicalJsonError

HASH_ALGORITHM = "sha256"
HASH_PREFIX = f"{HASH_ALGORITHM}:"

_encoder = json.JSONEncoder(
    sort_keys=True,
    separators=(",", ":"),
    ensure_ascii=False,
    allow_nan=False,
)


def canonical_json(value: Any) -> str:
    """Return the canonical JSON text of ``value``.

    Raises :class:`~contextwright.errors.CanonicalJsonError` for values that have
    no canonical form (NaN, non-string keys, sets, bytes, arbitrary objects).
    """
    fast = _fast_bytes(value)
    if fast is not None:
        return fast.decode("utf-8")
    return _pure_json(value)


def canonical_str(text: str) -> str:
    """:func:`canonical_json` of a string, without the general encoder's type checks.

    The reference encoder writes a string with ``json.encoder.encode_basestring`` (its
    ``ensure_ascii=False`` form), so this is the same text for every string.
    """
    return _encode_string(text)


_encode_string = json.encoder.encode_basestring


def canonical_bytes(value: Any) -> bytes:
    """Return :func:`canonical_json` encoded as UTF-8."""
    fast = _fast_bytes(value)
    if fast is not None:
        return fast
    return _utf8(_pure_json(value), value)


def plain_canonical_bytes(value: Any) -> bytes:
    """:func:`canonical_bytes` of a value known to hold only exact JSON types.

    That is: ``dict`` with ``str`` keys, ``list``, ``str``, ``int``, finite ``float``,
    ``bool`` and ``None``, no subclass, no tuple. Such a value is one the fast encoder
    cannot change, so its output is read back only when it holds ``null`` (where a
    non-finite float would have gone): NaN and the infinities are refused here too.
    """
    fast = _fast_bytes(value, read_back=False)
    if fast is not None:
        return fast
    return _utf8(_pure_json(value), value)


def has_surrogate(text: str) -> bool:
    """True when ``text`` holds a lone surrogate: it has no UTF-8 form, so no canonical bytes."""
    # UTF-8 encoding refuses exactly the surrogate code points, and runs far faster than a regex scan.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def fast_parser_accepts(data: bytes) -> bool:
    """True when the fast parser (``orjson``, the ``fast`` extra) reads ``data`` as JSON.

    It refuses non-finite numbers and lone surrogates itself, so an accepted body holds
    neither. False when it refuses ``data``, and always without the extra.
    """
    if _orjson is None:
        return False
    try:
        _orjson.loads(data)
    except _orjson.JSONDecodeError:
        return False
    return True


def fast_encoder_available() -> bool:
    """True when the optional fast encoder (``orjson``, the ``fast`` extra) is installed."""
    return _orjson is not None


def _load_orjson() -> ModuleType | None:
    # An optional accelerator, never a requirement: the core stays importable with the
    # standard library alone, and without it every value takes the pure-Python path.
    try:
        return importlib.import_module("orjson")
    except ImportError:
        return None


_orjson = _load_orjson()
# Subclasses, dataclasses and datetimes make orjson raise instead of converting them,
# so they reach the pure-Python path, which accepts or refuses them as the contract says.
_ORJSON_OPTIONS = (
    0
    if _orjson is None
    else _orjson.OPT_SORT_KEYS
    | _orjson.OPT_PASSTHROUGH_SUBCLASS
    | _orjson.OPT_PASSTHROUGH_DATACLASS
    | _orjson.OPT_PASSTHROUGH_DATETIME
)
# Floats below 1e-4 are where the two encoders disagree: Python writes 1e-05 and 1.5e-07,
# orjson 0.00001 and 1.5e-7. Output holding either shape (even inside a string) goes the slow way.
_EXPONENT_MINUS = re.compile(rb"e-(?<=[0-9]e-)")
_TINY_POSITIONAL = b"0.0000"


def _fast_bytes(value: Any, *, read_back: bool = True) -> bytes | None:
    """The canonical bytes from orjson, or None when only the pure-Python path may answer."""
    if _orjson is None:
        return None
    try:
        out: bytes = _orjson.dumps(value, option=_ORJSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError: a type, key, big int, surrogate or depth it will not write
        return None
    if _TINY_POSITIONAL in out or _EXPONENT_MINUS.search(out) is not None:
        return None
    # orjson writes NaN and Infinity as null, UUIDs as strings and enums as their values;
    # reading the bytes back finds every such change (and tuples, which read back as lists).
    # A value of exact JSON types can only have changed where a non-finite float became null.
    if (read_back or _NULL in out) and _orjson.loads(out) != value:
        return None
    return out


_NULL = b"null"


def _pure_json(value: Any) -> str:
    """The reference encoder: the standard library, after checking every value's type."""
    if not _is_plain(value):
        _check(value, "$")  # raises, naming where the offending value sits
    try:
        return _encoder.encode(value)
    except ValueError as exc:  # allow_nan=False reports NaN/Infinity this way
        raise CanonicalJsonError(str(exc), path="$") from exc


def _utf8(text: str, value: Any) -> bytes:
    """``text`` (the canonical JSON of ``value``) as UTF-8, or the typed error naming the lone surrogate in it."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        raise CanonicalJsonError(
            f"lone surrogate U+{ord(bad):04X} is not valid Unicode text", path=_surrogate_path(value, "$") or "$"
        ) from None


def _surrogate_path(value: Any, path: str) -> str | None:
    """Where in ``value`` a string (or key) holds a lone surrogate (only walked once one was found)."""
    if isinstance(value, str):
        return path if not value.isascii() and _SURROGATE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and _SURROGATE.search(key):
                return path
            found = _surrogate_path(item, f"{path}.{key}")
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = _surrogate_path(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")


def sha256_tagged(data: bytes | str) -> str:
    """Return ``sha256:<hex>`` of ``data`` (text is hashed as UTF-8)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return HASH_PREFIX + hashlib.sha256(data).hexdigest()


def content_hash(value: Any) -> str:
    """Return the tagged SHA-256 of the canonical JSON of ``value``."""
    return sha256_tagged(canonical_bytes(value))


def to_plain(value: Any) -> Any:
    """Mutable plain JSON values (dicts and lists) from read-only payload containers."""
    if isinstance(value, Mapping):
        return {key: to_plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(item) for item in value]
    return value


def _reject_constant(token: str) -> Any:
    raise CanonicalJsonError(f"{token} is not valid JSON", path="$")


# One decoder for every parse: json.loads with any option builds a new one per call, which
# is a noticeable share of reading a long session back.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def parse_canonical(text: str | bytes) -> Any:
    """Parse JSON text, rejecting NaN/Infinity literals that canonical JSON never emits."""
    try:
        # What json.loads does before decoding: refuse a BOM in text, detect the encoding of bytes.
        if isinstance(text, str):
            if text.startswith("\ufeff"):
                raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        else:
            text = text.decode(json.detect_encoding(text), "surrogatepass")
        return _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise CanonicalJsonError(f"not valid JSON: {exc.msg} at line {exc.lineno}", path="$") from exc


def is_tagged_hash(value: str) -> bool:
    """True when ``value`` looks like ``sha256:`` followed by 64 lowercase hex digits."""
    if not value.startswith(HASH_PREFIX):
        return False
    digest = value[len(HASH_PREFIX) :]
    return len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)


def _is_plain(value: Any) -> bool:
    """True when ``value`` holds only JSON types and string keys (checked without building paths)."""
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return value == value and value not in (_INF, _NEG_INF)
    if isinstance(value, dict):
        return all(isinstance(key, str) for key in value) and all(_is_plain(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return all(_is_plain(item) for item in value)
    return False


_INF = float("inf")
_NEG_INF = float("-inf")


def _check(value: Any, path: str) -> None:
    # json.JSONEncoder quietly accepts int keys and tuples; canonical JSON must not
    # depend on such coercions, so the accepted types are checked up front.
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise CanonicalJsonError(f"{value!r} is not allowed in canonical JSON", path=path)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalJsonError(f"object keys must be strings, got {type(key).__name__}", path=path)
            _check(item, f"{path}.{key}")
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check(item, f"{path}[{index}]")
        return
    raise CanonicalJsonError(f"{type(value).__name__} has no JSON form", path=path)
