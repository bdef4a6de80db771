"""The prefix-stability monitor: one prefix hash per (session, epoch), or the drift found."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from contextwright.events.envelope import Event


@dataclass(frozen=True, kw_only=True, slots=True)
class PrefixDrift:
    """A (session, epoch) whose requests carried more than one prefix hash."""

    session_id: str
    epoch: int
    hashes: tuple[str, ...]
    requests: tuple[int, ...]
    """Request indexes where a new hash first appeared."""

    def describe(self) -> str:
        """One line naming the session, the epoch and the hashes."""
        return (
            f"session {self.session_id!r} epoch {self.epoch}: {len(self.hashes)} prefix hashes "
            f"({', '.join(h[:19] for h in self.hashes)}) first seen at requests {list(self.requests)}"
        )


def find_drift(events: Iterable[Event]) -> list[PrefixDrift]:
    """Every (session, epoch) with more than one distinct prefix hash among its built requests."""
    seen: dict[tuple[str, int], dict[str, int]] = {}
    for event in events:
        if event.type != "context.request.built":
            continue
        key = (event.session_id, event.payload.epoch)
        hashes = seen.setdefault(key, {})
        hashes.setdefault(event.payload.prefix_sha256, event.payload.request_index)
    return [
        PrefixDrift(session_id=s, epoch=e, hashes=tuple(h), requests=tuple(h.values()))
        for (s, e), h in sorted(seen.items())
        if len(h) > 1
    ]
