import pytest

from contextwright.errors import UsageError
from contextwright.models import ResolvedModel, anthropic, openai, resolve, with_window


def test_known_models_resolve_with_their_window_and_cache_rules():
    sonnet = anthropic("claude-sonnet-4-5-20250929")
    assert (sonnet.context_window, sonnet.cache.max_breakpoints, sonnet.cache.min_cacheable_tokens) == (200_000, 4, 1_024)
    assert sonnet.tokenizer is None and sonnet.cache.lookback_blocks == 20
    gpt = openai("gpt-5-mini")
    assert gpt.tokenizer == "o200k_base" and gpt.cache.supports_cache_key and gpt.context_window == 400_000
    assert openai("gpt-5").context_window == 400_000


def test_longest_name_wins():
    assert anthropic("claude-opus-4-1-20250805").cache.min_cacheable_tokens == 1_024
    assert anthropic("claude-opus-4-5").cache.min_cacheable_tokens == 4_096


def test_unknown_models_need_a_window():
    with pytest.raises(UsageError, match="context_window"):
        anthropic("claude-next")
    model = anthropic("claude-next", context_window=300_000)
    assert model.context_window == 300_000 and model.token_family == "claude-4.7"
    with pytest.raises(UsageError):
        resolve("mistral", "x")
    with pytest.raises(UsageError, match="unknown model option"):
        openai("gpt-5", window=3)


def test_reserve_must_leave_room_for_input():
    with pytest.raises(UsageError):
        openai("gpt-4o", output_reserve=200_000)


def test_round_trip_and_window_override():
    model = with_window(anthropic("claude-sonnet-4-6"), 32_000)
    assert model.context_window == 32_000 and model.output_reserve == 8_000
    assert ResolvedModel.from_dict(model.to_dict()) == model
