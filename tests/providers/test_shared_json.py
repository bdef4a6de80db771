"""Read-only JSON containers: read as plain JSON, refuse every change in place, copy into plain containers."""

from __future__ import annotations

import copy
import json
import pickle
import threading

import pytest

from contextwright.errors import SharedBodyChanged, UsageError
from contextwright.providers.shared_json import SharedArray, SharedObject, mutable, shared

VALUE = {"type": "tool_use", "input": {"path": "a.py", "lines": [1, 2, {"deep": [None, True, 1.5]}]}, "name": "read"}


def test_a_shared_value_reads_and_encodes_as_the_plain_one():
    value = shared(VALUE)
    assert isinstance(value, SharedObject) and isinstance(value["input"]["lines"], SharedArray)
    assert isinstance(value["input"]["lines"][2], SharedObject)
    assert value == VALUE and json.dumps(value) == json.dumps(VALUE)
    assert json.dumps(value, indent=2, sort_keys=True) == json.dumps(VALUE, indent=2, sort_keys=True)
    assert list(value) == list(VALUE)  # key order kept
    assert value["input"]["lines"][:] == [1, 2, {"deep": [None, True, 1.5]}]
    assert type(value["input"]["lines"][:]) is list  # a slice is the caller's own


def test_a_shared_value_is_a_copy_of_what_it_was_made_from():
    source = copy.deepcopy(VALUE)
    value = shared(source)
    source["input"]["lines"].append(3)
    source["name"] = "changed"
    assert value == VALUE


DICT_CHANGES = [
    lambda d: d.__setitem__("name", "x"),
    lambda d: d.__delitem__("name"),
    lambda d: d.clear(),
    lambda d: d.pop("name"),
    lambda d: d.pop("missing", None),
    lambda d: d.popitem(),
    lambda d: d.setdefault("new", 1),
    lambda d: d.update(name="x"),
    lambda d: d.__ior__({"name": "x"}),
]
LIST_CHANGES = [
    lambda a: a.__setitem__(0, 9),
    lambda a: a.__setitem__(slice(0, 1), [9]),
    lambda a: a.__delitem__(0),
    lambda a: a.__iadd__([9]),
    lambda a: a.__imul__(2),
    lambda a: a.append(9),
    lambda a: a.clear(),
    lambda a: a.extend([9]),
    lambda a: a.insert(0, 9),
    lambda a: a.pop(),
    lambda a: a.remove(1),
    lambda a: a.reverse(),
    lambda a: a.sort(key=str),
]


@pytest.mark.parametrize("change", DICT_CHANGES)
def test_every_change_to_a_shared_object_is_refused_and_leaves_it_as_it_was(change):
    value = shared(VALUE)
    with pytest.raises(SharedBodyChanged, match="shared with later requests"):
        change(value)
    assert value == VALUE


@pytest.mark.parametrize("change", LIST_CHANGES)
def test_every_change_to_a_shared_array_is_refused_and_leaves_it_as_it_was(change):
    value = shared(VALUE)
    with pytest.raises(SharedBodyChanged):
        change(value["input"]["lines"])
    assert value == VALUE


def test_the_refusal_is_a_usage_error_and_a_type_error():
    value = shared(VALUE)
    with pytest.raises(UsageError):
        value["name"] = "x"
    with pytest.raises(TypeError):
        value["input"]["lines"] += [3]


@pytest.mark.parametrize(
    "copied",
    [copy.deepcopy, mutable, lambda v: pickle.loads(pickle.dumps(v)), lambda v: copy.deepcopy({"body": [v]})["body"][0]],
    ids=["deepcopy", "mutable", "pickle", "deepcopy-inside-plain"],
)
def test_copies_are_plain_and_change_freely(copied):
    value = shared(VALUE)
    plain = copied(value)
    assert plain == VALUE
    assert type(plain) is dict and type(plain["input"]) is dict and type(plain["input"]["lines"]) is list
    plain["input"]["lines"].append(3)
    plain["name"] = "changed"
    assert value == VALUE


def test_a_shallow_copy_is_a_plain_container_holding_the_shared_values():
    value = shared(VALUE)
    outer = copy.copy(value)
    assert type(outer) is dict
    outer["name"] = "mine"
    assert value["name"] == "read"
    assert type(copy.copy(value["input"]["lines"])) is list


def test_deep_values_are_copied_without_recursion_whatever_the_caller_stack():
    deep: object = "leaf"
    for level in range(20_000):
        deep = [deep] if level % 2 else {"k": deep}
    results: list[object] = []

    def walk(value: object) -> tuple[int, set[type], object]:
        """Depth, container types and leaf of a chain of one-item containers (compared without recursion)."""
        depth, kinds = 0, set()
        while isinstance(value, dict | list):
            kinds.add(type(value))
            value = value["k"] if isinstance(value, dict) else value[0]
            depth += 1
        return depth, kinds, value

    def convert() -> None:
        value = shared(deep)
        results.append((walk(value), walk(mutable(value))))

    convert()
    # From a small thread stack as well: nothing here recurses.
    threading.stack_size(256 * 1024)
    try:
        thread = threading.Thread(target=convert)
        thread.start()
        thread.join()
    finally:
        threading.stack_size(0)
    expected = ((20_000, {SharedObject, SharedArray}, "leaf"), (20_000, {dict, list}, "leaf"))
    assert results == [expected, expected]


def test_leaves_and_shared_sub_values_are_kept_as_they_are():
    text = "x" * 1000
    inner = {"t": text}
    value = shared({"a": inner, "b": inner, "n": 1})
    assert value["a"]["t"] is text  # strings are not copied
    assert value["a"] is value["b"]  # one copy of a value that appears twice
    assert shared("plain") == "plain" and mutable(3) == 3
