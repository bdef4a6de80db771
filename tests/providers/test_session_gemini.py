"""A session on a Gemini model, end to end through the real google-genai SDK over a mock HTTP transport.

The session builds, ``send`` passes the body to ``client.models.generate_content`` (or
``session.stream`` to ``client.models.generate_content_stream``), the mock transport
answers with the REST JSON (or the server-sent events) of ``generateContent``, and the
log must hold the answer and its usage exactly as a whole answer would give them.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest

pytest.importorskip("google.genai", reason="needs the google-genai SDK (the gemini extra)")
pytest.importorskip("httpx2", reason="needs httpx2 (a dependency of the google-genai SDK)")

import httpx2
from google import genai
from google.genai import types

from contextwright.clock import FixedClock
from contextwright.errors import ContextLengthExceeded, UsageError
from contextwright.events.catalog import Usage
from contextwright.models import gemini, resolve
from contextwright.providers.capabilities import capabilities_for
from contextwright.providers.wires import gemini as gemini_wire
from contextwright.runtime.engine import Engine
from contextwright.runtime.errors import StreamIncomplete
from contextwright.runtime.session import Session
from contextwright.testing.fakes import TEST_SECRET, sample_agent

MODEL = "gemini-2.5-flash"

CALL_ANSWER: dict[str, Any] = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"text": "Reading the handler first.", "thought": True},
                    {"text": "I will read the session handler."},
                    {"functionCall": {"name": "read_file", "args": {"path": "src/app/session.py"}}, "thoughtSignature": "c2ln"},
                ],
            },
            "finishReason": "STOP",
            "index": 0,
        }
    ],
    "usageMetadata": {
        "promptTokenCount": 3000,
        "cachedContentTokenCount": 2048,
        "candidatesTokenCount": 30,
        "thoughtsTokenCount": 50,
        "totalTokenCount": 3080,
    },
    "modelVersion": MODEL,
    "responseId": "resp-call",
}

TEXT_ANSWER: dict[str, Any] = {
    "candidates": [
        {
            "content": {"role": "model", "parts": [{"text": "The handler drops the key on logout; "}, {"text": "fixed."}]},
            "finishReason": "STOP",
            "index": 0,
        }
    ],
    "usageMetadata": {
        "promptTokenCount": 3200,
        "cachedContentTokenCount": 2900,
        "candidatesTokenCount": 12,
        "thoughtsTokenCount": 8,
        "totalTokenCount": 3220,
    },
    "modelVersion": MODEL,
    "responseId": "resp-text",
}

TOO_LONG: dict[str, Any] = {
    "error": {
        "code": 400,
        "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        "status": "INVALID_ARGUMENT",
    }
}


def _chunks(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """``answer`` cut the way the API streams it: one part per chunk, usage growing, the finish reason on the last."""
    parts = answer["candidates"][0]["content"]["parts"]
    out = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}, "index": 0}
        if last:
            candidate["finishReason"] = answer["candidates"][0]["finishReason"]
        usage = dict(answer["usageMetadata"]) if last else {"promptTokenCount": answer["usageMetadata"]["promptTokenCount"]}
        out.append({"candidates": [candidate], "usageMetadata": usage, "modelVersion": MODEL, "responseId": answer["responseId"]})
    return out


def _sse(chunks: list[dict[str, Any]]) -> bytes:
    return "".join(f"data: {json.dumps(chunk)}\r\n\r\n" for chunk in chunks).encode()


class Transport:
    """Answers each request with the next canned reply (status, JSON or server-sent events) and keeps the requests."""

    def __init__(self, *replies: tuple[int, Any]) -> None:
        self.replies = list(replies)
        self.requests: list[httpx2.Request] = []

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        status, body = self.replies.pop(0)
        if isinstance(body, bytes):
            return httpx2.Response(status, content=body, headers={"content-type": "text/event-stream"})
        return httpx2.Response(status, json=body)

    def client(self) -> genai.Client:
        http = httpx2.Client(transport=httpx2.MockTransport(self.handler))
        return genai.Client(api_key="test", http_options=types.HttpOptions(httpx_client=http))


def open_gemini_session(session_id: str = "g1") -> Session:
    engine = Engine.open("memory://", clock=FixedClock("2026-03-01T22:30:00Z"), secret=TEST_SECRET)
    return engine.session(session_id, agent=sample_agent(), model=gemini(MODEL))


def _answers(session: Session) -> list[tuple[str, Any]]:
    """What the log holds of each answer: the assistant message's text and calls, and the usage of its model.response."""
    session._core.sync()
    return [
        (event.type, event.payload)
        for event in session._core.events
        if event.type in ("message.assistant", "model.response", "context.overflow")
    ]


