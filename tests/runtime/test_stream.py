"""Streamed calls through the official SDKs: the SDK's own stream for the caller, the same log as a non-streamed call."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from contextwright.canonical import canonical_json
from contextwright.errors import ContextLengthExceeded
from contextwright.events import AssistantMessage
from contextwright.events.registry import encode_payload
from contextwright.models import openai as openai_model
from contextwright.providers.errors import ProviderOverloaded, ProviderUnavailable
from contextwright.runtime.errors import StreamIncomplete
from contextwright.testing.fakes import open_session, sample_agent
from contextwright.testing.sse import sse_events

anthropic = pytest.importorskip("anthropic", reason="the anthropic extra is not installed")
openai = pytest.importorskip("openai", reason="the openai extra is not installed")
httpx2 = pytest.importorskip("httpx2", reason="the SDK extras are not installed")

# -- the provider's side -------------------------------------------------------------------


def anthropic_message(text: str, calls: tuple[tuple[str, str, dict[str, Any]], ...] = (), *, thinking: bool = False, n: int = 0):
    content: list[dict[str, Any]] = []
    if thinking:
        content.append(
            {"type": "thinking", "thinking": "The TODOs are probably in billing.", "signature": "EqQBCgIYAhIM" + "s" * 40}
        )
    if text:
        content.append({"type": "text", "text": text})
    content += [{"type": "tool_use", "id": i, "name": name, "input": args} for i, name, args in calls]
    return {
        "id": f"msg_{n:03d}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 310 + n,
            "output_tokens": 42 + n,
            "cache_read_input_tokens": 1_200 * n,
            "cache_creation_input_tokens": 1_500,
            "cache_creation": {"ephemeral_5m_input_tokens": 1_500, "ephemeral_1h_input_tokens": 0},
        },
    }


def chat_completion(text: str, calls: tuple[tuple[str, str, dict[str, Any]], ...] = (), *, n: int = 0):
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}} for i, name, args in calls
        ]
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 1_767_225_600,
        "model": "gpt-4.1",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop", "logprobs": None}],
        "usage": {
            "prompt_tokens": 1_900 + n,
            "completion_tokens": 30,
            "total_tokens": 1_930 + n,
            "prompt_tokens_details": {"cached_tokens": 1_024 * n},
        },
    }


def responses_response(text: str, calls: tuple[tuple[str, str, dict[str, Any]], ...] = (), *, n: int = 0):
    output: list[dict[str, Any]] = []
    if text:
        output.append(
            {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    output += [
        {
            "type": "function_call",
            "id": f"fc_{i}",
            "call_id": i,
            "name": name,
            "arguments": json.dumps(args),
            "status": "completed",
        }
        for i, name, args in calls
    ]
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": 1_767_225_600,
        "model": "gpt-4.1",
        "status": "completed",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": output,
        "usage": {
            "input_tokens": 1_900 + n,
            "output_tokens": 30,
            "total_tokens": 1_930 + n,
            "input_tokens_details": {"cached_tokens": 1_024 * n},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


class Provider:
    """Answers from a list of payloads: JSON for a plain call, the same answer as SSE when the body streams."""

    def __init__(self, payloads, *, replies: dict[int, httpx2.Response] | None = None, cut: dict[int, int] | None = None):
        self.payloads = list(payloads)
        self.replies = replies or {}
        self.cut = cut or {}
        self.bodies: list[dict[str, Any]] = []

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        call = len(self.bodies)
        body = json.loads(request.content)
        self.bodies.append(body)
        if call in self.replies:
            return self.replies[call]
        payload = self.payloads.pop(0)
        if not body.get("stream"):
            return httpx2.Response(200, json=payload, headers={"request-id": f"req_{call}"})
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        frames = sse_events(payload, include_usage=include_usage)
        if call in self.cut:
            # The connection drops after this many events.
            return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=_broken(frames[: self.cut[call]]))
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=b"".join(frames))

    async def async_handler(self, request: httpx2.Request) -> httpx2.Response:
        response = self.handler(request)
        if response.headers.get("content-type") == "text/event-stream":
            data = response.read()

            async def chunks():
                for line in data.split(b"\n\n"):
                    if line:
                        yield line + b"\n\n"

            return httpx2.Response(200, headers=response.headers, content=chunks())
        return response


def _broken(frames: list[bytes]) -> Iterator[bytes]:
    yield from frames
    raise httpx2.RemoteProtocolError("peer closed connection without sending complete message body (incomplete chunked read)")


def clients(provider: Provider, *, max_retries: int = 0):
    http = httpx2.Client(transport=httpx2.MockTransport(provider.handler))
    return (
        anthropic.Anthropic(api_key="test", max_retries=max_retries, http_client=http),
        openai.OpenAI(api_key="test", max_retries=max_retries, http_client=http),
    )


def logged(session) -> list[tuple[str, str]]:
    return [(e.type, canonical_json(encode_payload(e.payload))) for e in session.history.events]


GREP = (("toolu_1", "grep", {"pattern": "TODO", "path": "src/billing"}),)


def _run(session, provider: Provider, ask, streamed: bool, sdk: str) -> list[str]:
    """Two rounds (a tool call, then an answer), sent or streamed; returns the streamed text."""
    anthropic_client, openai_client = clients(provider)
    method = {
        "anthropic": anthropic_client.messages,
        "chat": openai_client.chat.completions,
        "responses": openai_client.responses,
    }[sdk]
    seen: list[str] = []
    session.user(ask)
    for _ in range(2):
        if streamed:
            with session.stream(method.stream) as stream:
                if sdk == "anthropic":
                    seen.append("".join(stream.text_stream))
                else:
                    seen.append(
                        "".join(
                            getattr(e, "delta", "")
                            for e in stream
                            if e.type.endswith("content.delta") or e.type == "response.output_text.delta"
                        )
                    )
        else:
            session.send(method.create)
        for call in session.pending_tool_calls():
            session.tool_result(call.id, "src/billing/export.py:12: # TODO rounding\nsrc/billing/totals.py:40: # TODO")
    return seen


@pytest.mark.parametrize("thinking", [False, True])
def test_an_anthropic_stream_records_exactly_what_the_same_answer_sent_whole_records(thinking):
    answers = [
        anthropic_message("Let me look for the TODO markers first.", GREP, thinking=thinking, n=0),
        anthropic_message("Found two TODOs, both in billing: rounding in export.py and totals.py.", n=1),
    ]
    _, plain_session, _ = open_session()
    _, streamed_session, _ = open_session()
    plain, streamed = Provider(answers), Provider(answers)
    _run(plain_session, plain, "Find the TODOs in billing.", streamed=False, sdk="anthropic")
    texts = _run(streamed_session, streamed, "Find the TODOs in billing.", streamed=True, sdk="anthropic")
    assert texts == [
        "Let me look for the TODO markers first.",
        "Found two TODOs, both in billing: rounding in export.py and totals.py.",
    ]
    assert logged(streamed_session) == logged(plain_session)
    assert [{**b, "stream": True} for b in plain.bodies] == streamed.bodies
    usage = [e.payload.usage for e in streamed_session.history.events if e.type == "model.response"]
    assert [(u.cache_read_tokens, u.cache_write_5m_tokens, u.output_tokens) for u in usage] == [
        (0, 1_500, 42),
        (1_200, 1_500, 43),
    ]
    calls = [e.payload.tool_calls for e in streamed_session.history.events if e.type == "message.assistant"][0]
    assert calls[0].arguments == {"pattern": "TODO", "path": "src/billing"}  # rebuilt from input_json_delta pieces
    if thinking:
        # The signed block, rebuilt from thinking_delta and signature_delta, goes back with its tool call unchanged.
        assert streamed.bodies[1]["messages"][1]["content"][0] == answers[0]["content"][0]


def test_the_block_hands_back_the_sdks_own_stream_object():
    _, session, _ = open_session()
    provider = Provider([anthropic_message("Hello there.", n=0)])
    client, _ = clients(provider)
    session.user("hi")
    with session.stream(client.messages.stream) as stream:
        assert isinstance(stream, anthropic.lib.streaming.MessageStream)
        kinds = [event.type for event in stream]
    assert kinds[0] == "message_start" and "text" in kinds and kinds[-1] == "message_stop"
    assert [e.type for e in session.history.events][-2:] == ["message.assistant", "model.response"]


@pytest.mark.parametrize("sdk, answer", [("chat", chat_completion), ("responses", responses_response)])
def test_openai_streams_record_exactly_what_the_same_answer_sent_whole_records(sdk, answer):
    calls = (("call_1", "grep", {"pattern": "TODO"}),)
    answers = [answer("", calls, n=0), answer("Found two TODOs in billing.", n=1)]
    sessions = []
    providers = [Provider(answers), Provider(answers)]
    for provider, streamed in zip(providers, (False, True)):
        engine, _, _ = open_session()
        session = engine.session("oa", agent=sample_agent(), model=openai_model("gpt-4.1"))
        _run(session, provider, "Find the TODOs.", streamed=streamed, sdk=sdk)
        sessions.append(session)
    assert logged(sessions[1]) == logged(sessions[0])
    usage = [e.payload.usage for e in sessions[1].history.events if e.type == "model.response"]
    assert [u.cache_read_tokens for u in usage] == [0, 1_024]
    plain, streamed = providers[0].bodies, providers[1].bodies
    if sdk == "chat":
        assert all(b["stream_options"] == {"include_usage": True} and "messages" in b for b in streamed)
        assert [{**b, "stream": True, "stream_options": {"include_usage": True}} for b in plain] == streamed
    else:
        assert all("input" in b and "messages" not in b for b in plain + streamed)  # the Responses wire, inferred
        assert [{**b, "stream": True} for b in plain] == streamed


def test_the_async_twin_streams_through_the_async_sdk():
    _, session, _ = open_session()
    provider = Provider(
        [anthropic_message("Running the tests.", (("toolu_9", "run_tests", {}),), n=0), anthropic_message("All green.", n=1)]
    )
    client = anthropic.AsyncAnthropic(
        api_key="test", max_retries=0, http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(provider.async_handler))
    )

    async def loop() -> list[str]:
        aio = session.aio
        texts = []
        await aio.user("Run the tests.")
        for _ in range(2):
            async with aio.stream(client.messages.stream) as stream:
                assert isinstance(stream, anthropic.lib.streaming.AsyncMessageStream)
                texts.append("".join([text async for text in stream.text_stream]))
            for call in await aio.pending_tool_calls():
                await aio.tool_result(call.id, "12 passed")
        return texts

    assert asyncio.run(loop()) == ["Running the tests.", "All green."]
    assert [e.payload.text for e in session.history.events if e.type == "message.assistant"] == [
        "Running the tests.",
        "All green.",
    ]
    assert sum(e.type == "model.response" for e in session.history.events) == 2


def test_a_stream_cut_midway_records_no_answer_and_the_next_call_retries():
    _, session, _ = open_session()
    answer = anthropic_message("A long answer that will not arrive whole.", n=0)
    provider = Provider([answer, answer], cut={0: 6})
    client, _ = clients(provider)
    session.user("Explain the export.")
    with pytest.raises(ProviderUnavailable) as info:
        with session.stream(client.messages.stream) as stream:
            for _ in stream.text_stream:
                pass
    assert info.value.retryable and "stream broke midway" in str(info.value)
    assert any(isinstance(cause, httpx2.RemoteProtocolError) for cause in _causes(info.value))
    assert [e.type for e in session.history.events][-1] == "context.request.built"
    assert not any(e.type in ("message.assistant", "model.response") for e in session.history.events)
    with session.stream(client.messages.stream) as stream:
        assert "".join(stream.text_stream) == "A long answer that will not arrive whole."
    built = [e.payload for e in session.history.events if e.type == "context.request.built"]
    assert len(built) == 2 and built[0].request_sha256 == built[1].request_sha256
    assert [e.type for e in session.history.events][-2:] == ["message.assistant", "model.response"]
    assert session.inspect(0).sha256() == session.inspect(1).sha256()


def _causes(exc: BaseException) -> Iterator[BaseException]:
    cause = exc.__cause__
    while cause is not None:
        yield cause
        cause = cause.__cause__ or cause.__context__


def _bare_break() -> Exception:
    return httpx2.RemoteProtocolError("peer closed connection without sending complete message body")


def _sdk_wrapped_break() -> Exception:
    # How anthropic 2.17 and later report a stream cut while it is read: the transport error wrapped.
    request = httpx2.Request("POST", "https://api.anthropic.com/v1/messages")
    try:
        try:
            raise _bare_break()
        except httpx2.RemoteProtocolError as exc:
            raise anthropic.APIConnectionError(message=f"Connection failed: {exc}", request=request) from exc
    except anthropic.APIConnectionError as wrapped:
        return wrapped


@pytest.mark.parametrize("broken", [_bare_break, _sdk_wrapped_break], ids=["transport-error", "sdk-connection-error"])
def test_a_broken_stream_is_the_same_retryable_error_whichever_way_the_sdk_wraps_it(broken):
    _, session, _ = open_session()
    provider = Provider([anthropic_message("Never read.", n=0), anthropic_message("Read on the retry.", n=1)])
    client, _ = clients(provider)
    session.user("Explain the export.")
    with pytest.raises(ProviderUnavailable) as info:
        with session.stream(client.messages.stream) as stream:
            next(iter(stream.text_stream))
            raise broken()
    assert info.value.retryable and info.value.fields["code"] == "connection"
    assert "stream broke midway (RemoteProtocolError" in str(info.value)
    assert not any(e.type in ("message.assistant", "model.response") for e in session.history.events)
    with session.stream(client.messages.stream) as stream:
        assert "".join(stream.text_stream) == "Read on the retry."
    assert [e.type for e in session.history.events][-2:] == ["message.assistant", "model.response"]


def test_a_stream_that_ends_before_its_last_event_is_an_incomplete_stream_not_an_answer():
    _, session, _ = open_session()

    def clean_eof(request):
        # The body ends cleanly after five events: no message_delta, no message_stop.
        frames = sse_events(anthropic_message("Half an answer, then nothing.", n=0))[:5]
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=b"".join(frames))

    client = anthropic.Anthropic(
        api_key="test", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(clean_eof))
    )
    session.user("Explain the export.")
    with pytest.raises(StreamIncomplete):
        with session.stream(client.messages.stream):
            pass  # the block reads nothing: the session reads to the end for the final answer
    assert not any(e.type == "message.assistant" for e in session.history.events)


def test_an_overloaded_answer_is_retried_by_the_sdk_and_recorded_once():
    _, session, _ = open_session()
    overloaded = httpx2.Response(
        529,
        json={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        headers={"retry-after-ms": "1", "request-id": "req_529"},
    )
    provider = Provider([anthropic_message("Done after one retry.", n=0)], replies={0: overloaded})
    client, _ = clients(provider, max_retries=1)
    session.user("Go.")
    with session.stream(client.messages.stream) as stream:
        assert "".join(stream.text_stream) == "Done after one retry."
    assert len(provider.bodies) == 2 and provider.bodies[0] == provider.bodies[1]
    assert sum(e.type == "context.request.built" for e in session.history.events) == 1
    assert sum(e.type == "message.assistant" for e in session.history.events) == 1


def test_overloaded_without_retries_left_is_a_typed_error_and_records_nothing():
    _, session, _ = open_session()
    overloaded = httpx2.Response(529, json={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    provider = Provider([], replies={0: overloaded})
    client, _ = clients(provider)
    session.user("Go.")
    with pytest.raises(ProviderOverloaded):
        with session.stream(client.messages.stream):
            pass
    assert [e.type for e in session.history.events][-1] == "context.request.built"


def _busy_session():
    engine, session, clock = open_session()
    for turn in range(3):
        session.user(f"Turn {turn}: please look at billing.")
        session.next_request()
        session.adapter.record_assistant(AssistantMessage(text=f"Done {turn}."))
    session.user("Now fix the export.")
    return session


def test_an_overflow_when_the_stream_opens_compacts_once_and_retries():
    session = _busy_session()
    too_long = httpx2.Response(
        400,
        json={
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "prompt is too long: 208310 tokens > 200000 maximum"},
        },
    )
    provider = Provider([anthropic_message("Fixed the export.", n=0)], replies={0: too_long})
    client, _ = clients(provider)
    with session.stream(client.messages.stream) as stream:
        assert "".join(stream.text_stream) == "Fixed the export."
    overflow = [e.payload for e in session.history.events if e.type == "context.overflow"]
    assert [o.recovered for o in overflow] == [True]
    assert [e.payload.trigger for e in session.history.events if e.type == "context.compacted"] == ["overflow"]
    assert len(provider.bodies) == 2 and provider.bodies[0] != provider.bodies[1]
    assert [e.type for e in session.history.events][-2:] == ["message.assistant", "model.response"]


def test_a_second_overflow_on_open_is_not_retried_again():
    session = _busy_session()
    too_long = httpx2.Response(
        400,
        json={
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "prompt is too long: 208310 tokens > 200000 maximum"},
        },
    )
    provider = Provider([], replies={0: too_long, 1: too_long})
    client, _ = clients(provider)
    with pytest.raises(ContextLengthExceeded):
        with session.stream(client.messages.stream):
            pass
    assert [e.payload.recovered for e in session.history.events if e.type == "context.overflow"] == [True, False]
    assert not any(e.type == "message.assistant" for e in session.history.events[-3:])


@pytest.mark.parametrize("sdk, answer", [("chat", chat_completion), ("responses", responses_response)])
def test_the_async_twin_streams_chat_and_responses_and_logs_like_the_sync_one(sdk, answer):
    calls = (("call_1", "grep", {"pattern": "TODO"}),)
    answers = [answer("", calls, n=0), answer("Found two TODOs in billing.", n=1)]
    sync_engine, _, _ = open_session()
    sync_session = sync_engine.session("oa", agent=sample_agent(), model=openai_model("gpt-4.1"))
    _run(sync_session, Provider(answers), "Find the TODOs.", streamed=True, sdk=sdk)

    engine, _, _ = open_session()
    session = engine.session("oa", agent=sample_agent(), model=openai_model("gpt-4.1"))
    provider = Provider(answers)
    client = openai.AsyncOpenAI(
        api_key="test", max_retries=0, http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(provider.async_handler))
    )
    method = client.chat.completions if sdk == "chat" else client.responses

    async def loop() -> None:
        aio = session.aio
        await aio.user("Find the TODOs.")
        for _ in range(2):
            async with aio.stream(method.stream) as stream:
                async for _event in stream:
                    pass
            for call in await aio.pending_tool_calls():
                await aio.tool_result(call.id, "src/billing/export.py:12: # TODO rounding\nsrc/billing/totals.py:40: # TODO")

    asyncio.run(loop())
    assert logged(session) == logged(sync_session)


def test_an_error_event_midway_is_a_typed_provider_error_and_no_answer():
    _, session, _ = open_session()
    frames = sse_events(anthropic_message("This answer is interrupted by the provider.", n=0))[:5]
    frames.append(b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n')

    def handler(request):
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=b"".join(frames))

    client = anthropic.Anthropic(
        api_key="test", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(handler))
    )
    session.user("Go.")
    with pytest.raises(ProviderOverloaded) as info:
        with session.stream(client.messages.stream) as stream:
            for _ in stream.text_stream:
                pass
    assert isinstance(info.value.__cause__, anthropic.APIStatusError)
    assert [e.type for e in session.history.events][-1] == "context.request.built"


def test_an_error_of_the_callers_own_goes_through_unchanged():
    _, session, _ = open_session()
    provider = Provider([anthropic_message("Hello.", n=0)])
    client, _ = clients(provider)
    session.user("Go.")
    with pytest.raises(KeyError):
        with session.stream(client.messages.stream):
            raise KeyError("the caller's own bug")
    assert not any(e.type == "message.assistant" for e in session.history.events)


def test_a_chat_overflow_when_the_stream_opens_is_recovered_once():
    engine, _, _ = open_session()
    session = engine.session("oa", agent=sample_agent(), model=openai_model("gpt-4.1"))
    for turn in range(3):
        session.user(f"Turn {turn}: please look at billing.")
        session.next_request()
        session.adapter.record_assistant(AssistantMessage(text=f"Done {turn}."))
    session.user("Now fix the export.")
    too_long = httpx2.Response(
        400,
        json={
            "error": {
                "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    )
    provider = Provider([chat_completion("Fixed.", n=0)], replies={0: too_long})
    _, client = clients(provider)
    with session.stream(client.chat.completions.stream) as stream:
        stream.until_done()
    assert [e.payload.recovered for e in session.history.events if e.type == "context.overflow"] == [True]
    assert [e.type for e in session.history.events][-2:] == ["message.assistant", "model.response"]


def test_a_stream_cut_while_the_session_reads_it_to_the_end_is_the_same_typed_error():
    _, session, _ = open_session()
    provider = Provider([anthropic_message("Cut before the end.", n=0)], cut={0: 4})
    client, _ = clients(provider)
    session.user("Explain.")
    with pytest.raises(ProviderUnavailable):
        with session.stream(client.messages.stream):
            pass  # nothing read here: the session reads the rest for the final answer
    assert [e.type for e in session.history.events][-1] == "context.request.built"
