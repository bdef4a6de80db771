"""The LiteLLM wire, ``record()`` of LiteLLM answers and the proxy logger (issue 12, item 7).

``litellm.completion`` runs for real over its own HTTP client with a mock transport
(LiteLLM still uses the legacy ``httpx``), so the bodies checked are the ones LiteLLM
itself would put on the provider's wire.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map fetch from the network
litellm = pytest.importorskip("litellm", reason="needs LiteLLM (the litellm extra)")
httpx = pytest.importorskip("httpx", reason="needs LiteLLM (the litellm extra)")

from litellm.llms.custom_httpx.http_handler import HTTPHandler  # noqa: E402

from contextwright.canonical import to_plain  # noqa: E402
from contextwright.integrations.litellm import METADATA_KEY, ContextwrightLogger  # noqa: E402
from contextwright.models import openai as openai_model  # noqa: E402
from contextwright.testing.fakes import open_session, sample_agent  # noqa: E402

THINKING = {"type": "enabled", "budget_tokens": 2048}
USAGE_1H = {
    "input_tokens": 10,
    "output_tokens": 5,
    "cache_read_input_tokens": 4096,
    "cache_creation_input_tokens": 2048,
    "cache_creation": {"ephemeral_5m_input_tokens": 48, "ephemeral_1h_input_tokens": 2000},
}


class Provider:
    """Answers LiteLLM's HTTP calls from a script and keeps what it was sent."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = iter(answers)
        self.urls: list[str] = []
        self.bodies: list[dict[str, Any]] = []

    def handler(self, request: Any) -> Any:
        self.urls.append(str(request.url))
        self.bodies.append(json.loads(request.content))
        return httpx.Response(200, json=next(self.answers))

    def client(self) -> Any:
        return HTTPHandler(client=httpx.Client(transport=httpx.MockTransport(self.handler)))

    def openai_client(self) -> Any:
        # For OpenAI models LiteLLM calls the openai SDK, which takes its own client (httpx2).
        httpx2 = pytest.importorskip("httpx2", reason="needs the openai SDK (the openai extra)")
        openai = pytest.importorskip("openai", reason="needs the openai SDK (the openai extra)")

        def handler(request: Any) -> Any:
            self.urls.append(str(request.url))
            self.bodies.append(json.loads(request.content))
            return httpx2.Response(200, json=next(self.answers))

        return openai.OpenAI(api_key="test", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


def anthropic_answer(index: int, content: list[dict[str, Any]], stop: str = "tool_use") -> dict[str, Any]:
    return {
        "id": f"msg_{index}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": USAGE_1H,
    }


def native_equivalent(body: dict[str, Any]) -> dict[str, Any]:
    """The Anthropic body without what LiteLLM adds or cannot say (tool type, is_error flag)."""
    out = json.loads(json.dumps(body))
    for tool in out.get("tools", []):
        tool.pop("type", None)
    for message in out["messages"]:
        for block in message["content"]:
            if block.get("type") == "tool_result":
                block.pop("is_error", None)
                if isinstance(block.get("content"), list):
                    block["content"] = "".join(part["text"] for part in block["content"])
    return out


def markers(body: dict[str, Any]) -> list[str]:
    blocks = list(body.get("tools", [])) + list(body.get("system", []))
    blocks += [block for message in body["messages"] for block in message["content"]]
    return [block.get("type", "tool") for block in blocks if "cache_control" in block]


def test_an_anthropic_model_through_litellm_gets_the_native_body_and_records_1h_writes() -> None:
    thinking = {"type": "thinking", "thinking": "Read the config first.", "signature": "sig-L" * 30}
    first = [
        thinking,
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "c.toml"}},
    ]
    provider = Provider([anthropic_answer(1, first), anthropic_answer(2, [{"type": "text", "text": "Done."}], "end_turn")])
    _, session, _ = open_session()
    session.user("Check the config.")
    for round_ in range(2):
        built = session.next_request()
        body = built.render("litellm", prefix_ttl="1h")
        assert body["model"] == "anthropic/claude-sonnet-4-6"
        response = litellm.completion(**body, api_key="test", client=provider.client(), thinking=THINKING)
        # Check: what LiteLLM sent is what the native wire would send, markers and thinking included.
        sent = provider.bodies[-1]
        assert sent.pop("thinking") == THINKING
        assert provider.urls[-1] == "https://api.anthropic.com/v1/messages"
        assert native_equivalent(sent) == native_equivalent(built.anthropic(prefix_ttl="1h"))
        assert len(markers(sent)) <= 4 and sent["system"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
        session.record(response)
        if round_ == 0:
            session.tool_result("toolu_1", "[db]\nurl = 'sqlite://'")
    # Check: the second request echoed the signed thinking where it stood (cache markers aside).
    assistant = [
        [{k: v for k, v in block.items() if k != "cache_control"} for block in m["content"]]
        for m in provider.bodies[1]["messages"]
        if m["role"] == "assistant"
    ]
    assert assistant == [first]
    # Check: usage kept the TTL split (1h writes are priced higher) and the reads.
    usage = [e.payload.usage for e in session.history.events if e.type == "model.response"]
    assert [(u.cache_write_1h_tokens, u.cache_write_5m_tokens, u.cache_read_tokens, u.input_tokens) for u in usage] == [
        (2000, 48, 4096, 10)
    ] * 2
    answer = [e.payload for e in session.history.events if e.type == "message.assistant"][0]
    assert [to_plain(r.block) for r in answer.reasoning] == [thinking]
    assert [c.id for c in answer.tool_calls] == ["toolu_1"]


def chat_answer(content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_764_400_000,
        "model": "gpt-5.1-2025-11-13",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": 2006,
            "completion_tokens": 30,
            "total_tokens": 2036,
            "prompt_tokens_details": {"cached_tokens": 1920},
        },
    }


