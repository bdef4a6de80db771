"""Offline simulator of Anthropic Messages prompt caching.

Replays ``(at, body)`` pairs, where ``body`` is the exact Messages request body, and
predicts per request the tokens read from cache, written (5m / 1h) and billed as
ordinary input, following https://platform.claude.com/docs/en/build-with-claude/prompt-caching
(snapshot 2026-08-21) unless stated otherwise below.

Rules implemented:

* The prompt is a list of blocks in the order tools, system, messages; each tool
  definition, each system text block and each message content block is one block
  (a string ``system`` or ``content`` counts as one text block). A block's identity
  is its canonical JSON without ``cache_control`` (plus the message role and
  whether it opens a message), so moving a breakpoint never changes the prefix.
* Each block position has a cumulative prefix hash. Request settings are folded in
  where they are rendered: ``speed``, web search/fetch tool definitions and enabled
  citations before the first system block; ``tool_choice``, ``thinking``,
  ``output_config.effort`` and "any image present" before the first message block.
  The model is part of the cache scope (with ``workspace_id`` and the simulator's
  ``scope``), so a model change misses everything.
* Breakpoints: explicit ``cache_control`` blocks, plus one on the last eligible block
  when the body has a top-level ``cache_control`` (automatic caching). At most 4;
  a fifth, a top-level TTL that differs from an explicit marker on its target, or a
  1h breakpoint after a 5m one raise :class:`~contextwright.providers.errors.InvalidRequest`
  with the API's message. A marker on the last sub-block of a ``tool_result`` (or
  ``document``) counts for the parent; on any other sub-block, a thinking block or
  an empty text block it is an error.
* Writes happen only at breakpoints whose prefix is at least the model's minimum
  cacheable length (dated table below); nothing is written for earlier positions.
  The row applied is the one in effect on the request's date, unless ``rules_on``
  names another date (see "Replays of old logs" below).
* Reads: from each breakpoint the simulator walks back at most 20 positions (the
  breakpoint itself first) looking for an entry a previous request wrote; the
  request's hit ``A`` is the longest found. ``B`` is the highest 1h breakpoint above
  ``A``; ``C`` the last eligible breakpoint. Read ``A``, write 1h ``B - A``, write 5m
  ``C - B``, the rest is ordinary input.
* Lifetimes are 5 minutes or 1 hour from the *start* of the writing request; every
  hit restarts the entry's lifetime at the start of the reading request. An entry is
  alive while ``start < expires_at`` (the TTL is the guaranteed window; the provider
  may keep it a little longer).
* An entry becomes readable at ``at + first_token_after`` of the request that wrote
  it, so requests sent in parallel each pay the write.
* On models that drop earlier thinking once a new non-tool-result user turn
  arrives (Opus 4/4.1, Sonnet 4/4.5, Sonnet 3.7, all Haiku), those thinking blocks
  are not rendered.
* Context window: a prompt over the model's window raises
  :class:`~contextwright.errors.ContextLengthExceeded` with the API's "prompt is too
  long" message; on models before Claude 4.5 so does prompt + ``max_tokens``.

Replays of old logs: a request dated before its model's minimum changed gets the
minimum of that date by default, which is right for a log recorded on that model.
A replay that sends an older log to a current model at today's list prices is a
counterfactual: the model may not have existed on the log's dates (Sonnet 4.6 was
listed at 2,048 from the oldest archived guide, 2026-03-13, and lowered to 1,024 on
2026-05-13; research/provider-caching.md §1.4), and the prices applied are the
current ones. ``rules_on`` applies the minimum in effect on one date to every
request of such a replay, so prices and cache rules come from the same day. One
user reported caching only from about 2,048 tokens on Sonnet 4.6 while the guide
said 1,024 [GH-1194 in the research notes], so both figures are worth showing.

Assumptions (the documentation leaves these open):

* Token counts per block are ``count_tokens(canonical JSON of the block)`` unless the
  request gives exact ``block_tokens``. JSON syntax makes this an over-estimate of
  the real text, and the provider's hidden framing (tool-use system prompt, message
  headers) is not counted; pass exact per-block numbers when they matter.
* A hit refreshes the entry found by each breakpoint's lookback, not every entry it
  passed. A hit keeps the entry's own TTL even when the reading breakpoint asks for
  another; a 1h breakpoint at exactly ``A`` does not rewrite the entry.
* Web search/fetch tool definitions cost tokens at their place in ``tools`` but are
  hashed with the system settings, because toggling them invalidates system and
  messages but not the tool cache.
* Thinking and effort changes invalidate from the messages level on every model
  (the docs say some models invalidate earlier without naming them). An explicit
  ``effort`` equal to the model's default is treated as a change.
* The cache scope uses the model string exactly as sent, so an alias and its dated
  id do not share entries.
* Messages for refusals the research has no verbatim text for (a marker on a
  thinking block or a sub-block, a bad TTL) are this simulator's own wording; a
  top-level marker with no free slot reuses the "maximum of 4" message.
* Server-tool automatic breakpoints, Batch timing, cache-diagnostics, the 1M-context
  beta on 200K models and the legacy Bedrock integration are not modelled.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, Final, Literal

from contextwright.canonical import canonical_json
from contextwright.pricing.cache_sim.base import (
    Clockwork,
    CountTokens,
    Entry,
    PrefixReplayer,
    PriceLookup,
    SimRequest,
    SimulatedRequest,
    body_model,
    chain,
    cumulative_tokens,
    default_price_lookup,
    price_and_cost,
    utc_day,
)
from contextwright.pricing.prices import UnknownModel, normalize_model_id
from contextwright.providers.capabilities import ANTHROPIC_TTLS as TTLS
from contextwright.providers.errors import ProviderError, classify_provider_error
from contextwright.providers.usage import Usage

__all__ = [
    "ANTHROPIC_MODELS",
    "AnthropicCacheSimulator",
    "AnthropicModelRules",
    "RenderedBlock",
    "anthropic_rules_for",
    "render_anthropic_blocks",
]

Ttl = Literal["5m", "1h"]
MAX_BREAKPOINTS: Final = 4
LOOKBACK: Final = 20
NO_EXPIRY: Final = timedelta(days=36_500)
"""The lifetime every entry gets when the simulator runs without expiry."""


@dataclass(frozen=True, kw_only=True, slots=True)
class AnthropicModelRules:
    """The per-model constants the simulator needs, each with its history."""

    model: str
    """Canonical model id."""
    min_cacheable: tuple[tuple[date | None, int], ...]
    """``(effective_from, tokens)`` rows; ``None`` means as far back as documented."""
    context_window: int | None = None
    """Window in tokens, or ``None`` when not documented (no check)."""
    rejects_input_plus_max_tokens: bool = False
    """Pre-4.5 models refuse a prompt whose size plus ``max_tokens`` is over the window."""
    keeps_prior_thinking: bool = True
    """False on models that drop earlier thinking once a new user turn arrives."""

    def min_cacheable_on(self, day: date) -> int:
        """The minimum cacheable prefix length in effect on ``day``."""
        rows = [row for row in self.min_cacheable if row[0] is None or row[0] <= day]
        if not rows:
            return max(tokens for _, tokens in self.min_cacheable)
        return max(rows, key=lambda row: row[0] or date.min)[1]


def _rules(
    models: Iterable[str],
    minimum: int | tuple[tuple[date | None, int], ...],
    *,
    window: int | None,
    old: bool = False,
    keeps_thinking: bool = True,
) -> dict[str, AnthropicModelRules]:
    rows = ((None, minimum),) if isinstance(minimum, int) else minimum
    return {
        model: AnthropicModelRules(
            model=model,
            min_cacheable=rows,
            context_window=window,
            rejects_input_plus_max_tokens=old,
            keeps_prior_thinking=keeps_thinking,
        )
        for model in models
    }


_1M: Final = 1_000_000
_200K: Final = 200_000

# Minimum cacheable lengths and their changes, from the archived guide
# (https://platform.claude.com/docs/en/build-with-claude/prompt-caching, 2026-03-13 to
# 2026-08-21); windows from https://platform.claude.com/docs/en/build-with-claude/context-windows;
# thinking retention from https://platform.claude.com/docs/en/build-with-claude/thinking#thinking-and-prompt-caching.
ANTHROPIC_MODELS: Final[dict[str, AnthropicModelRules]] = {
    **_rules(("claude-opus-5", "claude-fable-5", "claude-mythos-5"), 512, window=_1M),
    # Listed at 512 only in later (Sep-Oct 2026) quotes of the same guide; window not documented.
    **_rules(
        ("claude-fable-5-1", "claude-mythos-5-1", "claude-opus-5-5", "claude-sonnet-5-5"),
        512,
        window=None,
    ),
    **_rules(("claude-opus-4-8", "claude-sonnet-5"), 1024, window=_1M),
    **_rules(("claude-sonnet-4-6",), ((None, 2048), (date(2026, 5, 13), 1024)), window=_1M),
    **_rules(("claude-sonnet-4-5",), 1024, window=_200K, keeps_thinking=False),
    **_rules(
        # Claude 3.5 Sonnet and 3 Opus are retired but still in real logs; same 1,024 minimum as Sonnet 3.7.
        ("claude-opus-4-1", "claude-opus-4", "claude-sonnet-4", "claude-3-7-sonnet", "claude-3-5-sonnet", "claude-3-opus"),
        1024,
        window=_200K,
        old=True,
        keeps_thinking=False,
    ),
    **_rules(
        ("claude-opus-4-7", "claude-mythos-preview"),
        ((None, 4096), (date(2026, 6, 9), 2048)),
        window=_1M,
    ),
    **_rules(("claude-haiku-3-5", "claude-3-haiku"), 2048, window=_200K, old=True, keeps_thinking=False),
    **_rules(("claude-opus-4-6",), 4096, window=_1M),
    **_rules(("claude-opus-4-5",), 4096, window=_200K),
    **_rules(("claude-haiku-4-5",), 4096, window=_200K, keeps_thinking=False),
}
"""Cache rules per canonical model id (see :func:`~contextwright.pricing.prices.normalize_model_id`)."""


def anthropic_rules_for(model: str) -> AnthropicModelRules:
    """Return the cache rules for ``model``; :class:`UnknownModel` names the known ones."""
    rules = ANTHROPIC_MODELS.get(normalize_model_id(model))
    if rules is None:
        raise UnknownModel(model, known=tuple(sorted(ANTHROPIC_MODELS)), what="cache rules")
    return rules


@dataclass(frozen=True, kw_only=True, slots=True)
class RenderedBlock:
    """One block of the rendered prompt, as the simulator sees it."""

    index: int
    """Position in render order, from 0."""
    level: Literal["tools", "system", "messages"]
    """Which part of the request it belongs to."""
    path: str
    """Where it sits in the body, in the API's notation (``messages.3.content.0``)."""
    text: str
    """Canonical JSON of the block without ``cache_control``: what ``count_tokens`` sees."""
    identity: Any
    """What goes into the prefix hash."""
    ttl: Ttl | None
    """TTL of an explicit ``cache_control`` on this block (after lifting from sub-blocks)."""
    eligible: bool
    """Whether the block may carry a breakpoint (not thinking, not empty text)."""
    hashed: bool = True
    """False for web search/fetch definitions, which are hashed with the system settings."""


