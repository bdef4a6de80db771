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
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
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
    _check(value, "$")
    try:
        return _encoder.encode(value)
    except ValueError as exc:  # allow_nan=False reports NaN/Infinity this way
        raise CanonicalJsonError(str(exc), path="$") from exc


def canonical_bytes(value: Any) -> bytes:
    """Return :func:`canonical_json` encoded as UTF-8."""
    return canonical_json(value).encode("utf-8")


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


def parse_canonical(text: str | bytes) -> Any:
    """Parse JSON text, rejecting NaN/Infinity literals that canonical JSON never emits."""

    def _reject(token: str) -> Any:
        raise CanonicalJsonError(f"{token} is not valid JSON", path="$")

    try:
        return json.loads(text, parse_constant=_reject)
    except json.JSONDecodeError as exc:
        raise CanonicalJsonError(f"not valid JSON: {exc.msg} at line {exc.lineno}", path="$") from exc


def is_tagged_hash(value: str) -> bool:
    """True when ``value`` looks like ``sha256:`` followed by 64 lowercase hex digits."""
    if not value.startswith(HASH_PREFIX):
        return False
    digest = value[len(HASH_PREFIX) :]
    return len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)


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