def test_an_openai_model_through_litellm_gets_the_chat_body() -> None:
    provider = Provider([chat_answer("Hello.")])
    engine, _, _ = open_session()
    session = engine.session("oa", agent=sample_agent(), model=openai_model("gpt-5.1"))
    session.user("Say hello.")
    built = session.next_request()
    body = built.render("litellm")
    assert body["model"] == "openai/gpt-5.1"
    response = litellm.completion(**body, api_key="test", client=provider.openai_client())
    assert provider.urls == ["https://api.openai.com/v1/chat/completions"]
    sent = provider.bodies[0]
    assert sent == {**body, "model": "gpt-5.1"}
    # Check: the same conversation as the chat wire, instructions as the system message.
    expected = built.openai_chat()
    assert sent["messages"][1:] == expected["messages"][1:] and sent["messages"][0]["role"] == "system"
    assert sent["prompt_cache_key"] == expected["prompt_cache_key"]
    session.record(response)
    usage = session.history.events[-1].payload.usage
    assert (usage.cache_read_tokens, usage.input_tokens, usage.cache_write_1h_tokens) == (1920, 86, 0)


def test_the_logger_records_every_successful_call() -> None:
    provider = Provider([anthropic_answer(1, [{"type": "text", "text": "Hi."}], "end_turn")])
    _, session, _ = open_session("lit-sync")
    logger = ContextwrightLogger(session)
    session.user("Hello.")
    # LiteLLM keeps every logger it sees for the rest of the process, so each call names its session.
    body = session.next_request().render("litellm")
    litellm.completion(**body, api_key="test", client=provider.client(), callbacks=[logger], metadata=metadata(session))
    deadline = time.monotonic() + 10
    while len(logger.recorded) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # LiteLLM runs success callbacks on a worker thread
    assert [e.type for e in logger.recorded] == ["message.assistant", "model.response"]
    assert logger.recorded[1].payload.usage.cache_write_1h_tokens == 2000


