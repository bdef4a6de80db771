"""The Gemini cache simulator: implicit prefix caching and explicit ``cachedContents``, priced from the dated table."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from test_render_anthropic import make_fanout_request, make_request

from contextwright.errors import ContextLengthExceeded, UsageError
from contextwright.events.catalog import Usage
from contextwright.pricing.cache_sim import GeminiCacheSimulator, SimRequest, render_gemini_blocks
from contextwright.pricing.prices import cost, price_for
from contextwright.providers.errors import InvalidRequest, PermissionDenied
from contextwright.providers.wires import gemini

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
FLASH = "gemini-2.5-flash"


def body(*turns: str, model: str = FLASH, system: str | None = "You are careful.", **config: Any) -> dict[str, Any]:
    settings: dict[str, Any] = dict(config)
    if system is not None:
        settings["system_instruction"] = {"parts": [{"text": system}]}
    contents = [{"role": "user" if i % 2 == 0 else "model", "parts": [{"text": t}]} for i, t in enumerate(turns)]
    return {"model": model, "contents": contents, "config": settings}


def send(sim: GeminiCacheSimulator, at: datetime, payload: dict[str, Any], tokens: tuple[int, ...], output: int = 0) -> Any:
    return sim.request(SimRequest(at=at, body=payload, block_tokens=tokens, output_tokens=output))


class TestImplicitCaching:
    def test_a_repeated_prefix_is_read_at_the_cached_rate(self) -> None:
        sim = GeminiCacheSimulator()
        first = send(sim, T0, body("u0"), (1500, 1000))
        assert first.usage == Usage(input_tokens=2500)
        second = send(sim, T0 + timedelta(minutes=1), body("u0", "a0", "u1"), (1500, 1000, 300, 200), output=50)
        assert second.usage == Usage(input_tokens=500, cache_read_tokens=2500, output_tokens=50)
        assert second.hit_block == 1
        price = price_for(FLASH)
        assert second.cost == (500 * price.input + 2500 * price.cache_read + 50 * price.output) / Decimal(1_000_000)
        assert price.cache_read == Decimal("0.03")  # 90% off the $0.30 input rate

    def test_nothing_is_credited_below_the_models_minimum(self) -> None:
        sim = GeminiCacheSimulator()
        send(sim, T0, body("u0"), (1000, 1000))
        second = send(sim, T0 + timedelta(minutes=1), body("u0", "a0"), (1000, 1000, 10))
        assert second.usage.cache_read_tokens == 0  # 2,000 shared tokens < 2,048 for 2.5 Flash
        pro = GeminiCacheSimulator()
        send(pro, T0, body("u0", model="gemini-3.1-pro-preview"), (2000, 2500))
        again = send(pro, T0 + timedelta(minutes=1), body("u0", "a0", model="gemini-3.1-pro-preview"), (2000, 2500, 10))
        assert again.usage.cache_read_tokens == 4500  # 4,096 is the minimum there

    def test_entries_expire_after_the_idle_lifetime_and_each_hit_refreshes_them(self) -> None:
        sim = GeminiCacheSimulator(implicit_ttl=timedelta(minutes=5))
        send(sim, T0, body("u0"), (3000, 10))
        hit = send(sim, T0 + timedelta(minutes=4), body("u0", "a0"), (3000, 10, 10))
        assert hit.usage.cache_read_tokens == 3010
        refreshed = send(sim, T0 + timedelta(minutes=8), body("u0", "a0"), (3000, 10, 10))
        assert refreshed.usage.cache_read_tokens == 3020
        expired = send(sim, T0 + timedelta(minutes=14), body("u0", "a0"), (3000, 10, 10))
        assert expired.usage.cache_read_tokens == 0

    def test_a_changed_system_instruction_or_another_model_misses_everything(self) -> None:
        sim = GeminiCacheSimulator()
        send(sim, T0, body("u0"), (3000, 10))
        other_system = send(sim, T0 + timedelta(seconds=10), body("u0", system="Be brief."), (3000, 10))
        assert other_system.usage.cache_read_tokens == 0
        other_model = send(sim, T0 + timedelta(seconds=20), body("u0", model="gemini-2.5-pro"), (3000, 10))
        assert other_model.usage.cache_read_tokens == 0
        thinking = send(sim, T0 + timedelta(seconds=30), body("u0", thinking_config={"thinking_budget": 0}), (3000, 10))
        assert thinking.usage.cache_read_tokens == 0  # a setting read before the conversation

    def test_a_prompt_over_the_window_is_refused_as_the_api_refuses_it(self) -> None:
        sim = GeminiCacheSimulator(context_window=1000)
        with pytest.raises(ContextLengthExceeded, match=r"input token count \(1200\) exceeds"):
            send(sim, T0, body("u0"), (600, 600))

    def test_the_long_context_tier_prices_the_whole_request(self) -> None:
        sim = GeminiCacheSimulator()
        big = send(sim, T0, body("u0", model="gemini-2.5-pro"), (150_000, 60_000))
        assert big.cost == 210_000 * Decimal("2.50") / Decimal(1_000_000)


class TestWireBodies:
    def test_bodies_the_wire_renders_replay_and_the_next_turn_reads_the_last(self) -> None:
        caps = gemini.capabilities(FLASH)
        first = gemini.render(replace(make_request(), provider="google", model=FLASH), caps)
        second = gemini.render(replace(make_fanout_request(3), provider="google", model=FLASH), caps)
        blocks = render_gemini_blocks(first)
        assert [b.path for b in blocks[:5]] == [f"config.system_instruction.parts.{i}" for i in range(4)] + [
            "config.tools.0.function_declarations.0"
        ]
        assert all("thought_signature" not in b.text for b in blocks)
        sim = GeminiCacheSimulator(count_tokens=len)  # a token per character: well past the 2,048 minimum
        one = sim.request(SimRequest(at=T0, body=first))
        two = sim.request(SimRequest(at=T0 + timedelta(seconds=30), body=second))
        assert one.usage.cache_read_tokens == 0
        # The history the first request ended with (before its volatile tail) is read back.
        assert 0 < two.usage.cache_read_tokens < two.usage.total_input
        assert two.hit_block is not None and two.hit_block < len(blocks)


class TestExplicitCaching:
    def test_creation_and_storage_are_priced_and_requests_read_the_whole_cache(self) -> None:
        sim = GeminiCacheSimulator()
        cache = sim.create_cache("cachedContents/docs", model=FLASH, tokens=100_000, at=T0, ttl=timedelta(hours=2))
        assert cache.creation_cost == Decimal("0.03")  # 100K x $0.30 / MTok
        assert cache.storage_cost == Decimal("0.2")  # 100K x $1.00 / MTok-hour x 2 h
        result = send(
            sim, T0 + timedelta(minutes=10), body("question", system=None, cached_content=cache.name), (200,), output=40
        )
        assert result.usage == Usage(input_tokens=200, cache_read_tokens=100_000, output_tokens=40)
        assert result.cost == cost(result.usage, price_for(FLASH))
        assert sim.caches == (cache,)

    def test_a_request_naming_a_cache_may_not_send_its_own_system_instruction_or_tools(self) -> None:
        sim = GeminiCacheSimulator()
        sim.create_cache("cachedContents/docs", model=FLASH, tokens=5000, at=T0)
        with pytest.raises(InvalidRequest, match="system_instruction"):
            send(sim, T0 + timedelta(minutes=1), body("q", cached_content="cachedContents/docs"), (10, 10))
        tools = [{"function_declarations": [{"name": "f"}]}]
        with pytest.raises(InvalidRequest, match="tools"):
            send(
                sim,
                T0 + timedelta(minutes=1),
                body("q", system=None, tools=tools, cached_content="cachedContents/docs"),
                (10, 10),
            )

    def test_an_expired_unknown_or_foreign_cache_is_refused(self) -> None:
        sim = GeminiCacheSimulator()
        sim.create_cache("cachedContents/docs", model=FLASH, tokens=5000, at=T0, ttl=timedelta(minutes=30))
        with pytest.raises(PermissionDenied, match="not found"):
            send(sim, T0 + timedelta(minutes=31), body("q", system=None, cached_content="cachedContents/docs"), (10,))
        with pytest.raises(PermissionDenied):
            send(sim, T0 + timedelta(minutes=32), body("q", system=None, cached_content="cachedContents/none"), (10,))
        sim.create_cache("cachedContents/flash", model=FLASH, tokens=5000, at=T0 + timedelta(minutes=33))
        with pytest.raises(InvalidRequest, match="created for"):
            send(
                sim,
                T0 + timedelta(minutes=34),
                body("q", model="gemini-2.5-pro", system=None, cached_content="cachedContents/flash"),
                (10,),
            )

    def test_a_cache_below_the_minimum_cannot_be_created(self) -> None:
        with pytest.raises(InvalidRequest, match="below the minimum of 2048"):
            GeminiCacheSimulator().create_cache("cachedContents/tiny", model=FLASH, tokens=1000, at=T0)
        with pytest.raises(UsageError):
            GeminiCacheSimulator().create_cache("cachedContents/x", model=FLASH, tokens=5000, at=T0, ttl=timedelta(0))

    def test_storage_is_unknown_where_the_table_has_no_rate(self) -> None:
        cache = GeminiCacheSimulator().create_cache("cachedContents/x", model="gemini-3.8-flash", tokens=5000, at=T0)
        assert cache.storage_cost is None and cache.creation_cost == 5000 * Decimal("0.75") / Decimal(1_000_000)
