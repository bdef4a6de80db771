"""I3: an unchanged Anthropic caller loop with Contextwright as client middleware sends the engine's bodies."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("anthropic", reason="needs the anthropic SDK (the anthropic extra)")

import anthropic
import httpx2

from contextwright.events import AssistantMessage, ToolCall
from contextwright.integrations.anthropic import ContextwrightMiddleware
from contextwright.integrations.errors import HistoryRewritten, PrefixMismatch
from contextwright.runtime.errors import ThinkingBudgetInvalid
from contextwright.runtime.spec import AgentSpec
from contextwright.testing import fakes
from contextwright.testing.provider import ScriptedProvider

TASK = "CI fails on main. Fix it without changing the public API."
ROUNDS = 10


def pytest_output(turn: int) -> str:
    """A verbose pytest run of 601 tests with one failure (about 27,000 characters)."""
    lines = ["=" * 29 + " test session starts " + "=" * 30, "collected 601 items", ""]
    lines += [f"tests/test_billing.py::test_case_{i} PASSED" for i in range(600)]
    lines.insert(303, f"tests/test_billing.py::test_rounding_{turn} FAILED")
    lines += [
        f"FAILED tests/test_billing.py::test_rounding_{turn} - assert 10.01 == 10.0",
        "=" * 24 + " 1 failed, 600 passed " + "=" * 24,
    ]
    return "\n".join(lines)


def answers(rounds: int) -> list[AssistantMessage]:
    script = [
        AssistantMessage(
            text=f"Running the tests, round {i}.", tool_calls=(ToolCall(id=f"toolu_{i:02d}", name="run_tests", arguments={}),)
        )
        for i in range(rounds - 1)
    ]
    return [*script, AssistantMessage(text="Fixed: rounding now uses banker's rounding.")]


class Wire:
    """The scripted provider behind a mock transport, with chosen calls failing first with a status."""

    def __init__(self, provider: ScriptedProvider, failures: dict[int, tuple[int, dict[str, Any]]] | None = None) -> None:
        self.provider = provider
        self.failures = dict(failures or {})
        self.bodies: list[dict[str, Any]] = []

    def handler(self, request: Any) -> Any:
        body = json.loads(request.content)
        self.bodies.append(body)
        failure = self.failures.pop(len(self.bodies) - 1, None)
        if failure is not None:
            return httpx2.Response(failure[0], json=failure[1], headers={"request-id": "req_fail"})
        return self.provider.handler(request)


def open_session(**options: Any) -> Any:
    """A session whose spec holds only the platform policy: the caller's first call pins its system prompt and tools."""
    return fakes.open_session(agent=options.pop("agent", None) or AgentSpec(policy=fakes.sample_agent().policy), **options)


CALLER_TOOLS = [{"name": "run_tests", "description": "Run the test suite", "input_schema": {"type": "object", "properties": {}}}]


