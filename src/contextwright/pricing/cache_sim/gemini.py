"""Offline simulator of Gemini context caching (``generateContent`` bodies of the ``gemini`` wire).

Follows research/provider-caching.md §3 (G1-G5) and https://ai.google.dev/gemini-api/docs/caching.
Two mechanisms:

* **Implicit caching** (on by default for Gemini 2.5 and newer): a request whose prefix an
  earlier request of the same model sent reads it from cache, billed at the cached-input rate;
  there is no write charge and no storage fee. A prefix shorter than the model's minimum
  (:func:`contextwright.providers.wires.gemini.min_cacheable_tokens`: 2,048 for 2.5 Flash and
  Pro, 4,096 for 3.1 Pro and 3.5-3.8 Flash) is never credited. Every request stores all its
  prefixes.
* **Explicit caching** (``cachedContents``): a cache object is created once with
  :meth:`GeminiCacheSimulator.create_cache` (its tokens billed at the input rate, then storage
  per token-hour until its TTL, default 1 hour, ends: :attr:`SimulatedCache.storage_cost`). A
  request that names it in ``config.cached_content`` reads all its tokens at the cached-input
  rate; ``usage_metadata.prompt_token_count`` counts them (G5). Such a request may not send its
  own system instruction or tools (G4): it is refused as the API refuses it. A cache that is
  unknown or past its TTL is refused too.

Blocks, in render order: the model and the generation settings that change what the model
reads (folded into the hash before the first block), each system-instruction part, each
function declaration, then each part of each turn (with its role). Assumptions, since the
documentation leaves them open:

* Matching is per block: a prefix that diverges inside a block is credited up to the end of
  the last identical block.
* Implicit hits carry no guarantee (one client library measured 1 hit in 138 on a chat
  workload, research note 13); the simulator gives the best case. Entries live
  ``implicit_ttl`` after their last use (default 5 minutes; the lifetime is not documented).
* System instruction before tools: the order Gemini renders them in is not documented, and
  only matters in that changing either misses everything after it.
* A request naming an explicit cache gets no implicit hit on top of it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Final

from contextwright.canonical import canonical_json
from contextwright.errors import ContextLengthExceeded, UsageError
from contextwright.events.catalog import Usage
from contextwright.pricing.cache_sim.base import (
    Clockwork,
    CountTokens,
    Entry,
    PriceLookup,
    Replayer,
    SimRequest,
    SimulatedRequest,
    body_model,
    chain,
    cumulative_tokens,
    default_price_lookup,
    price_and_cost,
    utc_day,
)
from contextwright.pricing.prices import normalize_model_id
from contextwright.providers.errors import InvalidRequest, PermissionDenied, ProviderError
from contextwright.providers.wires.gemini import min_cacheable_tokens

__all__ = ["DEFAULT_CACHE_TTL", "GeminiCacheSimulator", "GeminiRenderedBlock", "SimulatedCache", "render_gemini_blocks"]

DEFAULT_CACHE_TTL: Final = timedelta(hours=1)
"""The lifetime of an explicit cache created without a TTL (G4)."""
_MILLION: Final = Decimal(1_000_000)
_HOUR: Final = Decimal(3600)
# Generation settings that change what the model reads before the conversation.
_SETTINGS: Final = ("tool_config", "thinking_config", "response_mime_type", "response_schema", "response_json_schema")


@dataclass(frozen=True, kw_only=True, slots=True)
class GeminiRenderedBlock:
    """One block of the rendered prompt."""

    index: int
    """Position in render order, from 0."""
    path: str
    """Where it sits in the body (``config.system_instruction.parts.0``, ``config.tools.0.function_declarations.1``, ``contents.2.parts.0``)."""
    text: str
    """Canonical JSON of the block: what ``count_tokens`` sees."""
    identity: Any
    """What goes into the prefix hash."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SimulatedCache:
    """An explicit cache (``cachedContents``) as the simulator created it."""

    name: str
    """The resource name requests give as ``config.cached_content``."""
    model: str
    """The model it was created for (a cache serves only that model)."""
    tokens: int
    """Tokens it holds; each request naming it reads them all."""
    created_at: datetime
    """When it was created."""
    expires_at: datetime
    """When its TTL ends."""
    creation_cost: Decimal | None
    """Its tokens at the model's input rate, or None without a price lookup."""
    storage_cost: Decimal | None
    """Storage for its whole lifetime (tokens x hours x the storage rate), or None without a price or a known rate."""


