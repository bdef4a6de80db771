"""The task statement yields last: relief folds and prunes everything else before it is shown bounded.

A task larger than the share one item may take (a pasted report, a long issue) used to be
shown bounded, like any oversized item, as soon as the window filled, and stayed so for the
rest of the session. It is pinned (never compacted), so relief can always make room around
it; only when nothing else can give way is it shown bounded (``oversized_pinned``).
"""

from __future__ import annotations

from functools import partial

from contextwright.assembly.request import NeutralRequest, TextPart
from contextwright.assembly.rules import rule_set
from contextwright.events import AssistantMessage, ToolCall
from contextwright.replay import visible_in
from contextwright.runtime import relief as relief_module
from contextwright.runtime import requests as requests_module
from contextwright.testing.fakes import open_session
from tests.runtime.conftest import old_rebuild_inputs

WINDOW = 32_000


def _task(lines: int) -> str:
    report = "".join(f"line {i}: error in module_{i % 37}.py at col {i % 80}: unexpected token\n" for i in range(lines))
    return "Fix the failing build. The report follows.\n" + report


def _work(session, clock, rounds: int) -> list:
    built = []
    for turn in range(rounds):
        built.append(session.next_request())
        call = ToolCall(id=f"c{turn}", name="read_file", arguments={"path": f"m{turn}.py"})
        reasoning = f"Reading {turn}. " + "I will reason about the module in detail. " * 40
        session.adapter.record_assistant(AssistantMessage(text=reasoning, tool_calls=(call,)))
        session.tool_result(call.id, "".join(f"def f_{turn}_{i}(v):\n    return v * {i}\n" for i in range(60)))
        clock.advance(20)
    return built


def _text(request: NeutralRequest) -> str:
    return "\n".join(p.text for m in request.messages for p in m.parts if isinstance(p, TextPart))


def test_a_task_over_the_item_share_stays_whole_while_relief_makes_room():
    _, session, clock = open_session("task", window=WINDOW)
    task = _task(300)
    session.user(task)
    built = _work(session, clock, rounds=40)
    # Check the window filled and relief ran, yet the task reached the model verbatim every time.
    assert any("compaction" in b.result.yields for b in built)
    assert all(visible_in(b.neutral, task) for b in built)
    assert not any("oversized_pinned" in b.result.yields for b in built)
    assert all(session.inspect(b.index).sha256() == b.neutral.sha256() for b in built)


def test_a_task_nothing_can_make_room_for_is_bounded_as_the_last_resort():
    _, session, clock = open_session("task", window=WINDOW)
    task = _task(800)
    session.user(task)
    built = _work(session, clock, rounds=6)
    bounded = [b for b in built if "oversized_pinned" in b.result.yields]
    assert bounded, "a task that fills the window alone must still leave room for the session"
    # Check the bounded requests fit, show the task's head and name where the whole text is kept.
    limit = WINDOW - built[0].plan.model.output_reserve
    assert all(b.result.total_tokens <= limit for b in built)
    assert all(_task(0).strip() in _text(b.neutral) and "not shown here" in _text(b.neutral) for b in bounded)
    assert all(session.inspect(b.index).sha256() == b.neutral.sha256() for b in built)


def test_a_log_whose_task_was_bounded_with_the_other_items_still_rebuilds_byte_for_byte(monkeypatch):
    # Requests recorded before pinned items yielded last bounded the task under "oversized_items"
    # and carry no "pinned" input: rebuilding them must still give the bytes that were sent.
    with monkeypatch.context() as patch:
        # Such requests were built under rule set 2: whole items until the body did not fit, too.
        patch.setattr(relief_module, "build", partial(relief_module.build, rules=rule_set(2)))
        patch.setattr(requests_module, "_rebuild_inputs", old_rebuild_inputs(views=True, pinned=False))
        _, session, clock = open_session("task", window=WINDOW)
        task = _task(300)
        session.user(task)
        built = _work(session, clock, rounds=24)
    assert any(not visible_in(b.neutral, task) for b in built), "the old rule bounded the task"
    assert all("pinned" not in e.payload.inputs for e in session.history.events if e.type == "context.request.built")
    assert all(session.inspect(b.index).sha256() == b.neutral.sha256() for b in built)
