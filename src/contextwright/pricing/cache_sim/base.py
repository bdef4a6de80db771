"""Shared pieces of the offline cache simulators: inputs, results, the session summary."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any, Generic, TypeVar

from contextwright.canonical import canonical_bytes
from contextwright.errors import UsageError
from contextwright.pricing.prices import Price, cost, price_for
from contextwright.providers.usage import Usage

__all__ = [
    "CountTokens",
    "PriceLookup",
    "SimRequest",
    "SimulatedRequest",
    "SimulationSummary",
    "UnsupportedSimulation",
    "summarize",
]

CountTokens = Callable[[str], int]
"""``text -> token count``; the simulators apply it to each block's canonical JSON."""

PriceLookup = Callable[[str, date], Price]
"""``(model, day) -> Price``; :func:`~contextwright.pricing.prices.price_for` by default."""


class UnsupportedSimulation(UsageError):
    """The request uses a feature the offline simulator cannot reproduce faithfully."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SimRequest:
    """One request to replay: when it started and the exact JSON body sent."""

    at: datetime
    """Start of the request (timezone-aware); cache lifetimes are measured from here."""
    body: Mapping[str, Any]
    """The provider request body exactly as sent (``model``, ``messages``, ...)."""
    block_tokens: tuple[int, ...] | None = None
    """Exact tokens per rendered block, in render order; replaces ``count_tokens`` when given."""
    output_tokens: int = 0
    """Output tokens to bill (from a recorded response); the simulator does not generate."""
    first_token_after: timedelta = timedelta(0)
    """Time to first token: an entry written by this request is readable only from ``at`` plus this."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SimulatedRequest:
    """What the simulator predicts for one request."""

    index: int
    """Position of the request in the replay, from 0."""
    at: datetime
    """Start of the request."""
    model: str
    """Model id from the body."""
    usage: Usage
    """Predicted usage: uncached input, cache read, cache writes by TTL, output."""
    cost: Decimal | None
    """Predicted cost in USD, or ``None`` when the simulator has no price lookup."""
    block_count: int
    """Number of rendered blocks."""
    breakpoints: tuple[int, ...]
    """Block indexes that asked for a cache write (explicit, automatic or implicit)."""
    hit_block: int | None
    """Block index at which the longest cache hit ended, if any."""
    written_blocks: tuple[int, ...]
    """Block indexes at which this request wrote a cache entry."""
    write_tokens_by_ttl: Mapping[str, int] = field(default_factory=dict)
    """The cache writes split by the lifetime asked for (``{"30m": n, "12h": m}``), where the
    provider bills them at one rate (OpenAI); empty where :attr:`usage` splits them itself."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SimulationSummary:
    """A whole replay: every request plus the session totals."""

    requests: tuple[SimulatedRequest, ...]
    """Per-request predictions, in replay order."""
    usage: Usage
    """Sum of the per-request usages."""
    cost: Decimal | None
    """Total cost in USD; ``None`` if any request had no price."""

    @property
    def cache_read_share(self) -> float:
        """Token-weighted share of all input tokens that were read from cache."""
        return self.usage.cache_read_share


def summarize(results: Iterable[SimulatedRequest]) -> SimulationSummary:
    """Add up per-request predictions into a :class:`SimulationSummary`."""
    items = tuple(results)
    total = Usage()
    total_cost: Decimal | None = Decimal(0)
    for item in items:
        total = total + item.usage
        total_cost = None if total_cost is None or item.cost is None else total_cost + item.cost
    return SimulationSummary(requests=items, usage=total, cost=total_cost)


@dataclass(kw_only=True, slots=True)
class Entry:
    """A live cache entry (mutable: hits move its expiry)."""

    ttl: timedelta
    available_at: datetime
    expires_at: datetime
    tokens: int = 0

    def live(self, at: datetime) -> bool:
        """True when a request starting at ``at`` can read this entry."""
        return self.available_at <= at < self.expires_at


@dataclass(kw_only=True, slots=True)
class Clockwork:
    """Checks that replayed times are aware and never go backwards."""

    last: datetime | None = None
    count: int = field(default=0)

    def advance(self, at: datetime) -> int:
        """Accept the next request time and return its index."""
        if at.tzinfo is None or at.utcoffset() is None:
            raise UsageError(f"request time {at!r} must be timezone-aware")
        if self.last is not None and at < self.last:
            raise UsageError(f"requests must be replayed in time order: {at.isoformat()} < {self.last.isoformat()}")
        self.last = at
        index = self.count
        self.count += 1
        return index


BlockT = TypeVar("BlockT")


class Replayer:
    """What every simulator replays the same way: a list of requests, one by one, summed up."""

    _count_tokens: CountTokens | None

    def request(self, request: SimRequest) -> SimulatedRequest:
        """Replay one request (each simulator has its own)."""
        raise NotImplementedError

    def run(self, requests: Iterable[SimRequest | tuple[datetime, Mapping[str, Any]]]) -> SimulationSummary:
        """Replay ``requests`` in order and summarize."""
        return summarize(self.request(as_sim_request(item)) for item in requests)


class PrefixReplayer(Replayer, Generic[BlockT]):
    """A :class:`Replayer` that keeps the latest request's rendering for callers to inspect."""

    _last: tuple[tuple[BlockT, ...], tuple[bytes, ...], tuple[int, ...]] | None

    @property
    def last_rendered(self) -> tuple[tuple[BlockT, ...], tuple[bytes, ...], tuple[int, ...]] | None:
        """The latest simulated request's blocks, prefix hashes and cumulative tokens (None before any)."""
        return self._last

    @property
    def count_tokens(self) -> CountTokens | None:
        """The token counter this simulator was given (None: requests carry exact ``block_tokens``)."""
        return self._count_tokens


