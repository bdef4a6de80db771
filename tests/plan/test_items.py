"""P1: every item type declares its region in code; a missing declaration fails at definition."""

from __future__ import annotations

import subprocess
import sys
from typing import ClassVar

import pytest

from contextwright.errors import UsageError
from contextwright.items import LAYERS, ContextItem, ItemDeclarationError, MemorySnapshot, PlatformPolicy, ToolSpec


def test_an_item_without_a_region_fails_at_class_definition():
    with pytest.raises(ItemDeclarationError, match="must declare region"):

        class NoRegion(ContextItem):
            budget_class: ClassVar[str] = "history"
            layer: ClassVar[str] = "live"


@pytest.mark.parametrize("region", ["C", "a", None, ""])
def test_only_regions_a_and_b_are_accepted(region):
    with pytest.raises(ItemDeclarationError):
        type("Odd", (ContextItem,), {"region": region, "budget_class": "x", "layer": "live"})


def test_budget_class_and_layer_are_required_too():
    with pytest.raises(ItemDeclarationError, match="budget_class"):
        type("NoClass", (ContextItem,), {"region": "B", "layer": "live"})
    with pytest.raises(ItemDeclarationError, match="layer"):
        type("NoLayer", (ContextItem,), {"region": "B", "budget_class": "history", "layer": "somewhere"})


def test_a_module_with_an_undeclared_item_fails_to_import(tmp_path):
    (tmp_path / "bad_items.py").write_text(
        "from contextwright.items import ContextItem\n"
        "class Timestamp(ContextItem):\n"
        "    budget_class = 'runtime'\n"
        "    layer = 'live'\n"
    )
    result = subprocess.run([sys.executable, "-c", "import bad_items"], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode != 0
    assert "ItemDeclarationError" in result.stderr and "Timestamp must declare region" in result.stderr


def test_abstract_bases_may_defer_the_declaration():
    class Base(ContextItem, abstract=True):
        layer: ClassVar[str] = "live"

    class Concrete(Base):
        region: ClassVar[str] = "B"
        budget_class: ClassVar[str] = "nudges"

    assert Concrete.region == "B"


def test_prefix_items_are_region_a_and_name_their_class_and_layer():
    assert (PlatformPolicy.region, PlatformPolicy.budget_class) == ("A", "policy")
    assert ToolSpec.budget_class == "tools" and MemorySnapshot.layer == "project_memory"
    for cls in (PlatformPolicy, ToolSpec, MemorySnapshot):
        assert cls.layer in LAYERS


def test_tool_specs_need_an_object_schema_and_a_sane_name():
    with pytest.raises(UsageError):
        ToolSpec(name="bad name!", description="", input_schema={"type": "object"})
    with pytest.raises(UsageError):
        ToolSpec(name="ok", description="", input_schema={"type": "string"})