def render_gemini_blocks(body: Mapping[str, Any]) -> tuple[GeminiRenderedBlock, ...]:
    """Split a ``generate_content`` body into blocks in render order."""
    config = _mapping(body.get("config"), "config")
    blocks: list[GeminiRenderedBlock] = []

    def add(path: str, value: Any, identity: Any) -> None:
        blocks.append(GeminiRenderedBlock(index=len(blocks), path=path, text=canonical_json(value), identity=identity))

    system = config.get("system_instruction")
    if isinstance(system, str):
        add("config.system_instruction", {"text": system}, {"system": {"text": system}})
    elif system is not None:
        for i, part in enumerate(
            _list(_mapping(system, "config.system_instruction").get("parts"), "config.system_instruction.parts")
        ):
            add(f"config.system_instruction.parts.{i}", part, {"system": part})
    for t, tool in enumerate(_list(config.get("tools"), "config.tools")):
        declarations = _mapping(tool, f"config.tools.{t}").get("function_declarations")
        if declarations is None:
            add(f"config.tools.{t}", tool, {"tool": tool})  # a built-in tool (search, code execution)
            continue
        for d, declaration in enumerate(_list(declarations, f"config.tools.{t}.function_declarations")):
            add(f"config.tools.{t}.function_declarations.{d}", declaration, {"function": declaration})
    contents = body.get("contents")
    if isinstance(contents, str):
        add("contents", {"text": contents}, {"role": "user", "part": {"text": contents}})
    else:
        for c, turn in enumerate(_list(contents, "contents")):
            turn = _mapping(turn, f"contents.{c}")
            role = turn.get("role", "user")
            for p, part in enumerate(_list(turn.get("parts"), f"contents.{c}.parts")):
                # The signature sentinel is a validation switch, not prompt text.
                shown = {k: v for k, v in _mapping(part, f"contents.{c}.parts.{p}").items() if k != "thought_signature"}
                add(f"contents.{c}.parts.{p}", shown, {"role": role, "turn": c, "part": shown})
    return tuple(blocks)