_NOT_CACHEABLE: Final = frozenset({"thinking", "redacted_thinking"})
_SERVER_TOOL_PREFIXES: Final = ("web_search", "web_fetch")
_NESTED_CONTENT: Final = frozenset({"tool_result", "document"})


def render_anthropic_blocks(body: Mapping[str, Any], *, keeps_prior_thinking: bool = True) -> tuple[RenderedBlock, ...]:
    """Split a Messages body into blocks in render order (tools, system, messages).

    Raises :class:`~contextwright.providers.errors.InvalidRequest` for markers the
    API refuses (wrong type or TTL, on a thinking or empty block, on an inner sub-block).
    """
    blocks: list[RenderedBlock] = []

    def add(
        level: Any,
        path: str,
        block: Mapping[str, Any],
        identity: Any,
        ttl: Ttl | None,
        *,
        hashed: bool = True,
    ) -> None:
        kind = block.get("type")
        eligible = kind not in _NOT_CACHEABLE and not (kind == "text" and block.get("text") == "")
        if ttl is not None and not eligible:
            raise _invalid(f"{path}.cache_control: {kind or 'this'} blocks cannot carry cache_control")
        blocks.append(
            RenderedBlock(
                index=len(blocks),
                level=level,
                path=path,
                text=canonical_json(block),
                identity=identity,
                ttl=ttl,
                eligible=eligible,
                hashed=hashed,
            )
        )

    for i, tool in enumerate(_list(body.get("tools"), "tools")):
        tool_map = _mapping(tool, f"tools.{i}")
        stripped = _without_cache_control(tool_map)
        server = str(tool_map.get("type", "")).startswith(_SERVER_TOOL_PREFIXES)
        add(
            "tools",
            f"tools.{i}",
            stripped,
            {"tool": stripped},
            _ttl(tool_map, f"tools.{i}"),
            hashed=not server,
        )

    system = body.get("system")
    if isinstance(system, str):
        text_block = {"type": "text", "text": system}
        add("system", "system", text_block, {"system": text_block}, None)
    elif system is not None:
        for j, item in enumerate(_list(system, "system")):
            path = f"system.{j}"
            item_map = _mapping(item, path)
            stripped = _without_cache_control(item_map)
            add("system", path, stripped, {"system": stripped}, _ttl(item_map, path))

    messages = [_mapping(m, f"messages.{i}") for i, m in enumerate(_list(body.get("messages"), "messages"))]
    drop_thinking_before = -1 if keeps_prior_thinking else _last_plain_user_turn(messages)
    for i, message in enumerate(messages):
        role = message.get("role")
        content = message.get("content")
        first = True
        if isinstance(content, str):
            text_block = {"type": "text", "text": content}
            add(
                "messages",
                f"messages.{i}.content",
                text_block,
                {"role": role, "first": True, "block": text_block},
                None,
            )
            continue
        for j, block in enumerate(_list(content, f"messages.{i}.content")):
            path = f"messages.{i}.content.{j}"
            block_map = _mapping(block, path)
            if i < drop_thinking_before and role == "assistant" and block_map.get("type") in _NOT_CACHEABLE:
                continue  # the API drops earlier thinking on this model, so it is not in the prompt
            stripped, ttl = _lift_nested_marker(block_map, path)
            add("messages", path, stripped, {"role": role, "first": first, "block": stripped}, ttl)
            first = False
    return tuple(blocks)


