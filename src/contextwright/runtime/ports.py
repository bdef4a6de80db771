"""Ports the runtime reads through: memory (once, at session open) and recall (on every assembly).

Recall evidence is read fresh on every assembly, never kept between them: a
corrected item must produce a correction line, an erased or expired one must
disappear, and one written during the turn must reach the next request, which a
retained bundle would hide. A recall port may offer an explicit ``revision()``
hook; only then may the runtime reuse its previous read of delivered evidence,
and only while the revision is unchanged. A port that raises costs the request
its recall, never the request (see :meth:`contextwright.Session.next_request`).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from contextwright.events.catalog import Evidence, TrustLevel
from contextwright.items.region_a import MemoryFact


@runtime_checkable
class MemoryPort(Protocol):
    """Where the session-open memory snapshot comes from."""

    def snapshot(self) -> Sequence[MemoryFact]:
        """The memory to freeze into the prefix (read once per session open)."""
        ...


@runtime_checkable
class RecallPort(Protocol):
    """In-turn recall: evidence relevant to the current message, and its current state."""

    def recall(self, query: str, *, now: dt.datetime) -> Sequence[Evidence]:
        """Evidence for the turn's message, best first: asked for every request of the turn."""
        ...

    def current(self, ids: Sequence[str], *, now: dt.datetime) -> Mapping[str, Evidence | None]:
        """The current text of evidence delivered earlier; None when erased or expired."""
        ...


@dataclass(frozen=True, kw_only=True, slots=True)
class _Item:
    text: str
    trust: TrustLevel
    expires_at: dt.datetime | None


class InMemoryMemory:
    """A small memory store implementing both ports (for the demo, tests and prototypes).

    Recall matches by shared words between the query and the item, so it is
    deterministic and needs no model.
    """

    def __init__(self, facts: Mapping[str, str] | None = None) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, _Item] = {k: _Item(text=v, trust="user", expires_at=None) for k, v in (facts or {}).items()}
        self._revision = 0

    def write(self, memory_id: str, text: str, *, trust: TrustLevel = "user", expires_at: dt.datetime | None = None) -> None:
        """Add or replace an item."""
        with self._lock:
            self._items[memory_id] = _Item(text=text, trust=trust, expires_at=expires_at)
            self._revision += 1

    def erase(self, memory_id: str) -> None:
        """Remove an item."""
        with self._lock:
            self._items.pop(memory_id, None)
            self._revision += 1

    def revision(self) -> str:
        """Changes whenever an item is written or erased (time-based expiry is not covered)."""
        with self._lock:
            return str(self._revision)

    def snapshot(self) -> Sequence[MemoryFact]:
        with self._lock:
            return tuple(MemoryFact(id=k, text=v.text, trust=v.trust) for k, v in sorted(self._items.items()))

    def recall(self, query: str, *, now: dt.datetime, limit: int = 5) -> Sequence[Evidence]:
        words = {w.strip(".,:;!?()").lower() for w in query.split() if len(w) > 3}
        with self._lock:
            scored = []
            for memory_id, item in sorted(self._items.items()):
                if item.expires_at is not None and item.expires_at <= now:
                    continue
                overlap = len(words & {w.strip(".,:;!?()").lower() for w in item.text.split()})
                if overlap:
                    scored.append((-overlap, memory_id, item))
        scored.sort()
        return tuple(Evidence(id=m, text=i.text, trust=i.trust, source="memory") for _, m, i in scored[:limit])

    def current(self, ids: Sequence[str], *, now: dt.datetime) -> Mapping[str, Evidence | None]:
        out: dict[str, Evidence | None] = {}
        with self._lock:
            for memory_id in ids:
                item = self._items.get(memory_id)
                if item is None or (item.expires_at is not None and item.expires_at <= now):
                    out[memory_id] = None
                else:
                    out[memory_id] = Evidence(id=memory_id, text=item.text, trust=item.trust, source="memory")
        return out
