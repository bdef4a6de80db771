"""OpenAI cache simulator: classic automatic caching and the GPT-5.6 breakpoint model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from contextwright.budget._tokenizers import exact_token_counter
from contextwright.errors import ContextLengthExceeded
from contextwright.pricing.cache_sim import (
    OpenAICacheSimulator,
    SimRequest,
    UnsupportedSimulation,
    openai_regime,
    render_openai_blocks,
)
from contextwright.pricing.prices import cost, price_for
from contextwright.providers.errors import InvalidRequest

T0 = datetime(2026, 8, 1, 12, 0, tzinfo=UTC)
EXPLICIT = {"mode": "explicit"}


def chat(n: int, model: str = "gpt-4.1", **extra: Any) -> dict[str, Any]:
    """A system message then ``n - 1`` alternating user/assistant messages; block i is message i."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "policy"}]
    for i in range(1, n):
        messages.append({"role": "user" if i % 2 else "assistant", "content": f"m{i}"})
    return {"model": model, "messages": messages, **extra}


def send(
    s: OpenAICacheSimulator,
    at: datetime,
    body: dict,
    tokens: tuple[int, ...] | None = None,
    **kw: Any,
):
    return s.request(SimRequest(at=at, body=body, block_tokens=tokens, **kw))


class TestClassic:
    def test_repeat_is_credited_in_128_token_steps(self) -> None:
        s = OpenAICacheSimulator()
        tokens = (1000, 500, 500)  # 2,000 tokens
        assert send(s, T0, chat(3), tokens).usage.cache_read_tokens == 0
        again = send(s, T0 + timedelta(seconds=30), chat(3), tokens)
        assert again.usage.cache_read_tokens == 1920  # floor(2000 / 128) * 128
        assert again.usage.input_tokens == 80
        assert again.usage.cache_write_tokens == 0  # no write count on classic models

    def test_shared_prefix_up_to_the_first_changed_block(self) -> None:
        s = OpenAICacheSimulator()
        send(s, T0, chat(4), (900, 400, 300, 300))
        grown = chat(6)
        grown["messages"][3]["content"] = "edited"
        result = send(s, T0 + timedelta(seconds=30), grown, (900, 400, 300, 300, 100, 100))
        assert result.usage.cache_read_tokens == 1536  # 1,600 shared -> 1,536
        assert result.hit_block == 2

    def test_nothing_below_1024(self) -> None:
        s = OpenAICacheSimulator()
        send(s, T0, chat(2), (600, 400))
        assert send(s, T0 + timedelta(seconds=30), chat(2), (600, 400)).usage.cache_read_tokens == 0

    def test_gpt_55_credits_whole_2048_token_breakpoints(self) -> None:
        s = OpenAICacheSimulator()
        body = chat(3, model="gpt-5.5")
        send(s, T0, body, (3000, 1000, 1000))
        assert send(s, T0 + timedelta(seconds=30), body, (3000, 1000, 1000)).usage.cache_read_tokens == 4096

    def test_in_memory_retention_expires_after_idle_ttl(self) -> None:
        s = OpenAICacheSimulator()
        send(s, T0, chat(3), (1000, 500, 500))
        assert send(s, T0 + timedelta(minutes=5), chat(3), (1000, 500, 500)).usage.cache_read_tokens == 0

    def test_hits_refresh_and_extended_retention_lasts_longer(self) -> None:
        s = OpenAICacheSimulator()
        body = chat(3, prompt_cache_retention="24h")
        send(s, T0, body, (1000, 500, 500))
        assert send(s, T0 + timedelta(minutes=20), body, (1000, 500, 500)).usage.cache_read_tokens == 1920
        assert send(s, T0 + timedelta(minutes=45), body, (1000, 500, 500)).usage.cache_read_tokens == 1920
        assert send(s, T0 + timedelta(minutes=80), body, (1000, 500, 500)).usage.cache_read_tokens == 0

    def test_prompt_cache_key_separates_groups(self) -> None:
        s = OpenAICacheSimulator()
        send(s, T0, chat(3, prompt_cache_key="tenant-a"), (1000, 500, 500))
        other = send(s, T0 + timedelta(seconds=1), chat(3, prompt_cache_key="tenant-b"), (1000, 500, 500))
        same = send(s, T0 + timedelta(seconds=2), chat(3, prompt_cache_key="tenant-a"), (1000, 500, 500))
        assert other.usage.cache_read_tokens == 0
        assert same.usage.cache_read_tokens == 1920

    def test_hidden_settings_change_the_prefix_but_tool_choice_does_not(self) -> None:
        s = OpenAICacheSimulator()
        tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
        tokens = (200, 1000, 500, 500)
        send(s, T0, chat(3, tools=tools), tokens)
        assert (
            send(s, T0 + timedelta(seconds=1), chat(3, tools=tools, tool_choice="required"), tokens).usage.cache_read_tokens
            == 2176
        )
        assert (
            send(s, T0 + timedelta(seconds=2), chat(3, tools=tools, reasoning_effort="high"), tokens).usage.cache_read_tokens == 0
        )
        assert (
            send(
                s,
                T0 + timedelta(seconds=3),
                chat(3, tools=tools, parallel_tool_calls=False),
                tokens,
            ).usage.cache_read_tokens
            == 0
        )

    def test_tool_order_matters(self) -> None:
        f = {"type": "function", "function": {"name": "f", "parameters": {}}}
        g = {"type": "function", "function": {"name": "g", "parameters": {}}}
        s = OpenAICacheSimulator()
        tokens = (600, 600, 500, 500, 500)
        send(s, T0, chat(3, tools=[f, g]), tokens)
        assert send(s, T0 + timedelta(seconds=1), chat(3, tools=[f, g]), tokens).usage.cache_read_tokens == 2688
        assert send(s, T0 + timedelta(seconds=2), chat(3, tools=[g, f]), tokens).usage.cache_read_tokens == 0

    def test_cost(self) -> None:
        s = OpenAICacheSimulator()
        send(s, T0, chat(3), (1000, 500, 500))
        result = send(s, T0 + timedelta(seconds=1), chat(3), (1000, 500, 500), output_tokens=100)
        price = price_for("gpt-4.1")
        assert result.cost == cost(result.usage, price)
        assert result.cost == (80 * price.input + 1920 * price.cache_read + 100 * price.output) / Decimal(10**6)

    def test_exact_tokens_with_a_real_tokenizer(self) -> None:
        pytest.importorskip("tiktoken", reason="exact token counts need the tiktoken extra")
        count = exact_token_counter("o200k_base")
        body = chat(3)
        body["messages"][0]["content"] = "You are a careful assistant. " * 200
        s = OpenAICacheSimulator(count_tokens=count)
        first = send(s, T0, body)
        assert first.usage.total_input == sum(count(b.text) for b in render_openai_blocks(body))
        second = send(s, T0 + timedelta(seconds=1), body)
        assert second.usage.cache_read_tokens == (first.usage.total_input // 128) * 128


class TestResponsesClassic:
    def test_instructions_then_input(self) -> None:
        body = {
            "model": "gpt-5",
            "instructions": "stable",
            "input": [{"role": "user", "content": "hi"}],
        }
        blocks = render_openai_blocks(body)
        assert [b.path for b in blocks] == ["instructions.content", "input.0.content"]
        s = OpenAICacheSimulator()
        send(s, T0, body, (1500, 10))
        assert send(s, T0 + timedelta(seconds=1), body, (1500, 10)).usage.cache_read_tokens == 1408

    def test_chained_requests_are_refused(self) -> None:
        with pytest.raises(UnsupportedSimulation):
            send(
                OpenAICacheSimulator(),
                T0,
                {"model": "gpt-5", "previous_response_id": "resp_1", "input": "x"},
                (1,),
            )


def conversation(turns: int, *, model: str = "gpt-5.6-terra", **extra: Any) -> dict[str, Any]:
    """Responses input: a developer message then user/assistant pairs ending on a user turn."""
    items: list[dict[str, Any]] = [{"role": "developer", "content": "rules"}]
    for k in range(turns):
        if k:
            items.append({"role": "assistant", "content": f"a{k}"})
        items.append({"role": "user", "content": f"u{k}"})
    return {"model": model, "input": items, **extra}


class TestBreakpointModel:
    def test_regime_by_model(self) -> None:
        assert openai_regime("gpt-5.6-sol") == "breakpoints"
        assert openai_regime("gpt-6") == "breakpoints"
        assert openai_regime("gpt-5.5") == "classic"
        assert openai_regime("gpt-4o-2024-08-06") == "classic"
        assert openai_regime("o3") == "classic"

    def test_implicit_breakpoint_writes_then_an_earlier_ending_is_read(self) -> None:
        s = OpenAICacheSimulator()
        first = send(s, T0, conversation(1), (800, 700))  # developer, user
        assert first.breakpoints == (1,)
        assert (
            first.usage.cache_read_tokens,
            first.usage.cache_write_5m_tokens,
            first.usage.input_tokens,
        ) == (0, 1500, 0)
        second = send(s, T0 + timedelta(minutes=1), conversation(2), (800, 700, 300, 200))
        assert second.usage.cache_read_tokens == 1500
        assert second.usage.cache_write_5m_tokens == 500
        assert second.write_tokens_by_ttl == {"30m": 500}

    @pytest.mark.parametrize(("turns", "read"), [(21, 2000), (22, 0)])
    def test_lookup_reaches_back_twenty_earlier_message_endings(self, turns: int, read: int) -> None:
        s = OpenAICacheSimulator()
        first = {"model": "gpt-5.6-terra", "input": [{"role": "user", "content": "u0"}]}
        send(s, T0, first, (2000,))
        later = conversation(turns)
        later["input"] = later["input"][1:]  # no developer block: only message endings can match
        tokens = (2000,) + (10,) * (len(later["input"]) - 1)
        assert send(s, T0 + timedelta(minutes=1), later, tokens).usage.cache_read_tokens == read

    def test_nothing_written_below_1024(self) -> None:
        result = send(OpenAICacheSimulator(), T0, conversation(1), (500, 500))
        assert result.usage.cache_write_tokens == 0 and result.written_blocks == ()

    def test_explicit_mode_without_markers_caches_nothing(self) -> None:
        s = OpenAICacheSimulator()
        body = conversation(1, prompt_cache_options={"mode": "explicit"})
        send(s, T0, body, (2000, 700))
        result = send(s, T0 + timedelta(seconds=1), body, (2000, 700))
        assert result.usage.cache_read_tokens == 0 and result.usage.cache_write_tokens == 0

    def test_explicit_marker_makes_a_static_head_reusable(self) -> None:
        def body(tail: str) -> dict[str, Any]:
            return {
                "model": "gpt-5.6-sol",
                "prompt_cache_options": {"mode": "explicit"},
                "input": [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "input_text",
                                "text": "static",
                                "prompt_cache_breakpoint": EXPLICIT,
                            },
                            {"type": "input_text", "text": tail},
                        ],
                    },
                ],
            }

        s = OpenAICacheSimulator()
        first = send(s, T0, body("one"), (1200, 300))
        assert first.usage.cache_write_5m_tokens == 1200 and first.usage.input_tokens == 300
        second = send(s, T0 + timedelta(minutes=10), body("two"), (1200, 300))
        assert second.usage.cache_read_tokens == 1200

    def test_extending_a_message_moves_its_old_end_inside(self) -> None:
        s = OpenAICacheSimulator()
        one = {
            "model": "gpt-5.6-luna",
            "input": [{"role": "user", "content": [{"type": "input_text", "text": "a"}]}],
        }
        two = {
            "model": "gpt-5.6-luna",
            "input": [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "a"},
                        {"type": "input_text", "text": "b"},
                    ],
                }
            ],
        }
        send(s, T0, one, (2000,))
        assert send(s, T0 + timedelta(seconds=1), two, (2000, 100)).usage.cache_read_tokens == 0

    def test_at_most_four_writes(self) -> None:
        parts = [{"type": "input_text", "text": f"p{k}", "prompt_cache_breakpoint": EXPLICIT} for k in range(6)]
        body = {"model": "gpt-5.6-terra", "input": [{"role": "user", "content": parts}]}
        result = send(OpenAICacheSimulator(), T0, body, (2000,) * 6)
        # The implicit end of the user message (block 5) plus the latest 3 explicit markers.
        assert result.written_blocks == (2, 3, 4, 5)
        assert result.usage.cache_write_5m_tokens == 12000

    def test_entries_live_thirty_minutes_after_last_use(self) -> None:
        s = OpenAICacheSimulator()
        send(s, T0, conversation(1), (800, 700))
        assert send(s, T0 + timedelta(minutes=29), conversation(1), (800, 700)).usage.cache_read_tokens == 1500
        assert send(s, T0 + timedelta(minutes=58), conversation(1), (800, 700)).usage.cache_read_tokens == 1500
        assert send(s, T0 + timedelta(minutes=89), conversation(1), (800, 700)).usage.cache_read_tokens == 0

    def test_cost_charges_writes_at_the_write_rate(self) -> None:
        result = send(
            OpenAICacheSimulator(),
            T0,
            conversation(1, model="gpt-5.6-sol"),
            (800, 700),
            output_tokens=10,
        )
        price = price_for("gpt-5.6-sol")
        assert result.cost == (1500 * price.cache_write_5m + 10 * price.output) / Decimal(10**6)

    def test_bad_marker_is_refused(self) -> None:
        body = {
            "model": "gpt-5.6-sol",
            "input": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "input_text",
                            "text": "x",
                            "prompt_cache_breakpoint": {"mode": "auto"},
                        }
                    ],
                }
            ],
        }
        with pytest.raises(InvalidRequest):
            send(OpenAICacheSimulator(), T0, body, (1,))


class TestContextWindow:
    def test_chat_message(self) -> None:
        with pytest.raises(ContextLengthExceeded) as caught:
            send(OpenAICacheSimulator(context_window=8192), T0, chat(2), (8000, 227))
        assert caught.value.provider_message.startswith("This model's maximum context length is 8192 tokens.")
        assert caught.value.prompt_tokens == 8227

    def test_responses_message(self) -> None:
        with pytest.raises(ContextLengthExceeded) as caught:
            send(OpenAICacheSimulator(context_window=1000), T0, conversation(1), (800, 700))
        assert caught.value.code == "context_length_exceeded"