def metadata(session: Any) -> dict[str, str]:
    return {METADATA_KEY: session.id}


def test_a_streamed_call_is_recorded_once_with_its_thinking() -> None:
    from contextwright.testing.sse import stream_bytes

    thinking = {"type": "thinking", "thinking": "Grep first.", "signature": "sig-S" * 20}
    content = [
        thinking,
        {"type": "text", "text": "Searching."},
        {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {"q": "x"}},
    ]
    stream = stream_bytes(anthropic_answer(1, content))

    def handler(request: Any) -> Any:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=stream)

    _, session, _ = open_session("lit-stream")
    logger = ContextwrightLogger(session)
    session.user("Find x.")
    chunks = litellm.completion(
        **session.next_request().render("litellm"),
        api_key="test",
        stream=True,
        stream_options={"include_usage": True},
        client=HTTPHandler(client=httpx.Client(transport=httpx.MockTransport(handler))),
        callbacks=[logger],
        metadata=metadata(session),
    )
    for _ in chunks:
        pass
    deadline = time.monotonic() + 10
    while len(logger.recorded) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # LiteLLM logs a finished stream from a background task
    time.sleep(0.2)  # and would log a second time right after, if it did
    assert [e.type for e in logger.recorded] == ["message.assistant", "model.response"]
    answer = logger.recorded[0].payload
    assert [to_plain(r.block) for r in answer.reasoning] == [thinking]
    assert [c.arguments for c in answer.tool_calls] == [{"q": "x"}]
    assert logger.recorded[1].payload.usage.cache_write_1h_tokens == 2000


def test_the_proxy_logger_picks_the_session_from_the_call_metadata() -> None:
    engine, first, _ = open_session()
    second = engine.session("s2", agent=sample_agent(), model=first.model)
    sessions = {"s1": first, "s2": second}
    logger = ContextwrightLogger(
        resolve=lambda kwargs: sessions.get(kwargs.get("litellm_params", {}).get("metadata", {}).get("session"))
    )
    second.user("Hello.")
    second.next_request()
    response = litellm.ModelResponse(**{k: v for k, v in chat_answer("Hi.").items() if k != "usage"})
    logger.log_success_event({"litellm_params": {"metadata": {"session": "s2"}}}, response, None, None)
    logger.log_success_event({"litellm_params": {"metadata": {"session": "elsewhere"}}}, response, None, None)
    assert [e.type for e in second.history.events][-1] == "message.assistant"
    assert not any(e.type == "message.assistant" for e in first.history.events)


def test_a_session_logger_records_only_calls_that_name_its_session() -> None:
    _, session, _ = open_session("lit-own")
    logger = ContextwrightLogger(session)
    session.user("Hello.")
    session.next_request()
    response = litellm.ModelResponse(**{k: v for k, v in chat_answer("Hi.").items() if k != "usage"})
    logger.log_success_event({"litellm_params": {"metadata": {METADATA_KEY: "someone-else"}}}, response, None, None)
    assert logger.recorded == []
    # A call that names no session may be another's: LiteLLM hands every call to every logger it has seen.
    logger.log_success_event({"litellm_params": {}}, response, None, None)
    assert logger.recorded == []
    logger.log_success_event({"litellm_params": {"metadata": {METADATA_KEY: "lit-own"}}}, response, None, None)
    assert [e.type for e in logger.recorded] == ["message.assistant"]


def test_the_logger_needs_exactly_one_way_to_find_its_session() -> None:
    from contextwright.errors import UsageError

    with pytest.raises(UsageError):
        ContextwrightLogger()


