"""The dated price table: model-id matching, dates, cost arithmetic and documented ratios."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from decimal import Decimal

import pytest

from contextwright.errors import UsageError
from contextwright.pricing.prices import (
    PRICES,
    NoPriceOnDate,
    UnknownModel,
    cost,
    known_models,
    normalize_model_id,
    price_for,
)
from contextwright.providers.usage import Usage


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-opus-4-0", "claude-opus-4"),
        ("claude-3-5-haiku-20241022", "claude-haiku-3-5"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
        ("claude-opus-4-1@20250805", "claude-opus-4-1"),
        ("litellm_proxy/claude-opus-4-5-20251101", "claude-opus-4-5"),
        ("openai/gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"),
        ("GPT-4o", "gpt-4o"),
    ],
)
def test_normalize_model_id(raw: str, expected: str) -> None:
    assert normalize_model_id(raw) == expected


def test_dated_id_resolves_to_family_row() -> None:
    price = price_for("claude-sonnet-4-5-20250929")
    assert price.model == "claude-sonnet-4-5"
    assert price.input == Decimal("3.00")


def test_mini_is_not_confused_with_its_family() -> None:
    assert price_for("gpt-4.1-mini").input != price_for("gpt-4.1").input


def test_unknown_model_names_model_and_known_ones() -> None:
    with pytest.raises(UnknownModel) as caught:
        price_for("claude-2-1-20231121")
    error = caught.value
    assert isinstance(error, UsageError)
    assert error.model == "claude-2-1-20231121"
    assert "claude-sonnet-4-5" in error.known and "gpt-4o" in error.known
    assert "claude-2-1-20231121" in str(error) and "claude-sonnet-4-5" in str(error)


def test_latest_row_in_effect_on_the_date() -> None:
    # Sonnet 5.5's cache read went from 0.20 to 0.10 on 2026-10-07.
    assert price_for("claude-sonnet-5-5", on=date(2026, 10, 6)).cache_read == Decimal("0.20")
    assert price_for("claude-sonnet-5-5", on=date(2026, 10, 7)).cache_read == Decimal("0.10")
    assert price_for("claude-sonnet-5-5").cache_read == Decimal("0.10")


def test_release_rows_apply_to_any_date() -> None:
    assert price_for("claude-sonnet-4-20250514", on=date(2025, 7, 14)).output == Decimal("15.00")


def test_no_row_in_effect_yet() -> None:
    dated = replace(price_for("gpt-4o"), effective_from=date(2030, 1, 1))
    with pytest.raises(NoPriceOnDate) as caught:
        price_for("gpt-4o", on=date(2029, 12, 31), table=[dated])
    assert caught.value.earliest == date(2030, 1, 1)
    assert price_for("gpt-4o", on=date(2030, 1, 1), table=[dated]) is dated


def test_every_row_is_sourced_and_every_model_resolves() -> None:
    for row in PRICES:
        assert row.source and "http" in row.source
    for model in known_models():
        assert price_for(model).model == model


def test_anthropic_standard_multipliers() -> None:
    # 5m write 1.25x, 1h write 2x, read 0.1x of the base input price, for the
    # models listed on the main pricing page.
    main_page = [row for row in PRICES if row.provider == "anthropic" and "2026-08-21" in row.source]
    assert main_page
    for row in main_page:
        assert row.cache_write_5m == row.input * Decimal("1.25"), row.model
        assert row.cache_write_1h == row.input * 2, row.model
        assert row.cache_read == row.input / 10, row.model


def test_later_anthropic_models_break_the_read_ratio() -> None:
    opus55 = price_for("claude-opus-5-5")
    assert opus55.cache_read == opus55.input * Decimal("0.05")
    fable51 = price_for("claude-fable-5-1")
    assert fable51.cache_read == fable51.input * Decimal("0.025")


def test_openai_discount_families() -> None:
    assert price_for("gpt-4o").cache_read == price_for("gpt-4o").input / 2
    assert price_for("gpt-4.1").cache_read == price_for("gpt-4.1").input / 4
    assert price_for("gpt-5").cache_read == price_for("gpt-5").input / 10
    sol = price_for("gpt-5.6-sol")
    assert sol.cache_read == sol.input / 10
    assert sol.cache_write_5m == sol.input * Decimal("1.25")
    # Classic models have no write surcharge.
    assert price_for("gpt-5.5").cache_write_5m == price_for("gpt-5.5").input


def test_cost_bills_each_category_at_its_rate() -> None:
    price = price_for("claude-sonnet-4-5")
    usage = Usage(
        input_tokens=1_000,
        cache_read_tokens=20_000,
        cache_write_5m_tokens=3_000,
        cache_write_1h_tokens=4_000,
        output_tokens=500,
    )
    expected = (
        1_000 * price.input
        + 20_000 * price.cache_read
        + 3_000 * price.cache_write_5m
        + 4_000 * price.cache_write_1h
        + 500 * price.output
    ) / Decimal(1_000_000)
    result = cost(usage, price)
    assert isinstance(result, Decimal)
    assert result == expected


def test_cache_break_even_points() -> None:
    # A 5m write pays for itself after one read; a 1h write after two.
    price = price_for("claude-sonnet-4-5")
    n = 10_000
    uncached = cost(Usage(input_tokens=n), price)
    write_5m = cost(Usage(cache_write_5m_tokens=n), price)
    write_1h = cost(Usage(cache_write_1h_tokens=n), price)
    read = cost(Usage(cache_read_tokens=n), price)
    assert write_5m + read < 2 * uncached
    assert write_1h + read > 2 * uncached
    assert write_1h + 2 * read < 3 * uncached


def test_long_context_tier_switches_the_whole_request() -> None:
    price = price_for("gpt-5.4")
    tier = price.long_context
    assert tier is not None and tier.above_input_tokens == 272_000
    at_threshold = Usage(input_tokens=200_000, cache_read_tokens=72_000, output_tokens=1_000)
    above = Usage(input_tokens=200_001, cache_read_tokens=72_000, output_tokens=1_000)
    assert cost(at_threshold, price) == (200_000 * price.input + 72_000 * price.cache_read + 1_000 * price.output) / Decimal(
        10**6
    )
    assert cost(above, price) == (200_001 * tier.input + 72_000 * tier.cache_read + 1_000 * tier.output) / Decimal(10**6)
    assert (tier.input, tier.cache_read, tier.output) == (
        Decimal("5.00"),
        Decimal("0.50"),
        Decimal("22.50"),
    )


def test_haiku_55_long_prompts_cost_five_times_every_rate() -> None:
    price = price_for("claude-haiku-5-5")
    tier = price.long_context
    assert tier is not None and tier.above_input_tokens == 100_000
    for name in ("input", "cache_write_5m", "cache_write_1h", "cache_read", "output"):
        assert getattr(tier, name) == 5 * getattr(price, name), name
    # The threshold counts cache reads and writes too.
    small_uncached_big_read = Usage(input_tokens=10, cache_read_tokens=100_000)
    assert cost(small_uncached_big_read, price) == (10 * tier.input + 100_000 * tier.cache_read) / Decimal(10**6)
