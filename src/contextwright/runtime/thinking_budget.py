"""Anthropic's rule for a manual thinking budget, checked before anything is sent.

With ``thinking={"type": "enabled", "budget_tokens": N}`` the API wants N of at
least 1,024 and below ``max_tokens`` (``anthropic/types/thinking_config_enabled_param.py``:
"Must be ≥1024 and less than `max_tokens`"); anything else is a 400 from the API.
The engine sets ``max_tokens`` from the model's output reserve (and the Anthropic
middleware caps the caller's at it), so a budget that fit the caller's own
``max_tokens`` can stop fitting: that is refused here with the numbers and the fix.
``adaptive`` and ``disabled`` thinking have no budget and pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextwright.runtime.errors import ThinkingBudgetInvalid

MINIMUM_BUDGET = 1_024
"""The smallest ``budget_tokens`` the API accepts."""


def check_thinking_budget(thinking: Any, *, max_tokens: int, model: str) -> None:
    """Raise :class:`ThinkingBudgetInvalid` when ``thinking`` asks for a budget the API refuses at ``max_tokens``."""
    if not isinstance(thinking, Mapping) or thinking.get("type") != "enabled":
        return
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or isinstance(budget, bool):
        raise ThinkingBudgetInvalid(
            f"thinking.budget_tokens must be an integer, got {budget!r}", model=model, budget_tokens=budget
        )
    if budget < MINIMUM_BUDGET:
        raise ThinkingBudgetInvalid(
            f"thinking.budget_tokens is {budget:,}; Anthropic accepts {MINIMUM_BUDGET:,} or more",
            model=model,
            budget_tokens=budget,
        )
    if budget >= max_tokens:
        raise ThinkingBudgetInvalid(
            f"thinking.budget_tokens {budget:,} must be below max_tokens, which the engine sets to {max_tokens:,} "
            f"(the output reserve of {model}): lower the budget or raise the model's output_reserve",
            model=model,
            budget_tokens=budget,
            max_tokens=max_tokens,
        )
