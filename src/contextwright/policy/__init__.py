"""Call-time tool policy: revocation without touching the frozen prefix."""

from contextwright.policy.tools import ToolPolicy, denial_for

__all__ = ["ToolPolicy", "denial_for"]