def body_model(body: Mapping[str, Any]) -> str:
    """The body's ``model``; a body without one is a usage error."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise UsageError("the request body has no model")
    return model


def cumulative_tokens(texts: list[str], request: SimRequest, count_tokens: CountTokens | None) -> tuple[list[int], int]:
    """Running token totals at the end of each block (see :func:`block_token_counts`), and the whole request's."""
    cumulative = list(itertools.accumulate(block_token_counts(texts, request, count_tokens)))
    return cumulative, cumulative[-1] if cumulative else 0


def as_sim_request(item: SimRequest | tuple[datetime, Mapping[str, Any]]) -> SimRequest:
    """Accept either a :class:`SimRequest` or an ``(at, body)`` pair."""
    if isinstance(item, SimRequest):
        return item
    at, body = item
    return SimRequest(at=at, body=body)


def chain(previous: bytes, value: Any) -> bytes:
    """Extend a cumulative prefix hash by the canonical JSON of ``value``."""
    return hashlib.sha256(previous + canonical_bytes(value)).digest()


def block_token_counts(texts: list[str], request: SimRequest, count_tokens: CountTokens | None) -> list[int]:
    """Tokens per block: the exact numbers given with the request, else ``count_tokens``."""
    if request.block_tokens is not None:
        if len(request.block_tokens) != len(texts):
            raise UsageError(f"block_tokens has {len(request.block_tokens)} entries but the request renders {len(texts)} blocks")
        if any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in request.block_tokens):
            raise UsageError("block_tokens must be non-negative integers")
        return list(request.block_tokens)
    if count_tokens is None:
        raise UsageError("give the simulator a count_tokens function or the request exact block_tokens")
    return [count_tokens(text) for text in texts]


def price_and_cost(lookup: PriceLookup | None, model: str, at: datetime, usage: Usage) -> Decimal | None:
    """Cost of ``usage`` at the model's price on the request's (UTC) day, or ``None`` without a lookup."""
    if lookup is None:
        return None
    return cost(usage, lookup(model, utc_day(at)))


def utc_day(at: datetime) -> date:
    """The UTC calendar day of an aware datetime (dated tables are keyed by day)."""
    return at.astimezone(UTC).date()


def default_price_lookup(model: str, day: date) -> Price:
    """:func:`~contextwright.pricing.prices.price_for` with the shipped table."""
    return price_for(model, day)
