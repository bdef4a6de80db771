"""Anthropic cache simulator: the documented rules and worked examples, one test each."""

from __future__ import annotations

import copy
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from contextwright.canonical import canonical_json
from contextwright.errors import ContextLengthExceeded, UsageError
from contextwright.pricing.cache_sim import (
    AnthropicCacheSimulator,
    SimRequest,
    anthropic_rules_for,
    render_anthropic_blocks,
)
from contextwright.pricing.prices import UnknownModel, cost, price_for
from contextwright.providers.errors import InvalidRequest
from contextwright.providers.usage import Usage

T0 = datetime(2026, 8, 1, 12, 0, tzinfo=UTC)
EPH = {"type": "ephemeral"}
EPH_1H = {"type": "ephemeral", "ttl": "1h"}


def text_blocks(n: int, *, marks: dict[int, dict] | None = None, prefix: str = "b") -> list[dict[str, Any]]:
    marks = marks or {}
    blocks: list[dict[str, Any]] = []
    for i in range(n):
        block: dict[str, Any] = {"type": "text", "text": f"{prefix}{i}"}
        if i in marks:
            block["cache_control"] = marks[i]
        blocks.append(block)
    return blocks


def body_with_blocks(n: int, marks: dict[int, dict] | None = None, **extra: Any) -> dict[str, Any]:
    """One user message whose content has ``n`` text blocks; block i is rendered block i."""
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": text_blocks(n, marks=marks)}],
        **extra,
    }


def per_block(n: int, tokens: int = 100) -> tuple[int, ...]:
    return (tokens,) * n


def sim(**kwargs: Any) -> AnthropicCacheSimulator:
    return AnthropicCacheSimulator(**kwargs)


def send(
    s: AnthropicCacheSimulator,
    at: datetime,
    body: dict,
    tokens: tuple[int, ...] | None = None,
    **kw: Any,
):
    return s.request(SimRequest(at=at, body=body, block_tokens=tokens, **kw))


class TestLookbackWorkedExample:
    """Turn 2 writes at block 15; turn 3's only breakpoint is block 35 and checks 35..16: a miss."""

    def test_breakpoint_21_positions_away_misses(self) -> None:
        s = sim()
        turn2 = send(s, T0, body_with_blocks(16, {15: EPH}), per_block(16))
        assert turn2.usage.cache_write_5m_tokens == 1600 and turn2.written_blocks == (15,)
        turn3 = send(s, T0 + timedelta(minutes=1), body_with_blocks(36, {35: EPH}), per_block(36))
        assert turn3.usage.cache_read_tokens == 0
        assert turn3.usage.cache_write_5m_tokens == 3600

    def test_breakpoint_20_positions_away_hits(self) -> None:
        s = sim()
        send(s, T0, body_with_blocks(16, {15: EPH}), per_block(16))
        turn3 = send(s, T0 + timedelta(minutes=1), body_with_blocks(35, {34: EPH}), per_block(35))
        assert (turn3.usage.cache_read_tokens, turn3.hit_block) == (1600, 15)
        assert turn3.usage.cache_write_5m_tokens == 3500 - 1600

    def test_a_second_breakpoint_near_block_15_fixes_it(self) -> None:
        s = sim()
        send(s, T0, body_with_blocks(16, {15: EPH}), per_block(16))
        turn3 = send(s, T0 + timedelta(minutes=1), body_with_blocks(36, {20: EPH, 35: EPH}), per_block(36))
        assert turn3.usage.cache_read_tokens == 1600
        assert turn3.usage.cache_write_5m_tokens == 3600 - 1600
        assert turn3.usage.input_tokens == 0

    def test_unwritten_stable_content_is_not_discovered(self) -> None:
        # Turn 2 wrote only at block 15; block 10 is unchanged but was never written.
        s = sim()
        send(s, T0, body_with_blocks(16, {15: EPH}), per_block(16))
        changed = body_with_blocks(16, {12: EPH})
        changed["messages"][0]["content"][11]["text"] = "changed"
        result = send(s, T0 + timedelta(minutes=1), changed, per_block(16))
        assert result.usage.cache_read_tokens == 0


