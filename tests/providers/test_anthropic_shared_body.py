"""Anthropic bodies share their history with later renders instead of copying it.

A render hands out the layout's read-only message objects: what the history already had
is not copied again, and cache markers go on copies. That a layout made from scratch (as a
new process makes) renders the same bytes is checked in ``tests/runtime/test_incremental_assembly.py``.
"""

from __future__ import annotations

from contextwright.events import AssistantMessage, ToolCall
from contextwright.providers.shared_json import SharedObject
from contextwright.providers.wires import anthropic
from contextwright.testing.fakes import open_session


def _turn(session, turn: int, output: str) -> tuple[dict, dict]:
    session.user(f"Turn {turn}: run the checks for module {turn % 3}.")
    first = session.next_request()
    first_body = first.anthropic()
    call = ToolCall(id=f"c{turn}", name="run_tests", arguments={"turn": turn, "paths": ["a", "b"]})
    session.adapter.record_assistant(AssistantMessage(text="Checking.", tool_calls=(call,)))
    session.tool_result(call.id, output, exit_code=0)
    second = session.next_request()
    second_body = second.anthropic()
    session.adapter.record_assistant(AssistantMessage(text="Done."))
    return first_body, second_body


def _marked(body: dict) -> list[tuple[int, int]]:
    return [
        (index, offset)
        for index, message in enumerate(body["messages"])
        for offset, block in enumerate(message["content"])
        if "cache_control" in block
    ]


def test_later_bodies_hold_the_same_message_objects_for_the_unmarked_history():
    _, session, _ = open_session("shared")
    bodies = [body for turn in range(12) for body in _turn(session, turn, f"module {turn}: {turn} passed\n" * 40)]
    earlier, later = bodies[-2], bodies[-1]
    marked = {index for index, _ in _marked(earlier)} | {index for index, _ in _marked(later)}
    shared_history = [
        index for index in range(len(earlier["messages"]) - 2) if index not in marked and index < len(later["messages"])
    ]
    assert len(shared_history) > 15
    # Not copied: the very same read-only objects.
    assert all(later["messages"][i] is earlier["messages"][i] for i in shared_history)
    assert all(isinstance(message, SharedObject) for message in later["messages"])
    # The body and its lists are new on every render.
    assert later["messages"] is not earlier["messages"] and later is not earlier


def test_a_marker_goes_on_a_copy_and_never_onto_the_shared_block():
    _, session, _ = open_session("markers")
    _, before = _turn(session, 0, "module 0: 3 passed\n" * 40)
    marked_before = _marked(before)
    assert marked_before
    for turn in range(1, 6):
        _, after = _turn(session, turn, f"module {turn}: 3 passed\n" * 40)
    # The earlier body keeps its markers; where the history marker moved on, the block shows none.
    assert _marked(before) == marked_before
    moved = [(i, o) for i, o in marked_before if (i, o) not in _marked(after)]
    assert moved, "no marker moved: the test would prove nothing"
    for index, offset in moved:
        assert "cache_control" not in after["messages"][index]["content"][offset]
    # The layouts kept for later renders hold no marker: each marked block of a body is a copy.
    layouts = [layout for _, _, layout in anthropic._recent.values()]
    assert layouts
    for layout in layouts:
        assert not any("cache_control" in block for turn in layout.turns for block in turn.wire["content"])
        assert not any("cache_control" in block for block in (*layout.tools, *layout.system))


def test_settled_walk_taken_over_from_the_previous_layout_is_what_a_walk_from_scratch_finds(monkeypatch):
    original = anthropic._map_layout
    checked: list[int] = []

    def checking(request, caps, reuse):
        layout = original(request, caps, reuse)
        scratch = anthropic._settled(list(layout.turns), layout.head)
        assert layout.settled[0] == scratch[0]
        checked.append(reuse is not None and layout.settled is reuse.settled)
        return layout

    monkeypatch.setattr(anthropic, "_map_layout", checking)
    # A small window: pruning passes turn early results into pointers, which moves the settled block.
    _, session, _ = open_session("settled", window=24_000)
    for turn in range(30):
        _turn(session, turn, f"module {turn}: FAILED test_{turn}\n" * (60 + 20 * (turn % 4)))
    assert len(checked) > 40 and any(checked) and not all(checked)
