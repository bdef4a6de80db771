"""A dated list-price table and the cost of a :class:`~contextwright.providers.usage.Usage`.

Prices are US dollars per million tokens, held as :class:`~decimal.Decimal` so that
sums over long sessions are exact and identical on every machine; :func:`cost`
returns a ``Decimal`` in dollars and never rounds (format it when showing it).

Each row has an ``effective_from`` date. ``None`` means "since the model was
released": no earlier price is documented, so the row applies to any date. Later rows
record documented changes (for example a cheaper cache read from a given day), and
:func:`price_for` picks the latest row in effect on the date asked.

Model ids are matched after :func:`normalize_model_id` removes what does not change
the price: router prefixes (``openai/``, ``litellm_proxy/``), Bedrock decorations
(``us.anthropic.`` ... ``-v1:0``), Vertex ``@date`` suffixes and dated snapshot
suffixes (``claude-sonnet-4-5-20250929`` -> ``claude-sonnet-4-5``,
``gpt-4.1-mini-2025-04-14`` -> ``gpt-4.1-mini``). A snapshot whose price differed
from its family's current price is therefore priced at the current one.

Not modelled: Batch (half price), data-residency (x1.1), fast/priority modes, the
retired Sonnet 4/4.5 1M-context beta tier (it depended on a request header that usage
does not show) and the GPT-5.6 long-context columns (their threshold is not stated).
Long-context tiers that usage alone decides (GPT-5.4/5.5 above 272K input tokens,
Haiku 5.5 above 100K) are modelled by :class:`LongContextRates`.

Sources (USD per MTok): Anthropic https://platform.claude.com/docs/en/about-claude/pricing
(snapshot 2026-08-21) plus the later model pages cited per row; OpenAI
https://developers.openai.com/api/docs/pricing (snapshot Aug-Sep 2026); Google Gemini, see
the Gemini rows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Final, Literal

from contextwright import _model_map
from contextwright.errors import UsageError
from contextwright.providers.usage import Usage

__all__ = [
    "PRICES",
    "LongContextRates",
    "NoPriceOnDate",
    "Price",
    "UnknownModel",
    "cost",
    "known_models",
    "normalize_model_id",
    "price_for",
]

_MILLION: Final = Decimal(1_000_000)


class UnknownModel(UsageError, LookupError):
    """A model id is not in the table; the message lists the known ones."""

    def __init__(self, model: str, *, known: tuple[str, ...], what: str = "price") -> None:
        super().__init__(
            f"no {what} known for model {model!r} (normalized {normalize_model_id(model)!r}); known models: {', '.join(known)}",
            model=model,
            known=known,
        )


class NoPriceOnDate(UnknownModel):
    """The model is known, but none of its prices was in effect on the date asked."""

    def __init__(self, model: str, on: date, *, earliest: date) -> None:
        UsageError.__init__(
            self,
            f"no price for model {model!r} in effect on {on.isoformat()}; the earliest starts {earliest.isoformat()}",
            model=model,
            on=on,
            earliest=earliest,
            known=(),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class LongContextRates:
    """Rates that replace the base rates for a whole request above a prompt size."""

    above_input_tokens: int
    """The tier applies when the whole prompt (uncached + read + written) is larger than this."""
    input: Decimal
    """Uncached input, USD per million tokens."""
    cache_write_5m: Decimal
    """Short-TTL cache write, USD per million tokens."""
    cache_write_1h: Decimal
    """1-hour cache write, USD per million tokens."""
    cache_read: Decimal
    """Cache read, USD per million tokens."""
    output: Decimal
    """Output, USD per million tokens."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Price:
    """List prices of one model from one date on, in USD per million tokens."""

    model: str
    """Canonical model id (see :func:`normalize_model_id`)."""
    provider: Literal["anthropic", "openai", "google"]
    """Who sells it."""
    effective_from: date | None
    """First day this row applies; ``None`` means since the model's release."""
    input: Decimal
    """Uncached input."""
    cache_write_5m: Decimal
    """Anthropic 5-minute cache write; for OpenAI, the (single) cache-write rate."""
    cache_write_1h: Decimal
    """Anthropic 1-hour cache write; for OpenAI, the same single cache-write rate."""
    cache_read: Decimal
    """Cache read (Anthropic "hits & refreshes", OpenAI "cached input")."""
    output: Decimal
    """Output, reasoning/thinking included."""
    source: str
    """Where the numbers come from (document and snapshot date)."""
    long_context: LongContextRates | None = None
    """Whole-request rates above a prompt size, when the model has such a tier."""
    cache_storage_per_hour: Decimal | None = None
    """Storage of an explicit cache (Gemini ``cachedContents``), USD per million tokens per hour; None where unknown."""