class TestBillingPositions:
    """A = hit, B = highest 1h breakpoint above A, C = last eligible breakpoint."""

    @staticmethod
    def mixed_body() -> dict[str, Any]:
        return {
            "model": "claude-sonnet-4-5",
            "max_tokens": 64,
            "tools": [
                {
                    "name": "t",
                    "description": "d",
                    "input_schema": {"type": "object"},
                    "cache_control": EPH_1H,
                }
            ],
            "system": [{"type": "text", "text": "policy", "cache_control": EPH}],
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "q", "cache_control": EPH},
                        {"type": "text", "text": "tail"},
                    ],
                }
            ],
        }

    TOKENS = (3000, 1000, 500, 40)

    def test_first_request_writes_1h_then_5m(self) -> None:
        result = send(sim(), T0, self.mixed_body(), self.TOKENS)
        assert result.usage == Usage(input_tokens=40, cache_write_1h_tokens=3000, cache_write_5m_tokens=1500)

    def test_repeat_reads_up_to_the_last_breakpoint(self) -> None:
        s = sim()
        send(s, T0, self.mixed_body(), self.TOKENS)
        again = send(s, T0 + timedelta(minutes=1), self.mixed_body(), self.TOKENS)
        assert again.usage == Usage(input_tokens=40, cache_read_tokens=4500)

    def test_after_5m_only_the_1h_entry_survives(self) -> None:
        s = sim()
        send(s, T0, self.mixed_body(), self.TOKENS)
        later = send(s, T0 + timedelta(minutes=10), self.mixed_body(), self.TOKENS)
        assert later.usage == Usage(input_tokens=40, cache_read_tokens=3000, cache_write_5m_tokens=1500)

    def test_identity_total_is_the_whole_prompt(self) -> None:
        result = send(sim(), T0, self.mixed_body(), self.TOKENS)
        assert result.usage.total_input == sum(self.TOKENS)

    def test_cost_uses_the_dated_price(self) -> None:
        result = send(sim(), T0, self.mixed_body(), self.TOKENS, output_tokens=200)
        price = price_for("claude-sonnet-4-5", T0.date())
        assert result.cost == cost(result.usage, price)
        assert result.cost == (
            40 * price.input + 3000 * price.cache_write_1h + 1500 * price.cache_write_5m + 200 * price.output
        ) / Decimal(10**6)


