"""Budget settings: the absolute caps per class, and the few ratios that scale."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from contextwright.errors import UsageError


@dataclass(frozen=True, kw_only=True, slots=True)
class BudgetConfig:
    """Every budget number in one place. Caps are absolute token counts, not shares of the window.

    Only history grows with the window: a larger window is no reason for a longer
    policy, more tools or a bigger memory snapshot.
    """

    policy_tokens: int = 2_000
    framing_tokens: int = 600
    instructions_tokens: int = 4_000
    tools_count: int = 30
    tools_tokens: int = 6_000
    memory_items: int = 40
    memory_tokens: int = 1_500
    working_state_tokens: int = 1_000
    recall_tokens: int = 2_000
    runtime_tokens: int = 400
    """Date, time and other runtime metadata in the volatile tail."""
    nudge_tokens: int = 400
    tool_results_share: float = 0.25
    """Tool results may take at most this share of the body (B2): what a new result may take on arrival, and
    what visible results are pruned to keep under where it exceeds :attr:`tool_results_floor_tokens`."""
    tool_results_floor_tokens: int = 32_000
    """Visible tool results may grow to this many tokens (never more than the history) before older ones become
    pointers, where the share of the body (:attr:`tool_results_share`) allows less. The share still bounds every
    result on arrival (B2); this bounds what a session keeps showing, in absolute tokens, as B2's reason asks:
    attention degrades with the amount of competing content, not with its share of the window, and 32,000 is less
    than the share allows from a window of about 150k tokens up, where it changes nothing. Below that the share
    alone leaves less than one file view at 32k and a pass every few rounds at 64k. Every shared transcript,
    exact o200k counts, documented cache rules (``bench/evidence_bench.py --windows 32000,64000``): at 32k a
    floor of 16,000 took the share of the strings the assistant used that its request still showed from 92.0%
    (share alone) to 94.0%, the cache-read share from 86.1% to 89.0%, for 0.58x -> 0.61x the append-only
    ceiling's input cost; 32,000 there is capped by the history and changes nothing. At 64k, 16,000 -> 32,000
    took it from 95.7% to 98.4%, the cache-read share from 90.3% to 91.6% (fewer passes rewrite the cached
    history), for about 3% more input cost; at 96k, 98.1% -> 99.8%. 0 turns it off. Plans recorded before this
    setting existed read as 0, so their sessions rebuild as they were."""
    body_margin: float = 0.05
    """Safety margin on body estimates (the prefix is measured, the body estimated)."""
    soft_pressure: float = 0.80
    """Share of the window at which old tool results are batched into pointers. Late, because
    every pass rewrites the cached history after its first change: at 32k, 0.80 instead of 0.60
    raised the cache-read share from 0.864 to 0.884 on the shared transcripts (exact o200k counts,
    ``bench/cache_bench.py --quick``); at 200k nothing changed. Below the input limit of a small
    window it never binds, and relief waits for the body not to fit."""
    relief_target: float = 0.30
    """A relief pass sheds enough to bring the request down to this share of the window,
    so that passes are rare and batched rather than one per round. With the three newest rounds
    kept whole (:attr:`keep_recent_rounds`), 0.30 rather than 0.35 gives the same evidence recall
    at 32k (95.9%) for a higher cache-read share (89.0% -> 89.1% under the documented cache rules,
    90.0% -> 90.2% with no expiry) and a lower input cost; at 200k nothing changes."""
    relief_tool_results_target: float = 0.5
    """A pruning pass leaves at most this share of the tool-result budget visible. Half, not a quarter:
    the results a pass keeps are the newest, the ones the model reads next. Every shared transcript,
    exact o200k counts, documented cache rules: at 200k, the share of the strings the assistant used
    that its request still showed went from 95.3% to 99.1% for 1.006x -> 1.023x the append-only
    ceiling's input cost; at 32k from 81.6% to 81.9%, cache-read share 86.2% -> 86.0%."""
    expired_cache_relief: float = 0.60
    """Share of the input limit above which a request relieves pressure early when the provider's
    cache has expired since the previous request (a pause longer than its lifetime): that request
    writes its whole history again anyway, so a pass costs no cache read, and a later one would.
    At 32k, every shared transcript on their own timing: 87.37% -> 87.76% read under the documented
    cache rules (``bench/cache_bench.py``); 1 turns it off."""
    expired_results_relief: float = 0.75
    """Share of the tool results' high-water mark above which a request prunes them early when the
    provider's cache has expired since the previous request. With a large window the results reach
    their mark (B2) long before the request nears its input limit, and the pass the mark asks for
    rewrites a cached history; after a pause the request writes its history again anyway. Close to
    the mark, the pass is one the mark would soon ask for, so where a cache outlives the pause little
    is lost. 200k, every shared transcript, exact o200k counts: 0.991x -> 0.980x the append-only
    ceiling's input cost under the documented cache rules, 0.999x -> 0.995x with no expiry, evidence
    recall 100.0% (``bench/evidence_bench.py``); 0.6 saved more under the documented rules and cost
    more with no expiry. 1 turns it off."""
    keep_recent_rounds: int = 3
    """Tool exchanges of the most recent rounds that pruning never touches. An agent often works from
    an output a few calls after it arrived (it views a file, greps, then edits with the lines it read),
    so the newest three stay whole: at 32k, every shared transcript, exact o200k counts, the share of
    the strings the assistant used that its request still showed went from 94.2% (one round) to 95.9%,
    above the sliding window's 95.2%, at the same 0.59x the append-only ceiling's input cost and a
    cache-read share of 89.1% instead of 89.2% under the documented cache rules (with
    :attr:`relief_target` at 0.30; ``bench/evidence_bench.py --windows 32000``). Two rounds gave 95.3%,
    four 95.4%. At 200k nothing changes."""
    decision_points_tokens: int = 2_000
    """Session cap on the compressed-session layer (L2): beyond it the oldest decision points
    graduate to project memory as candidates and leave the context."""
    min_history_tokens: int = 1_024
    """A window that leaves less than this for history cannot host a session."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise UsageError(f"budget {f.name} must be a non-negative number, got {value!r}")
        for name in ("tool_results_share", "body_margin", "soft_pressure", "relief_target", "relief_tool_results_target"):
            if not 0 <= getattr(self, name) < 1:
                raise UsageError(f"budget {name} must be between 0 and 1, got {getattr(self, name)!r}")
        for name in ("expired_cache_relief", "expired_results_relief"):
            if getattr(self, name) > 1:
                raise UsageError(f"budget {name} must be between 0 and 1 (1: off), got {getattr(self, name)!r}")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values, for the plan event."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> BudgetConfig:
        """Inverse of :meth:`to_dict`; unknown keys are refused."""
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise UsageError(f"unknown budget setting(s): {', '.join(sorted(unknown))}")
        # A plan recorded before a setting existed ran without it: its value then, not today's default.
        return cls(**{**_BEFORE_THEY_EXISTED, **dict(data)})


_BEFORE_THEY_EXISTED: dict[str, Any] = {"tool_results_floor_tokens": 0, "expired_results_relief": 1.0}
"""Settings added after plans were first recorded, with the value a plan without them ran under."""
