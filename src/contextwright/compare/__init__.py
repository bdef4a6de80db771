"""Compare Contextwright with common context strategies on real transcripts, offline.

Example::

    from contextwright.compare import compare, comparison_rows

    rows = compare(transcripts, window=32_000)
    comparison_rows(rows)   # for contextwright.report.html's comparison table

See :mod:`contextwright.compare.strategies` for the strategies and what is measured.
"""

from typing import TYPE_CHECKING

from contextwright._lazy import lazy_exports

if TYPE_CHECKING:
    from contextwright.compare.cache_rules import CACHE_RULES, CacheRules, cache_rules_named
    from contextwright.compare.engine_settings import EngineSettings
    from contextwright.compare.strategies import (
        CEILING,
        COUNTINGS,
        DEFAULT_MODEL,
        SLIDE_TO,
        STRATEGIES,
        SentRequest,
        StrategyResult,
        TokenCounter,
        aggregate,
        baseline_requests,
        compare,
        compare_transcript,
        compare_windows,
        comparison_rows,
        counted_usage,
        engine_requests,
        exact_counting_available,
        sliding_window_requests,
    )
    from contextwright.compare.timeline import MODEL_CALL_PACE, ModelCall, Timeline, timeline_of

# The strategies import most of the engine: a caller that only wants the nonces (the replay
# command) does not load them, so the names below are imported on first use.
_LAZY = {
    **dict.fromkeys(
        (
            "CEILING", "COUNTINGS", "DEFAULT_MODEL", "SLIDE_TO", "STRATEGIES", "SentRequest", "StrategyResult",
            "TokenCounter", "aggregate", "baseline_requests", "compare", "compare_transcript", "compare_windows",
            "comparison_rows", "counted_usage", "engine_requests", "exact_counting_available", "sliding_window_requests",
        ),
        "contextwright.compare.strategies",
    ),
    **dict.fromkeys(("CACHE_RULES", "CacheRules", "cache_rules_named"), "contextwright.compare.cache_rules"),
    "EngineSettings": "contextwright.compare.engine_settings",
    **dict.fromkeys(("MODEL_CALL_PACE", "ModelCall", "Timeline", "timeline_of"), "contextwright.compare.timeline"),
}  # fmt: skip


__getattr__ = lazy_exports(__name__, _LAZY, globals())


__all__ = [
    "CACHE_RULES",
    "CEILING",
    "COUNTINGS",
    "DEFAULT_MODEL",
    "MODEL_CALL_PACE",
    "SLIDE_TO",
    "STRATEGIES",
    "CacheRules",
    "EngineSettings",
    "ModelCall",
    "SentRequest",
    "StrategyResult",
    "Timeline",
    "TokenCounter",
    "aggregate",
    "baseline_requests",
    "cache_rules_named",
    "compare",
    "compare_transcript",
    "compare_windows",
    "comparison_rows",
    "counted_usage",
    "engine_requests",
    "exact_counting_available",
    "sliding_window_requests",
    "timeline_of",
]
