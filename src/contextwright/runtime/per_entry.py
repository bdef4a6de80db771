"""Values derived per entry of a session's surface, kept from one surface to the next.

A request walks the history for a few facts (evidence delivered in frames, untrusted
results in the run). Successive surfaces hand out the very same entry objects for what
did not change (entries are frozen), so each value is derived once per entry object: the
leading entries the previous surface also had keep their values, found by identity at C
speed, and only the rest is derived. The values are what a walk from scratch would give.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from itertools import compress, count
from typing import Generic, TypeVar

from contextwright.derive._surface import Entry, Surface

T = TypeVar("T")


class PerEntry(Generic[T]):
    """``derive(entry)`` for each entry of a surface, derived again only for entries not seen in that place.

    ``derive`` must read the entry alone (not its place, nor where the run starts)."""

    def __init__(self, derive: Callable[[Entry], T]) -> None:
        self._derive = derive
        self._entries: list[Entry] = []
        self._values: list[T] = []

    def values(self, surface: Surface) -> list[T]:
        """One value per entry of ``surface``, in order."""
        entries = surface.entries
        kept = next(compress(count(), map(operator.is_not, entries, self._entries)), min(len(entries), len(self._entries)))
        del self._entries[kept:], self._values[kept:]
        self._entries.extend(entries[kept:])
        self._values.extend(map(self._derive, entries[kept:]))
        return self._values[:]
