"""Why a request missed the prompt cache: every uncached input token given one named cause.

A request's *uncached* input is everything it did not read from the cache: ordinary input
plus the tokens it wrote to a cache entry (a write is paid because the prefix was not
there to read). :func:`attribute` splits that number among the causes below, and the
parts add up to it exactly: the prompt is cut, along the token axis, into consecutive
stretches from the end of the cache read to the end of the prompt, and each stretch gets
one cause.

The fixed list of causes (:data:`CAUSES`, documented in ``docs/cache-misses.md``):

``new_content``
    Content the previous request did not carry: the appended turn, tool results, the
    refreshed tail, and the whole first request of a session.
``relief_pass``
    A relief pass of the engine (tool results shown as pointers, recall dropped, a layer
    truncated) rewrote history the previous request had cached.
``compaction``
    A compaction replaced the history with its summary.
``prefix_epoch``
    The engine started a new prefix epoch (model, TTL or prefix change, revocation).
``ttl_expired``
    The entry holding this prefix outlived its lifetime: the gap since the previous
    request is at least its TTL (the detail gives the gap and the TTL).
``in_flight``
    The entry was being written by a request still in flight (requests sent in parallel,
    for example after parallel tool calls): it was not readable yet.
``below_minimum``
    The shared prefix, or the marker that would have cached it, is under the provider's
    minimum cacheable length.
``beyond_lookback``
    An entry exists, but no breakpoint of this request reaches it within the provider's
    lookback window (Anthropic: 20 blocks).
``breakpoint_placement``
    The prefix was shared with the previous request but no entry ended there: no marker
    covered it, or the provider's cache granularity (OpenAI's 128-token steps) cut it.
``system_changed``, ``tools_changed``, ``thinking_stripped``, ``message_edited``
    The client changed the system text, the tool array, removed earlier thinking blocks,
    or edited an earlier message (the first difference between the two bodies).
``model_switch``, ``effort_switch``
    The model changed, or the thinking / reasoning effort settings did.
``settings_changed``
    Another setting that is part of the cache key changed (``tool_choice``, speed,
    images or citations on Anthropic; the hidden settings, ``prompt_cache_key`` or the
    workspace on both).

How a request is split, against the request before it in the same session:

1. The tokens up to the predicted cache read are cached; the rest is uncached.
2. The two prompts are compared block by block (prefix hashes, settings included). The
   shared prefix that was not read is split by what happened to its entry: expired,
   in flight, out of the lookback, under the minimum, or never written there.
3. When the first difference lies before the last block the previous request put a
   cache marker on, something *changed* the history: the stretch from the difference to
   the last block the two requests still have in common goes to what changed it (an
   engine event given in ``changes``, else what differs between the bodies). What comes
   after is ``new_content``. A difference after the previous request's last marker only
   replaced its uncached tail, so it is ``new_content`` too.

Predicted against reported: :func:`check_usage` compares the simulator's cache-read share
with the provider's and flags a difference over :data:`TOLERANCE` (10 percentage points
of the request's input); token counts here come from a local tokenizer over the canonical
JSON of each block, so a small gap is expected.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final, Literal, get_args

from contextwright.errors import UsageError
from contextwright.pricing.cache_sim.anthropic import (
    LOOKBACK,
    AnthropicCacheSimulator,
    _breakpoints,
)
from contextwright.pricing.cache_sim.base import SimRequest, SimulatedRequest
from contextwright.pricing.cache_sim.openai import _HIDDEN_SETTINGS as _OPENAI_HIDDEN
from contextwright.pricing.cache_sim.openai import (
    MIN_CACHED,
    OpenAICacheSimulator,
    openai_regime,
)
from contextwright.pricing.prices import normalize_model_id
from contextwright.providers.usage import Usage

__all__ = [
    "CAUSES",
    "ENGINE_CHANGES",
    "TOLERANCE",
    "Attribution",
    "Cause",
    "Change",
    "Observed",
    "Stretch",
    "UsageCheck",
    "attribute",
    "attribute_requests",
    "check_usage",
    "observe",
]

Cause = Literal[
    "new_content",
    "relief_pass",
    "compaction",
    "prefix_epoch",
    "ttl_expired",
    "in_flight",
    "below_minimum",
    "beyond_lookback",
    "breakpoint_placement",
    # What a client changed between two of its requests, last (telemetry.misses reads them from here on).
    "system_changed",
    "tools_changed",
    "thinking_stripped",
    "message_edited",
    "model_switch",
    "effort_switch",
    "settings_changed",
]
CAUSES: Final[tuple[Cause, ...]] = get_args(Cause)
"""Every cause an uncached token can be given, in the order reports list them."""

ENGINE_CHANGES: Final[tuple[Cause, ...]] = ("prefix_epoch", "compaction", "relief_pass")
"""The causes an engine event names, strongest first (the one chosen when several happened)."""

TOLERANCE: Final = 0.10
"""Predicted and reported cache-read shares further apart than this are flagged."""

Simulator = AnthropicCacheSimulator | OpenAICacheSimulator
_THINKING: Final = frozenset({"thinking", "redacted_thinking", "reasoning"})
_EFFORT_KEYS: Final = ("thinking", "effort", "reasoning", "reasoning_effort")


@dataclass(frozen=True, kw_only=True, slots=True)
class Change:
    """Something the engine did between two requests that rewrites what the provider sees."""

    cause: Cause
    """One of :data:`ENGINE_CHANGES`."""
    detail: str = ""
    """What it did, in a few words (``tool_results_to_pointers: 12 items``)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Stretch:
    """A run of uncached tokens with one cause."""

    cause: Cause
    tokens: int
    detail: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class Observed:
    """One request as the attribution needs it: its blocks, its prefix hashes and the simulator's verdict."""

    at: datetime
    """Start of the request."""
    body: Mapping[str, Any]
    """The body as sent."""
    rule_set: Literal["anthropic", "openai"]
    """Which provider's cache rules the prediction follows."""
    hashes: tuple[bytes, ...]
    """Cumulative prefix hash per block (settings folded in where the provider renders them)."""
    keys: tuple[str, ...]
    """Canonical JSON of each block's content (no place, no marker), to find blocks again after a change."""
    levels: tuple[str, ...]
    """``tools``, ``system`` or ``messages`` per block."""
    kinds: tuple[str, ...]
    """Block type per block (``text``, ``thinking``, ``function_call``, ...)."""
    cumulative: tuple[int, ...]
    """Tokens up to and including each block."""
    usage: Usage
    """Predicted usage."""
    breakpoints: tuple[int, ...]
    """Blocks that asked for a cache write (every block under OpenAI's automatic caching)."""
    written: tuple[int, ...]
    """Blocks at which this request wrote or refreshed an entry."""
    ttls: Mapping[int, timedelta] = field(default_factory=dict)
    """Lifetime of the entry at each block in ``written``."""
    readable_at: datetime
    """When entries this request wrote become readable."""
    min_cacheable: int
    """The provider's minimum cacheable length for this request."""
    lookback: int | None
    """How many blocks a breakpoint looks back (None: every prefix is looked up)."""

    @property
    def total(self) -> int:
        """Input tokens of the whole prompt."""
        return self.cumulative[-1] if self.cumulative else 0


