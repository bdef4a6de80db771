"""Context plans: the frozen decisions of one (session, epoch), and the budgets they carry.

The planner that makes them is :mod:`contextwright.planner`, one layer up: it renders the
prefix with the builder, and the builder reads these values, so the two cannot share a
package without a cycle between packages.
"""

from contextwright.plan.budgets import BudgetConfig
from contextwright.plan.plan import PREFIX_CLASSES, ContextPlan, Prefix

__all__ = ["PREFIX_CLASSES", "BudgetConfig", "ContextPlan", "Prefix"]