class AnthropicCacheSimulator(PrefixReplayer[RenderedBlock]):
    """Replays Messages request bodies against a simulated Anthropic prompt cache."""

    def __init__(
        self,
        *,
        count_tokens: CountTokens | None = None,
        price_lookup: PriceLookup | None = default_price_lookup,
        scope: str = "default",
        min_cacheable_tokens: int | None = None,
        context_window: int | None = None,
        check_context_window: bool = True,
        rules_on: date | None = None,
        expiry: bool = True,
    ) -> None:
        """Configure the simulator; ``min_cacheable_tokens``/``context_window`` override the model table.

        ``rules_on`` takes the minimum cacheable length in effect on that date for every
        request, instead of the one in effect on each request's own date. ``expiry=False``
        keeps every entry for good (no 5-minute or 1-hour lifetime): not the provider's
        rule, but what simulators without lifetimes measure, for comparing with their figures.
        Writes are still billed at the TTL their marker asks for.
        """
        self._count_tokens = count_tokens
        self._rules_on = rules_on
        self._expiry = expiry
        self._price_lookup = price_lookup
        self._scope = scope
        self._min_override = min_cacheable_tokens
        self._window_override = context_window
        self._check_window = check_context_window
        self._entries: dict[tuple[str, str | None, str, bytes], Entry] = {}
        self._clock = Clockwork()
        self._last: tuple[tuple[RenderedBlock, ...], tuple[bytes, ...], tuple[int, ...]] | None = None

    def _minimum(self, rules: AnthropicModelRules | None, at: datetime) -> int:
        if self._min_override is not None:
            return self._min_override
        if rules is None:
            return 0
        return rules.min_cacheable_on(self._rules_on or utc_day(at))

    def min_cacheable_tokens(self, model: str, at: datetime) -> int:
        """The minimum cacheable prefix this simulator applies to ``model`` for a request at ``at``."""
        return self._minimum(self._rules(model), at)

    def entry_ttl(self, ttl: Ttl) -> timedelta:
        """How long an entry written with ``ttl`` lives here (for good when expiry is off)."""
        return TTLS[ttl] if self._expiry else NO_EXPIRY

    def request(self, request: SimRequest) -> SimulatedRequest:
        """Replay one request; raises the provider error the API would return, leaving the cache untouched."""
        body = request.body
        model = body_model(body)
        rules = self._rules(model)
        at = request.at
        blocks = render_anthropic_blocks(body, keeps_prior_thinking=rules.keeps_prior_thinking if rules else True)
        breakpoints = _breakpoints(blocks, body.get("cache_control"))
        cumulative, total = cumulative_tokens([b.text for b in blocks], request, self._count_tokens)
        self._check_context(body, rules, total)
        index = self._clock.advance(at)
        self._entries = {key: e for key, e in self._entries.items() if e.expires_at > at}

        hashes = _prefix_hashes(body, blocks)
        scope = (self._scope, _optional_str(body.get("workspace_id")), model)
        minimum = self._minimum(rules, at)
        eligible = [b for b, _ in breakpoints if cumulative[b] >= minimum]
        ttl_of = dict(breakpoints)

        # Reads: each breakpoint looks back over at most 20 positions for an entry
        # an earlier request wrote; the longest hit wins.
        # https://platform.claude.com/docs/en/build-with-claude/prompt-caching (lookback window)
        hit_tokens, hit_block = 0, None
        for b, _ in breakpoints:
            for p in range(b, max(b - LOOKBACK, -1), -1):
                if not blocks[p].hashed:
                    continue  # shares the previous position's hash; its tokens were never cached
                entry = self._entries.get((*scope, hashes[p]))
                if entry is not None and entry.live(at):
                    entry.expires_at = at + entry.ttl  # a hit restarts the lifetime, from the request start
                    if cumulative[p] > hit_tokens or hit_block is None:
                        hit_tokens, hit_block = cumulative[p], p
                    break

        # Billing positions A (hit), B (highest 1h breakpoint above A), C (last eligible breakpoint).
        # https://platform.claude.com/docs/en/build-with-claude/prompt-caching (mixing TTLs)
        a = hit_tokens
        c = max([cumulative[b] for b in eligible] + [a])
        b_pos = max([cumulative[b] for b in eligible if ttl_of[b] == "1h" and cumulative[b] > a] + [a])
        written: list[int] = []
        for b in eligible:
            if cumulative[b] <= a:
                continue
            key = (*scope, hashes[b])
            ttl = TTLS[ttl_of[b]] if self._expiry else NO_EXPIRY
            available = at + request.first_token_after
            previous = self._entries.get(key)
            if previous is not None and previous.expires_at > at:
                available = min(available, previous.available_at)
            self._entries[key] = Entry(ttl=ttl, available_at=available, expires_at=at + ttl, tokens=cumulative[b])
            written.append(b)

        usage = Usage(
            input_tokens=total - c,
            cache_read_tokens=a,
            cache_write_1h_tokens=b_pos - a,
            cache_write_5m_tokens=c - b_pos,
            output_tokens=request.output_tokens,
        )
        self._last = (tuple(blocks), tuple(hashes), tuple(cumulative))
        return SimulatedRequest(
            index=index,
            at=at,
            model=model,
            usage=usage,
            cost=price_and_cost(self._price_lookup, model, at, usage),
            block_count=len(blocks),
            breakpoints=tuple(b for b, _ in breakpoints),
            hit_block=hit_block,
            written_blocks=tuple(written),
        )

    def _rules(self, model: str) -> AnthropicModelRules | None:
        if self._min_override is not None:
            return ANTHROPIC_MODELS.get(normalize_model_id(model))
        return anthropic_rules_for(model)

    def _check_context(self, body: Mapping[str, Any], rules: AnthropicModelRules | None, total: int) -> None:
        if not self._check_window:
            return
        window = self._window_override or (rules.context_window if rules else None)
        if window is None:
            return
        # https://platform.claude.com/docs/en/build-with-claude/context-windows
        if total > window:
            raise _invalid(f"prompt is too long: {total} tokens > {window} maximum")
        max_tokens = body.get("max_tokens")
        if rules and rules.rejects_input_plus_max_tokens and isinstance(max_tokens, int) and total + max_tokens > window:
            raise _invalid(
                f"input length and `max_tokens` exceed context limit: {total} + {max_tokens} > {window}, "
                "decrease input length or `max_tokens` and try again"
            )