@dataclass(frozen=True, kw_only=True, slots=True)
class Attribution:
    """One request's uncached input, by cause; the parts add up to ``uncached_tokens`` exactly."""

    uncached_tokens: int
    """Input tokens not read from the cache (ordinary input plus cache writes)."""
    by_cause: dict[str, int]
    """Cause → tokens, causes with no tokens left out."""
    stretches: tuple[Stretch, ...]
    """The same tokens in prompt order, with details."""
    predicted: Usage
    """The simulator's usage for the request."""
    rule_set: Literal["anthropic", "openai"]
    """Which provider's rules were applied."""

    @property
    def main_cause(self) -> str | None:
        """The cause with the most tokens (None when everything was read)."""
        return max(self.by_cause, key=lambda c: self.by_cause[c]) if self.by_cause else None


@dataclass(frozen=True, kw_only=True, slots=True)
class UsageCheck:
    """Predicted against reported cache reads of one request."""

    predicted_read_share: float
    reported_read_share: float
    difference: float
    """Reported minus predicted share."""
    flagged: bool
    """True when the difference is beyond :data:`TOLERANCE`."""


def observe(simulator: Simulator, request: SimRequest) -> tuple[SimulatedRequest, Observed]:
    """Run one request through ``simulator`` and gather what :func:`attribute` needs about it."""
    body = request.body
    model = str(body.get("model") or "")
    simulated = simulator.request(request)
    written = tuple(sorted({*simulated.written_blocks, *([simulated.hit_block] if simulated.hit_block is not None else [])}))
    levels: tuple[str, ...]
    if isinstance(simulator, AnthropicCacheSimulator):
        rendered = simulator.last_rendered
        assert rendered is not None  # set by the request just simulated
        blocks, hashes, cumulative = rendered
        levels = tuple(b.level for b in blocks)
        kinds = tuple(_anthropic_kind(b.identity) for b in blocks)
        ttl_names = dict(_breakpoints(blocks, body.get("cache_control")))
        ttls = {w: simulator.entry_ttl(ttl_names.get(w, "5m")) for w in written}
        minimum = simulator.min_cacheable_tokens(model, request.at)
        lookback: int | None = LOOKBACK
        breakpoints = simulated.breakpoints
        rule_set: Literal["anthropic", "openai"] = "anthropic"
        keys = tuple(b.text for b in blocks)
    else:
        orendered = simulator.last_rendered
        assert orendered is not None  # set by the request just simulated
        oblocks, hashes, cumulative = orendered
        levels = tuple(_openai_level(b.path, b.identity) for b in oblocks)
        kinds = tuple(_openai_kind(b.identity) for b in oblocks)
        if openai_regime(model) == "classic":
            # Every prefix is stored and looked up: each block is a breakpoint and an entry.
            breakpoints = written = tuple(range(len(oblocks)))
            ttls = dict.fromkeys(written, simulator.entry_ttl(body))
        else:
            breakpoints = simulated.breakpoints
            ttls = {w: simulator.entry_ttl(body, oblocks[w].marker_ttl) for w in written}
        minimum, lookback, rule_set = MIN_CACHED, None, "openai"
        keys = tuple(b.text for b in oblocks)
    return simulated, Observed(
        at=request.at,
        body=body,
        rule_set=rule_set,
        hashes=hashes,
        keys=keys,
        levels=levels,
        kinds=kinds,
        cumulative=cumulative,
        usage=simulated.usage,
        breakpoints=tuple(breakpoints),
        written=written,
        ttls=ttls,
        readable_at=request.at + request.first_token_after,
        min_cacheable=minimum,
        lookback=lookback,
    )


