"""Properties of the cache simulators that must hold for any request shape."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

pytest.importorskip("hypothesis", reason='property tests need hypothesis: pip install "contextwright[dev]"')
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.pricing.cache_sim import (
    AnthropicCacheSimulator,
    OpenAICacheSimulator,
    SimRequest,
)
from contextwright.providers.errors import InvalidRequest

T0 = datetime(2026, 8, 1, 12, 0, tzinfo=UTC)
TTL = {"5m": timedelta(minutes=5), "1h": timedelta(hours=1)}


@st.composite
def anthropic_requests(draw: st.DrawFn, max_blocks: int = 40) -> tuple[dict[str, Any], tuple[int, ...], dict[int, str]]:
    """A Messages body with n text blocks, exact per-block tokens and 1-4 breakpoints (1h before 5m)."""
    n = draw(st.integers(min_value=1, max_value=max_blocks))
    tokens = tuple(draw(st.lists(st.integers(min_value=0, max_value=400), min_size=n, max_size=n)))
    positions = sorted(draw(st.sets(st.integers(min_value=0, max_value=n - 1), min_size=1, max_size=min(4, n))))
    long_ones = draw(st.integers(min_value=0, max_value=len(positions)))
    marks = {p: ("1h" if k < long_ones else "5m") for k, p in enumerate(positions)}
    texts = draw(st.lists(st.text(min_size=1, max_size=6), min_size=n, max_size=n))
    return _body(texts, marks), tokens, marks


def _body(texts: list[str], marks: dict[int, str]) -> dict[str, Any]:
    content = []
    for i, text in enumerate(texts):
        block: dict[str, Any] = {"type": "text", "text": f"{i}:{text}"}
        if i in marks:
            block["cache_control"] = {"type": "ephemeral", "ttl": marks[i]}
        content.append(block)
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 16,
        "messages": [{"role": "user", "content": content}],
    }


def _cumulative(tokens: tuple[int, ...]) -> list[int]:
    out, running = [], 0
    for n in tokens:
        running += n
        out.append(running)
    return out


minimums = st.integers(min_value=0, max_value=3000)


@settings(max_examples=150, deadline=None)
@given(anthropic_requests(), minimums, st.integers(min_value=0, max_value=299))
def test_identical_repeat_within_ttl_reads_up_to_the_last_breakpoint(request: Any, minimum: int, seconds: int) -> None:
    body, tokens, marks = request
    sim = AnthropicCacheSimulator(min_cacheable_tokens=minimum, price_lookup=None)
    sim.request(SimRequest(at=T0, body=body, block_tokens=tokens))
    again = sim.request(SimRequest(at=T0 + timedelta(seconds=seconds), body=body, block_tokens=tokens))
    cumulative = _cumulative(tokens)
    eligible = [cumulative[p] for p in marks if cumulative[p] >= minimum]
    assert again.usage.cache_read_tokens == max(eligible, default=0)
    assert again.usage.cache_write_tokens == 0


@settings(max_examples=150, deadline=None)
@given(anthropic_requests(), minimums, st.data())
def test_changing_block_k_invalidates_everything_from_k_on(request: Any, minimum: int, data: st.DataObject) -> None:
    body, tokens, _ = request
    blocks = body["messages"][0]["content"]
    k = data.draw(st.integers(min_value=0, max_value=len(blocks) - 1))
    sim = AnthropicCacheSimulator(min_cacheable_tokens=minimum, price_lookup=None)
    sim.request(SimRequest(at=T0, body=body, block_tokens=tokens))
    changed = {**body, "messages": [{"role": "user", "content": [dict(b) for b in blocks]}]}
    changed["messages"][0]["content"][k]["text"] += "!"  # one more character in block k
    result = sim.request(SimRequest(at=T0 + timedelta(seconds=1), body=changed, block_tokens=tokens))
    before_k = _cumulative(tokens)[k] - tokens[k]
    assert result.usage.cache_read_tokens <= before_k
    assert result.hit_block is None or result.hit_block < k


@settings(max_examples=150, deadline=None)
@given(anthropic_requests(), minimums)
def test_entries_expire_after_their_ttl(request: Any, minimum: int) -> None:
    body, tokens, marks = request
    cumulative = _cumulative(tokens)
    sim = AnthropicCacheSimulator(min_cacheable_tokens=minimum, price_lookup=None)
    sim.request(SimRequest(at=T0, body=body, block_tokens=tokens))
    # After 5 minutes only 1h entries may still be read ...
    mid = sim.request(SimRequest(at=T0 + TTL["5m"], body=body, block_tokens=tokens))
    long_lived = [cumulative[p] for p, ttl in marks.items() if ttl == "1h" and cumulative[p] >= minimum]
    assert mid.usage.cache_read_tokens == max(long_lived, default=0)
    # ... and an hour after that last use, nothing.
    late = AnthropicCacheSimulator(min_cacheable_tokens=minimum, price_lookup=None)
    late.request(SimRequest(at=T0, body=body, block_tokens=tokens))
    assert late.request(SimRequest(at=T0 + TTL["1h"], body=body, block_tokens=tokens)).usage.cache_read_tokens == 0


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(anthropic_requests(max_blocks=25), st.integers(min_value=0, max_value=900)),
        min_size=1,
        max_size=6,
    ),
    minimums,
)
def test_reads_never_exceed_the_request(session: list[Any], minimum: int) -> None:
    sim = AnthropicCacheSimulator(min_cacheable_tokens=minimum, price_lookup=None)
    at = T0
    for (body, tokens, _), gap in session:
        at += timedelta(seconds=gap)
        usage = sim.request(SimRequest(at=at, body=body, block_tokens=tokens)).usage
        assert usage.cache_read_tokens <= sum(tokens)
        assert usage.total_input == sum(tokens)
        assert min(usage.input_tokens, usage.cache_write_5m_tokens, usage.cache_write_1h_tokens) >= 0


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=5, max_value=12), st.data())
def test_more_than_four_breakpoints_raise(count: int, data: st.DataObject) -> None:
    n = data.draw(st.integers(min_value=count, max_value=30))
    positions = data.draw(st.sets(st.integers(min_value=0, max_value=n - 1), min_size=count, max_size=count))
    body = _body(["x"] * n, {p: "5m" for p in positions})
    with pytest.raises(InvalidRequest) as caught:
        AnthropicCacheSimulator(price_lookup=None).request(SimRequest(at=T0, body=body, block_tokens=(10,) * n))
    assert caught.value.provider_message == f"A maximum of 4 blocks with cache_control may be provided. Found {count}."


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=800), min_size=1, max_size=12),
    st.integers(min_value=0, max_value=11),
    st.sampled_from(["gpt-4.1", "gpt-5.5", "gpt-5.6-terra"]),
)
def test_openai_reads_are_bounded_and_stepped(tokens: list[int], change: int, model: str) -> None:
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(len(tokens))]
    sim = OpenAICacheSimulator(price_lookup=None)
    first = {"model": model, "messages": messages}
    sim.request(SimRequest(at=T0, body=first, block_tokens=tuple(tokens)))
    edited = [dict(m) for m in messages]
    k = change % len(edited)
    edited[k]["content"] += "!"
    for body in (first, {"model": model, "messages": edited}):
        usage = sim.request(SimRequest(at=T0 + timedelta(seconds=1), body=body, block_tokens=tuple(tokens))).usage
        assert usage.total_input == sum(tokens)
        assert usage.cache_read_tokens == 0 or usage.cache_read_tokens >= 1024
        if model != "gpt-5.6-terra":
            assert usage.cache_read_tokens % 128 == 0
    # Nothing from block k on can have been read after the edit.
    assert usage.cache_read_tokens <= sum(tokens[:k])