CALL_USAGE = Usage(input_tokens=952, cache_read_tokens=2048, output_tokens=80, reasoning_output_tokens=50)
TEXT_USAGE = Usage(input_tokens=300, cache_read_tokens=2900, output_tokens=20, reasoning_output_tokens=8)


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------


def test_gemini_models_resolve_with_their_documented_limits() -> None:
    for model_id in ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite"):
        model = gemini(model_id)
        assert (model.provider, model.context_window, model.max_output_tokens) == ("google", 1_048_576, 65_536)
        assert model.cache.max_breakpoints == 0
        assert model.cache.min_cacheable_tokens == gemini_wire.min_cacheable_tokens(model_id)
    assert resolve("gemini", "models/gemini-2.5-flash-lite") == gemini("models/gemini-2.5-flash-lite")
    assert resolve("google", "gemini-2.5-pro").id == "gemini-2.5-pro"
    assert capabilities_for(gemini(MODEL)) == gemini_wire.capabilities(MODEL)


def test_an_unknown_provider_or_gemini_option_is_refused_by_name() -> None:
    with pytest.raises(UsageError, match="'google'"):
        resolve("vertex", MODEL)
    with pytest.raises(UsageError, match="unknown model option"):
        gemini(MODEL, window=10)


# ---------------------------------------------------------------------------
# send
# ---------------------------------------------------------------------------


def test_a_tool_round_runs_on_gemini_and_the_log_holds_both_answers_with_usage() -> None:
    session = open_gemini_session()
    transport = Transport((200, CALL_ANSWER), (200, TEXT_ANSWER))
    client = transport.client()
    session.user("The login test fails on CI. Please fix it.")

    first = session.send(client.models.generate_content)
    assert first.function_calls[0].name == "read_file"
    [call] = session.pending_tool_calls()
    assert call.name == "read_file" and call.arguments == {"path": "src/app/session.py"}
    session.tool_result(call.id, "def logout(session):\n    session.clear()\n")
    second = session.send(client.models.generate_content)
    assert second.text == "The handler drops the key on logout; fixed."

    assert all(request.url.path.endswith(f"/models/{MODEL}:generateContent") for request in transport.requests)
    sent = json.loads(transport.requests[1].content)
    assert [turn["role"] for turn in sent["contents"]] == ["user", "model", "user"]
    assert sent["contents"][1]["parts"][-1]["functionCall"]["id"] == call.id
    assert sent["contents"][2]["parts"][0]["functionResponse"] == {
        "id": call.id,
        "name": "read_file",
        "response": {"output": sent["contents"][2]["parts"][0]["functionResponse"]["response"]["output"]},
    }
    assert "session.clear()" in sent["contents"][2]["parts"][0]["functionResponse"]["response"]["output"]
    assert [fn["name"] for fn in sent["tools"][0]["functionDeclarations"]][:2] == ["run_tests", "read_file"]

    logged = _answers(session)
    assert [kind for kind, _ in logged] == ["message.assistant", "model.response"] * 2
    assert logged[0][1].text == "I will read the session handler."
    assert logged[0][1].tool_calls[0].id == call.id
    assert logged[1][1].usage == CALL_USAGE and logged[1][1].provider == "google"
    assert logged[2][1].text == "The handler drops the key on logout; fixed."
    assert logged[3][1].usage == TEXT_USAGE
    assert [payload.request_index for kind, payload in logged if kind == "model.response"] == [0, 1]


def test_inspect_rebuilds_the_bytes_the_sdk_sent() -> None:
    session = open_gemini_session()
    transport = Transport((200, CALL_ANSWER), (200, TEXT_ANSWER))
    client = transport.client()
    session.user("The login test fails on CI. Please fix it.")
    session.send(client.models.generate_content)
    session.tool_result(session.pending_tool_calls()[0].id, "def logout(session): ...")
    session.send(client.models.generate_content)

    echo = Transport((200, TEXT_ANSWER), (200, TEXT_ANSWER))
    caps = capabilities_for(session.model)
    for index, original in enumerate(transport.requests):
        echo.client().models.generate_content(**gemini_wire.render(session.inspect(index), caps))
        assert echo.requests[index].content == original.content


def test_send_refuses_the_stream_method_and_stream_refuses_the_create_method() -> None:
    session = open_gemini_session()
    client = Transport().client()
    session.user("Hello.")
    with pytest.raises(UsageError, match="generate_content_stream method goes to"):
        session.send(client.models.generate_content_stream)
    with pytest.raises(UsageError, match=r"pass its \.generate_content_stream method"):
        session.stream(client.models.generate_content)


# ---------------------------------------------------------------------------
# stream
# ---------------------------------------------------------------------------


