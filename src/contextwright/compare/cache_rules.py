"""Which prompt-cache rules a comparison's simulator applies.

Two named sets:

``documented`` (the default)
    The provider's rules as the research notes give them: the minimum cacheable length
    in effect on each request's date (or on ``rules_on``), 5-minute lifetimes from the
    transcript's own timing, 20 positions of lookback per breakpoint.
``lenient``
    No minimum cacheable length and no expiry; lookback and billing unchanged. Not the
    provider's behaviour: it is the rule set under which the append-only ceiling reads
    what issue 15's outside measurement reports for it (93.4% at 200k), so figures taken
    with it can be set beside that measurement's.
``no_minimum``, ``no_expiry``
    The documented rules less one of the two: run both to see which of them a gap between
    ``documented`` and ``lenient`` comes from.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Final

from contextwright.errors import UsageError
from contextwright.pricing.cache_sim import AnthropicCacheSimulator, CountTokens

__all__ = ["CACHE_RULES", "CacheRules", "cache_rules_named"]


@dataclass(frozen=True, kw_only=True, slots=True)
class CacheRules:
    """The simulator settings of one comparison."""

    name: str = "documented"
    """How reports name the set."""
    rules_on: date | None = None
    """One date whose minimum cacheable length applies to every request (None: each request's own)."""
    min_cacheable_tokens: int | None = None
    """A minimum for every request instead of the dated table (0: none)."""
    expiry: bool = True
    """False keeps every cache entry for good."""

    def simulator(self, count_tokens: CountTokens) -> AnthropicCacheSimulator:
        """A fresh simulator with these rules; window checks are left to the comparison."""
        return AnthropicCacheSimulator(
            count_tokens=count_tokens,
            check_context_window=False,
            rules_on=self.rules_on,
            min_cacheable_tokens=self.min_cacheable_tokens,
            expiry=self.expiry,
        )


CACHE_RULES: Final[dict[str, CacheRules]] = {
    "documented": CacheRules(),
    "lenient": CacheRules(name="lenient", min_cacheable_tokens=0, expiry=False),
    "no_minimum": CacheRules(name="no_minimum", min_cacheable_tokens=0),
    "no_expiry": CacheRules(name="no_expiry", expiry=False),
}
"""The named rule sets, default first."""


def cache_rules_named(name: str, *, rules_on: date | None = None) -> CacheRules:
    """The rule set ``name``; ``rules_on`` dates the documented minimum (the lenient set has none)."""
    rules = CACHE_RULES.get(name)
    if rules is None:
        raise UsageError(f"unknown cache rules {name!r}; choose from {', '.join(CACHE_RULES)}")
    if rules_on is None:
        return rules
    if rules.min_cacheable_tokens is not None:
        raise UsageError(f"the {name} cache rules have no minimum to date; leave out the date")
    return CacheRules(name=rules.name, rules_on=rules_on, expiry=rules.expiry)