def attribute(previous: Observed | None, current: Observed, *, changes: Sequence[Change] = ()) -> Attribution:
    """Split ``current``'s uncached input among the causes, against ``previous`` (None: the first request).

    ``changes`` are the engine's events between the two requests (and the relief passes
    of ``current``'s own build); a change of the history is put on the strongest of them.
    Pure: the same two observations and changes always give the same answer.
    """
    usage = current.usage
    total = current.total
    read = min(usage.cache_read_tokens, total)
    uncached = total - read
    cuts: list[tuple[int, Cause, str]] = []  # (end of stretch, cause, detail), in prompt order
    if previous is None:
        cuts.append((total, "new_content", "first request of the session"))
    else:
        cuts.extend(_compare(previous, current, read, changes))
    stretches = _stretches(cuts, read, total)
    by_cause: dict[str, int] = {}
    for stretch in stretches:
        by_cause[stretch.cause] = by_cause.get(stretch.cause, 0) + stretch.tokens
    assert sum(by_cause.values()) == uncached  # the stretches tile [read, total) by construction
    return Attribution(
        uncached_tokens=uncached,
        by_cause=by_cause,
        stretches=stretches,
        predicted=usage,
        rule_set=current.rule_set,
    )


def attribute_requests(
    requests: Iterable[SimRequest],
    *,
    simulator: Simulator,
    changes: Mapping[int, Sequence[Change]] | None = None,
) -> list[Attribution]:
    """Simulate ``requests`` (one session, in order) and attribute each one against the one before."""
    out: list[Attribution] = []
    previous: Observed | None = None
    for index, request in enumerate(requests):
        _, current = observe(simulator, request)
        out.append(attribute(previous, current, changes=(changes or {}).get(index, ())))
        previous = current
    return out