class TestLifetimes:
    def test_ttl_runs_from_the_start_of_the_writing_request(self) -> None:
        body, tokens = body_with_blocks(12, {11: EPH}), per_block(12)
        s = sim()
        send(s, T0, body, tokens)
        assert send(s, T0 + timedelta(minutes=4, seconds=59), body, tokens).usage.cache_read_tokens == 1200
        s = sim()
        send(s, T0, body, tokens)
        assert send(s, T0 + timedelta(minutes=5), body, tokens).usage.cache_read_tokens == 0

    def test_a_hit_refreshes_the_lifetime(self) -> None:
        body, tokens = body_with_blocks(12, {11: EPH}), per_block(12)
        s = sim()
        send(s, T0, body, tokens)
        send(s, T0 + timedelta(minutes=4), body, tokens)
        # Without the refresh at 4m the entry would be gone at 5m.
        assert send(s, T0 + timedelta(minutes=8), body, tokens).usage.cache_read_tokens == 1200

    def test_one_hour_entries_last_an_hour(self) -> None:
        body, tokens = body_with_blocks(12, {11: EPH_1H}), per_block(12)
        s = sim()
        assert send(s, T0, body, tokens).usage.cache_write_1h_tokens == 1200
        assert send(s, T0 + timedelta(minutes=59), body, tokens).usage.cache_read_tokens == 1200
        assert send(s, T0 + timedelta(minutes=59) + timedelta(hours=1), body, tokens).usage.cache_read_tokens == 0

    def test_without_expiry_an_entry_outlives_any_gap_and_is_still_billed_as_a_5m_write(self) -> None:
        # The rule set of simulators without lifetimes, for comparing with their figures.
        body, tokens = body_with_blocks(12, {11: EPH}), per_block(12)
        s = sim(expiry=False)
        assert send(s, T0, body, tokens).usage.cache_write_5m_tokens == 1200
        assert send(s, T0 + timedelta(days=3), body, tokens).usage.cache_read_tokens == 1200
        with_expiry = sim()
        send(with_expiry, T0, body, tokens)
        assert send(with_expiry, T0 + timedelta(days=3), body, tokens).usage.cache_read_tokens == 0

    def test_parallel_requests_each_pay_the_write(self) -> None:
        body, tokens = body_with_blocks(12, {11: EPH}), per_block(12)
        s = sim()
        first = send(s, T0, body, tokens, first_token_after=timedelta(seconds=2))
        second = send(s, T0 + timedelta(seconds=1), body, tokens, first_token_after=timedelta(seconds=2))
        third = send(s, T0 + timedelta(seconds=3), body, tokens)
        assert first.usage.cache_write_5m_tokens == second.usage.cache_write_5m_tokens == 1200
        assert third.usage.cache_read_tokens == 1200

    def test_breakpoints_at_or_below_the_hit_do_not_rewrite(self) -> None:
        # Only breakpoints above the hit write; a stale shorter entry stays stale.
        s = sim()
        short, tokens_short = body_with_blocks(12, {11: EPH}), per_block(12)
        send(s, T0, short, tokens_short)  # writes at 11, until 5m
        send(s, T0 + timedelta(minutes=1), body_with_blocks(20, {19: EPH}), per_block(20))  # hits 11 (now until 6m), writes 19
        send(s, T0 + timedelta(minutes=5, seconds=30), body_with_blocks(20, {19: EPH}), per_block(20))  # hits 19 only
        both = send(s, T0 + timedelta(minutes=7), body_with_blocks(20, {11: EPH, 19: EPH}), per_block(20))
        assert both.usage.cache_read_tokens == 2000 and both.written_blocks == ()
        assert send(s, T0 + timedelta(minutes=8), short, tokens_short).usage.cache_read_tokens == 0

    def test_time_must_not_go_backwards(self) -> None:
        s = sim()
        send(s, T0, body_with_blocks(2), per_block(2))
        with pytest.raises(UsageError):
            send(s, T0 - timedelta(seconds=1), body_with_blocks(2), per_block(2))

    def test_naive_times_are_refused(self) -> None:
        with pytest.raises(UsageError):
            send(sim(), datetime(2026, 8, 1), body_with_blocks(2), per_block(2))


