"""I3: an unchanged OpenAI caller loop behind ``wrap(client, session)`` sends the engine's bodies."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("openai", reason="needs the openai SDK (the openai extra)")

import httpx2
import openai

from contextwright.events import AssistantMessage, ToolCall
from contextwright.integrations.errors import HistoryRewritten, PrefixMismatch
from contextwright.integrations.openai import wrap
from contextwright.models import openai as openai_model
from contextwright.models import with_window
from contextwright.runtime.spec import AgentSpec
from contextwright.testing.fakes import TEST_SECRET, sample_agent
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
        AssistantMessage(text="", tool_calls=(ToolCall(id=f"call_{i:02d}", name="run_tests", arguments={}),))
        for i in range(rounds - 1)
    ]
    return [*script, AssistantMessage(text="Fixed: rounding now uses banker's rounding.")]


def open_session(window: int = 64_000):
    from contextwright.clock import FixedClock
    from contextwright.runtime.engine import Engine

    engine = Engine.open("memory://", clock=FixedClock("2026-03-01T22:30:00Z"), secret=TEST_SECRET)
    # The spec holds only the platform policy: the caller's first call pins its system prompt and tools.
    return engine.session("s1", agent=AgentSpec(policy=sample_agent().policy), model=with_window(openai_model("gpt-5.5"), window))


def _client(handler: Any, *, asynchronous: bool = False) -> Any:
    if asynchronous:

        async def ahandler(request):
            return handler(request)

        return openai.AsyncOpenAI(
            api_key="test",
            base_url="http://oai.test/v1",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(ahandler)),
        )
    return openai.OpenAI(
        api_key="test",
        base_url="http://oai.test/v1",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )


def _check_engine_bodies(session, bodies: list[dict[str, Any]], history_key: str) -> None:
    built = [e.payload for e in session.history.events if e.type == "context.request.built"]
    assert len(built) == len(bodies)
    assert len({(b.epoch, b.prefix_sha256) for b in built}) == 1
    keys = {body["prompt_cache_key"] for body in bodies}
    assert len(keys) == 1
    for body in bodies:
        text = json.dumps(body[history_key])
        # Check: the caller's system prompt is pinned after the platform policy, never dropped.
        assert "caller's own system prompt" in text and "Never push to main" in text
        assert "test_case_300 PASSED" not in text  # no tool output reaches the model whole


def test_chat_completions_loop_of_ten_rounds():
    session = open_session()
    provider = ScriptedProvider(answers(ROUNDS), provider="openai")
    client = wrap(_client(provider.handler), session)
    messages: list[Any] = [{"role": "system", "content": "caller's own system prompt"}, {"role": "user", "content": TASK}]
    while True:
        response = client.chat.completions.create(model="gpt-5.5", messages=messages, temperature=0.2)
        message = response.choices[0].message
        messages.append(message)
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": pytest_output(len(messages))})
    assert len(provider.bodies) == ROUNDS
    assert all(body["temperature"] == 0.2 for body in provider.bodies)
    _check_engine_bodies(session, provider.bodies, "messages")
    types = [e.type for e in session.history.events]
    assert (types.count("message.user"), types.count("message.assistant"), types.count("tool.result")) == (1, ROUNDS, ROUNDS - 1)
    assert types.count("model.response") == ROUNDS
    # Check: the wrapper hands everything else to the client itself.
    assert client.api_key == "test"


def test_async_chat_completions_loop():
    session = open_session()
    provider = ScriptedProvider(answers(3), provider="openai")
    client = wrap(_client(provider.handler, asynchronous=True), session)

    async def loop():
        messages: list[Any] = [{"role": "user", "content": TASK}]
        while True:
            response = await client.chat.completions.create(model="gpt-5.5", messages=messages)
            message = response.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return
            messages += [{"role": "tool", "tool_call_id": c.id, "content": "ok"} for c in message.tool_calls]

    asyncio.run(loop())
    types = [e.type for e in session.history.events]
    assert (types.count("message.assistant"), types.count("tool.result"), types.count("model.response")) == (3, 2, 3)


def _sse(chunks: list[dict[str, Any]]) -> bytes:
    return "".join(f"data: {json.dumps(c)}\n\n" for c in [*chunks]).encode() + b"data: [DONE]\n\n"


def test_chat_completions_stream_records_the_final_answer_on_exit():
    session = open_session()
    bodies: list[dict[str, Any]] = []

    def handler(request):
        bodies.append(json.loads(request.content))
        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-5.5"}
        chunks = [
            {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Looking "}, "finish_reason": None}]},
            {**base, "choices": [{"index": 0, "delta": {"content": "into it."}, "finish_reason": "stop"}]},
            {
                **base,
                "choices": [],
                "usage": {
                    "prompt_tokens": 900,
                    "completion_tokens": 4,
                    "total_tokens": 904,
                    "prompt_tokens_details": {"cached_tokens": 512},
                },
            },
        ]
        return httpx2.Response(200, content=_sse(chunks), headers={"content-type": "text/event-stream"})

    client = wrap(_client(handler), session)
    messages: list[Any] = [{"role": "user", "content": TASK}]
    with client.chat.completions.stream(model="gpt-5.5", messages=messages, stream_options={"include_usage": True}) as stream:
        text = "".join(event.delta for event in stream if event.type == "content.delta")
    assert text == "Looking into it."
    assert "Never push to main" in json.dumps(bodies[0]["messages"])
    [answer] = [e.payload for e in session.history.events if e.type == "message.assistant"]
    assert answer.text == "Looking into it."
    [usage] = [e.payload.usage for e in session.history.events if e.type == "model.response"]
    assert (usage.cache_read_tokens, usage.output_tokens) == (512, 4)
    # Check: the caller appends the answer and continues; it is recognised, not recorded twice.
    messages += [{"role": "assistant", "content": "Looking into it."}, {"role": "user", "content": "Go on."}]
    with client.chat.completions.stream(model="gpt-5.5", messages=messages):
        pass
    types = [e.type for e in session.history.events]
    assert (types.count("message.user"), types.count("message.assistant")) == (2, 2)


REASONING = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAAA-opaque-reasoning"}


def _response(n: int, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": 1,
        "model": "gpt-5.5",
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 1200,
            "input_tokens_details": {"cached_tokens": 1024},
            "output_tokens": 30,
            "output_tokens_details": {"reasoning_tokens": 20},
            "total_tokens": 1230,
        },
    }


def test_responses_loop_keeps_reasoning_items_unchanged():
    session = open_session()
    bodies: list[dict[str, Any]] = []
    outputs = [
        [
            REASONING,
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "run_tests",
                "arguments": "{}",
                "status": "completed",
            },
        ],
        [
            {
                "type": "message",
                "id": "msg_2",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Fixed.", "annotations": []}],
            }
        ],
    ]

    def handler(request):
        bodies.append(json.loads(request.content))
        return httpx2.Response(200, json=_response(len(bodies), outputs[len(bodies) - 1]))

    client = wrap(_client(handler), session)
    history: list[Any] = [{"role": "user", "content": TASK}]
    while True:
        response = client.responses.create(
            model="gpt-5.5", input=history, instructions="caller's own system prompt", include=["reasoning.encrypted_content"]
        )
        history += response.output
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            break
        history += [{"type": "function_call_output", "call_id": c.call_id, "output": pytest_output(1)} for c in calls]
    assert len(bodies) == 2
    _check_engine_bodies(session, bodies, "input")
    assert all(body["include"] == ["reasoning.encrypted_content"] for body in bodies)
    # Check: the reasoning item went back byte-identical, right before its function call.
    second = bodies[1]["input"]
    index = next(i for i, item in enumerate(second) if item.get("type") == "function_call")
    assert second[index - 1] == REASONING
    types = [e.type for e in session.history.events]
    assert (types.count("message.assistant"), types.count("tool.result"), types.count("model.response")) == (2, 1, 2)


def test_a_rewritten_chat_history_is_a_typed_error():
    session = open_session()
    provider = ScriptedProvider(answers(2), provider="openai")
    client = wrap(_client(provider.handler), session)
    messages: list[Any] = [{"role": "user", "content": TASK}]
    response = client.chat.completions.create(model="gpt-5.5", messages=messages)
    messages += [response.choices[0].message, {"role": "tool", "tool_call_id": "call_00", "content": "ok"}]
    messages[1] = {"role": "assistant", "content": "I did something else."}
    with pytest.raises(HistoryRewritten, match="position 1"):
        client.chat.completions.create(model="gpt-5.5", messages=messages)
    assert len(provider.bodies) == 1


def _responses_sse(n: int, text: str) -> bytes:
    """A Responses stream as the API sends it: created, one text message in deltas, completed with usage."""
    final = _response(n, [_message(text)])
    partial = {**final, "status": "in_progress", "output": [], "usage": None}
    item = {"type": "message", "id": "msg_s", "role": "assistant", "status": "in_progress", "content": []}
    part = {"type": "output_text", "text": "", "annotations": []}
    events = [
        {"type": "response.created", "sequence_number": 0, "response": partial},
        {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item},
        {
            "type": "response.content_part.added",
            "sequence_number": 2,
            "output_index": 0,
            "content_index": 0,
            "item_id": "msg_s",
            "part": part,
        },
        *[
            {
                "type": "response.output_text.delta",
                "sequence_number": 3 + i,
                "output_index": 0,
                "content_index": 0,
                "item_id": "msg_s",
                "delta": word,
                "logprobs": [],
            }
            for i, word in enumerate(text.split(" ")[:1] + [" " + w for w in text.split(" ")[1:]])
        ],
        {"type": "response.completed", "sequence_number": 99, "response": final},
    ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def _message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_s",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def test_async_responses_stream_records_the_final_response_on_exit():
    session = open_session()
    bodies: list[dict[str, Any]] = []

    def handler(request):
        bodies.append(json.loads(request.content))
        return httpx2.Response(
            200, content=_responses_sse(len(bodies), "Two tests fail in billing."), headers={"content-type": "text/event-stream"}
        )

    client = wrap(_client(handler, asynchronous=True), session)

    async def turn() -> str:
        async with client.responses.stream(model="gpt-5.5", input=[{"role": "user", "content": TASK}]) as stream:
            return "".join([event.delta async for event in stream if event.type == "response.output_text.delta"])

    assert asyncio.run(turn()) == "Two tests fail in billing."
    assert "Never push to main" in json.dumps(bodies[0]["input"])
    [answer] = [e.payload for e in session.history.events if e.type == "message.assistant"]
    assert answer.text == "Two tests fail in billing."
    [usage] = [e.payload.usage for e in session.history.events if e.type == "model.response"]
    assert usage.cache_read_tokens == 1024


def test_an_overflow_is_recovered_once_by_compacting():
    session = open_session()
    provider = ScriptedProvider(answers(4), provider="openai", overflow_calls={3})
    client = wrap(_client(provider.handler), session)
    messages: list[Any] = [{"role": "user", "content": TASK}]
    while True:
        message = client.chat.completions.create(model="gpt-5.5", messages=messages).choices[0].message
        messages.append(message)
        if not message.tool_calls:
            break
        messages += [{"role": "tool", "tool_call_id": c.id, "content": pytest_output(len(messages))} for c in message.tool_calls]
    types = [e.type for e in session.history.events]
    # Check: one overflow, relieved, and the same logical call sent again.
    assert types.count("context.overflow") == 1
    assert any(t in ("context.compacted", "context.pruned") for t in types)
    assert len(provider.bodies) == 5 and types.count("message.assistant") == 4


def test_a_session_with_messages_recorded_elsewhere_is_refused():
    session = open_session()
    session.user(TASK)
    provider = ScriptedProvider(answers(1), provider="openai")
    client = wrap(_client(provider.handler), session)
    with pytest.raises(HistoryRewritten, match="did not record"):
        client.chat.completions.create(model="gpt-5.5", messages=[{"role": "user", "content": TASK}])
    assert provider.bodies == []


def test_a_stream_that_overflows_when_it_opens_is_recovered_once():
    from contextwright.testing.provider import ProviderOverflowError

    session = open_session()
    provider = ScriptedProvider([AssistantMessage(text=f"Done {t}.") for t in range(3)], provider="openai")
    bodies: list[dict[str, Any]] = []

    def handler(request):
        body = json.loads(request.content)
        if not body.get("stream"):
            return provider.handler(request)
        bodies.append(body)
        if len(bodies) == 1:
            return httpx2.Response(400, json=ProviderOverflowError("openai").body)
        base = {"id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1, "model": "gpt-5.5"}
        chunks = [
            {
                **base,
                "choices": [
                    {"index": 0, "delta": {"role": "assistant", "content": "Compacted and done."}, "finish_reason": "stop"}
                ],
            },
            {**base, "choices": [], "usage": {"prompt_tokens": 300, "completion_tokens": 4, "total_tokens": 304}},
        ]
        return httpx2.Response(200, content=_sse(chunks), headers={"content-type": "text/event-stream"})

    client = wrap(_client(handler), session)
    messages: list[Any] = []
    for turn in range(3):
        messages.append({"role": "user", "content": f"Turn {turn}: look at billing."})
        messages.append(client.chat.completions.create(model="gpt-5.5", messages=messages).choices[0].message)
    messages.append({"role": "user", "content": "Now the export."})
    with client.chat.completions.stream(model="gpt-5.5", messages=messages) as stream:
        text = "".join(e.delta for e in stream if e.type == "content.delta")
    assert text == "Compacted and done."
    # Check: one overflow when the stream opened, relief, the same call streamed again and its answer recorded.
    types = [e.type for e in session.history.events]
    assert types.count("context.overflow") == 1 and len(bodies) == 2
    assert any(t in ("context.compacted", "context.pruned") for t in types)
    assert [e.payload.text for e in session.history.events if e.type == "message.assistant"][-1] == "Compacted and done."
    assert bodies[1]["stream_options"] == {"include_usage": True}


FUNCTION = {
    "type": "function",
    "function": {"name": "run_tests", "description": "Run the test suite", "parameters": {"type": "object", "properties": {}}},
}


def test_chat_completions_pin_the_callers_tools_and_refuse_a_later_change():
    session = open_session()
    provider = ScriptedProvider(answers(2), provider="openai")
    client = wrap(_client(provider.handler), session)
    messages: list[Any] = [{"role": "developer", "content": "You fix CI."}, {"role": "user", "content": TASK}]
    response = client.chat.completions.create(model="gpt-5.5", messages=messages, tools=[FUNCTION])
    body = provider.bodies[0]
    assert [t["function"]["name"] for t in body["tools"]][0] == "run_tests"
    assert "You fix CI." in json.dumps(body["messages"][:1])
    messages.append(response.choices[0].message)
    messages.append({"role": "tool", "tool_call_id": "call_00", "content": "ok"})
    other = {"type": "function", "function": {**FUNCTION["function"], "description": "Run only the fast tests"}}
    with pytest.raises(PrefixMismatch, match="'run_tests': the call describes it as 'Run only the fast tests'"):
        client.chat.completions.create(model="gpt-5.5", messages=messages, tools=[other])
    assert len(provider.bodies) == 1


def test_responses_refuse_a_hosted_tool_and_a_system_prompt_the_spec_does_not_hold():
    from contextwright.clock import FixedClock
    from contextwright.runtime.engine import Engine

    engine = Engine.open("memory://", clock=FixedClock("2026-03-01T22:30:00Z"), secret=TEST_SECRET)
    session = engine.session("s2", agent=sample_agent(), model=openai_model("gpt-5.5"))
    provider = ScriptedProvider(answers(1), provider="openai")
    client = wrap(_client(provider.handler), session)
    with pytest.raises(PrefixMismatch) as raised:
        client.responses.create(model="gpt-5.5", input=TASK, instructions="Answer in French.", tools=[{"type": "web_search"}])
    assert any("'web_search'" in d for d in raised.value.differences)
    assert any("'Answer in French.'" in d for d in raised.value.differences)
    assert provider.bodies == []
