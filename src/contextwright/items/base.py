"""Context items: every piece of context declares, in code, where it may go.

* ``region`` — ``"A"``, the frozen prefix that is identical on every request of
  an epoch, or ``"B"``, the turn body. The rule: anything that can differ between
  two requests of one session belongs in B.
* ``budget_class`` — which absolute cap (or the scaling history budget) pays for it.
* ``layer`` — where it sits in the layered model, for telemetry: ``live`` (the
  current step), ``stage_local`` (the current stage or run), ``compressed_session``
  (summaries of earlier work), ``project_memory`` (facts that outlive the session),
  ``archival`` (the full log; never sent).

A concrete item class that leaves any of these undeclared fails when the class
is defined, so a forgotten region is an import error, never a silent cache miss.
Intermediate base classes pass ``abstract=True``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, get_args

from contextwright.errors import UsageError

Region = Literal["A", "B"]
Layer = Literal["live", "stage_local", "compressed_session", "project_memory", "archival"]

REGIONS: tuple[str, ...] = get_args(Region)
LAYERS: tuple[str, ...] = get_args(Layer)


class ItemDeclarationError(UsageError, TypeError):
    """An item class does not declare its region, budget class or layer correctly."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ContextItem:
    """Base of all context items; subclasses declare ``region``, ``budget_class`` and ``layer``."""

    region: ClassVar[Region]
    budget_class: ClassVar[str]
    layer: ClassVar[Layer]
    _abstract_item: ClassVar[bool]

    def __init_subclass__(cls, abstract: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if abstract:
            cls._abstract_item = True
            return
        cls._abstract_item = False
        region = getattr(cls, "region", None)
        if region not in REGIONS:
            raise ItemDeclarationError(
                f"{cls.__qualname__} must declare region = 'A' (frozen prefix) or 'B' (turn body), got {region!r}"
            )
        budget_class = getattr(cls, "budget_class", None)
        if not isinstance(budget_class, str) or not budget_class:
            raise ItemDeclarationError(f"{cls.__qualname__} must declare its budget_class")
        layer = getattr(cls, "layer", None)
        if layer not in LAYERS:
            raise ItemDeclarationError(f"{cls.__qualname__} must declare a layer, one of {LAYERS}, got {layer!r}")


def region_of(item: ContextItem | type[ContextItem]) -> Region:
    """The region an item (or item class) belongs to."""
    return item.region


def item_types() -> tuple[type[ContextItem], ...]:
    """Every concrete item class defined so far, in definition order."""
    found: list[type[ContextItem]] = []
    pending: list[type[ContextItem]] = [ContextItem]
    while pending:
        cls = pending.pop(0)
        for sub in cls.__subclasses__():
            pending.append(sub)
            if not sub._abstract_item:
                found.append(sub)
    return tuple(found)


def item_for_budget_class(budget_class: str) -> type[ContextItem] | None:
    """The item class that declares ``budget_class`` (the first, in definition order), if any."""
    return next((cls for cls in item_types() if cls.budget_class == budget_class), None)