class TestMinimumLength:
    def test_short_prefix_is_silently_not_cached(self) -> None:
        s = sim()
        body, tokens = body_with_blocks(10, {9: EPH}), per_block(10)  # 1000 < 1024 on Sonnet 4.5
        first = send(s, T0, body, tokens)
        second = send(s, T0 + timedelta(seconds=10), body, tokens)
        for result in (first, second):
            assert result.usage == Usage(input_tokens=1000)

    def test_threshold_follows_the_dated_table(self) -> None:
        # Sonnet 4.6: 2,048 until 2026-05-13, then 1,024.
        rules = anthropic_rules_for("claude-sonnet-4-6")
        assert rules.min_cacheable_on(date(2026, 5, 12)) == 2048
        assert rules.min_cacheable_on(date(2026, 5, 13)) == 1024
        body = body_with_blocks(15, {14: EPH}, model="claude-sonnet-4-6")
        before = send(sim(), datetime(2026, 4, 1, tzinfo=UTC), body, per_block(15))
        after = send(sim(), datetime(2026, 6, 1, tzinfo=UTC), body, per_block(15))
        assert before.usage.cache_write_tokens == 0
        assert after.usage.cache_write_tokens == 1500

    def test_rules_on_one_date_apply_to_every_request(self) -> None:
        # A replay of an old log on a current model: the rules of the pricing day, not the log's.
        body = body_with_blocks(15, {14: EPH}, model="claude-sonnet-4-6")
        old = datetime(2024, 8, 13, tzinfo=UTC)
        by_request = send(sim(), old, body, per_block(15))
        as_of_today = send(sim(rules_on=date(2026, 11, 30)), old, body, per_block(15))
        as_of_march = send(sim(rules_on=date(2026, 3, 13)), datetime(2026, 6, 1, tzinfo=UTC), body, per_block(15))
        assert by_request.usage.cache_write_tokens == 0
        assert as_of_today.usage.cache_write_tokens == 1500
        assert as_of_march.usage.cache_write_tokens == 0

    def test_an_explicit_minimum_wins_over_rules_on(self) -> None:
        body = body_with_blocks(15, {14: EPH}, model="claude-sonnet-4-6")
        result = send(sim(rules_on=date(2026, 11, 30), min_cacheable_tokens=4096), T0, body, per_block(15))
        assert result.usage.cache_write_tokens == 0

    @pytest.mark.parametrize(
        ("model", "minimum"),
        [
            ("claude-opus-5", 512),
            ("claude-opus-4-8", 1024),
            ("claude-opus-4-7", 2048),
            ("claude-haiku-4-5", 4096),
        ],
    )
    def test_current_minimums(self, model: str, minimum: int) -> None:
        assert anthropic_rules_for(model).min_cacheable_on(date(2026, 8, 21)) == minimum

    def test_only_eligible_breakpoints_write(self) -> None:
        # Block 4 is below the minimum, block 14 above it: only block 14 writes.
        result = send(sim(), T0, body_with_blocks(15, {4: EPH, 14: EPH}), per_block(15))
        assert result.written_blocks == (14,)
        assert result.usage.cache_write_5m_tokens == 1500

    def test_unknown_model_needs_an_override(self) -> None:
        body = body_with_blocks(15, {14: EPH}, model="claude-future-9")
        with pytest.raises(UnknownModel):
            send(sim(price_lookup=None), T0, body, per_block(15))
        result = send(sim(price_lookup=None, min_cacheable_tokens=1024), T0, body, per_block(15))
        assert result.usage.cache_write_5m_tokens == 1500 and result.cost is None


