"""Miss attribution: a scripted session per cause shows its uncached tokens put on that cause, and the parts add up."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.pricing.cache_sim import AnthropicCacheSimulator, OpenAICacheSimulator, SimRequest
from contextwright.pricing.cache_sim.attribution import (
    CAUSES,
    Attribution,
    Change,
    attribute,
    attribute_requests,
    check_usage,
    observe,
)
from contextwright.providers.usage import Usage

T0 = datetime(2026, 8, 1, 12, 0, tzinfo=UTC)
EPH = {"type": "ephemeral"}
BLOCK = 100  # every rendered block counts 100 tokens


def hundred(_: str) -> int:
    return BLOCK


def body(
    turns: list[str],
    *,
    system: str = "You are careful.",
    tools: tuple[str, ...] = ("read", "write"),
    model: str = "claude-opus-4-6",
    marked: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    """Tools, a marked system block, and one text block per turn, the last one marked."""
    messages: list[dict[str, Any]] = []
    for i, text in enumerate(turns):
        block: dict[str, Any] = {"type": "text", "text": text}
        if marked and i == len(turns) - 1:
            block["cache_control"] = EPH
        messages.append({"role": "user" if i % 2 == 0 else "assistant", "content": [block]})
    system_block: dict[str, Any] = {"type": "text", "text": system}
    if marked:
        system_block["cache_control"] = EPH
    return {
        "model": model,
        "max_tokens": 64,
        "tools": [{"name": t, "description": t, "input_schema": {"type": "object"}} for t in tools],
        "system": [system_block],
        "messages": messages,
        **extra,
    }


def turns(n: int, prefix: str = "turn") -> list[str]:
    return [f"{prefix} {i}" for i in range(n)]


def run(
    bodies: list[dict[str, Any]],
    *,
    gaps: list[timedelta] | None = None,
    minimum: int = 300,
    changes: dict[int, list[Change]] | None = None,
    first_token_after: timedelta = timedelta(0),
) -> list[Attribution]:
    simulator = AnthropicCacheSimulator(count_tokens=hundred, min_cacheable_tokens=minimum, price_lookup=None)
    at = T0
    requests = []
    for i, b in enumerate(bodies):
        if i:
            at += (gaps or [])[i - 1] if gaps else timedelta(seconds=30)
        requests.append(SimRequest(at=at, body=b, first_token_after=first_token_after))
    result = attribute_requests(requests, simulator=simulator, changes=changes)
    for attribution in result:
        # Check the parts add up to the uncached tokens exactly, and every cause is a listed one.
        assert sum(attribution.by_cause.values()) == attribution.uncached_tokens
        assert set(attribution.by_cause) <= set(CAUSES)
        usage = attribution.predicted
        assert attribution.uncached_tokens == usage.total_input - usage.cache_read_tokens
    return result


def test_the_first_request_is_all_new_content() -> None:
    (first,) = run([body(turns(3))])
    # 2 tools + 1 system + 3 turns, nothing cached yet.
    assert first.by_cause == {"new_content": 600}
    assert first.main_cause == "new_content"


def test_an_append_misses_only_what_it_appended() -> None:
    _, second = run([body(turns(3)), body(turns(5))])
    assert second.predicted.cache_read_tokens == 600
    assert second.by_cause == {"new_content": 200}


def test_a_relief_pass_owns_the_history_it_rewrote_and_the_new_turn_stays_new() -> None:
    before = turns(6)
    after = [*before[:2], "pointer to output 2", *before[3:], "turn 6"]
    changes = {1: [Change(cause="relief_pass", detail="tool_results_to_pointers: 1 item")]}
    _, second = run([body(before), body(after)], changes=changes)
    # Read: tools + system (300). Turns 0-1 shared but under no marker (200). Rewritten: turns 2-5 (400).
    assert second.by_cause == {"breakpoint_placement": 200, "relief_pass": 400, "new_content": 100}
    assert second.stretches[1].detail == "tool_results_to_pointers: 1 item"


def test_a_compaction_owns_the_history_its_summary_replaced() -> None:
    before = turns(6)
    after = ["summary of turns 0-3", *before[4:], "turn 6"]
    _, second = run([body(before), body(after)], changes={1: [Change(cause="compaction", detail="pressure")]})
    assert second.by_cause == {"compaction": 300, "new_content": 100}


def test_a_prefix_epoch_wins_over_the_relief_that_came_with_it() -> None:
    changes = {1: [Change(cause="relief_pass"), Change(cause="prefix_epoch", detail="prefix_edited")]}
    _, second = run([body(turns(3)), body([*turns(3), "turn 3"], system="You are careful. Be brief.")], changes=changes)
    # The tools are shared but, at 200 tokens and unmarked, under the minimum; system and the
    # three old turns rewritten; one new turn.
    assert second.by_cause == {"below_minimum": 200, "prefix_epoch": 400, "new_content": 100}


def test_an_expired_entry_names_the_gap() -> None:
    _, second = run([body(turns(3)), body(turns(4))], gaps=[timedelta(minutes=6)])
    assert second.by_cause == {"ttl_expired": 600, "new_content": 100}
    assert "6m00s" in second.stretches[0].detail


def test_a_request_sent_while_the_previous_one_is_still_writing_reads_nothing() -> None:
    # Parallel tool calls: the second request goes out 2 s after the first, whose entry is readable after 10 s.
    _, second = run(
        [body(turns(3)), body(turns(4))],
        gaps=[timedelta(seconds=2)],
        first_token_after=timedelta(seconds=10),
    )
    assert second.by_cause == {"in_flight": 600, "new_content": 100}


def test_a_prefix_under_the_minimum_is_never_cached() -> None:
    _, second = run([body(turns(1)), body(turns(2))], minimum=10_000)
    # Two tools, the system block and the first turn were shared, 400 tokens in all.
    assert second.by_cause == {"below_minimum": 400, "new_content": 100}


def test_an_entry_out_of_the_lookback_is_not_found() -> None:
    # The previous request's entry ends at block 5; the next marker is 25 blocks further on.
    _, second = run([body(turns(3)), body(turns(28))])
    assert second.predicted.cache_read_tokens == 300  # the system entry, within reach of nothing but itself
    assert second.by_cause == {"beyond_lookback": 300, "new_content": 2500}


def test_a_shared_prefix_with_no_entry_is_breakpoint_placement() -> None:
    _, second = run([body(turns(3), marked=False), body(turns(4), marked=False)])
    assert second.by_cause == {"breakpoint_placement": 600, "new_content": 100}


def test_client_changes_are_named_from_the_bodies() -> None:
    base = turns(4)
    cases = {
        "system_changed": body(base, system="Another system text."),
        "tools_changed": body(base, tools=("read", "write", "edit")),
        "message_edited": body([base[0], "turn 1, edited", *base[2:]]),
        "model_switch": body(base, model="claude-opus-4-5"),
        "effort_switch": body(base, output_config={"effort": "low"}),
        "settings_changed": body(base, tool_choice={"type": "any"}),
    }
    for cause, changed in cases.items():
        _, second = run([body(base), changed])
        assert second.main_cause == cause, (cause, second.by_cause)
        # The shared start under no marker (the tools under the minimum, turn 0) is the only other cause.
        assert set(second.by_cause) <= {cause, "new_content", "below_minimum", "breakpoint_placement"}, second.by_cause


def test_stripped_thinking_is_named() -> None:
    before = body(turns(4))
    before["messages"][1]["content"].insert(0, {"type": "thinking", "thinking": "hmm", "signature": "sig"})
    after = copy.deepcopy(before)
    del after["messages"][1]["content"][0]
    after["messages"].append({"role": "assistant", "content": [{"type": "text", "text": "more"}]})
    _, second = run([before, after])
    assert second.main_cause == "thinking_stripped"
    # Turn 0 shared under no marker; from the stripped thinking to the last old turn: turn 1's
    # text, turns 2 and 3.
    assert second.by_cause == {"breakpoint_placement": 100, "thinking_stripped": 300, "new_content": 100}


def test_openai_granularity_and_minimum() -> None:
    def chat(n: int) -> dict[str, Any]:
        return {"model": "gpt-4.1", "messages": [{"role": "user", "content": f"message {i}"} for i in range(n)]}

    simulator = OpenAICacheSimulator(count_tokens=lambda _: 150, price_lookup=None)
    requests = [SimRequest(at=T0 + timedelta(seconds=10 * i), body=chat(n)) for i, n in enumerate((5, 8, 9))]
    first, second, third = attribute_requests(requests, simulator=simulator)
    assert first.by_cause == {"new_content": 750}
    # 750 shared tokens are under OpenAI's 1,024-token minimum.
    assert second.by_cause == {"below_minimum": 750, "new_content": 450}
    # 1,200 shared, credited in 128-token steps: 1,152 read, 48 cut by the granularity.
    assert third.predicted.cache_read_tokens == 1152
    assert third.by_cause == {"breakpoint_placement": 48, "new_content": 150}


def test_predicted_against_reported_is_flagged_beyond_the_tolerance() -> None:
    predicted = Usage(input_tokens=100, cache_read_tokens=900)
    close = check_usage(predicted, Usage(input_tokens=150, cache_read_tokens=850))
    far = check_usage(predicted, Usage(input_tokens=900, cache_read_tokens=100))
    assert not close.flagged
    assert far.flagged
    assert round(far.difference, 2) == -0.8


def test_attribution_is_pure() -> None:
    simulator = AnthropicCacheSimulator(count_tokens=hundred, min_cacheable_tokens=300, price_lookup=None)
    _, a = observe(simulator, SimRequest(at=T0, body=body(turns(3))))
    _, b = observe(simulator, SimRequest(at=T0 + timedelta(seconds=5), body=body(turns(5))))
    assert attribute(a, b) == attribute(a, b)


EDITS = st.sampled_from(["append", "edit", "drop", "system", "tools", "model", "effort", "gap", "unmark"])


@settings(max_examples=60, deadline=None)
@given(
    script=st.lists(st.tuples(EDITS, st.integers(0, 30), st.integers(1, 400)), min_size=1, max_size=12),
    minimum=st.sampled_from([0, 300, 2048]),
    engine=st.lists(st.sampled_from(["relief_pass", "compaction", "prefix_epoch"]), max_size=2),
)
def test_the_causes_always_add_up_to_the_uncached_tokens(
    script: list[tuple[str, int, int]], minimum: int, engine: list[str]
) -> None:
    state: dict[str, Any] = {"turns": turns(3), "system": "s", "tools": ("a",), "model": "claude-opus-4-6", "marked": True}
    bodies, gaps = [], []
    changes: dict[int, list[Change]] = {}
    for step, (edit, where, seconds) in enumerate(script):
        gap = timedelta(seconds=seconds)
        match edit:
            case "append":
                state["turns"] = [*state["turns"], f"new {step}"]
            case "edit" if state["turns"]:
                k = where % len(state["turns"])
                state["turns"] = [*state["turns"][:k], f"edited {step}", *state["turns"][k + 1 :]]
            case "drop" if len(state["turns"]) > 1:
                state["turns"] = state["turns"][where % len(state["turns"]) :]
            case "system":
                state["system"] = f"s{step}"
            case "tools":
                state["tools"] = (*state["tools"], f"t{step}")
            case "model":
                state["model"] = "claude-opus-4-5" if state["model"] == "claude-opus-4-6" else "claude-opus-4-6"
            case "gap":
                gap = timedelta(minutes=where)
            case "unmark":
                state["marked"] = not state["marked"]
        extra = {"output_config": {"effort": "low"}} if edit == "effort" else {}
        bodies.append(
            body(
                state["turns"],
                system=state["system"],
                tools=state["tools"],
                model=state["model"],
                marked=state["marked"],
                **extra,
            )
        )
        gaps.append(gap)
        changes[step] = [Change(cause=c) for c in engine] if where % 3 == 0 else []  # type: ignore[arg-type]
    # run() checks the sum and the cause list for every request.
    run(bodies, gaps=gaps[1:], minimum=minimum, changes=changes)


@settings(max_examples=40, deadline=None)
@given(
    script=st.lists(st.tuples(st.sampled_from(["append", "edit", "tools", "effort", "key"]), st.integers(0, 20)), max_size=8),
    model=st.sampled_from(["gpt-4.1", "gpt-5.5", "gpt-5.6"]),
    responses=st.booleans(),
    gap=st.sampled_from([timedelta(seconds=5), timedelta(minutes=45)]),
)
def test_openai_causes_add_up_under_both_regimes_and_both_apis(
    script: list[tuple[str, int]], model: str, responses: bool, gap: timedelta
) -> None:
    messages = [{"role": "developer", "content": "Be careful."}, {"role": "user", "content": "start"}]
    tools = [{"type": "function", "function": {"name": "read"}}]
    extra: dict[str, Any] = {}
    simulator = OpenAICacheSimulator(count_tokens=lambda text: 300, price_lookup=None)
    previous = None
    for step, (edit, where) in enumerate([("append", 0), *script]):
        match edit:
            case "append":
                messages = [*messages, {"role": "assistant", "content": f"a{step}"}, {"role": "user", "content": f"u{step}"}]
            case "edit":
                k = where % len(messages)
                messages = [*messages[:k], {**messages[k], "content": f"edited {step}"}, *messages[k + 1 :]]
            case "tools":
                tools = [*tools, {"type": "function", "function": {"name": f"t{step}"}}]
            case "effort":
                extra = {"reasoning_effort": "low" if extra.get("reasoning_effort") != "low" else "high"}
            case "key":
                extra = {**extra, "prompt_cache_key": f"k{step}"}
        body: dict[str, Any] = {"model": model, "tools": tools, **extra}
        if responses:
            body["input"] = messages
        else:
            body["messages"] = messages
        _, current = observe(simulator, SimRequest(at=T0 + gap * step, body=body))
        found = attribute(previous, current)
        assert sum(found.by_cause.values()) == found.uncached_tokens == current.total - found.predicted.cache_read_tokens
        assert set(found.by_cause) <= set(CAUSES)
        if edit == "key" and previous is not None and found.uncached_tokens:
            assert found.main_cause == "settings_changed"
        previous = current