def _d(value: str) -> Decimal:
    return Decimal(value)


_A_PRICE = "Anthropic pricing page, snapshot 2026-08-21: https://platform.claude.com/docs/en/about-claude/pricing"
_O_PRICE = "OpenAI pricing page, snapshot Aug-Sep 2026: https://developers.openai.com/api/docs/pricing"
_A_LEGACY = "Anthropic pricing page, list prices of retired models: https://docs.anthropic.com/en/docs/about-claude/pricing"


def _anthropic(
    models: Iterable[str],
    rates: tuple[str, str, str, str, str],
    *,
    source: str = _A_PRICE,
    effective_from: date | None = None,
    long_context: LongContextRates | None = None,
) -> tuple[Price, ...]:
    inp, w5, w1, read, out = (_d(rate) for rate in rates)
    return tuple(
        Price(
            model=model,
            provider="anthropic",
            effective_from=effective_from,
            input=inp,
            cache_write_5m=w5,
            cache_write_1h=w1,
            cache_read=read,
            output=out,
            source=source,
            long_context=long_context,
        )
        for model in models
    )


def _long_context_tier(long_context: tuple[int, str, str, str] | None) -> LongContextRates | None:
    """The rates above a prompt length, ``(above, input, cache read, output)``; writes bill as input."""
    if long_context is None:
        return None
    above, lc_in, lc_read, lc_out = long_context
    return LongContextRates(
        above_input_tokens=above,
        input=_d(lc_in),
        cache_write_5m=_d(lc_in),
        cache_write_1h=_d(lc_in),
        cache_read=_d(lc_read),
        output=_d(lc_out),
    )


def _openai(
    model: str,
    rates: tuple[str, str, str | None, str],
    *,
    source: str = _O_PRICE,
    long_context: tuple[int, str, str, str] | None = None,
) -> Price:
    inp, read, write, out = rates
    # Models before GPT-5.6 have no write surcharge: a "write" is ordinary input.
    # https://developers.openai.com/api/docs/guides/prompt-caching
    write_rate = _d(write) if write is not None else _d(inp)
    tier = _long_context_tier(long_context)
    return Price(
        model=model,
        provider="openai",
        effective_from=None,
        input=_d(inp),
        cache_write_5m=write_rate,
        cache_write_1h=write_rate,
        cache_read=_d(read),
        output=_d(out),
        source=source,
        long_context=tier,
    )