def check_usage(predicted: Usage, reported: Usage, *, tolerance: float = TOLERANCE) -> UsageCheck:
    """Compare the predicted and reported cache-read shares of one request."""
    if tolerance < 0:
        raise UsageError(f"tolerance must be at least 0, got {tolerance}")
    p, r = predicted.cache_read_share, reported.cache_read_share
    return UsageCheck(predicted_read_share=p, reported_read_share=r, difference=r - p, flagged=abs(r - p) > tolerance)


# -- internals ------------------------------------------------------------------------


def _compare(previous: Observed, current: Observed, read: int, changes: Sequence[Change]) -> list[tuple[int, Cause, str]]:
    cum = current.cumulative
    total = current.total
    switch = _switch(previous, current)
    common = 0 if switch else _common_prefix(previous.hashes, current.hashes)
    shared = cum[common - 1] if common else 0
    cuts: list[tuple[int, Cause, str]] = []

    # The shared prefix that was not read: what happened to the entry that should have served it.
    if read < shared:
        cuts.extend(_unread(previous, current, read, common, shared))

    after_last_mark = max(previous.breakpoints, default=-1) < common
    if common >= len(current.hashes):
        return cuts
    if common >= len(previous.hashes) or after_last_mark:
        cuts.append((total, "new_content", ""))
        return cuts
    cause, detail = switch or _change_cause(previous, current, common, changes)
    # The history after the change runs to the last block both requests still carry.
    seen = set(previous.keys[common:])
    last = next((j for j in range(len(current.keys) - 1, common - 1, -1) if current.keys[j] in seen), None)
    rewritten_end = cum[last] if last is not None else total
    cuts.append((rewritten_end, cause, detail))
    cuts.append((total, "new_content", ""))
    return cuts


def _unread(previous: Observed, current: Observed, read: int, common: int, shared: int) -> list[tuple[int, Cause, str]]:
    cum = current.cumulative
    cuts: list[tuple[int, Cause, str]] = []
    entries = [w for w in previous.written if w < common and cum[w] > read]
    low = read
    if entries:
        entry = max(entries)
        end = cum[entry]
        ttl = previous.ttls.get(entry)
        gap = current.at - previous.at
        cause: Cause
        if end < current.min_cacheable:
            cause, detail = "below_minimum", f"{end:,} tokens < {current.min_cacheable:,}"
        elif ttl is not None and gap >= ttl:
            cause, detail = "ttl_expired", f"gap {_span(gap)} >= TTL {_span(ttl)}"
        elif current.at < previous.readable_at:
            cause, detail = "in_flight", f"sent {_span(gap)} after the request writing it"
        elif current.lookback is not None and not any(0 <= b - entry < current.lookback for b in current.breakpoints):
            cause, detail = "beyond_lookback", f"entry at block {entry}, no breakpoint within {current.lookback} blocks"
        else:
            cause, detail = "breakpoint_placement", "the cache boundary fell before the shared prefix ended"
        cuts.append((end, cause, detail))
        low = end
    if low < shared:
        if shared < current.min_cacheable:
            cuts.append((shared, "below_minimum", f"shared prefix {shared:,} tokens < {current.min_cacheable:,}"))
        else:
            cuts.append((shared, "breakpoint_placement", "no cache entry ended inside the shared prefix"))
    return cuts


