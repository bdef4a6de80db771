"""Deterministic relevance ranking: which entries to drop first when a layer must shrink.

No model call: relevance to the current stage's declared goal is the share of the
goal's words that an entry mentions, and ties go to recency (older first).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
_WORD = re.compile(r"[a-z0-9_]{3,}")
_STOP = frozenset({"the", "and", "for", "with", "this", "that", "from", "into", "are", "was", "not", "but", "all", "can", "you"})


def words(text: str) -> frozenset[str]:
    """Lower-cased words of three or more characters, without the commonest English ones."""
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOP)


def relevance(goal: str, text: str) -> float:
    """Share of the goal's words that ``text`` contains (0.0 to 1.0)."""
    wanted = words(goal)
    if not wanted:
        return 0.0
    return len(wanted & words(text)) / len(wanted)


def least_relevant_first(items: Sequence[T], *, goal: str | None, text: Callable[[T], str], age: Callable[[T], int]) -> list[T]:
    """``items`` ordered for trimming: least relevant to ``goal`` first, older before newer on ties."""
    if not goal:
        return sorted(items, key=age)
    return sorted(items, key=lambda item: (relevance(goal, text(item)), age(item)))