# Anthropic: input, 5m write, 1h write, cache read, output.
_ANTHROPIC_ROWS: Final[tuple[Price, ...]] = (
    *_anthropic(
        (
            "claude-opus-4-5",
            "claude-opus-4-6",
            "claude-opus-4-7",
            "claude-opus-4-8",
            "claude-opus-5",
        ),
        ("5.00", "6.25", "10.00", "0.50", "25.00"),
    ),
    *_anthropic(("claude-opus-4", "claude-opus-4-1"), ("15.00", "18.75", "30.00", "1.50", "75.00")),
    *_anthropic(
        ("claude-sonnet-4", "claude-sonnet-4-5", "claude-sonnet-4-6"),
        ("3.00", "3.75", "6.00", "0.30", "15.00"),
    ),
    *_anthropic(("claude-sonnet-5",), ("2.00", "2.50", "4.00", "0.20", "10.00")),
    *_anthropic(("claude-haiku-4-5",), ("1.00", "1.25", "2.00", "0.10", "5.00")),
    *_anthropic(("claude-haiku-3-5",), ("0.80", "1.00", "1.60", "0.08", "4.00")),
    # Retired models still found in recorded logs (e.g. OpenHands SWE-bench runs on Claude 3.5 Sonnet).
    *_anthropic(("claude-3-5-sonnet", "claude-3-7-sonnet"), ("3.00", "3.75", "6.00", "0.30", "15.00"), source=_A_LEGACY),
    *_anthropic(("claude-3-opus",), ("15.00", "18.75", "30.00", "1.50", "75.00"), source=_A_LEGACY),
    *_anthropic(("claude-3-haiku",), ("0.25", "0.30", "0.50", "0.03", "1.25"), source=_A_LEGACY),
    *_anthropic(("claude-fable-5", "claude-mythos-5"), ("10.00", "12.50", "20.00", "1.00", "50.00")),
    # Later models whose cache-read multiplier is not 0.1x.
    *_anthropic(
        ("claude-opus-5-5",),
        ("4.00", "5.00", "8.00", "0.20", "20.00"),
        source="Claude Opus 5.5 model page: https://platform.claude.com/docs/zh-CN/models/opus-5-5/overview",
    ),
    *_anthropic(
        ("claude-fable-5-1", "claude-mythos-5-1"),
        ("10.00", "12.50", "20.00", "0.25", "50.00"),
        source="Anthropic pricing page, Sep-Oct 2026: https://platform.claude.com/docs/en/about-claude/pricing",
    ),
    *_anthropic(
        ("claude-sonnet-5-5",),
        ("2.00", "2.50", "4.00", "0.20", "10.00"),
        source="Claude Sonnet 5.5 model page at launch: https://platform.claude.com/docs/zh-CN/models/sonnet-5-5/overview",
    ),
    *_anthropic(
        ("claude-sonnet-5-5",),
        ("2.00", "2.50", "4.00", "0.10", "10.00"),
        effective_from=date(2026, 10, 7),
        source="cache-read cut of 2026-10-07 (secondary price trackers): https://github.com/kurofune/claudit/releases/tag/v1.9.2",
    ),
    *_anthropic(
        ("claude-haiku-5-5",),
        ("0.10", "0.125", "0.20", "0.01", "0.50"),
        source="Claude Haiku 5.5 model page: https://platform.claude.com/docs/en/models/haiku-5-5/overview",
        # Above 100K prompt tokens (reads and writes included) every rate is 5x.
        long_context=LongContextRates(
            above_input_tokens=100_000,
            input=_d("0.50"),
            cache_write_5m=_d("0.625"),
            cache_write_1h=_d("1.00"),
            cache_read=_d("0.05"),
            output=_d("2.50"),
        ),
    ),
)

# OpenAI: input, cached input, cache write (None: no surcharge), output.
_OPENAI_ROWS: Final[tuple[Price, ...]] = (
    _openai("gpt-4o", ("2.50", "1.25", None, "10.00")),
    _openai("gpt-4o-mini", ("0.15", "0.075", None, "0.60")),
    _openai("gpt-4.1", ("2.00", "0.50", None, "8.00")),
    _openai("gpt-4.1-mini", ("0.40", "0.10", None, "1.60")),
    _openai("gpt-4.1-nano", ("0.10", "0.025", None, "0.40")),
    _openai("o3", ("2.00", "0.50", None, "8.00")),
    _openai("o4-mini", ("1.10", "0.275", None, "4.40")),
    _openai("gpt-5", ("1.25", "0.125", None, "10.00")),
    _openai("gpt-5.1", ("1.25", "0.125", None, "10.00")),
    _openai("gpt-5-mini", ("0.25", "0.025", None, "2.00")),
    _openai("gpt-5-nano", ("0.05", "0.005", None, "0.40")),
    _openai("gpt-5.2", ("1.75", "0.175", None, "14.00")),
    # Above 272K input tokens the whole request moves to the long-context rates.
    _openai("gpt-5.4", ("2.50", "0.25", None, "15.00"), long_context=(272_000, "5.00", "0.50", "22.50")),
    _openai("gpt-5.5", ("5.00", "0.50", None, "30.00"), long_context=(272_000, "10.00", "1.00", "45.00")),
    # Promotional price, announced to last at least through 2026-11-21.
    _openai("gpt-5.6-sol", ("4.00", "0.40", "5.00", "20.00")),
    _openai("gpt-5.6-terra", ("2.00", "0.20", "2.50", "12.00")),
    _openai("gpt-5.6-luna", ("0.20", "0.02", "0.25", "1.20")),
)

