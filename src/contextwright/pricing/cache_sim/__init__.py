"""Offline prompt-cache simulators for Anthropic Messages, OpenAI Chat/Responses and Gemini generateContent.

Feed a simulator the exact request bodies of a session with their start times and it
predicts, per request, the cache-read, cache-write (5m/1h) and uncached input tokens
and their cost from the dated price table, then sums the session: the token-weighted
cache-read share and the total cost. No network is used. The rules followed and the
assumptions made are listed in :mod:`.anthropic`, :mod:`.openai` and :mod:`.gemini`.

Example::

    sim = AnthropicCacheSimulator(count_tokens=my_counter)
    summary = sim.run([(t0, body0), (t1, body1)])
    summary.cache_read_share, summary.cost
"""

from typing import TYPE_CHECKING

from contextwright._lazy import lazy_exports
from contextwright.pricing.cache_sim.base import (
    CountTokens,
    PriceLookup,
    SimRequest,
    SimulatedRequest,
    SimulationSummary,
    UnsupportedSimulation,
    summarize,
)

if TYPE_CHECKING:
    from contextwright.pricing.cache_sim.anthropic import (
        ANTHROPIC_MODELS,
        AnthropicCacheSimulator,
        AnthropicModelRules,
        RenderedBlock,
        anthropic_rules_for,
        render_anthropic_blocks,
    )
    from contextwright.pricing.cache_sim.gemini import (
        GeminiCacheSimulator,
        GeminiRenderedBlock,
        SimulatedCache,
        render_gemini_blocks,
    )
    from contextwright.pricing.cache_sim.openai import (
        OpenAICacheSimulator,
        OpenAIRenderedBlock,
        openai_regime,
        render_openai_blocks,
    )

# The simulators are loaded on first use: a session that only prices recorded usage (the
# replay command's summaries) reads the base module alone.
_LAZY = {
    **dict.fromkeys(
        (
            "ANTHROPIC_MODELS", "AnthropicCacheSimulator", "AnthropicModelRules", "RenderedBlock",
            "anthropic_rules_for", "render_anthropic_blocks",
        ),
        "contextwright.pricing.cache_sim.anthropic",
    ),
    **dict.fromkeys(
        ("GeminiCacheSimulator", "GeminiRenderedBlock", "SimulatedCache", "render_gemini_blocks"),
        "contextwright.pricing.cache_sim.gemini",
    ),
    **dict.fromkeys(
        ("OpenAICacheSimulator", "OpenAIRenderedBlock", "openai_regime", "render_openai_blocks"),
        "contextwright.pricing.cache_sim.openai",
    ),
}  # fmt: skip


__getattr__ = lazy_exports(__name__, _LAZY, globals())


__all__ = [
    "ANTHROPIC_MODELS",
    "AnthropicCacheSimulator",
    "AnthropicModelRules",
    "CountTokens",
    "GeminiCacheSimulator",
    "GeminiRenderedBlock",
    "OpenAICacheSimulator",
    "OpenAIRenderedBlock",
    "PriceLookup",
    "RenderedBlock",
    "SimRequest",
    "SimulatedCache",
    "SimulatedRequest",
    "SimulationSummary",
    "UnsupportedSimulation",
    "anthropic_rules_for",
    "openai_regime",
    "render_anthropic_blocks",
    "render_gemini_blocks",
    "render_openai_blocks",
    "summarize",
]
