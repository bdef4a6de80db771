"""Fold rules for the ``framework.*`` events: a framework's own item list, and the history an adapter has seen."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from contextwright.canonical import to_plain
from contextwright.events.envelope import Event


def fold_framework_items(events: Iterable[Event]) -> list[Any]:
    """The items a framework sees now: added in order, minus the popped tail, restarted at each clear.

    Items come back as plain, mutable JSON values (the stored payloads are read-only)."""
    items: list[Any] = []
    for event in events:
        match event.type:
            case "framework.items.added":
                items.extend(to_plain(item) for item in event.payload.items)
            case "framework.item.popped":
                if items:
                    items.pop()
            case "framework.items.cleared":
                items.clear()
            case _:
                pass
    return items


def fold_seen_history(events: Iterable[Event]) -> list[str]:
    """The content hashes of the caller's history an adapter has recorded so far, in order."""
    seen: list[str] = []
    for event in events:
        if event.type == "framework.history.seen":
            seen.extend(event.payload.fingerprints)
    return seen