def _stretches(cuts: Sequence[tuple[int, Cause, str]], read: int, total: int) -> tuple[Stretch, ...]:
    """Turn ordered stretch ends into stretches clipped to [read, total); whatever is left is new content."""
    out: list[Stretch] = []
    position = read
    for end, cause, detail in cuts:
        end = min(end, total)
        if end > position:
            out.append(Stretch(cause=cause, tokens=end - position, detail=detail))
            position = end
    if position < total:
        out.append(Stretch(cause="new_content", tokens=total - position))
    return tuple(out)


def _common_prefix(before: Sequence[bytes], after: Sequence[bytes]) -> int:
    return sum(1 for _ in itertools.takewhile(lambda pair: pair[0] == pair[1], zip(before, after, strict=False)))


def _switch(previous: Observed, current: Observed) -> tuple[Cause, str] | None:
    """A change of what keys the whole cache: the model, or the routing scope."""
    before, after = previous.body, current.body
    if normalize_model_id(str(before.get("model"))) != normalize_model_id(str(after.get("model"))) or before.get(
        "model"
    ) != after.get("model"):
        return "model_switch", f"{before.get('model')} -> {after.get('model')}"
    for key in ("workspace_id", "prompt_cache_key"):
        if before.get(key) != after.get(key):
            return "settings_changed", f"{key} changed"
    return None


def _change_cause(previous: Observed, current: Observed, at: int, changes: Sequence[Change]) -> tuple[Cause, str]:
    """What changed the history at block ``at``: an engine event, else the first difference between the bodies."""
    engine = [c for c in changes if c.cause in ENGINE_CHANGES]
    epoch = [c for c in engine if c.cause == "prefix_epoch"]
    if epoch:
        return "prefix_epoch", "; ".join(c.detail for c in epoch if c.detail)
    before, after = previous.body, current.body
    if _effort(before) != _effort(after):
        return "effort_switch", "thinking or effort settings changed"
    if engine:
        strongest = min(engine, key=lambda c: ENGINE_CHANGES.index(c.cause))
        details = [c.detail for c in engine if c.cause == strongest.cause and c.detail]
        return strongest.cause, "; ".join(details)
    same_block = at < len(previous.keys) and at < len(current.keys) and previous.keys[at] == current.keys[at]
    if same_block or (previous.rule_set == "openai" and at == 0 and _hidden(before) != _hidden(after)):
        # Identical blocks under a different hash: a setting folded in at this level changed.
        return "settings_changed", "a setting that is part of the cache key changed"
    levels = {lst[at] for lst in (previous.levels, current.levels) if at < len(lst)}
    if "tools" in levels:
        return "tools_changed", f"tool array differs from block {at}"
    if "system" in levels:
        return "system_changed", f"system text differs from block {at}"
    if at < len(previous.kinds) and previous.kinds[at] in _THINKING:
        if at >= len(current.kinds) or current.kinds[at] not in _THINKING:
            return "thinking_stripped", f"block {at} was {previous.kinds[at]}"
    return "message_edited", f"history differs from block {at}"


def _effort(body: Mapping[str, Any]) -> Any:
    config = body.get("output_config")
    return (
        body.get("thinking"),
        config.get("effort") if isinstance(config, Mapping) else None,
        body.get("reasoning"),
        body.get("reasoning_effort"),
    )


def _hidden(body: Mapping[str, Any]) -> Any:
    return {k: body.get(k) for k in _OPENAI_HIDDEN if k not in _EFFORT_KEYS}


def _anthropic_kind(identity: Mapping[str, Any]) -> str:
    for key in ("block", "system", "tool"):
        value = identity.get(key)
        if isinstance(value, Mapping):
            return str(value.get("type", ""))
    return ""


def _openai_level(path: str, identity: Any) -> str:
    if path.startswith("tools"):
        return "tools"
    if path.startswith("instructions") or (isinstance(identity, Mapping) and identity.get("role") in ("system", "developer")):
        return "system"
    return "messages"


def _openai_kind(identity: Any) -> str:
    if not isinstance(identity, Mapping):
        return ""
    for key in ("item", "part"):
        value = identity.get(key)
        if isinstance(value, Mapping):
            return str(value.get("type", ""))
    return "text"


def _span(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds >= 3600:
        return f"{seconds / 3600:.1f}h"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"
