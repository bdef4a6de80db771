"""What corrections and erasures of memory mean for what the model sees.

The snapshot in the prefix is frozen for an epoch, so a change to one of its facts
must reach the model another way: a correction becomes a correction line in the
body; an erasure (a privacy request) takes the fact out of the prefix at the price
of a new epoch, and keeps it out of every memory candidate offered later.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from contextwright.events.envelope import Event
from contextwright.items.region_a import MemoryFact

__all__ = ["corrected_memory", "erased_memory_ids", "erased_texts", "withhold_erased"]

MIN_ERASED_CHARS = 8
"""Shorter erased texts are not matched inside candidates (they would match ordinary words)."""


def erased_memory_ids(events: Sequence[Event]) -> frozenset[str]:
    """Memory items erased in this session: their snapshot facts stay out of every later prefix."""
    return frozenset(e.payload.memory_id for e in events if e.type == "memory.erased")


def corrected_memory(events: Sequence[Event]) -> Mapping[str, str]:
    """The latest corrected text of each memory item corrected in this session."""
    return {e.payload.memory_id: e.payload.text for e in events if e.type == "memory.corrected"}


def erased_texts(events: Sequence[Event], snapshot: Iterable[MemoryFact] = ()) -> frozenset[str]:
    """Every text an erased memory item had in this session (snapshots of every epoch, writes, corrections)."""
    erased = erased_memory_ids(events)
    if not erased:
        return frozenset()
    texts = {fact.text for fact in snapshot if fact.id in erased}
    for event in events:
        if event.type in ("context.plan.created", "context.epoch.rotated"):
            memory = event.payload.plan.get("prefix", {}).get("memory", [])
            texts |= {m["text"] for m in memory if m.get("id") in erased}
    texts |= {
        e.payload.text for e in events if e.type in ("memory.written", "memory.corrected") and e.payload.memory_id in erased
    }
    return frozenset(t for t in texts if t.strip())


def withhold_erased(candidates: Sequence[str], erased: frozenset[str]) -> tuple[tuple[str, ...], int]:
    """The candidates that do not bring an erased text back, and how many were withheld."""
    folded = [" ".join(t.casefold().split()) for t in erased]

    def brings_back(candidate: str) -> bool:
        c = " ".join(candidate.casefold().split())
        return any(c == t or (len(t) >= MIN_ERASED_CHARS and t in c) or (len(c) >= MIN_ERASED_CHARS and c in t) for t in folded)

    kept = tuple(c for c in candidates if not brings_back(c))
    return kept, len(candidates) - len(kept)
