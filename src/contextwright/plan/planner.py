"""Former home of the planner, which now lives in :mod:`contextwright.planner`.

The runtime still imports it from here; once it imports :mod:`contextwright.planner`
this module goes, and so does the one exception it needs in the layer contracts.
"""

from contextwright.planner import ContextPlanner, PlanDecision, PrefixChanged

__all__ = ["ContextPlanner", "PlanDecision", "PrefixChanged"]
