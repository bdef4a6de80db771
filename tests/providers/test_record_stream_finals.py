"""``record()`` takes the final objects of the SDKs' streams (``get_final_completion``, ``get_final_response``).

The streams run over ``httpx2.MockTransport`` with the event sequences the APIs send
(``contextwright.testing.sse``); what is recorded must equal what the same answer
records unstreamed, reasoning included.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("httpx2", reason="needs the openai SDK (the openai extra)")
pytest.importorskip("openai", reason="needs the openai SDK (the openai extra)")

import httpx2
import openai
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from contextwright.canonical import to_plain
from contextwright.models import openai as openai_model
from contextwright.testing.fakes import open_session, sample_agent
from contextwright.testing.sse import stream_bytes

RECORDED = ("message.assistant", "model.response")


def client_streaming(payload: dict[str, Any]) -> openai.OpenAI:
    body = stream_bytes(payload)

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    return openai.OpenAI(api_key="test", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


def recorded(final: Any) -> list[Any]:
    engine, _, _ = open_session()
    session = engine.session("oa", agent=sample_agent(), model=openai_model("gpt-5.1"))
    session.user("Find the TODOs.")
    session.next_request()
    session.record(final)
    return [e.payload for e in session.history.events if e.type in RECORDED]


COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1_764_400_000,
    "model": "gpt-5.1",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": "Looking now.",
                "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "grep", "arguments": '{"q":"TODO"}'}}],
            },
        }
    ],
    "usage": {
        "prompt_tokens": 2006,
        "completion_tokens": 40,
        "total_tokens": 2046,
        "prompt_tokens_details": {"cached_tokens": 1920},
        "completion_tokens_details": {"reasoning_tokens": 24},
    },
}


def test_a_streamed_chat_completion_records_like_the_unstreamed_one() -> None:
    client = client_streaming(COMPLETION)
    with client.chat.completions.stream(
        model="gpt-5.1", messages=[{"role": "user", "content": "Find the TODOs."}], stream_options={"include_usage": True}
    ) as stream:
        final = stream.get_final_completion()
    streamed = recorded(final)
    assert streamed == recorded(ChatCompletion.model_validate(COMPLETION))
    assert streamed[0].tool_calls[0].arguments == {"q": "TODO"}
    assert streamed[1].usage.reasoning_output_tokens == 24


REASONING = {
    "id": "rs_1",
    "type": "reasoning",
    "summary": [{"type": "summary_text", "text": "Search first."}],
    "encrypted_content": "gAAAAAB-stream-" * 12,
}
CALL = {
    "id": "fc_1",
    "type": "function_call",
    "call_id": "call_1",
    "name": "grep",
    "arguments": '{"q":"TODO"}',
    "status": "completed",
}
RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1_764_400_000,
    "model": "gpt-5.1",
    "status": "completed",
    "output": [REASONING, CALL],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "usage": {
        "input_tokens": 900,
        "input_tokens_details": {"cached_tokens": 512, "cache_write_tokens": 0},
        "output_tokens": 60,
        "output_tokens_details": {"reasoning_tokens": 40},
        "total_tokens": 960,
    },
}


def test_a_streamed_response_records_its_reasoning_like_the_unstreamed_one() -> None:
    client = client_streaming(RESPONSE)
    with client.responses.stream(model="gpt-5.1", input="Find the TODOs.") as stream:
        final = stream.get_final_response()
    streamed = recorded(final)
    assert streamed == recorded(Response.model_validate(RESPONSE))
    assert [to_plain(r.block) for r in streamed[0].reasoning] == [REASONING]
    assert streamed[1].usage.reasoning_output_tokens == 40