def test_a_call_heard_twice_is_recorded_once() -> None:
    # LiteLLM may hand one call to a logger twice (global list and per-call callbacks), on two threads.
    provider = Provider([anthropic_answer(1, [{"type": "text", "text": "Hi."}], "end_turn")])
    _, session, _ = open_session("lit-twice")
    heard: list[tuple[dict[str, Any], Any]] = []

    class Listening(ContextwrightLogger):
        def log_success_event(self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any) -> None:
            heard.append((kwargs, response_obj))
            super().log_success_event(kwargs, response_obj, start_time, end_time)

    logger = Listening(session)
    session.user("Hello.")
    body = session.next_request().render("litellm")
    litellm.completion(**body, api_key="test", client=provider.client(), callbacks=[logger], metadata=metadata(session))
    deadline = time.monotonic() + 10
    while not heard and time.monotonic() < deadline:
        time.sleep(0.05)
    kwargs, response = heard[0]
    assert isinstance(kwargs.get("litellm_call_id"), str)
    again = [threading.Thread(target=logger.log_success_event, args=(kwargs, response, None, None)) for _ in range(4)]
    for thread in again:
        thread.start()
    for thread in again:
        thread.join()
    assert [e.type for e in logger.recorded] == ["message.assistant", "model.response"]
    assert [e.type for e in session.history.events].count("message.assistant") == 1


def _tool_loop_answers() -> list[dict[str, Any]]:
    return [
        anthropic_answer(1, [{"type": "tool_use", "id": "toolu_1", "name": "run_tests", "input": {}}]),
        anthropic_answer(2, [{"type": "tool_use", "id": "toolu_2", "name": "run_tests", "input": {}}]),
        anthropic_answer(3, [{"type": "text", "text": "Fixed."}], "end_turn"),
    ]


def test_the_documented_tool_loop_records_each_answer_before_the_call_returns() -> None:
    provider = Provider(_tool_loop_answers())
    _, session, _ = open_session("lit-loop")
    session.user("CI fails on main. Fix it.")
    while True:  # the module's pattern: session.send around litellm.completion
        response = session.send(litellm.completion, wire="litellm", api_key="test", client=provider.client())
        calls = response.choices[0].message.tool_calls or []
        if not calls:
            break
        for call in calls:
            session.tool_result(call.id, "1 failed, 41 passed")
    types = [e.type for e in session.history.events]
    assert (types.count("context.request.built"), types.count("model.response"), types.count("tool.result")) == (3, 3, 2)


def test_the_documented_async_loop_records_in_time() -> None:
    import asyncio

    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

    provider = Provider(_tool_loop_answers())

    async def ahandler(request: Any) -> Any:
        return provider.handler(request)

    client = AsyncHTTPHandler()
    client.client = httpx.AsyncClient(transport=httpx.MockTransport(ahandler))
    _, session, _ = open_session("lit-async")
    session.user("CI fails on main. Fix it.")

    async def loop() -> None:
        while True:
            response = await session.aio.send(litellm.acompletion, wire="litellm", api_key="test", client=client)
            calls = response.choices[0].message.tool_calls or []
            if not calls:
                return
            for call in calls:
                await asyncio.to_thread(session.tool_result, call.id, "ok")

    asyncio.run(loop())
    types = [e.type for e in session.history.events]
    assert (types.count("model.response"), types.count("tool.result")) == (3, 2)


def test_the_documented_streamed_call_is_recorded_when_the_caller_has_read_it() -> None:
    from contextwright.testing.sse import stream_bytes

    content = [{"type": "text", "text": "Searching."}, {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {"q": "x"}}]
    stream = stream_bytes(anthropic_answer(1, content))

    def handler(request: Any) -> Any:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=stream)

    _, session, _ = open_session("lit-stream-doc")
    session.user("Find x.")
    chunks = list(
        litellm.completion(
            **session.next_request().render("litellm"),
            api_key="test",
            stream=True,
            stream_options={"include_usage": True},
            client=HTTPHandler(client=httpx.Client(transport=httpx.MockTransport(handler))),
        )
    )
    session.record(litellm.stream_chunk_builder(chunks))
    # Recorded before anything else runs: the tool result of the next step finds its call.
    session.tool_result("toolu_1", "x found")
    [response] = [e.payload for e in session.history.events if e.type == "model.response"]
    assert response.usage.cache_write_1h_tokens == 2000


