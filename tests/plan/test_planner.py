"""P3–P6 and B3: plans pinned in the log, epochs that rotate only for cause, prefix caps."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from contextwright.budget.estimator import ExactEstimator
from contextwright.clock import FixedClock
from contextwright.errors import PlanError, PrefixOverBudget
from contextwright.events import ToolCall, ToolRevoked
from contextwright.items import AgentInstructions, MemoryFact, MemorySnapshot
from contextwright.log.sqlite import SQLiteEventLog
from contextwright.models import anthropic, openai
from contextwright.plan import BudgetConfig, ContextPlan, Prefix
from contextwright.planner import ContextPlanner, PrefixChanged
from contextwright.policy import ToolPolicy, denial_for

SECRET = b"s" * 32


def tool(name, description="A tool."):
    from contextwright.items import ToolSpec

    return ToolSpec(
        name=name, description=description, input_schema={"type": "object", "properties": {"path": {"type": "string"}}}
    )


def planner(estimator, **kw) -> ContextPlanner:
    return ContextPlanner("s1", estimator=estimator, secret=SECRET, **kw)


def test_first_plan_is_pinned_with_an_event_and_is_idempotent(prefix, estimator):
    p = planner(estimator)
    first = p.plan(anthropic("claude-sonnet-4-6"), prefix)
    assert first.changed and first.plan.epoch == 1 and first.plan.key == ("s1", 1)
    [event] = first.events
    assert event.type == "context.plan.created"
    assert ContextPlan.from_dict(event.payload.plan) == first.plan
    assert event.payload.prefix_sha256 == first.plan.prefix_sha256
    again = p.plan(anthropic("claude-sonnet-4-6"), prefix)
    assert not again.changed and again.plan is first.plan


def test_plan_round_trips_through_its_event(prefix, estimator):
    plan = planner(estimator).plan(anthropic("claude-sonnet-4-6"), prefix).plan
    assert ContextPlan.from_dict(plan.to_dict()) == plan


def test_prefix_tokens_are_measured_per_class(prefix, estimator):
    plan = planner(estimator).plan(anthropic("claude-sonnet-4-6"), prefix).plan
    assert set(plan.prefix_tokens) == {"policy", "framing", "instructions", "tools", "memory_snapshot"}
    assert all(v > 0 for v in plan.prefix_tokens.values())
    assert plan.measured_by.startswith("estimate:")


def test_prefix_is_measured_exactly_where_a_tokenizer_exists(prefix):
    pytest.importorskip("tiktoken", reason="exact token counts need the tiktoken extra")
    plan = planner(ExactEstimator()).plan(openai("gpt-5"), prefix).plan
    assert plan.measured_by.startswith("exact:")
    from contextwright.budget._tokenizers import exact_token_counter

    assert plan.prefix_tokens["policy"] == exact_token_counter("o200k_base")(prefix.policy.text)


def test_the_plan_survives_a_process_restart(prefix, estimator, tmp_path):
    db = tmp_path / "plans.db"
    with SQLiteEventLog(db, clock=FixedClock()) as log:
        decision = planner(estimator).plan(anthropic("claude-sonnet-4-6"), prefix)
        log.append("s1", list(decision.events), expected_seq=0)
    script = textwrap.dedent(
        f"""
        from contextwright.budget.estimator import HeuristicEstimator
        from contextwright.canonical import content_hash
        from contextwright.log.sqlite import SQLiteEventLog
        from contextwright.planner import ContextPlanner
        log = SQLiteEventLog({str(db)!r}, create=False)
        p = ContextPlanner.from_events("s1", log.read("s1"), estimator=HeuristicEstimator(), secret={SECRET!r})
        print(p.current.prefix_sha256, content_hash(p.current.to_dict()))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    from contextwright.canonical import content_hash

    assert out == [decision.plan.prefix_sha256, content_hash(decision.plan.to_dict())]


def test_rebuilding_selects_the_greatest_epoch(prefix, estimator):
    from contextwright.log import InMemoryEventLog

    log = InMemoryEventLog()
    p = planner(estimator)
    seq = 0
    for model in (anthropic("claude-sonnet-4-6"), anthropic("claude-opus-4-8"), openai("gpt-5")):
        seq = log.append("s1", list(p.plan(model, prefix).events), expected_seq=seq)[-1].seq
    # Events out of epoch order must not confuse the rebuild.
    events = list(reversed(log.read("s1")))
    rebuilt = ContextPlanner.from_events("s1", events, estimator=estimator, secret=SECRET)
    assert rebuilt.current.epoch == 3 and rebuilt.current.model.id == "gpt-5"


def test_a_model_switch_rotates_the_epoch_with_an_event(prefix, estimator):
    p = planner(estimator)
    first = p.plan(anthropic("claude-sonnet-4-6"), prefix).plan
    switched = p.plan(openai("gpt-5"), prefix)
    assert switched.plan.epoch == 2
    [event] = switched.events
    assert event.type == "context.epoch.rotated"
    assert event.payload.reason == "model_changed"
    assert event.payload.previous_prefix_sha256 == first.prefix_sha256
    assert event.payload.plan["model"]["id"] == "gpt-5"


