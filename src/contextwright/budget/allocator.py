"""The budget allocator: pure arithmetic from a plan to an :class:`Allocation`.

Order of operations:

1. The output reserve comes off the window first; it is never allocated.
2. The prefix (measured once, at plan time) comes off next.
3. What remains is the body. Estimates of the body are inflated by the safety
   margin before they are compared with it.
4. Fixed, absolute caps for working state, in-turn recall, runtime metadata and
   nudges; a new tool result at most a share of the body (B2), and visible results
   together the share or an absolute floor, whichever is more; history takes the rest,
   which is the only part that grows with the window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from contextwright.errors import PlanError
from contextwright.plan.plan import ContextPlan

PressureState = Literal["none", "soft", "hard"]


class WindowTooSmall(PlanError):
    """The window cannot hold the output reserve, the prefix and a minimal history."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Allocation:
    """Token limits for one request under one plan."""

    context_window: int
    output_reserve: int
    input_limit: int
    """Window minus output reserve: the most input a request may carry."""
    prefix_tokens: int
    body_limit: int
    """Input limit minus the prefix."""
    body_margin: float
    working_state: int
    recall: int
    runtime: int
    nudges: int
    tool_results: int
    """What a new tool result may take on arrival, beyond its exchange's earlier results (the share, B2)."""
    tool_results_high: int
    """What visible tool results may hold before a pruning pass makes older ones pointers: the share (B2), or a
    floor in absolute tokens (:attr:`~contextwright.plan.budgets.BudgetConfig.tool_results_floor_tokens`)
    where the share is smaller."""
    history: int
    """The most the conversation (history, tool pairs and the capped classes together) may use."""
    soft_pressure_tokens: int
    """Input size at which soft pressure starts (a share of the window)."""

    def with_margin(self, body_estimate: int) -> int:
        """A body estimate inflated by the safety margin (rounded up)."""
        return math.ceil(body_estimate * (1 + self.body_margin))

    def fits(self, body_estimate: int) -> bool:
        """True when the body, with its margin, fits under the body limit."""
        return self.with_margin(body_estimate) <= self.body_limit

    def pressure(self, body_estimate: int) -> PressureState:
        """Pressure for a request whose body is estimated at ``body_estimate`` tokens."""
        if not self.fits(body_estimate):
            return "hard"
        if self.prefix_tokens + self.with_margin(body_estimate) >= self.soft_pressure_tokens:
            return "soft"
        return "none"


def allocate(plan: ContextPlan) -> Allocation:
    """Split the plan's window into limits per class."""
    budgets = plan.budgets
    window = plan.model.context_window
    reserve = plan.model.output_reserve
    input_limit = window - reserve
    prefix = plan.prefix_token_total
    body = input_limit - prefix
    # The fixed classes are caps, not reservations: whatever they leave unused, history
    # may use, and the builder checks the whole body against the limit.
    history = math.floor(body / (1 + budgets.body_margin))
    if history < budgets.min_history_tokens:
        raise WindowTooSmall(
            f"a {window:,}-token window minus the {reserve:,}-token output reserve and the {prefix:,}-token prefix "
            f"leaves {max(history, 0):,} tokens for the conversation; at least {budgets.min_history_tokens:,} are needed",
            session_id=plan.session_id,
            window=window,
        )
    return Allocation(
        context_window=window,
        output_reserve=reserve,
        input_limit=input_limit,
        prefix_tokens=prefix,
        body_limit=body,
        body_margin=budgets.body_margin,
        working_state=budgets.working_state_tokens,
        recall=budgets.recall_tokens,
        runtime=budgets.runtime_tokens,
        nudges=budgets.nudge_tokens,
        tool_results=math.floor(body * budgets.tool_results_share),
        tool_results_high=max(math.floor(body * budgets.tool_results_share), min(history, budgets.tool_results_floor_tokens)),
        history=history,
        soft_pressure_tokens=math.floor(window * budgets.soft_pressure),
    )
