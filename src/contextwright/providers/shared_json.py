"""Read-only JSON containers, so successive rendered bodies share their history instead of copying it.

A session's requests repeat their history: copying it into every body handed out costs
time in proportion to the body on every request, however little the turn added. The
renderer maps each message once into these containers and every later body holds the same
objects. They refuse any change in place (:class:`~contextwright.errors.SharedBodyChanged`),
so what a caller does with one body cannot alter what a later request sends. They are
``dict`` and ``list`` subclasses: JSON encoders, SDKs and ``==`` see plain JSON, and
``copy.deepcopy``, ``copy.copy``, pickling and :func:`mutable` give plain containers.
"""

from __future__ import annotations

from typing import Any, NoReturn

from contextwright.errors import SharedBodyChanged

__all__ = ["SharedArray", "SharedObject", "mutable", "shared"]


class SharedObject(dict[str, Any]):
    """A JSON object shared between rendered bodies: reads as a ``dict``, refuses changes."""

    __slots__ = ()

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return mutable(self)  # type: ignore[no-any-return]  # mutable() keeps the container's kind

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (mutable(self),))


class SharedArray(list[Any]):
    """A JSON array shared between rendered bodies: reads as a ``list``, refuses changes."""

    __slots__ = ()

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return mutable(self)  # type: ignore[no-any-return]  # mutable() keeps the container's kind

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (mutable(self),))


def _refuse(self: SharedObject | SharedArray, *args: object, **kwargs: object) -> NoReturn:
    kind = "object" if isinstance(self, dict) else "array"
    raise SharedBodyChanged(
        f"this JSON {kind} of a rendered body is shared with later requests and cannot be changed in place; "
        "change a copy (copy.deepcopy(body), or contextwright.providers.shared_json.mutable(part))"
    )


# Every method of dict and list that changes the container in place.
for _name in ("__setitem__", "__delitem__", "__ior__", "clear", "pop", "popitem", "setdefault", "update"):
    setattr(SharedObject, _name, _refuse)
for _name in (
    "__setitem__",
    "__delitem__",
    "__iadd__",
    "__imul__",
    "append",
    "clear",
    "extend",
    "insert",
    "pop",
    "remove",
    "reverse",
    "sort",
):
    setattr(SharedArray, _name, _refuse)


def shared(value: Any) -> Any:
    """``value`` (JSON) with every object and array as a read-only copy; strings and numbers are shared."""
    return _rebuild(value, SharedObject, SharedArray)


def mutable(value: Any) -> Any:
    """``value`` (JSON) with every object and array as a plain ``dict`` and ``list`` of its own."""
    return _rebuild(value, dict, list)


def _rebuild(value: Any, as_object: type[dict[str, Any]], as_array: type[list[Any]]) -> Any:
    """A copy of ``value``'s containers as ``as_object`` and ``as_array``, children first.

    Without recursion: how deep a value may nest must not depend on the caller's stack."""
    if not isinstance(value, dict | list):
        return value
    built: dict[int, Any] = {}
    pending: list[tuple[Any, bool]] = [(value, False)]
    while pending:
        node, children_built = pending.pop()
        if id(node) in built:
            continue
        if not children_built:
            pending.append((node, True))
            children = node.values() if isinstance(node, dict) else node
            pending.extend((child, False) for child in children if isinstance(child, dict | list))
        elif isinstance(node, dict):
            built[id(node)] = as_object(
                {key: built[id(item)] if isinstance(item, dict | list) else item for key, item in node.items()}
            )
        else:
            built[id(node)] = as_array([built[id(item)] if isinstance(item, dict | list) else item for item in node])
    return built[id(value)]
