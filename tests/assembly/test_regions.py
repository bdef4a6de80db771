"""P1 at assembly: every item type declares its region, and assembly refuses a part in the wrong one."""

from __future__ import annotations

import pytest

import contextwright.items.region_b  # noqa: F401  (registers the body item types)
from contextwright.assembly.regions import RegionViolation, check_regions
from contextwright.assembly.request import Message, SystemBlock, TextPart
from contextwright.items import item_types


def test_every_item_type_declares_a_region_and_a_budget_class_no_other_region_claims():
    regions_by_class: dict[str, set[str]] = {}
    for item in item_types():
        assert item.region in ("A", "B"), item
        regions_by_class.setdefault(item.budget_class, set()).add(item.region)
    # One budget class, one region: a part's class tells assembly where it may go.
    assert all(len(regions) == 1 for regions in regions_by_class.values()), regions_by_class
    prefix = {c for c, r in regions_by_class.items() if r == {"A"}}
    assert prefix == {"policy", "framing", "instructions", "tools", "memory_snapshot"}


def _text(budget_class: str) -> TextPart:
    return TextPart(text="x", trust="user", source="user", ref="s#1", budget_class=budget_class, layer="live")


@pytest.mark.parametrize("item", [i for i in item_types() if i.region == "A"], ids=lambda i: i.__qualname__)
def test_a_prefix_item_in_the_body_is_refused(item):
    with pytest.raises(RegionViolation, match="declares region A"):
        check_regions((), (Message(role="user", parts=(_text(item.budget_class),)),))


@pytest.mark.parametrize("item", [i for i in item_types() if i.region == "B"], ids=lambda i: i.__qualname__)
def test_a_body_item_in_the_prefix_is_refused(item):
    with pytest.raises(RegionViolation, match="declares region B"):
        check_regions((SystemBlock(budget_class=item.budget_class, text="x"),), ())
    check_regions((), (Message(role="user", parts=(_text(item.budget_class),)),))


def test_a_part_of_an_undeclared_kind_is_refused():
    with pytest.raises(RegionViolation, match="no item type declares"):
        check_regions((), (Message(role="user", parts=(_text("mystery"),)),))
