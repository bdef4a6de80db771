"""D7: the working state is written only through the typed control tool, bounded, never evicting constraints."""

from __future__ import annotations

import pytest

from contextwright.derive._working_state import Limits, WorkingState, WorkingStateError, apply_update, state_at
from contextwright.events import UserMessage, WorkingStateUpdated
from contextwright.log import InMemoryEventLog


def count(text: str) -> int:
    return len(text) // 4 + 1


def test_updates_apply_and_render():
    state = apply_update(
        WorkingState(),
        {
            "add_constraints": ["Keep the public API."],
            "upsert_tasks": [{"id": "t1", "title": "Fix billing", "status": "doing"}],
            "add_facts": ["Rounding is half-even."],
            "add_open_questions": ["Which Python versions?"],
            "next_action": "Run the billing tests",
        },
        count_tokens=count,
    )
    state = apply_update(
        state,
        {"upsert_tasks": [{"id": "t1", "status": "done"}], "resolve_open_questions": ["Which Python versions?"]},
        count_tokens=count,
    )
    assert state.tasks[0].status == "done" and state.tasks[0].title == "Fix billing"
    assert not state.open_questions
    text = state.render()
    assert "Keep the public API." in text and "[done] t1: Fix billing" in text


@pytest.mark.parametrize(
    ("field", "limit"),
    [("add_constraints", 20), ("add_facts", 40), ("add_open_questions", 20)],
)
def test_caps_fail_visibly_and_change_nothing(field, limit):
    state = apply_update(WorkingState(), {field: [f"item {i}" for i in range(limit)]}, count_tokens=lambda t: 1)
    with pytest.raises(WorkingStateError, match="nothing was changed"):
        apply_update(state, {field: ["one too many"]}, count_tokens=lambda t: 1)


def test_thirty_tasks_at_most():
    tasks = [{"id": f"t{i}", "title": "x"} for i in range(31)]
    with pytest.raises(WorkingStateError, match="tasks"):
        apply_update(WorkingState(), {"upsert_tasks": tasks}, count_tokens=lambda t: 1)


def test_token_cap():
    with pytest.raises(WorkingStateError, match="tokens"):
        apply_update(
            WorkingState(),
            {"add_facts": [f"fact {i}: " + "word " * 90 for i in range(10)]},
            count_tokens=count,
            limits=Limits(item_chars=1000),
        )


def test_constraints_cannot_be_removed_by_the_model():
    state = apply_update(WorkingState(), {"add_constraints": ["Never push to main."]}, count_tokens=count)
    with pytest.raises(WorkingStateError, match="unknown field"):
        apply_update(state, {"remove_constraints": ["Never push to main."]}, count_tokens=count)


@pytest.mark.parametrize(
    "bad",
    [
        {"add_facts": "not a list"},
        {"upsert_tasks": [{"title": "no id"}]},
        {"upsert_tasks": [{"id": "t", "title": "x", "status": "maybe"}]},
        {"next_action": 3},
    ],
)
def test_malformed_calls_are_rejected(bad):
    with pytest.raises(WorkingStateError):
        apply_update(WorkingState(), bad, count_tokens=count)


def test_carry_to_the_next_run_drops_done_tasks_and_resets_next_action():
    state = apply_update(
        WorkingState(),
        {
            "add_constraints": ["c"],
            "upsert_tasks": [{"id": "a", "title": "A", "status": "done"}, {"id": "b", "title": "B"}],
            "next_action": "do b",
        },
        count_tokens=count,
    )
    log = InMemoryEventLog()
    log.append("s", [UserMessage(text="go"), WorkingStateUpdated(state=state.to_dict(), source="tool")], expected_seq=0)
    assert state_at(log.read("s")).next_action == "do b"
    log.append("s", [UserMessage(text="steer", steering=True)], expected_seq=2)
    assert state_at(log.read("s")).next_action == "do b"  # a steering note does not start a run
    log.append("s", [UserMessage(text="next request")], expected_seq=3)
    carried = state_at(log.read("s"))
    assert [t.id for t in carried.tasks] == ["b"] and carried.next_action is None and carried.constraints == ("c",)