# Gemini API (generateContent, standard tier, text): input, cached input, output, and the storage of
# an explicit cache per million tokens per hour (None: not known here). Source: LiteLLM's model map
# (litellm 1.110.2, entries "gemini/<model>": input_cost_per_token, cache_read_input_token_cost,
# output_cost_per_token and their _above_200k_tokens tier), which agrees with the Gemini API
# pricing page as snapshotted 2025-10-08 for 2.5 Pro and 2.5 Flash
# (https://ai.google.dev/gemini-api/docs/pricing: cached input $0.125 / $0.03, storage $4.50 / $1.00
# per MTok-hour). research/provider-caching.md lists no Gemini prices. Implicit and explicit cache
# reads are billed at the cached-input rate; Gemini has no write surcharge (a write is ordinary input).
_G_PRICE = (
    "LiteLLM model map (litellm 1.110.2, gemini/ entries) and the Gemini API pricing page "
    "(snapshot 2025-10-08): https://ai.google.dev/gemini-api/docs/pricing"
)


def _google(
    models: Iterable[str],
    rates: tuple[str, str, str],
    *,
    storage: str | None = None,
    long_context: tuple[int, str, str, str] | None = None,
) -> tuple[Price, ...]:
    inp, read, out = (_d(rate) for rate in rates)
    tier = _long_context_tier(long_context)
    return tuple(
        Price(
            model=model,
            provider="google",
            effective_from=None,
            input=inp,
            cache_write_5m=inp,
            cache_write_1h=inp,
            cache_read=read,
            output=out,
            source=_G_PRICE,
            long_context=tier,
            cache_storage_per_hour=None if storage is None else _d(storage),
        )
        for model in models
    )


_GOOGLE_ROWS: Final[tuple[Price, ...]] = (
    # Above 200K prompt tokens the whole request moves to the long-context rates.
    *_google(("gemini-2.5-pro",), ("1.25", "0.125", "10.00"), storage="4.50", long_context=(200_000, "2.50", "0.25", "15.00")),
    *_google(("gemini-2.5-flash",), ("0.30", "0.03", "2.50"), storage="1.00"),
    *_google(("gemini-2.5-flash-lite",), ("0.10", "0.01", "0.40"), storage="1.00"),
    *_google(("gemini-3-flash-preview",), ("0.50", "0.05", "3.00")),
    *_google(("gemini-3.1-pro-preview",), ("2.00", "0.20", "12.00"), long_context=(200_000, "4.00", "0.40", "18.00")),
    *_google(("gemini-3.5-flash",), ("1.50", "0.15", "9.00")),
    *_google(("gemini-3.6-flash", "gemini-3.7-flash", "gemini-3.8-flash"), ("0.75", "0.075", "3.75")),
)

PRICES: Final[tuple[Price, ...]] = _ANTHROPIC_ROWS + _OPENAI_ROWS + _GOOGLE_ROWS
"""Every known price row; :func:`price_for` searches this unless given another table."""

_ALIASES: Final[dict[str, str]] = {
    "claude-opus-4-0": "claude-opus-4",
    "claude-sonnet-4-0": "claude-sonnet-4",
    "claude-3-5-haiku": "claude-haiku-3-5",
    # Moving aliases of retired models, as old logs recorded them.
    "claude-3-5-haiku-latest": "claude-haiku-3-5",
    "claude-3-5-sonnet-latest": "claude-3-5-sonnet",
    "claude-3-7-sonnet-latest": "claude-3-7-sonnet",
    "claude-3-opus-latest": "claude-3-opus",
}
_DATE_SUFFIX = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")
_BEDROCK_VERSION = re.compile(r"-v\d+(?::\d+)?$")
_BEDROCK_PREFIX = re.compile(r"^(?:[a-z]{2,6}\.)?anthropic\.")