def caller_loop(client: Any, rounds_seen: list[int]) -> list[dict[str, Any]]:
    """The caller's own agent loop, exactly as it was before Contextwright."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    while True:
        response = client.messages.create(
            model="claude-sonnet-4-6", max_tokens=2048, system="caller's own system prompt", tools=CALLER_TOOLS, messages=messages
        )
        messages.append({"role": "assistant", "content": response.content})
        calls = [block for block in response.content if block.type == "tool_use"]
        if not calls:
            return messages
        rounds_seen.append(len(rounds_seen))
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": c.id, "content": pytest_output(len(rounds_seen))} for c in calls
                ],
            }
        )


def _client(session, wire, **options) -> Any:
    return anthropic.Anthropic(
        api_key="test",
        base_url="http://anthropic.test",
        http_client=httpx2.Client(transport=httpx2.MockTransport(wire.handler)),
        middleware=[ContextwrightMiddleware(session)],
        **options,
    )


def _markers(body: dict[str, Any]) -> int:
    return json.dumps(body).count('"cache_control"')


def test_ten_rounds_of_an_unchanged_loop_send_only_engine_bodies():
    _, session, clock = open_session(window=64_000)
    wire = Wire(ScriptedProvider(answers(ROUNDS), clock=clock))
    messages = caller_loop(_client(session, wire, max_retries=0), [])

    assert len(wire.bodies) == ROUNDS
    results_on_wire = 0
    built = [e.payload for e in session.history.events if e.type == "context.request.built"]
    assert len(built) == ROUNDS
    for body in wire.bodies:
        # Check: the engine's system and tools went out, the caller's system prompt and tools pinned in them.
        assert "caller's own system prompt" in json.dumps(body["system"])
        assert "Never push to main" in json.dumps(body["system"])
        assert {t["name"] for t in body["tools"]} >= {"run_tests", "context_read_artifact"}
        assert _markers(body) <= 4
        assert body["max_tokens"] == 2048
        for message in body["messages"]:
            for block in message["content"] if isinstance(message["content"], list) else ():
                if block["type"] == "tool_result":
                    results_on_wire += 1
                    # Check: every tool output on the wire is the bounded, enveloped view.
                    assert len(json.dumps(block["content"])) < len(pytest_output(0)) // 3
    assert results_on_wire == sum(range(ROUNDS))
    # Check: one prefix hash for the epoch, and each message of the caller's history in the log once.
    assert len({(b.epoch, b.prefix_sha256) for b in built}) == 1
    types = [e.type for e in session.history.events]
    assert (types.count("message.user"), types.count("message.assistant"), types.count("tool.result")) == (1, ROUNDS, ROUNDS - 1)
    assert types.count("model.response") == ROUNDS
    # Check: the caller's own history kept every output whole.
    assert messages[2]["content"][0]["content"] == pytest_output(1)


def test_a_529_then_200_under_max_retries_1_records_one_built_request(monkeypatch):
    monkeypatch.setattr(anthropic.Anthropic, "_sleep_for_retry", lambda *a, **k: None)
    _, session, clock = open_session()
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    wire = Wire(ScriptedProvider(answers(3), clock=clock), failures={1: (529, overloaded)})
    caller_loop(_client(session, wire, max_retries=1), [])
    # Check: four attempts on the wire, three logical calls, three built requests; the retry resent the same body.
    assert len(wire.bodies) == 4
    assert wire.bodies[1] == wire.bodies[2]
    assert sum(1 for e in session.history.events if e.type == "context.request.built") == 3


def test_an_overflow_is_recovered_once_by_compacting():
    _, session, clock = open_session()
    too_long = {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "prompt is too long: 208310 tokens > 200000 maximum"},
    }
    wire = Wire(ScriptedProvider(answers(4), clock=clock), failures={3: (400, too_long)})
    caller_loop(_client(session, wire, max_retries=0), [])
    types = [e.type for e in session.history.events]
    assert types.count("context.overflow") == 1
    assert any(t in ("context.compacted", "context.pruned") for t in types)
    assert len(wire.bodies) == 5


def test_a_thinking_budget_that_no_longer_fits_the_capped_max_tokens_is_refused_before_sending():
    # The engine caps max_tokens at its reserve (16,384 here); the API wants budget_tokens below max_tokens.
    _, session, clock = open_session()
    wire = Wire(ScriptedProvider(answers(1), clock=clock))
    client = _client(session, wire, max_retries=0)
    messages = [{"role": "user", "content": TASK}]
    with pytest.raises(ThinkingBudgetInvalid, match="16,384"):
        client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=20_000,
            thinking={"type": "enabled", "budget_tokens": 18_000},
            messages=messages,
        )
    assert wire.bodies == []
    # A budget below the cap goes out as the caller set it, with the capped max_tokens.
    client.messages.create(
        model="claude-sonnet-4-6", max_tokens=20_000, thinking={"type": "enabled", "budget_tokens": 12_000}, messages=messages
    )
    assert (wire.bodies[-1]["max_tokens"], wire.bodies[-1]["thinking"]["budget_tokens"]) == (16_384, 12_000)


def test_a_caller_history_that_rewrites_the_record_is_a_typed_error():
    _, session, clock = open_session()
    wire = Wire(ScriptedProvider(answers(3), clock=clock))
    client = _client(session, wire, max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    response = client.messages.create(model="claude-sonnet-4-6", max_tokens=1024, messages=messages)
    messages.append({"role": "assistant", "content": response.content})
    messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_00", "content": "ok"}]})
    messages[0] = {"role": "user", "content": "A different task."}
    before = len(session.history.events)
    with pytest.raises(HistoryRewritten, match="position 0"):
        client.messages.create(model="claude-sonnet-4-6", max_tokens=1024, messages=messages)
    # Check: nothing was recorded and nothing was sent.
    assert len(session.history.events) == before and len(wire.bodies) == 1


def test_the_async_client_runs_the_same_loop():
    _, session, clock = open_session()
    wire = Wire(ScriptedProvider(answers(3), clock=clock))

    async def handler(request):
        return wire.handler(request)

    client = anthropic.AsyncAnthropic(
        api_key="test",
        base_url="http://anthropic.test",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
        middleware=[ContextwrightMiddleware(session)],
    )

    async def loop():
        messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
        while True:
            response = await client.messages.create(model="claude-sonnet-4-6", max_tokens=1024, messages=messages)
            messages.append({"role": "assistant", "content": response.content})
            calls = [b for b in response.content if b.type == "tool_use"]
            if not calls:
                return
            messages.append(
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": c.id, "content": "ok"} for c in calls]}
            )

    asyncio.run(loop())
    types = [e.type for e in session.history.events]
    assert (types.count("message.assistant"), types.count("tool.result"), types.count("model.response")) == (3, 2, 3)
    assert all("Never push to main" in json.dumps(b["system"]) for b in wire.bodies)


def _anthropic_sse(message_id: str, blocks: list[dict[str, Any]], stop: str) -> bytes:
    """A Messages stream as the API sends it: text, thinking with signature, and tool input as deltas."""
    usage = {"input_tokens": 30, "output_tokens": 1, "cache_read_input_tokens": 800, "cache_creation_input_tokens": 200}
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-6",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            },
        )
    ]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start, deltas = {"type": "text", "text": ""}, [{"type": "text_delta", "text": block["text"]}]
        elif block["type"] == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": block["thinking"]},
                {"type": "signature_delta", "signature": block["signature"]},
            ]
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
        events += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 25}},
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


STREAMED = [
    [
        {"type": "thinking", "thinking": "Run the tests first.", "signature": "EqQBCkYIsig=="},
        {"type": "tool_use", "id": "toolu_s1", "name": "run_tests", "input": {"path": "tests/"}},
    ],
    [{"type": "text", "text": "All green now."}],
]


def test_a_streamed_answer_is_recorded_when_the_caller_has_read_it():
    _, session, _ = open_session()
    bodies: list[dict[str, Any]] = []

    def handler(request):
        bodies.append(json.loads(request.content))
        n = len(bodies) - 1
        content = _anthropic_sse(f"msg_{n}", STREAMED[n], "tool_use" if n == 0 else "end_turn")
        return httpx2.Response(200, content=content, headers={"content-type": "text/event-stream"})

    client = anthropic.Anthropic(
        api_key="test",
        base_url="http://anthropic.test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        middleware=[ContextwrightMiddleware(session)],
    )
    messages: list[Any] = [{"role": "user", "content": TASK}]
    texts = []
    for _ in range(2):
        with client.messages.stream(model="claude-sonnet-4-6", max_tokens=2048, messages=messages) as stream:
            texts += list(stream.text_stream)
            final = stream.get_final_message()
        messages.append({"role": "assistant", "content": final.content})
        calls = [b for b in final.content if b.type == "tool_use"]
        if calls:
            messages.append(
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": c.id, "content": "3 passed"} for c in calls]}
            )
    assert texts == ["All green now."]
    assert all(body["stream"] is True and "Never push to main" in json.dumps(body["system"]) for body in bodies)
    answers_ = [e.payload for e in session.history.events if e.type == "message.assistant"]
    # Check: each streamed answer was recorded once, the tool input from its deltas, the usage from message_delta.
    assert [a.tool_calls[0].arguments if a.tool_calls else a.text for a in answers_] == [{"path": "tests/"}, "All green now."]
    usage = [e.payload.usage for e in session.history.events if e.type == "model.response"]
    assert [(u.input_tokens, u.cache_read_tokens, u.cache_write_5m_tokens, u.output_tokens) for u in usage] == [
        (30, 800, 200, 25)
    ] * 2
    types = [e.type for e in session.history.events]
    assert (types.count("message.user"), types.count("tool.result")) == (1, 1)


def test_a_stream_broken_midway_records_no_answer():
    _, session, _ = open_session()

    def handler(request):
        whole = _anthropic_sse("msg_0", STREAMED[1], "end_turn")
        return httpx2.Response(200, content=whole[: len(whole) // 2], headers={"content-type": "text/event-stream"})

    client = anthropic.Anthropic(
        api_key="test",
        base_url="http://anthropic.test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        middleware=[ContextwrightMiddleware(session)],
    )
    with client.messages.stream(
        model="claude-sonnet-4-6", max_tokens=2048, messages=[{"role": "user", "content": TASK}]
    ) as stream:
        # The SDK hands back what arrived; the text is cut short.
        assert "".join(stream.text_stream) != "All green now."
    types = [e.type for e in session.history.events]
    # Check: the request stays built, no answer and no usage were recorded.
    assert types.count("context.request.built") == 1
    assert types.count("message.assistant") == 0 and types.count("model.response") == 0


def test_signed_thinking_goes_back_byte_identical_in_a_three_round_tool_loop():
    _, session, _ = open_session()
    bodies: list[dict[str, Any]] = []
    thinking = [{"type": "thinking", "thinking": f"Step {i}: run the tests.", "signature": f"sig-{i}=="} for i in range(2)]
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}
    replies = [
        [thinking[0], {"type": "tool_use", "id": "toolu_a", "name": "run_tests", "input": {}}],
        [thinking[1], redacted, {"type": "tool_use", "id": "toolu_b", "name": "run_tests", "input": {"k": "billing"}}],
        [{"type": "text", "text": "Done."}],
    ]

    def handler(request):
        bodies.append(json.loads(request.content))
        n = len(bodies) - 1
        reply = {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": replies[n],
            "stop_reason": "tool_use" if n < 2 else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        return httpx2.Response(200, json=reply)

    client = anthropic.Anthropic(
        api_key="test",
        base_url="http://anthropic.test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        middleware=[ContextwrightMiddleware(session)],
    )
    messages: list[Any] = [{"role": "user", "content": TASK}]
    options = {"model": "claude-sonnet-4-6", "max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 2048}}
    while True:
        response = client.messages.create(messages=messages, **options)
        messages.append({"role": "assistant", "content": response.content})
        calls = [b for b in response.content if b.type == "tool_use"]
        if not calls:
            break
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": c.id, "content": "1 failed"} for c in calls]}
        )
    assert len(bodies) == 3
    assert all(body["thinking"] == {"type": "enabled", "budget_tokens": 2048} for body in bodies)
    # Check: every follow-up carries each earlier assistant turn's thinking, byte-identical and first.
    turns = [[m for m in body["messages"] if m["role"] == "assistant"] for body in bodies]
    assert turns[1][0]["content"][0] == thinking[0]
    assert turns[2][0]["content"][0] == thinking[0]
    assert turns[2][1]["content"][:2] == [thinking[1], redacted]
    assert [b["type"] for b in turns[2][1]["content"]] == ["thinking", "redacted_thinking", "tool_use"]


def test_the_agent_profile_cache_ttl_reaches_the_wire():
    from contextwright.testing.fakes import sample_agent

    _, session, clock = open_session(agent=AgentSpec(policy=sample_agent().policy, cache_ttl="1h"))
    wire = Wire(ScriptedProvider(answers(2), clock=clock))
    caller_loop(_client(session, wire, max_retries=0), [])
    # Check: the prefix breakpoint carries the orchestrator's 1h TTL on every request.
    for body in wire.bodies:
        marked = [b["cache_control"] for b in body["system"] if "cache_control" in b]
        assert marked and marked[-1] == {"type": "ephemeral", "ttl": "1h"}


def test_the_async_client_stream_is_recorded_when_read():
    _, session, _ = open_session()
    bodies: list[dict[str, Any]] = []

    async def handler(request):
        bodies.append(json.loads(request.content))
        return httpx2.Response(
            200, content=_anthropic_sse("msg_a", STREAMED[1], "end_turn"), headers={"content-type": "text/event-stream"}
        )

    client = anthropic.AsyncAnthropic(
        api_key="test",
        base_url="http://anthropic.test",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
        middleware=[ContextwrightMiddleware(session)],
    )

    async def turn() -> str:
        async with client.messages.stream(
            model="claude-sonnet-4-6", max_tokens=1024, messages=[{"role": "user", "content": TASK}]
        ) as s:
            return "".join([text async for text in s.text_stream])

    assert asyncio.run(turn()) == "All green now."
    assert "Never push to main" in json.dumps(bodies[0]["system"])
    [answer] = [e.payload for e in session.history.events if e.type == "message.assistant"]
    [usage] = [e.payload.usage for e in session.history.events if e.type == "model.response"]
    assert answer.text == "All green now." and usage.output_tokens == 25


def test_thinking_the_engine_leaves_out_as_stale_is_not_put_back_from_the_callers_history():
    # On a model that checks thinking prefixes, a compaction voids the thinking after the change
    # (platform.claude.com .../preserved-thinking/prefix-checks); the caller's copy must not bring it back.
    from contextwright.events import ReasoningBlock
    from contextwright.models import anthropic as anthropic_model
    from contextwright.testing.fakes import sample_agent

    engine, _, clock = open_session()
    session = engine.session("checked", agent=sample_agent(), model=anthropic_model("claude-opus-5-5", context_window=1_000_000))
    answers = [
        AssistantMessage(
            tool_calls=(ToolCall(id=f"toolu_{i}", name="read_file", arguments={"path": f"f{i}.py"}),),
            reasoning=(
                ReasoningBlock(
                    provider="anthropic", block={"type": "thinking", "thinking": f"step {i}", "signature": f"sig-{i}-" * 20}
                ),
            ),
        )
        for i in range(8)
    ]
    wire = Wire(ScriptedProvider(answers, clock=clock))
    client = _client(session, wire, max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Read every file."}]

    def call() -> None:
        response = client.messages.create(
            model="claude-opus-5-5", max_tokens=1024, thinking={"type": "adaptive"}, messages=messages
        )
        messages.append({"role": "assistant", "content": response.content})
        [use] = [b for b in response.content if b.type == "tool_use"]
        content = f"content of {use.input['path']} " * 50
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": content}]})

    for _ in range(6):
        call()
    assert all(turn[0]["type"] == "thinking" for turn in _assistant_turns(wire.bodies[-1]))
    assert session.compact() is not None
    call()
    kept = _assistant_turns(wire.bodies[-1])
    # Check: the turns kept after the compaction went out without their stale thinking, calls untouched.
    assert kept and all([block["type"] for block in turn] == ["tool_use"] for turn in kept)
    # Check: thinking produced after the compaction goes back again.
    call()
    latest = _assistant_turns(wire.bodies[-1])
    assert [block["type"] for block in latest[-1]] == ["thinking", "tool_use"]
    assert all([block["type"] for block in turn] == ["tool_use"] for turn in latest[:-1])


def _assistant_turns(body: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [m["content"] for m in body["messages"] if m["role"] == "assistant" and isinstance(m["content"], list)]


SEARCH = {
    "name": "search_code",
    "description": "Search the repository",
    "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
}


def test_the_first_call_pins_the_callers_system_prompt_and_tools_in_the_prefix():
    _, session, clock = open_session()
    wire = Wire(ScriptedProvider(answers(3), clock=clock))
    client = _client(session, wire, max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    options = {"model": "claude-sonnet-4-6", "max_tokens": 1024, "tools": [*CALLER_TOOLS, SEARCH]}
    system = [{"type": "text", "text": "You fix CI. Prefer the smallest diff."}]
    for _ in range(3):
        response = client.messages.create(system=system, messages=messages, **options)
        messages.append({"role": "assistant", "content": response.content})
        calls = [block for block in response.content if block.type == "tool_use"]
        messages += [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": c.id, "content": "ok"} for c in calls]}]
    assert len(wire.bodies) == 3
    for body in wire.bodies:
        # Check: the caller's system text and tools reach the model, pinned after the platform policy.
        text = json.dumps(body["system"])
        assert "Prefer the smallest diff." in text and "Never push to main" in text
        names = [tool["name"] for tool in body["tools"]]
        assert names[:2] == ["run_tests", "search_code"] and "context_read_artifact" in names
        assert next(t for t in body["tools"] if t["name"] == "search_code")["input_schema"] == SEARCH["input_schema"]
    built = [e.payload for e in session.history.events if e.type == "context.request.built"]
    assert len({(b.epoch, b.prefix_sha256) for b in built}) == 1
    assert session.agent.instructions == "You fix CI. Prefer the smallest diff."


def test_a_call_that_differs_from_the_spec_is_refused_naming_each_difference():
    _, session, clock = open_session(agent=fakes.sample_agent(tools=("run_tests", "read_file")))
    wire = Wire(ScriptedProvider(answers(1), clock=clock))
    client = _client(session, wire, max_retries=0)
    tools = [*CALLER_TOOLS, {"type": "web_search_20250305", "name": "web_search"}]
    with pytest.raises(PrefixMismatch) as raised:
        client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=1024,
            system="caller's own system prompt",
            tools=tools,
            messages=[{"role": "user", "content": TASK}],
        )
    differences = raised.value.differences
    assert any("'web_search'" in d and "cannot be pinned" in d for d in differences)
    assert any("system prompt" in d and "caller's own system prompt" in d for d in differences)
    assert any("'run_tests'" in d and "Run the test suite" in d for d in differences)
    assert any("does not pass: read_file" in d for d in differences)
    # Check: refused before anything was recorded or sent.
    assert wire.bodies == [] and not [e for e in session.history.events if e.type == "message.user"]


def test_a_later_call_that_adds_a_tool_is_refused():
    _, session, clock = open_session()
    wire = Wire(ScriptedProvider(answers(2), clock=clock))
    client = _client(session, wire, max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    response = client.messages.create(model="claude-sonnet-4-6", max_tokens=1024, tools=CALLER_TOOLS, messages=messages)
    messages.append({"role": "assistant", "content": response.content})
    messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_00", "content": "ok"}]})
    with pytest.raises(PrefixMismatch, match="'search_code' is passed by the call but not pinned"):
        client.messages.create(model="claude-sonnet-4-6", max_tokens=1024, tools=[*CALLER_TOOLS, SEARCH], messages=messages)
    assert len(wire.bodies) == 1


def test_a_restarted_process_resumes_what_the_first_call_pinned_without_a_new_epoch(tmp_path):
    from contextwright.clock import FixedClock
    from contextwright.runtime.engine import Engine

    clock = FixedClock("2026-03-01T22:30:00Z")
    wire = Wire(ScriptedProvider(answers(2), clock=clock))
    spec = AgentSpec(policy=fakes.sample_agent().policy)
    options = {"model": "claude-sonnet-4-6", "max_tokens": 1024, "system": "Be brief.", "tools": CALLER_TOOLS}
    messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    for worker in range(2):  # the same loop, in a process that starts over with the same spec
        engine = Engine.open(f"sqlite:///{tmp_path / 'cw.db'}", clock=clock, secret=fakes.TEST_SECRET)
        session = engine.session("resumed", agent=spec, model=fakes.sample_model())
        response = _client(session, wire, max_retries=0).messages.create(messages=messages, **options)
        if worker == 0:
            messages.append({"role": "assistant", "content": response.content})
            messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_00", "content": "ok"}]})
        built = [e.payload for e in session.history.events if e.type == "context.request.built"]
        engine.close()
    assert len(built) == 2 and len({(b.epoch, b.prefix_sha256) for b in built}) == 1
    assert all("Be brief." in json.dumps(body["system"]) for body in wire.bodies)
    assert all(body["tools"][0]["name"] == "run_tests" for body in wire.bodies)