def _breakpoints(blocks: Sequence[RenderedBlock], top_level: Any) -> list[tuple[int, Ttl]]:
    points: dict[int, Ttl] = {b.index: b.ttl for b in blocks if b.ttl is not None}
    if top_level is not None:
        auto_ttl = _ttl({"cache_control": top_level}, "cache_control") or "5m"
        target = next((b for b in reversed(blocks) if b.eligible), None)
        if target is not None:
            existing = points.get(target.index)
            if existing is not None and existing != auto_ttl:
                # Message as observed: https://github.com/vellum-ai/vellum-assistant/pull/23414
                raise _invalid(
                    f"Top-level cache_control has ttl='{auto_ttl}' but the target block already has "
                    f"cache_control with ttl='{existing}'"
                )
            # Same TTL as an explicit marker: a no-op. Otherwise it takes a slot, so with
            # four explicit markers already present the count check below refuses it.
            points.setdefault(target.index, auto_ttl)
        # No eligible block at all: automatic caching silently caches nothing.
    if len(points) > MAX_BREAKPOINTS:
        # https://github.com/tghamm/Anthropic.SDK/issues/50
        raise _invalid(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {len(points)}.")
    ordered = sorted(points.items())
    seen_5m = False
    for index, ttl in ordered:
        if ttl == "5m":
            seen_5m = True
        elif seen_5m:
            # https://github.com/cnighswonger/claude-code-cache-fix/issues/44
            raise _invalid(
                f"{blocks[index].path}.cache_control.ttl: a ttl='1h' cache_control block must not come after "
                "a ttl='5m' cache_control block. Note that blocks are processed in the following order: "
                "`tools`, `system`, `messages`."
            )
    return ordered


def _prefix_hashes(body: Mapping[str, Any], blocks: Sequence[RenderedBlock]) -> list[bytes]:
    # Settings fold into the hash at the level where they are rendered, so a change
    # invalidates that level and everything after it.
    # https://platform.claude.com/docs/en/build-with-claude/prompt-caching (what invalidates the cache)
    messages = body.get("messages") or []
    system_salt = {
        "speed": body.get("speed") or "standard",
        "server_tools": [
            _without_cache_control(t)
            for t in body.get("tools") or []
            if isinstance(t, Mapping) and str(t.get("type", "")).startswith(_SERVER_TOOL_PREFIXES)
        ],
        "citations": _any_citations(messages) or _any_citations(body.get("system")),
    }
    output_config = body.get("output_config")
    messages_salt = {
        "tool_choice": body.get("tool_choice"),
        "thinking": body.get("thinking"),
        "effort": output_config.get("effort") if isinstance(output_config, Mapping) else None,
        "images": _any_image(messages),
    }
    state = chain(b"contextwright/anthropic-prefix/v1", {"model": body.get("model")})
    levels_done: set[str] = set()
    hashes: list[bytes] = []
    for block in blocks:
        if block.level in ("system", "messages") and "system" not in levels_done:
            state = chain(state, {"system-settings": system_salt})
            levels_done.add("system")
        if block.level == "messages" and "messages" not in levels_done:
            state = chain(state, {"messages-settings": messages_salt})
            levels_done.add("messages")
        if block.hashed:
            state = _chain_block(state, block)
        hashes.append(state)
    return hashes


def _chain_block(state: bytes, block: RenderedBlock) -> bytes:
    """Extend the prefix hash by one block's identity: its level, role, place and canonical JSON.

    ``block.text`` is the canonical JSON of the block the identity wraps, so hashing it (with
    what else the identity holds) is hashing the identity, without serializing it again.
    """
    identity = block.identity
    head = f"{block.level}\x00{identity.get('role')}\x00{identity.get('first')}\x00{len(block.text)}\x00"
    return hashlib.sha256(state + head.encode() + block.text.encode("utf-8", "surrogatepass")).digest()


def _ttl(holder: Mapping[str, Any], path: str) -> Ttl | None:
    marker = holder.get("cache_control")
    if marker is None:
        return None
    if not isinstance(marker, Mapping) or marker.get("type") != "ephemeral":
        raise _invalid(f"{path}.cache_control.type: only 'ephemeral' is supported")
    ttl = marker.get("ttl", "5m")
    if ttl not in TTLS:
        raise _invalid(f"{path}.cache_control.ttl: must be '5m' or '1h', got {ttl!r}")
    return ttl  # type: ignore[no-any-return]  # checked against TTLS just above


def _lift_nested_marker(block: Mapping[str, Any], path: str) -> tuple[dict[str, Any], Ttl | None]:
    """A marker on the last sub-block of a tool_result/document counts for the parent."""
    ttl = _ttl(block, path)
    stripped = _without_cache_control(block)
    if block.get("type") not in _NESTED_CONTENT:
        return stripped, ttl
    if block.get("type") == "tool_result":
        subs, sub_path, put = block.get("content"), f"{path}.content", "content"
    else:
        source = block.get("source")
        subs = source.get("content") if isinstance(source, Mapping) else None
        sub_path, put = f"{path}.source.content", "source"
    if not isinstance(subs, list):
        return stripped, ttl
    # Since 2025-05-01 the marker is moved from the last sub-block to its parent;
    # elsewhere among sub-blocks it is refused.
    # https://platform.claude.com/docs/en/release-notes/overview
    cleaned = []
    for k, sub in enumerate(subs):
        if isinstance(sub, Mapping) and "cache_control" in sub:
            sub_ttl = _ttl(sub, f"{sub_path}.{k}")
            if k != len(subs) - 1:
                raise _invalid(f"{sub_path}.{k}.cache_control: only the parent block can carry cache_control")
            ttl = ttl or sub_ttl
            sub = _without_cache_control(sub)
        cleaned.append(sub)
    if put == "content":
        stripped["content"] = cleaned
    else:
        stripped["source"] = {**stripped["source"], "content": cleaned}
    return stripped, ttl


def _last_plain_user_turn(messages: Sequence[Mapping[str, Any]]) -> int:
    """Index of the last user message that is not only tool results (-1 if none)."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return i
        if isinstance(content, list) and any(
            not (isinstance(block, Mapping) and block.get("type") == "tool_result") for block in content
        ):
            return i
    return -1


def _any_image(value: Any) -> bool:
    if isinstance(value, Mapping):
        return value.get("type") == "image" or any(_any_image(v) for v in value.values())
    if isinstance(value, list):
        return any(_any_image(v) for v in value)
    return False


def _any_citations(value: Any) -> bool:
    if isinstance(value, Mapping):
        citations = value.get("citations")
        if isinstance(citations, Mapping) and citations.get("enabled"):
            return True
        return any(_any_citations(v) for v in value.values())
    if isinstance(value, list):
        return any(_any_citations(v) for v in value)
    return False


def _without_cache_control(block: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in block.items() if key != "cache_control"}


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    raise _invalid(f"{path}: expected a list")


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    raise _invalid(f"{path}: expected an object")


def _optional_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _invalid(message: str) -> ProviderError:
    return classify_provider_error(
        400,
        {"type": "error", "error": {"type": "invalid_request_error", "message": message}},
        provider="anthropic",
    )