def test_the_module_docstring_pattern_runs_a_whole_tool_loop(monkeypatch) -> None:
    import functools
    import re
    import textwrap

    import contextwright.integrations.litellm as module

    provider = Provider(_tool_loop_answers())
    monkeypatch.setattr(litellm, "completion", functools.partial(litellm.completion, api_key="test", client=provider.client()))
    _, session, _ = open_session("lit-doc")
    session.user("CI fails on main. Fix it.")
    code = textwrap.dedent(re.search(r"::\n\n(.*?)\n\n(?! )", module.__doc__ or "", re.S).group(1))
    exec(compile(code, "contextwright/integrations/litellm.py", "exec"), {"session": session, "run": lambda call: "ok"})
    types = [e.type for e in session.history.events]
    # Each answer is recorded as the call returns, so every tool result finds its call.
    assert (types.count("model.response"), types.count("tool.result")) == (3, 2)


def test_the_proxy_hooks_record_in_time_and_compact_after_an_overflow() -> None:
    """The hook's methods as LiteLLM's proxy calls them, in process: pre-call, success, failure."""
    import asyncio

    from contextwright.integrations.litellm import ContextwrightProxyHook
    from contextwright.models import anthropic as anthropic_model
    from contextwright.runtime.engine import Engine
    from contextwright.runtime.spec import AgentSpec
    from contextwright.testing.fakes import TEST_SECRET

    engine = Engine.open("memory://", secret=TEST_SECRET)
    hook = ContextwrightProxyHook(
        engine, AgentSpec(policy="Never push to main."), {"claude": anthropic_model("claude-sonnet-4-6")}
    )
    headers = {"proxy_server_request": {"headers": {"X-Contextwright-Session": "proxied"}}}
    messages: list[Any] = [{"role": "system", "content": "You fix CI."}, {"role": "user", "content": "CI fails on main."}]
    for turn in range(5):
        data = {"model": "claude", "messages": list(messages), "max_tokens": 1024, "temperature": 0.1, **headers}
        sent = asyncio.run(hook.async_pre_call_hook(None, None, data, "acompletion"))
        # The engine's request replaces the client's messages; the client's other options stay.
        assert sent["temperature"] == 0.1 and sent["metadata"][METADATA_KEY] == "proxied"
        assert "Never push to main." in json.dumps(sent["messages"]) and "You fix CI." in json.dumps(sent["messages"])
        call = {"id": f"call_{turn}", "type": "function", "function": {"name": "run_tests", "arguments": "{}"}}
        answer = litellm.ModelResponse(
            model="claude-sonnet-4-6",
            choices=[
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                }
            ],
            usage={"prompt_tokens": 1000, "completion_tokens": 10, "total_tokens": 1010},
        )
        returned = asyncio.run(hook.async_post_call_success_hook(sent, None, answer))
        assert returned is answer
        session = hook._sessions["proxied"]
        assert [e.type for e in session.history.events].count("model.response") == turn + 1  # recorded before the client has it
        messages.append(answer.choices[0].message.model_dump(exclude_none=True))
        messages.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": "1 failed, 41 passed\n" * 400})
    overflow = litellm.ContextWindowExceededError(message="prompt is too long", model="claude", llm_provider="anthropic")
    asyncio.run(hook.async_post_call_failure_hook(sent, overflow, None))
    assert [e.type for e in session.history.events].count("context.compacted") == 1
    # Another error compacts nothing.
    asyncio.run(hook.async_post_call_failure_hook(sent, RuntimeError("upstream down"), None))
    assert [e.type for e in session.history.events].count("context.compacted") == 1
