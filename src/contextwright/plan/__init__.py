"""Context plans: the frozen decisions of one (session, epoch), and the planner that makes them."""

from contextwright.plan.budgets import BudgetConfig
from contextwright.plan.plan import PREFIX_CLASSES, ContextPlan, Prefix

__all__ = ["PREFIX_CLASSES", "BudgetConfig", "ContextPlan", "Prefix"]