class TestBreakpointRules:
    def test_no_cache_control_caches_nothing(self) -> None:
        s = sim()
        send(s, T0, body_with_blocks(20), per_block(20))
        assert send(s, T0 + timedelta(seconds=5), body_with_blocks(20), per_block(20)).usage == Usage(input_tokens=2000)

    def test_fifth_breakpoint_is_refused_with_the_api_message(self) -> None:
        body = body_with_blocks(10, {i: EPH for i in (1, 3, 5, 7, 9)})
        with pytest.raises(InvalidRequest, match=r"^anthropic error 400") as caught:
            send(sim(), T0, body, per_block(10))
        assert caught.value.provider_message == "A maximum of 4 blocks with cache_control may be provided. Found 5."

    def test_ttl_order_is_enforced_with_the_api_message(self) -> None:
        body = body_with_blocks(5, {1: EPH, 4: EPH_1H})
        with pytest.raises(InvalidRequest) as caught:
            send(sim(), T0, body, per_block(5))
        assert caught.value.provider_message == (
            "messages.0.content.4.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' "
            "cache_control block. Note that blocks are processed in the following order: `tools`, `system`, `messages`."
        )

    def test_ttl_order_spans_levels(self) -> None:
        body = body_with_blocks(3, {2: EPH_1H})
        body["system"] = [{"type": "text", "text": "s", "cache_control": EPH}]
        with pytest.raises(InvalidRequest, match="1h"):
            send(sim(), T0, body, per_block(4))

    def test_invalid_request_leaves_the_cache_untouched(self) -> None:
        s = sim()
        good = body_with_blocks(12, {11: EPH})
        send(s, T0, good, per_block(12))
        with pytest.raises(InvalidRequest):
            send(
                s,
                T0 + timedelta(seconds=1),
                body_with_blocks(12, {i: EPH for i in range(5)}),
                per_block(12),
            )
        assert send(s, T0 + timedelta(seconds=2), good, per_block(12)).usage.cache_read_tokens == 1200

    def test_marker_on_thinking_block_is_refused(self) -> None:
        body = body_with_blocks(2)
        body["messages"].append(
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "hm", "signature": "s", "cache_control": EPH}],
            }
        )
        with pytest.raises(InvalidRequest, match="thinking"):
            render_anthropic_blocks(body)

    def test_marker_on_last_tool_result_sub_block_moves_to_the_parent(self) -> None:
        def body(marked_sub: int) -> dict[str, Any]:
            subs = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
            subs[marked_sub]["cache_control"] = EPH
            return {
                "model": "claude-sonnet-4-5",
                "max_tokens": 8,
                "messages": [
                    {"role": "user", "content": "find"},
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}],
                    },
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": subs}],
                    },
                ],
            }

        blocks = render_anthropic_blocks(body(1))
        assert blocks[-1].ttl == "5m" and blocks[-1].path == "messages.2.content.0"
        with pytest.raises(InvalidRequest, match=r"messages\.2\.content\.0\.content\.0\.cache_control"):
            render_anthropic_blocks(body(0))

    def test_moving_a_breakpoint_does_not_change_the_prefix(self) -> None:
        s = sim()
        send(s, T0, body_with_blocks(20, {15: EPH}), per_block(20))
        moved = send(s, T0 + timedelta(seconds=1), body_with_blocks(20, {19: EPH}), per_block(20))
        assert moved.usage.cache_read_tokens == 1600


class TestAutomaticCaching:
    def test_top_level_cache_control_moves_forward_with_the_conversation(self) -> None:
        s = sim()
        first = send(s, T0, body_with_blocks(12, cache_control=EPH), per_block(12))
        assert first.breakpoints == (11,) and first.usage.cache_write_5m_tokens == 1200
        grown = send(s, T0 + timedelta(minutes=1), body_with_blocks(15, cache_control=EPH), per_block(15))
        assert grown.breakpoints == (14,)
        assert (grown.usage.cache_read_tokens, grown.usage.cache_write_5m_tokens) == (1200, 300)

    def test_same_ttl_as_explicit_marker_is_a_no_op(self) -> None:
        result = send(sim(), T0, body_with_blocks(12, {11: EPH}, cache_control=EPH), per_block(12))
        assert result.breakpoints == (11,)

    def test_different_ttl_on_the_target_is_refused(self) -> None:
        with pytest.raises(InvalidRequest) as caught:
            send(sim(), T0, body_with_blocks(12, {11: EPH_1H}, cache_control=EPH), per_block(12))
        assert caught.value.provider_message == (
            "Top-level cache_control has ttl='5m' but the target block already has cache_control with ttl='1h'"
        )

    def test_no_free_slot_with_four_explicit_markers(self) -> None:
        with pytest.raises(InvalidRequest, match="Found 5"):
            send(
                sim(),
                T0,
                body_with_blocks(12, {1: EPH, 2: EPH, 3: EPH, 4: EPH}, cache_control=EPH),
                per_block(12),
            )

    def test_target_walks_back_over_blocks_that_cannot_carry_a_breakpoint(self) -> None:
        body = body_with_blocks(3, cache_control=EPH)
        body["messages"].append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "x"},
                    {"type": "thinking", "thinking": "t", "signature": "s"},
                ],
            }
        )
        blocks = render_anthropic_blocks(body)
        result = send(sim(), T0, body, per_block(len(blocks), 600))
        assert result.breakpoints == (3,)


