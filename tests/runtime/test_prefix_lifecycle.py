"""B3, P4 and P5 at the session: a prefix over its caps never opens; an explicit edit starts an epoch."""

from __future__ import annotations

import pytest

from contextwright.budget.estimator import HeuristicEstimator
from contextwright.errors import PrefixOverBudget, UsageError
from contextwright.events import AssistantMessage
from contextwright.planner import PrefixChanged
from contextwright.runtime.engine import Engine
from contextwright.runtime.spec import AgentSpec
from contextwright.testing.fakes import TEST_SECRET, FakeClock, open_session, sample_agent, sample_model


def test_a_prefix_over_its_caps_fails_to_open_before_anything_is_logged():
    engine, _, _ = open_session()
    huge = AgentSpec(policy="Be careful. " * 10, instructions="Follow the style guide to the letter. " * 2_000)
    with pytest.raises(PrefixOverBudget) as info:
        engine.session("too-big", agent=huge, model=sample_model())
    assert "instructions" in str(info.value)
    assert engine.log.last_seq("too-big") == 0


def test_an_explicit_prefix_edit_starts_a_new_epoch_with_its_reason():
    _, session, _ = open_session()
    session.user("Fix the billing tests.")
    first = session.next_request()
    session.adapter.record_assistant(AssistantMessage(text="Done."))
    stricter = AgentSpec(
        policy=sample_agent().policy,
        instructions="Run the tests before you claim that something works. Never touch the migrations folder.",
        tools=list(sample_agent().tools),
    )
    plan = session.setup.edit_prefix(stricter, note="operator: migrations are frozen this week")
    assert plan is not None and plan.epoch == first.plan.epoch + 1
    session.user("Now the export.")
    second = session.next_request()
    assert second.plan.epoch == plan.epoch and second.prefix_sha256 != first.prefix_sha256
    assert "Never touch the migrations folder." in str(second.render("anthropic")["system"])
    rotated = [e.payload for e in session.history.events if e.type == "context.epoch.rotated"]
    assert [(r.reason, r.note) for r in rotated] == [("prefix_edited", "operator: migrations are frozen this week")]


def test_a_silent_change_of_the_agent_still_refuses_and_points_at_the_way_forward():
    engine, session, _ = open_session()
    session.user("Fix the billing tests.")
    session.next_request()
    session.adapter.record_assistant(AssistantMessage(text="Done."))
    changed = AgentSpec(policy="Another policy entirely.", instructions="x", tools=list(sample_agent().tools))
    reopened = engine.session("s1", agent=changed, model=sample_model())
    reopened.user("Next.")
    with pytest.raises(PrefixChanged, match="edit_prefix"):
        reopened.next_request()


def test_an_edit_needs_a_reason_and_an_edit_before_the_first_request_is_checked_against_the_caps():
    _, session, _ = open_session()
    with pytest.raises(UsageError, match="why"):
        session.setup.edit_prefix(sample_agent(), note=" ")
    with pytest.raises(PrefixOverBudget):
        session.setup.edit_prefix(AgentSpec(policy="p", instructions="word " * 20_000), note="too much")
    assert session.setup.edit_prefix(sample_agent(), note="same agent, before any request") is None


def test_a_supplied_empty_estimator_is_kept_not_replaced():
    # An estimator with no memoized entries has length 0 and is falsy; it must still be the one used.
    estimator = HeuristicEstimator()
    engine = Engine.open("memory://", clock=FakeClock("2026-03-01T09:00:00Z"), secret=TEST_SECRET, estimator=estimator)
    assert engine.estimator is estimator
    session = engine.session("s", agent=sample_agent(), model=sample_model())
    assert session.setup.estimator is estimator


def test_the_working_state_budget_is_the_one_configured():
    from contextwright.events import ToolCall
    from contextwright.plan.budgets import BudgetConfig

    engine, _, _ = open_session()
    session = engine.session("tight", agent=sample_agent(), model=sample_model(), budgets=BudgetConfig(working_state_tokens=40))
    session.user("Plan the migration.")
    session.next_request()
    facts = [f"Fact number {i} about the billing migration and its rollout plan." for i in range(6)]
    session.adapter.record_assistant(
        AssistantMessage(
            text="", tool_calls=(ToolCall(id="w", name="context_update_working_state", arguments={"add_facts": facts}),)
        )
    )
    result = [e.payload for e in session.history.events if e.type == "tool.result"][-1]
    # 40 tokens, not the default 1,000: the write is refused and says so to the model.
    assert result.is_error and "Not saved" in result.output
    assert session.working_state.facts == ()