def normalize_model_id(model: str) -> str:
    """Return the table key for a model id: lower case, no router prefix, no dated suffix."""
    name = model.strip().lower()
    name = name.rsplit("/", 1)[-1]
    name = name.split("@", 1)[0]
    if _BEDROCK_PREFIX.match(name):
        name = _BEDROCK_VERSION.sub("", _BEDROCK_PREFIX.sub("", name))
    name = _DATE_SUFFIX.sub("", name)
    return _ALIASES.get(name, name)


def known_models(table: Iterable[Price] = PRICES) -> tuple[str, ...]:
    """Sorted canonical ids of every model in ``table``."""
    return tuple(sorted({row.model for row in table}))


def price_for(model: str, on: date | None = None, *, table: Iterable[Price] = PRICES) -> Price:
    """Return the price row for ``model`` in effect on ``on`` (the latest row when ``on`` is None).

    Raises :class:`UnknownModel` for a model not in the table and
    :class:`NoPriceOnDate` when every row of the model starts after ``on``.
    """
    rows = tuple(table)
    key = normalize_model_id(model)
    candidates = [row for row in rows if row.model == key]
    if not candidates:
        mapped = _mapped_price(model) if table is PRICES else None
        if mapped is None:
            raise UnknownModel(model, known=known_models(rows))
        return mapped
    in_effect = [row for row in candidates if on is None or row.effective_from is None or row.effective_from <= on]
    if not in_effect:
        earliest = min(row.effective_from for row in candidates if row.effective_from is not None)
        raise NoPriceOnDate(model, on, earliest=earliest)  # type: ignore[arg-type]  # on is a date here: without one every row is in effect
    return max(in_effect, key=lambda row: row.effective_from or date.min)


def _mapped_price(model: str) -> Price | None:
    """A price from LiteLLM's model map for a model the table does not know (see :mod:`contextwright._model_map`).

    Only an entry found under the id itself counts: a host's price is not another host's.
    Anthropic's 1-hour write is twice the input rate; OpenAI-style writes are ordinary input.
    """
    entry = _model_map.lookup(model)
    if entry is None or not entry.exact or entry.input_per_token is None or entry.output_per_token is None:
        return None
    inp, out = _per_million(entry.input_per_token), _per_million(entry.output_per_token)
    read = inp if entry.cache_read_per_token is None else _per_million(entry.cache_read_per_token)
    anthropic = entry.provider == "anthropic"
    if anthropic:
        write_5m = inp * Decimal("1.25") if entry.cache_write_per_token is None else _per_million(entry.cache_write_per_token)
        write_1h = inp * 2
    else:
        write_5m = write_1h = inp
    return Price(
        model=entry.key,
        provider="anthropic" if anthropic else "openai",
        effective_from=None,
        input=inp,
        cache_write_5m=write_5m,
        cache_write_1h=write_1h,
        cache_read=read,
        output=out,
        source=f"{entry.source}, entry {entry.key!r}",
    )


def _per_million(per_token: float) -> Decimal:
    # repr() gives the shortest decimal that reads back as the same float: 1.1e-06 -> 1.1 per million.
    rate = (Decimal(repr(per_token)) * _MILLION).normalize()
    return rate.quantize(Decimal(1)) if rate == rate.to_integral_value() else rate  # 60, not 6E+1


def cost(usage: Usage, price: Price) -> Decimal:
    """Return the exact cost of ``usage`` at ``price``, in US dollars.

    Uncached input, cache reads, 5m/1h writes and output are each billed at their own
    rate (https://platform.claude.com/docs/en/build-with-claude/prompt-caching,
    https://developers.openai.com/api/docs/guides/prompt-caching); a long-context
    tier, when the prompt is over its threshold, replaces every rate for the request.
    """
    rates: Price | LongContextRates = price
    if price.long_context is not None and usage.total_input > price.long_context.above_input_tokens:
        rates = price.long_context
    total = (
        usage.input_tokens * rates.input
        + usage.cache_read_tokens * rates.cache_read
        + usage.cache_write_5m_tokens * rates.cache_write_5m
        + usage.cache_write_1h_tokens * rates.cache_write_1h
        + usage.output_tokens * rates.output
    )
    return total / _MILLION
