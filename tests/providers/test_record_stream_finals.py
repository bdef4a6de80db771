"""``record()`` takes the final objects of the SDKs' streams (``get_final_completion``, ``get_final_response``).

The streams run over ``httpx2.MockTransport`` with the event sequences the APIs send;
what is recorded must equal what the same answer records unstreamed.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from contextwright.canonical import to_plain
from contextwright.models import openai as openai_model
from contextwright.testing.fakes import open_session, sample_agent

RECORDED = ("message.assistant", "model.response")


def client_streaming(body: str) -> openai.OpenAI:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())

    return openai.OpenAI(api_key="test", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


def recorded(final: Any) -> list[Any]:
    engine, _, _ = open_session()
    session = engine.session("oa", agent=sample_agent(), model=openai_model("gpt-5.1"))
    session.user("Find the TODOs.")
    session.next_request()
    session.record(final)
    return [e.payload for e in session.events if e.type in RECORDED]


def chat_chunks() -> str:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1_764_400_000, "model": "gpt-5.1"}
    deltas = [
        {"role": "assistant", "content": ""},
        {"content": "Looking"},
        {"content": " now."},
        {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "grep", "arguments": ""}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"q":'}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '"TODO"}'}}]},
    ]
    chunks = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    usage = {
        "prompt_tokens": 2006,
        "completion_tokens": 40,
        "total_tokens": 2046,
        "prompt_tokens_details": {"cached_tokens": 1920},
        "completion_tokens_details": {"reasoning_tokens": 24},
    }
    chunks.append({**base, "choices": [], "usage": usage})
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


def test_a_streamed_chat_completion_records_like_the_unstreamed_one() -> None:
    client = client_streaming(chat_chunks())
    with client.chat.completions.stream(
        model="gpt-5.1", messages=[{"role": "user", "content": "Find the TODOs."}], stream_options={"include_usage": True}
    ) as stream:
        final = stream.get_final_completion()
    plain = ChatCompletion.model_validate(
        {
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
                        "tool_calls": [
                            {"id": "call_1", "type": "function", "function": {"name": "grep", "arguments": '{"q":"TODO"}'}}
                        ],
                    },
                }
            ],
            "usage": json.loads(chat_chunks().split("data: ")[-2])["usage"],
        }
    )
    streamed = recorded(final)
    assert streamed == recorded(plain)
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


def final_response() -> dict[str, Any]:
    return {
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


def responses_events() -> str:
    created = {**final_response(), "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": created}]
    events.append({"type": "response.output_item.added", "output_index": 0, "item": {**REASONING, "encrypted_content": None}})
    events.append({"type": "response.output_item.done", "output_index": 0, "item": REASONING})
    events.append(
        {"type": "response.output_item.added", "output_index": 1, "item": {**CALL, "arguments": "", "status": "in_progress"}}
    )
    events.append(
        {"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "fc_1", "delta": CALL["arguments"]}
    )
    events.append({"type": "response.output_item.done", "output_index": 1, "item": CALL})
    events.append({"type": "response.completed", "response": final_response()})
    numbered = [{**event, "sequence_number": number} for number, event in enumerate(events)]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in numbered)


def test_a_streamed_response_records_its_reasoning_like_the_unstreamed_one() -> None:
    client = client_streaming(responses_events())
    with client.responses.stream(model="gpt-5.1", input="Find the TODOs.") as stream:
        final = stream.get_final_response()
    streamed = recorded(final)
    assert streamed == recorded(Response.model_validate(final_response()))
    assert [to_plain(r.block) for r in streamed[0].reasoning] == [REASONING]
    assert streamed[1].usage.reasoning_output_tokens == 40