class GeminiCacheSimulator(Replayer):
    """Replays ``generate_content`` bodies against simulated Gemini implicit and explicit caches."""

    def __init__(
        self,
        *,
        count_tokens: CountTokens | None = None,
        price_lookup: PriceLookup | None = default_price_lookup,
        scope: str = "default",
        implicit_ttl: timedelta = timedelta(minutes=5),
        context_window: int | None = None,
    ) -> None:
        """Configure the simulator; ``implicit_ttl`` is how long an implicit entry outlives its last use."""
        if implicit_ttl <= timedelta(0):
            raise UsageError("implicit_ttl must be positive")
        self._count_tokens = count_tokens
        self._price_lookup = price_lookup
        self._scope = scope
        self._implicit_ttl = implicit_ttl
        self._window = context_window
        self._entries: dict[tuple[str, str, bytes], Entry] = {}
        self._caches: dict[str, SimulatedCache] = {}
        self._clock = Clockwork()

    def create_cache(
        self, name: str, *, model: str, tokens: int, at: datetime, ttl: timedelta = DEFAULT_CACHE_TTL
    ) -> SimulatedCache:
        """Create explicit cache ``name`` holding ``tokens`` tokens for ``model`` at ``at``, living ``ttl``."""
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            raise UsageError(f"tokens must be a non-negative integer, got {tokens!r}")
        if ttl <= timedelta(0):
            raise UsageError("a cache's ttl must be positive")
        if at.tzinfo is None or at.utcoffset() is None:
            raise UsageError(f"cache creation time {at!r} must be timezone-aware")
        minimum = min_cacheable_tokens(model)
        if tokens < minimum:
            # The API refuses to create a cache below the model's minimum (G2).
            raise _invalid(f"cached content of {tokens} tokens is below the minimum of {minimum} for {model}")
        creation_cost: Decimal | None = None
        storage_cost: Decimal | None = None
        if self._price_lookup is not None:
            price = self._price_lookup(model, utc_day(at))
            creation_cost = tokens * price.input / _MILLION
            if price.cache_storage_per_hour is not None:
                hours = Decimal(int(ttl.total_seconds())) / _HOUR
                storage_cost = tokens * price.cache_storage_per_hour * hours / _MILLION
        cache = SimulatedCache(
            name=name,
            model=model,
            tokens=tokens,
            created_at=at,
            expires_at=at + ttl,
            creation_cost=creation_cost,
            storage_cost=storage_cost,
        )
        self._caches[name] = cache
        return cache

    @property
    def caches(self) -> tuple[SimulatedCache, ...]:
        """The explicit caches created so far, in creation order (:meth:`run` leaves out their creation and storage)."""
        return tuple(self._caches.values())

    def request(self, request: SimRequest) -> SimulatedRequest:
        """Replay one request; raises the provider error the API would return, leaving the cache untouched."""
        body = request.body
        model = body_model(body)
        config = _mapping(body.get("config"), "config")
        blocks = render_gemini_blocks(body)
        cumulative, own = cumulative_tokens([b.text for b in blocks], request, self._count_tokens)
        at = request.at
        explicit = self._explicit(config, model, at)
        total = own + (explicit.tokens if explicit else 0)
        if self._window is not None and total > self._window:
            raise _too_long(total, self._window)
        index = self._clock.advance(at)
        self._entries = {key: e for key, e in self._entries.items() if e.expires_at > at}

        if explicit is not None:
            usage = Usage(input_tokens=own, cache_read_tokens=explicit.tokens, output_tokens=request.output_tokens)
            hit: int | None = None
        else:
            usage, hit = self._implicit(model, request, blocks, cumulative, _settings(config))
        return SimulatedRequest(
            index=index,
            at=at,
            model=model,
            usage=usage,
            cost=price_and_cost(self._price_lookup, model, at, usage),
            block_count=len(blocks),
            breakpoints=(),
            hit_block=hit,
            written_blocks=(),
        )

    def _explicit(self, config: Mapping[str, Any], model: str, at: datetime) -> SimulatedCache | None:
        name = config.get("cached_content")
        if name is None:
            return None
        cache = self._caches.get(str(name))
        if cache is None or cache.expires_at <= at:
            raise _invalid(
                f"CachedContent {name!r} not found (or permission denied): it does not exist or has expired", status=403
            )
        if normalize_model_id(cache.model) != normalize_model_id(model):
            raise _invalid(f"cached content {name!r} was created for {cache.model}, not {model}")
        for own in ("system_instruction", "tools", "tool_config"):
            if config.get(own):
                raise _invalid(
                    f"CachedContent can not be used with GenerateContent request setting {own}; "
                    "move it into the cached content instead"
                )
        return cache

    def _implicit(
        self,
        model: str,
        request: SimRequest,
        blocks: Sequence[GeminiRenderedBlock],
        cumulative: Sequence[int],
        settings: Any,
    ) -> tuple[Usage, int | None]:
        at = request.at
        scope = (self._scope, normalize_model_id(model))
        hashes = list(itertools.accumulate((b.identity for b in blocks), chain, initial=chain(b"", settings)))[1:]
        hit = next(
            (p for p in range(len(hashes) - 1, -1, -1) if (e := self._entries.get((*scope, hashes[p]))) and e.live(at)),
            None,
        )
        shared = cumulative[hit] if hit is not None else 0
        cached = shared if shared >= min_cacheable_tokens(model) else 0
        available = at + request.first_token_after
        for p, digest in enumerate(hashes):
            key = (*scope, digest)
            entry = self._entries.get(key)
            if entry is not None and entry.expires_at > at:
                entry.expires_at = max(entry.expires_at, at + self._implicit_ttl)  # a hit (or a re-send) refreshes it
            else:
                self._entries[key] = Entry(
                    ttl=self._implicit_ttl, available_at=available, expires_at=at + self._implicit_ttl, tokens=cumulative[p]
                )
        total = cumulative[-1] if cumulative else 0
        usage = Usage(input_tokens=total - cached, cache_read_tokens=cached, output_tokens=request.output_tokens)
        return usage, hit if cached else None


def _settings(config: Mapping[str, Any]) -> Any:
    return {name: config[name] for name in _SETTINGS if config.get(name) is not None}


def _invalid(message: str, *, status: int = 400) -> ProviderError:
    cls = InvalidRequest if status == 400 else PermissionDenied
    return cls(
        f"gemini error {status}: {message}",
        provider="google",
        status=status,
        error_type="INVALID_ARGUMENT" if status == 400 else "PERMISSION_DENIED",
        code=None,
        provider_message=message,
        request_id=None,
        retryable=False,
    )


def _too_long(total: int, window: int) -> ProviderError:
    message = f"The input token count ({total}) exceeds the maximum number of tokens allowed ({window})."
    return ContextLengthExceeded(
        f"gemini error 400 (INVALID_ARGUMENT): {message}",
        provider="google",
        status=400,
        error_type="INVALID_ARGUMENT",
        code=None,
        provider_message=message,
        request_id=None,
        retryable=False,
        prompt_tokens=total,
        max_tokens=None,
        limit_tokens=window,
    )


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _invalid(f"{path}: expected an object")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise _invalid(f"{path}: expected a list")
    return list(value)
