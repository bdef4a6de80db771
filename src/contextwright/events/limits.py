"""What the log accepts at the door: depth, size and text limits for event payloads.

The limits are the same for every backend because they are checked here, before an
adapter sees the event:

* a payload is nested at most :data:`MAX_PAYLOAD_DEPTH` containers deep (the payload
  object itself is level 1, so tool-call arguments get about 60 levels of their own);
* its canonical JSON is at most :data:`MAX_PAYLOAD_BYTES` bytes of UTF-8, holding at
  most :data:`MAX_PAYLOAD_VALUES` JSON values (which also bounds the walk over a payload
  built in Python with shared references);
* a batch holds at most :data:`MAX_BATCH_EVENTS` events and :data:`MAX_BATCH_BYTES` bytes;
* text (values and object keys) is valid Unicode: no lone surrogate, which has no
  UTF-8 form and so could be neither hashed nor stored.

The walk is iterative, so a hostile payload nested a million deep is refused with a
:class:`~contextwright.errors.PayloadLimitExceeded` instead of a ``RecursionError``.
:func:`with_fresh_stack` makes the recursive parts of encoding and decoding
independent of how deep the caller's own stack already is.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

from contextwright.errors import MalformedPayload, PayloadLimitExceeded

MAX_PAYLOAD_DEPTH = 64
MAX_PAYLOAD_BYTES = 16 * 1024 * 1024
MAX_PAYLOAD_VALUES = 1_000_000
MAX_BATCH_EVENTS = 10_000
MAX_BATCH_BYTES = 64 * 1024 * 1024

_SURROGATE = re.compile("[\ud800-\udfff]")
_SCALARS = (int, float, bool, type(None))
T = TypeVar("T")


def check_payload(event_type: str, payload: Any) -> None:
    """Refuse ``payload`` (raw JSON values or a typed dataclass) if it breaks a limit above."""
    # Each stack entry: (value, depth of its container, trail). A trail is (parent trail, key),
    # a linked list from which the path is spelled only when something is refused.
    stack: list[tuple[Any, int, Any]] = [(payload, 0, None)]
    # A lower bound on the size of the JSON: every value takes at least one byte, a string
    # at least its length. It stops the walk early, even over shared references.
    size = 0
    values = 0
    while stack:
        value, depth, trail = stack.pop()
        size += 1
        values += 1
        kind = type(value)
        if kind is str:
            size += len(value)
            if not value.isascii():
                _check_text(event_type, value, trail, key=False)
            continue
        if kind in _SCALARS:
            continue
        fields = getattr(kind, "__dataclass_fields__", None)
        if fields is not None:
            value = {name: getattr(value, name) for name in fields}
            kind = dict
        if kind is dict or kind is MappingProxyType or isinstance(value, Mapping):
            items: Any = value.items()
            for name in value:
                if type(name) is str:
                    size += len(name)
                    if not name.isascii():
                        _check_text(event_type, name, (trail, name), key=True)
        elif kind is list or kind is tuple or isinstance(value, (list, tuple)):
            items = enumerate(value)
        else:
            continue
        if depth + 1 > MAX_PAYLOAD_DEPTH:
            raise PayloadLimitExceeded(
                event_type, f"nested deeper than {MAX_PAYLOAD_DEPTH} levels", path=_spell(trail), limit=MAX_PAYLOAD_DEPTH
            )
        if size > MAX_PAYLOAD_BYTES:
            break
        if values + len(stack) + len(value) > MAX_PAYLOAD_VALUES:
            raise PayloadLimitExceeded(
                event_type, f"more than {MAX_PAYLOAD_VALUES:,} JSON values", path=_spell(trail), limit=MAX_PAYLOAD_VALUES
            )
        # Text and scalars (most values) are counted here; only containers wait on the stack.
        for name, child in items:
            child_kind = type(child)
            if child_kind is str:
                size += 1 + len(child)
                values += 1
                if not child.isascii():
                    _check_text(event_type, child, (trail, name), key=False)
            elif child_kind in _SCALARS:
                size += 1
                values += 1
            else:
                stack.append((child, depth + 1, (trail, name)))
    if size > MAX_PAYLOAD_BYTES:
        raise PayloadLimitExceeded(event_type, f"larger than {MAX_PAYLOAD_BYTES:,} bytes", limit=MAX_PAYLOAD_BYTES)


def check_encoded_size(event_type: str, size_bytes: int) -> None:
    """Refuse a payload whose canonical JSON is over :data:`MAX_PAYLOAD_BYTES`."""
    if size_bytes > MAX_PAYLOAD_BYTES:
        raise PayloadLimitExceeded(
            event_type, f"{size_bytes:,} bytes of JSON, over the limit of {MAX_PAYLOAD_BYTES:,}", limit=MAX_PAYLOAD_BYTES
        )


def _spell(trail: Any) -> str:
    keys = []
    while trail is not None:
        trail, key = trail
        keys.append(key)
    return "payload" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in reversed(keys))


def _check_text(event_type: str, text: str, trail: Any, *, key: bool) -> None:
    found = _SURROGATE.search(text)
    if found is not None:
        raise MalformedPayload(
            event_type,
            f"lone surrogate U+{ord(found.group()):04X} at character {found.start()} is not valid Unicode",
            path=_spell(trail) + (" (a key)" if key else ""),
        )


def with_fresh_stack(fn: Callable[..., T], *args: Any) -> T:
    """Call ``fn(*args)``; if the caller's stack is too deep for it, run it again on a new thread's stack.

    Payloads within the depth limit need a few hundred frames at most, which a new thread
    always has; so reading or writing an event never depends on where the caller stands.
    """
    try:
        return fn(*args)
    except RecursionError:
        pass
    results: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(fn(*args))
        except BaseException as exc:  # re-raised on the caller's thread
            errors.append(exc)

    worker = threading.Thread(target=run, name="contextwright-fresh-stack")
    worker.start()
    worker.join()
    if errors:
        raise errors[0]
    return results[0]
