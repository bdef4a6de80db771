"""P1 at assembly: every part of a request belongs to an item type that declares its region.

The system blocks are the frozen prefix (region A); every message part is the turn
body (region B). A part whose budget class no item type declares, or one declared
for the other region, is refused before a request exists.
"""

from __future__ import annotations

from collections.abc import Sequence

import contextwright.items.region_b  # noqa: F401  (defines the body item types)
from contextwright.assembly.memo import RenderMemo
from contextwright.assembly.request import Message, SystemBlock, ToolCallPart
from contextwright.errors import BuildError
from contextwright.items.base import ContextItem, Region, item_for_budget_class

__all__ = ["RegionViolation", "check_regions"]


class RegionViolation(BuildError):
    """A part of a request sits in a region its item type does not declare."""


def check_regions(system: Sequence[SystemBlock], messages: Sequence[Message], memo: RenderMemo | None = None) -> None:
    """Refuse a system block that is not region A, or a message part that is not region B.

    With ``memo``, a message object checked by this or the last build is not checked again."""
    for block in system:
        _check(block.budget_class, "A", "the system prompt (the frozen prefix)")
    if memo is None:
        for message in messages:
            check_message(message)
    else:
        memo.per_messages(messages, check_message, check_message)


def check_message(message: Message) -> None:
    """Refuse a message part that is not region B (a declaration, once made, never goes away)."""
    for part in message.parts:
        # A tool call is part of the model's message: history.
        budget_class = "history" if isinstance(part, ToolCallPart) else part.budget_class
        _check(budget_class, "B", f"a {message.role} message (the turn body)")


_DECLARED: dict[str, type[ContextItem]] = {}
"""Budget class → the item type found declaring it (a declaration, once made, never goes away)."""


def _check(budget_class: str, region: Region, where: str) -> None:
    item = _DECLARED.get(budget_class) or item_for_budget_class(budget_class)
    if item is not None:
        _DECLARED[budget_class] = item
    if item is None:
        raise RegionViolation(
            f"no item type declares the budget class {budget_class!r}, so it has no region; it cannot go in {where}"
        )
    if item.region != region:
        raise RegionViolation(f"{item.__qualname__} ({budget_class!r}) declares region {item.region}, but was placed in {where}")
