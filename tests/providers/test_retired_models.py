"""Older models still found in real logs: priced, simulated and sized like their successors."""

from __future__ import annotations

import datetime as dt

import pytest

from contextwright.budget.estimator import ANTHROPIC, O200K, profile_for
from contextwright.models import anthropic, openai
from contextwright.pricing.cache_sim import AnthropicCacheSimulator, SimRequest
from contextwright.pricing.cache_sim.anthropic import anthropic_rules_for
from contextwright.pricing.cache_sim.openai import openai_regime
from contextwright.pricing.prices import price_for

RECORDED = {
    # model id as logs record it -> (canonical id, minimum cacheable prefix)
    "claude-3-5-sonnet-20241022": ("claude-3-5-sonnet", 1024),
    "claude-3-5-sonnet-latest": ("claude-3-5-sonnet", 1024),
    "claude-3-opus-20240229": ("claude-3-opus", 1024),
    "claude-3-7-sonnet-20250219": ("claude-3-7-sonnet", 1024),
    "claude-3-haiku-20240307": ("claude-3-haiku", 2048),
}


@pytest.mark.parametrize("recorded", sorted(RECORDED))
def test_retired_claude_models_have_prices_cache_rules_and_a_window(recorded: str) -> None:
    canonical, minimum = RECORDED[recorded]
    assert price_for(recorded).model == canonical
    rules = anthropic_rules_for(recorded)
    assert rules.min_cacheable_on(dt.date(2025, 1, 1)) == minimum
    assert rules.context_window == 200_000
    assert anthropic(recorded).context_window == 200_000
    # Check they are sized with the Claude profile (no public tokenizer), never as unknown.
    assert profile_for(recorded) is ANTHROPIC


def test_claude_3_5_sonnet_prices_a_cached_request() -> None:
    sim = AnthropicCacheSimulator(count_tokens=lambda text: len(text) // 4)
    body = {
        "model": "claude-3-5-sonnet-20241022",
        "max_tokens": 1000,
        "system": [{"type": "text", "text": "You are a careful engineer. " * 400, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "Fix the bug."}],
    }
    at = dt.datetime(2025, 1, 6, 12, tzinfo=dt.UTC)
    first = sim.request(SimRequest(at=at, body=body, output_tokens=50))
    second = sim.request(SimRequest(at=at + dt.timedelta(seconds=30), body=body, output_tokens=50))
    assert first.usage.cache_write_5m_tokens > 0 and second.usage.cache_read_tokens == first.usage.cache_write_5m_tokens
    assert second.cost is not None and second.cost < first.cost


@pytest.mark.parametrize("recorded", ["gpt-4o", "gpt-4o-2024-08-06", "gpt-4o-mini-2024-07-18"])
def test_gpt_4o_snapshots_resolve(recorded: str) -> None:
    assert openai_regime(recorded) == "classic"
    assert price_for(recorded).model in ("gpt-4o", "gpt-4o-mini")
    assert openai(recorded).tokenizer == "o200k_base"
    assert profile_for(recorded) is O200K