def test_revoking_a_tool_leaves_the_prefix_alone_and_denies_the_call(prefix, estimator):
    p = planner(estimator)
    plan = p.plan(anthropic("claude-sonnet-4-6"), prefix).plan
    from contextwright.log import InMemoryEventLog

    log = InMemoryEventLog()
    log.append("s1", [ToolRevoked(tool="deploy_preview", reason="credentials expired")], expected_seq=0)
    # The plan does not change: same epoch, same hash, the tool still advertised.
    again = p.plan(anthropic("claude-sonnet-4-6"), prefix)
    assert not again.changed and again.plan.prefix_sha256 == plan.prefix_sha256
    assert "deploy_preview" in again.plan.prefix.tool_names()
    policy = ToolPolicy.from_events(log.read("s1"))
    denial = denial_for(ToolCall(id="c9", name="deploy_preview", arguments={}), policy)
    assert denial is not None and denial.denied and denial.is_error and denial.call_id == "c9"
    assert denial_for(ToolCall(id="c10", name="run_tests", arguments={}), policy) is None


def test_forced_immediate_revocation_rotates_and_drops_the_tool(prefix, estimator):
    p = planner(estimator)
    first = p.plan(anthropic("claude-sonnet-4-6"), prefix).plan
    forced = p.force_revocation("deploy_preview")
    assert forced.plan.epoch == 2 and forced.events[0].payload.reason == "forced_revocation"
    assert "deploy_preview" not in forced.plan.prefix.tool_names()
    assert forced.plan.prefix_sha256 != first.prefix_sha256


def test_a_changed_prefix_needs_an_explicit_edit(prefix, estimator):
    p = planner(estimator)
    p.plan(anthropic("claude-sonnet-4-6"), prefix)
    edited = Prefix(
        policy=prefix.policy,
        framing=prefix.framing,
        instructions=AgentInstructions(text="New rules."),
        tools=prefix.tools,
        memory=prefix.memory,
    )
    with pytest.raises(PrefixChanged):
        p.plan(anthropic("claude-sonnet-4-6"), edited)
    decision = p.edit_prefix(edited)
    assert decision.plan.epoch == 2 and decision.events[0].payload.reason == "prefix_edited"


def test_memory_written_later_does_not_touch_the_prefix(prefix, estimator):
    # The snapshot is what was read at session open; later memory events are not part of the plan.
    p = planner(estimator)
    plan = p.plan(anthropic("claude-sonnet-4-6"), prefix).plan
    assert p.plan(anthropic("claude-sonnet-4-6"), prefix).plan.prefix_sha256 == plan.prefix_sha256


@pytest.mark.parametrize(
    ("change", "budget_class", "unit"),
    [
        (lambda pre: {"instructions": AgentInstructions(text="Follow the style guide. " * 1200)}, "instructions", "tokens"),
        (lambda pre: {"tools": tuple(tool(f"t{i}") for i in range(31))}, "tools", "tools"),
        (lambda pre: {"tools": tuple(tool(f"t{i}", "x" * 3000) for i in range(12))}, "tools", "tokens"),
        (
            lambda pre: {"memory": MemorySnapshot(facts=tuple(MemoryFact(id=f"m{i}", text="fact") for i in range(41)))},
            "memory_snapshot",
            "items",
        ),
        (
            lambda pre: {
                "memory": MemorySnapshot(facts=tuple(MemoryFact(id=f"m{i}", text="a long fact " * 30) for i in range(20)))
            },
            "memory_snapshot",
            "tokens",
        ),
    ],
)
def test_a_prefix_over_its_caps_fails_to_open_naming_the_class(prefix, estimator, change, budget_class, unit):
    fields = {
        "policy": prefix.policy,
        "framing": prefix.framing,
        "instructions": prefix.instructions,
        "tools": prefix.tools,
        "memory": prefix.memory,
    }
    fields.update(change(prefix))
    p = planner(estimator)
    with pytest.raises(PrefixOverBudget) as info:
        p.plan(anthropic("claude-sonnet-4-6"), Prefix(**fields))
    assert info.value.budget_class == budget_class and info.value.unit == unit
    assert info.value.size > info.value.cap
    assert str(info.value).startswith(f"{budget_class} is ")
    assert p.current is None  # nothing was pinned


def test_caps_are_configurable(prefix, estimator):
    p = planner(estimator, budgets=BudgetConfig(instructions_tokens=5))
    with pytest.raises(PrefixOverBudget, match="instructions"):
        p.plan(anthropic("claude-sonnet-4-6"), prefix)


def test_a_plan_of_another_session_in_the_log_is_refused(prefix, estimator):
    from contextwright.errors import SessionInvariantViolated
    from contextwright.log import InMemoryEventLog
    from contextwright.log._invariants import IndexChanges

    class LogWithoutRules(InMemoryEventLog):
        """A log as stores written before the log checked session rules may hold it."""

        _check_rules = staticmethod(lambda session_id, events, reader, *, first_seq: IndexChanges())

    other = ContextPlanner("other", estimator=estimator, secret=SECRET).plan(anthropic("claude-sonnet-4-6"), prefix)
    # The log refuses another session's plan at the door now ...
    with pytest.raises(SessionInvariantViolated):
        InMemoryEventLog().append("s1", list(other.events), expected_seq=0)
    # ... and the planner still refuses one that a log holds.
    log = LogWithoutRules()
    log.append("s1", list(other.events), expected_seq=0)
    with pytest.raises(PlanError):
        ContextPlanner.from_events("s1", log.read("s1"), estimator=estimator, secret=SECRET)