def _run(streamed: bool) -> list[tuple[str, Any]]:
    session = open_gemini_session()
    if streamed:
        transport = Transport((200, _sse(_chunks(CALL_ANSWER))), (200, _sse(_chunks(TEXT_ANSWER))))
    else:
        transport = Transport((200, CALL_ANSWER), (200, TEXT_ANSWER))
    client = transport.client()
    session.user("The login test fails on CI. Please fix it.")
    for answer in (CALL_ANSWER, TEXT_ANSWER):
        if streamed:
            with session.stream(client.models.generate_content_stream) as stream:
                seen = [chunk.response_id for chunk in stream]  # the SDK's own chunks, as the API sent them
            assert seen == [answer["responseId"]] * len(_chunks(answer))
        else:
            session.send(client.models.generate_content)
        pending = session.pending_tool_calls()
        if pending:
            session.tool_result(pending[0].id, "def logout(session): ...")
    if streamed:
        assert all(request.url.path.endswith(":streamGenerateContent") for request in transport.requests)
    return _answers(session)


def test_a_streamed_answer_records_the_same_as_a_whole_one() -> None:
    streamed, whole = _run(streamed=True), _run(streamed=False)
    assert streamed == whole
    assert streamed[1][1].usage == CALL_USAGE and streamed[3][1].usage == TEXT_USAGE


def test_a_stream_left_unread_is_read_to_its_end_for_the_log() -> None:
    session = open_gemini_session()
    client = Transport((200, _sse(_chunks(CALL_ANSWER)))).client()
    session.user("Please fix it.")
    with session.stream(client.models.generate_content_stream) as stream:
        next(iter(stream))
    [call] = session.pending_tool_calls()
    assert call.name == "read_file"
    assert _answers(session)[1][1].usage == CALL_USAGE


def test_a_stream_cut_before_its_finish_reason_records_nothing() -> None:
    session = open_gemini_session()
    client = Transport((200, _sse(_chunks(CALL_ANSWER)[:2]))).client()
    session.user("Please fix it.")
    with pytest.raises(StreamIncomplete, match="finish reason"):
        with session.stream(client.models.generate_content_stream) as stream:
            list(stream)
    assert _answers(session) == []


def test_merged_chunks_read_like_the_whole_answer() -> None:
    message, usage = gemini_wire.parse_answer(gemini_wire.merge_chunks(_chunks(TEXT_ANSWER)))
    assert (message, usage) == gemini_wire.parse_answer(TEXT_ANSWER)


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True])
def test_a_context_length_error_is_the_typed_error(streamed: bool) -> None:
    session = open_gemini_session()
    client = Transport((400, TOO_LONG), (400, TOO_LONG)).client()
    session.user("Please fix it.")
    with pytest.raises(ContextLengthExceeded) as raised:
        if streamed:
            with session.stream(client.models.generate_content_stream):
                pass
        else:
            session.send(client.models.generate_content)
    cause = raised.value.__cause__
    translated = gemini_wire.translate_error(cause) if cause is not None else None
    assert isinstance(translated, ContextLengthExceeded)
    assert (translated.prompt_tokens, translated.limit_tokens) == (1_200_000, 1_048_576)
    [(kind, overflow)] = _answers(session)
    assert kind == "context.overflow" and "1048576" in overflow.message


# ---------------------------------------------------------------------------
# async
# ---------------------------------------------------------------------------


def _async_client(transport: Transport) -> genai.Client:
    async def handler(request: httpx2.Request) -> httpx2.Response:
        return transport.handler(request)

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    return genai.Client(api_key="test", http_options=types.HttpOptions(httpx_async_client=http))


def test_the_async_session_sends_and_streams_on_gemini_like_the_sync_one() -> None:
    session = open_gemini_session()
    transport = Transport((200, _sse(_chunks(CALL_ANSWER))), (200, TEXT_ANSWER))
    models = _async_client(transport).aio.models
    session.user("The login test fails on CI. Please fix it.")

    async def run() -> list[str]:
        async with session.aio.stream(models.generate_content_stream) as stream:
            seen = [chunk.response_id async for chunk in stream]
        session.tool_result(session.pending_tool_calls()[0].id, "def logout(session): ...")
        await session.aio.send(models.generate_content)
        return seen

    assert asyncio.run(run()) == ["resp-call"] * 3
    assert transport.requests[0].url.path.endswith(":streamGenerateContent")
    assert _answers(session) == _run(streamed=False)


def test_a_gemini_history_counts_as_cold_after_the_hour_an_explicit_cache_lives() -> None:
    assert capabilities_for(gemini(MODEL)).history_cache_lifetime == timedelta(hours=1)
