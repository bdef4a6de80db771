"""Deterministic per-kind compressors for tool outputs (test runners, builds, git, search, JSON...).

``compress(text, kind="auto", budget_tokens="auto", exit_code=..., pointer=...)`` keeps
every failure, error and summary line verbatim, drops noise, groups and folds
repeats, truncates to the budget with explicit omission markers, and never returns
anything longer than its input.
"""

from contextwright.tool_outputs.compressors.counting import calibrated_token_count
from contextwright.tool_outputs.compressors.detect import detect_kind
from contextwright.tool_outputs.compressors.normalize import normalize, strip_ansi
from contextwright.tool_outputs.compressors.pipeline import (
    KIND_ALIASES,
    KINDS,
    Compressed,
    auto_budget,
    compress,
    default_token_count,
)
from contextwright.tool_outputs.compressors.render import LINE_MARKER_RE

__all__ = [
    "KINDS",
    "KIND_ALIASES",
    "LINE_MARKER_RE",
    "Compressed",
    "auto_budget",
    "calibrated_token_count",
    "compress",
    "default_token_count",
    "detect_kind",
    "normalize",
    "strip_ansi",
]
