"""The bytes of a body sent upstream in manage mode: canonical JSON, its shared history written once.

A rendered body holds the session's history as read-only objects
(:mod:`~contextwright.providers.shared_json`) that every later render of the session shows
again. Canonical JSON of an object is its sorted keys with their values' canonical JSON, and
of an array its items' canonical JSON, comma-joined; so the body's bytes are put together from
the bytes of its parts, and a shared object's bytes are kept (by identity: it cannot change)
and not written again on the next request. The bytes are exactly :func:`canonical_bytes` of
the whole body, with or without the fast encoder.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from contextwright.canonical import canonical_bytes, canonical_str
from contextwright.providers.shared_json import SharedObject

KEPT_BYTES = 32 * 1024 * 1024
"""How many bytes of shared objects are kept (the least recently written go first); a 1,001-message body is about 0.3 MB."""


class BodyWriter:
    """Canonical JSON bytes of bodies, each shared object of a top-level array written once while it is kept."""

    def __init__(self, size: int = KEPT_BYTES) -> None:
        self._size = size
        self._held = 0
        """Bytes kept, in all."""
        self._kept: OrderedDict[int, tuple[SharedObject, bytes]] = OrderedDict()
        """id → the object (held, so its id is not reused) and its bytes."""
        self._lock = threading.Lock()

    def write(self, body: dict[str, Any], *, keep: bool = True) -> bytes:
        """:func:`canonical_bytes` of ``body``; its :class:`~contextwright.errors.CanonicalJsonError` when it has no canonical form.

        ``keep``: the bytes of shared objects written now are kept (False: the body's objects are never shown again)."""
        if not all(type(key) is str for key in body) or not _shows_shared(body):
            # Nothing kept could serve (or a key the reference refuses and names): written whole, in one pass.
            return canonical_bytes(body)
        try:
            members = [canonical_str(key).encode() + b":" + self._value(body[key], keep) for key in sorted(body)]
        except UnicodeEncodeError:
            return canonical_bytes(body)  # a key with a lone surrogate: the reference refuses it with its own error
        return b"{" + b",".join(members) + b"}"

    def _value(self, value: Any, keep: bool) -> bytes:
        if type(value) is not list:
            return canonical_bytes(value)
        return b"[" + b",".join([self._item(item, keep) for item in value]) + b"]"

    def _item(self, item: Any, keep: bool) -> bytes:
        """An array item's bytes: a shared object's as kept, else written now."""
        if type(item) is not SharedObject:
            return canonical_bytes(item)
        with self._lock:
            kept = self._kept.get(id(item))
            if kept is not None and kept[0] is item:
                self._kept.move_to_end(id(item))
                return kept[1]
        data = canonical_bytes(item)
        if keep:
            self._keep(item, data)
        return data

    def _keep(self, item: SharedObject, data: bytes) -> None:
        """Keep ``item``'s bytes, dropping the least recently written past the size."""
        with self._lock:
            replaced = self._kept.pop(id(item), None)
            self._held -= len(replaced[1]) if replaced is not None else 0
            self._kept[id(item)] = (item, data)
            self._held += len(data)
            while self._held > self._size:
                _, (_, dropped) = self._kept.popitem(last=False)
                self._held -= len(dropped)


def _shows_shared(body: dict[str, Any]) -> bool:
    """True when one of the body's top-level arrays holds a shared object (a rendered history)."""
    return any(type(item) is SharedObject for value in body.values() if type(value) is list for item in value)
