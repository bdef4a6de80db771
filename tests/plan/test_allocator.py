"""B1–B2: reserve first, absolute caps, only history scales with the window."""

from __future__ import annotations

import pytest

from contextwright.budget.allocator import WindowTooSmall, allocate
from contextwright.models import anthropic, with_window
from contextwright.planner import ContextPlanner

SECRET = b"s" * 32


def plan_for(prefix, estimator, window):
    model = with_window(anthropic("claude-sonnet-4-6"), window)
    return ContextPlanner("s", estimator=estimator, secret=SECRET).plan(model, prefix).plan


def test_output_reserve_comes_off_first(prefix, estimator):
    plan = plan_for(prefix, estimator, 200_000)
    a = allocate(plan)
    assert a.input_limit == 200_000 - plan.model.output_reserve
    assert a.body_limit == a.input_limit - plan.prefix_token_total
    # Nothing is allocated out of the reserve.
    assert a.prefix_tokens + a.with_margin(a.history) <= a.input_limit + 2


def test_only_history_and_the_tool_result_share_scale_with_the_window(prefix, estimator):
    small, large = allocate(plan_for(prefix, estimator, 32_000)), allocate(plan_for(prefix, estimator, 1_000_000))
    for name in ("working_state", "recall", "runtime", "nudges"):
        assert getattr(small, name) == getattr(large, name)
    assert (small.working_state, small.recall) == (1_000, 2_000)
    assert large.history > 20 * small.history
    assert small.tool_results == int(small.body_limit * 0.25)


def test_visible_tool_results_hold_the_share_or_the_absolute_floor(prefix, estimator):
    from contextwright.plan import BudgetConfig

    tiny, small = allocate(plan_for(prefix, estimator, 32_000)), allocate(plan_for(prefix, estimator, 64_000))
    large = allocate(plan_for(prefix, estimator, 200_000))
    # Every result on arrival is held to the share at every window (B2: 25% of the body).
    assert small.tool_results == int(small.body_limit * 0.25)
    assert large.tool_results == int(large.body_limit * 0.25)
    # What stays visible: at 64k the absolute floor (32,000) where the share allows less; at 32k the floor
    # stands above the history, which holds the mark; at 200k the share.
    assert small.tool_results < 32_000 == small.tool_results_high <= small.history
    assert tiny.tool_results < tiny.tool_results_high == tiny.history < 32_000
    assert large.tool_results_high == large.tool_results > 32_000
    model = with_window(anthropic("claude-sonnet-4-6"), 32_000)

    def with_floor(floor: int):
        planner = ContextPlanner("s", estimator=estimator, secret=SECRET, budgets=BudgetConfig(tool_results_floor_tokens=floor))
        return allocate(planner.plan(model, prefix).plan)

    # Off (0): the share is the mark.
    off = with_floor(0)
    assert off.tool_results_high == off.tool_results
    # Never more than the history holds, however large the floor.
    capped = with_floor(10**6)
    assert capped.tool_results_high == capped.history


def test_a_plan_recorded_before_the_floor_existed_reads_without_it():
    from contextwright.plan import BudgetConfig

    recorded = BudgetConfig().to_dict()
    del recorded["tool_results_floor_tokens"]
    assert BudgetConfig.from_dict(recorded).tool_results_floor_tokens == 0
    assert BudgetConfig.from_dict(BudgetConfig().to_dict()) == BudgetConfig()


def test_a_plan_recorded_before_the_expired_results_level_existed_runs_without_it():
    from contextwright.plan import BudgetConfig

    recorded = BudgetConfig().to_dict()
    del recorded["expired_results_relief"]
    assert BudgetConfig.from_dict(recorded).expired_results_relief == 1.0


def test_margin_and_pressure(prefix, estimator):
    a = allocate(plan_for(prefix, estimator, 100_000))
    assert a.with_margin(1000) == 1050
    assert a.pressure(100) == "none"
    assert a.pressure(int(0.61 * 100_000)) == "none"  # soft pressure starts late (BudgetConfig.soft_pressure)
    assert a.pressure(int((a.soft_pressure_tokens - a.prefix_tokens) / 1.05) + 1) == "soft"
    assert a.pressure(a.body_limit) == "hard"  # the margin pushes it over
    assert a.fits(int(a.body_limit / 1.05) - 1)


def test_a_window_too_small_for_the_prefix_fails_with_the_numbers(prefix, estimator):
    from contextwright.plan import BudgetConfig

    model = with_window(anthropic("claude-sonnet-4-6"), 8_000)
    planner = ContextPlanner("s", estimator=estimator, secret=SECRET, budgets=BudgetConfig(min_history_tokens=7_000))
    with pytest.raises(WindowTooSmall) as info:
        allocate(planner.plan(model, prefix).plan)
    assert "8,000-token window" in str(info.value) and "7,000 are needed" in str(info.value)