class TestInvalidation:
    @staticmethod
    def full_body(**changes: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 64,
            "tools": [
                {
                    "name": "lookup",
                    "description": "Look up a key",
                    "input_schema": {"type": "object"},
                    "cache_control": EPH,
                }
            ],
            "system": [{"type": "text", "text": "policy", "cache_control": EPH}],
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "question", "cache_control": EPH}],
                }
            ],
        }
        body.update(changes)
        return body

    TOKENS = (2000, 2000, 2000)

    def read_after(self, **changes: Any) -> int:
        s = sim()
        send(s, T0, self.full_body(), self.TOKENS)
        changed = self.full_body(**changes)
        return send(s, T0 + timedelta(seconds=30), changed, None if "tools" in changes else self.TOKENS).usage.cache_read_tokens

    def test_unchanged(self) -> None:
        assert self.read_after() == 6000

    def test_tool_choice_keeps_tools_and_system(self) -> None:
        assert self.read_after(tool_choice={"type": "any"}) == 4000

    def test_thinking_keeps_tools_and_system(self) -> None:
        assert self.read_after(thinking={"type": "enabled", "budget_tokens": 2048}) == 4000

    def test_speed_keeps_only_tools(self) -> None:
        assert self.read_after(speed="fast") == 2000

    def test_web_search_toggle_keeps_only_tools(self) -> None:
        s = sim()
        send(s, T0, self.full_body(), self.TOKENS)
        body = self.full_body()
        body["tools"] = [*body["tools"], {"type": "web_search_20250305", "name": "web_search"}]
        result = send(s, T0 + timedelta(seconds=30), body, (2000, 50, 2000, 2000))
        assert result.usage.cache_read_tokens == 2000

    def test_image_added_keeps_tools_and_system(self) -> None:
        body = self.full_body()
        body["messages"] = [
            *body["messages"],
            {"role": "assistant", "content": "ok"},
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
                    }
                ],
            },
        ]
        s = sim()
        send(s, T0, self.full_body(), self.TOKENS)
        result = send(s, T0 + timedelta(seconds=30), body, (*self.TOKENS, 10, 10))
        assert result.usage.cache_read_tokens == 4000

    def test_tool_definition_change_misses_everything(self) -> None:
        s = sim()
        send(s, T0, self.full_body(), self.TOKENS)
        body = self.full_body()
        body["tools"] = [{**body["tools"][0], "description": "Look up a key!"}]
        assert send(s, T0 + timedelta(seconds=30), body, self.TOKENS).usage.cache_read_tokens == 0

    def test_model_change_misses_everything(self) -> None:
        assert self.read_after(model="claude-sonnet-4-6") == 0

    def test_key_order_in_tool_input_does_not_matter_to_canonical_json_but_values_do(self) -> None:
        # Canonical JSON sorts keys, so a serializer's map order cannot break the simulated prefix.
        a = {"type": "tool_use", "id": "t", "name": "f", "input": {"a": 1, "b": 2}}
        b = {"type": "tool_use", "id": "t", "name": "f", "input": {"b": 2, "a": 1}}
        body_a = {"model": "claude-sonnet-4-5", "messages": [{"role": "assistant", "content": [a]}]}
        body_b = {"model": "claude-sonnet-4-5", "messages": [{"role": "assistant", "content": [b]}]}
        assert render_anthropic_blocks(body_a)[0].text == render_anthropic_blocks(body_b)[0].text


class TestThinkingRetention:
    @staticmethod
    def conversation(model: str) -> dict[str, Any]:
        return {
            "model": model,
            "max_tokens": 64,
            "messages": [
                {"role": "user", "content": "q1"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "hm", "signature": "s"},
                        {"type": "text", "text": "a1"},
                    ],
                },
                {"role": "user", "content": "q2"},
            ],
        }

    def test_models_that_drop_earlier_thinking_do_not_render_it(self) -> None:
        haiku = render_anthropic_blocks(self.conversation("claude-haiku-4-5"), keeps_prior_thinking=False)
        opus = render_anthropic_blocks(self.conversation("claude-opus-4-5"), keeps_prior_thinking=True)
        assert [b.path for b in haiku] == [
            "messages.0.content",
            "messages.1.content.1",
            "messages.2.content",
        ]
        assert len(opus) == 4
        assert anthropic_rules_for("claude-haiku-4-5").keeps_prior_thinking is False
        assert anthropic_rules_for("claude-opus-4-5").keeps_prior_thinking is True

    def test_thinking_stays_while_only_tool_results_follow(self) -> None:
        body = self.conversation("claude-haiku-4-5")
        body["messages"][2] = {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "x", "content": "r"}],
        }
        body["messages"][0] = {"role": "user", "content": "q1"}
        blocks = render_anthropic_blocks(body, keeps_prior_thinking=False)
        # The last plain user turn is message 0: nothing before it is thinking.
        assert any(b.path == "messages.1.content.0" for b in blocks)


class TestContextWindow:
    def test_prompt_over_the_window(self) -> None:
        body = body_with_blocks(3)
        with pytest.raises(ContextLengthExceeded) as caught:
            send(sim(), T0, body, (100_000, 100_000, 10))
        error = caught.value
        assert error.provider_message == "prompt is too long: 200010 tokens > 200000 maximum"
        assert (error.prompt_tokens, error.limit_tokens) == (200010, 200000)

    def test_input_plus_max_tokens_on_older_models(self) -> None:
        body = body_with_blocks(2, model="claude-opus-4-1", max_tokens=8192)
        with pytest.raises(ContextLengthExceeded) as caught:
            send(sim(), T0, body, (100_000, 99_759))
        assert caught.value.provider_message == (
            "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000, "
            "decrease input length or `max_tokens` and try again"
        )
        # Claude 4.5 and newer accept it.
        send(sim(), T0, body_with_blocks(2, max_tokens=8192), (100_000, 99_759))

    def test_check_can_be_turned_off(self) -> None:
        result = send(sim(check_context_window=False), T0, body_with_blocks(1), (300_000,))
        assert result.usage.input_tokens == 300_000


class TestTokenCounting:
    def test_count_tokens_sees_each_blocks_canonical_json(self) -> None:
        body = body_with_blocks(3, {2: EPH})
        result = send(sim(count_tokens=len, min_cacheable_tokens=0), T0, body)
        expected = sum(len(canonical_json({"type": "text", "text": f"b{i}"})) for i in range(3))
        assert result.usage.total_input == expected
        # cache_control is not part of what is counted.
        assert all("cache_control" not in b.text for b in render_anthropic_blocks(body))

    def test_exact_block_numbers_must_match_the_render(self) -> None:
        with pytest.raises(UsageError, match="renders 3 blocks"):
            send(sim(), T0, body_with_blocks(3), (1, 2))

    def test_no_counter_and_no_numbers(self) -> None:
        with pytest.raises(UsageError):
            send(sim(), T0, body_with_blocks(3))


class TestSession:
    def test_summary_adds_up(self) -> None:
        s = sim()
        bodies = [body_with_blocks(12 + k, {11 + k: EPH}) for k in range(4)]
        summary = s.run(
            SimRequest(at=T0 + timedelta(minutes=k), body=b, block_tokens=per_block(12 + k)) for k, b in enumerate(bodies)
        )
        assert len(summary.requests) == 4
        assert summary.usage.total_input == sum(r.usage.total_input for r in summary.requests)
        assert summary.cost == sum((r.cost for r in summary.requests), Decimal(0))
        reads = sum(r.usage.cache_read_tokens for r in summary.requests)
        assert summary.cache_read_share == reads / summary.usage.total_input
        assert reads == 1200 + 1300 + 1400

    def test_run_accepts_pairs(self) -> None:
        body = body_with_blocks(3, {2: EPH})
        summary = sim(count_tokens=lambda text: 500).run([(T0, body), (T0 + timedelta(seconds=1), copy.deepcopy(body))])
        assert summary.requests[1].usage.cache_read_tokens == 1500
