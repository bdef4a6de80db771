"""Manage mode: the model reads a bounded output back through the engine's tool, and the gateway answers it itself.

On each wire, streamed and not: the scripted provider sees the pointer in the engine's
request and calls ``context_read_artifact`` on it; the gateway answers from the log,
continues upstream, and the client gets one answer without the engine's tool, with the
usage of both calls. Every request sent upstream is what ``inspect`` rebuilds from the log.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx2
import pytest
from test_observe import CALL, FIRST, THINKING, claude_body, post
from typer.testing import CliRunner

from contextwright.cli import app as cli_app
from contextwright.gateway.answers import AnswerReader, SseParser
from contextwright.items.region_a import READ_TOOL_NAME
from contextwright.testing.upstream import Received, Reply, anthropic_message, responses_answer

POINTER = re.compile(r"sha256:[0-9a-f]{64}")
LISTING = "\n".join(f"line {i}: file_{i}.py" for i in range(6000))
WANTED = "line 4242: file_4242.py"
SESSION = "agents/read-back"
USAGE = {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}


# -- the three wires: a client's bodies and a provider's answers ------------------------


def _answer(wire: str, text: str, *calls: tuple[str, str, dict[str, Any]], number: int = 0) -> dict[str, Any]:
    """The provider's answer on ``wire``: some text, then these tool calls (id, name, arguments)."""
    if wire == "anthropic":
        blocks = [{"type": "text", "text": text}] + [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls]
        return anthropic_message(*blocks, stop_reason="tool_use" if calls else "end_turn", usage=dict(USAGE))
    if wire == "openai_responses":
        message = {"type": "message", "id": f"msg_{number}", "role": "assistant", "status": "completed"}
        items: list[dict[str, Any]] = [{**message, "content": [{"type": "output_text", "text": text, "annotations": []}]}]
        items += [
            {"type": "function_call", "id": f"fc_{i}", "call_id": i, "name": n, "arguments": json.dumps(a), "status": "completed"}
            for i, n, a in calls
        ]
        return responses_answer(*items, response_id=f"resp_{number}")
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, n, a in calls
        ]
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


PATHS = {"anthropic": "/v1/messages", "openai_responses": "/v1/responses", "openai_chat": "/v1/chat/completions"}
TOOL = {"type": "object", "properties": {"command": {"type": "string"}}}


def _body(wire: str, history: list[dict[str, Any]], *, stream: bool) -> dict[str, Any]:
    if wire == "anthropic":
        return claude_body(history, stream=stream)
    if wire == "openai_responses":
        tools = [{"type": "function", "name": "shell", "description": "Run a command.", "parameters": TOOL}]
        return {"model": "gpt-5", "instructions": "You are a coding agent.", "tools": tools, "input": history, "stream": stream}
    tools = [{"type": "function", "function": {"name": "shell", "description": "Run a command.", "parameters": TOOL}}]
    system = [{"role": "system", "content": "You are a coding agent."}]
    body = {"model": "gpt-4o", "messages": system + history, "tools": tools, "stream": stream}
    return {**body, "stream_options": {"include_usage": True}} if stream else body


def _user(wire: str, text: str) -> dict[str, Any]:
    if wire == "openai_responses":
        return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    return {"role": "user", "content": text}


def _echo(wire: str, answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer as the client puts it in its history."""
    if wire == "anthropic":
        return [{"role": "assistant", "content": answer["content"]}]
    if wire == "openai_responses":
        return list(answer["output"])
    return [answer["choices"][0]["message"]]


def _results(wire: str, call_id: str, output: str) -> list[dict[str, Any]]:
    if wire == "anthropic":
        return [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": output}]}]
    if wire == "openai_responses":
        return [{"type": "function_call_output", "call_id": call_id, "output": output}]
    return [{"role": "tool", "tool_call_id": call_id, "content": output}]


def _send(gateway: Any, wire: str, body: dict[str, Any]) -> httpx2.Response:
    if wire == "anthropic":
        return post(gateway.url, body, headers={"x-contextwright-session": SESSION})
    headers = {"authorization": "Bearer sk-x", "x-contextwright-session": SESSION}
    return httpx2.post(gateway.url + PATHS[wire], json=body, headers=headers, timeout=30)


def _client_answer(wire: str, response: httpx2.Response, *, stream: bool) -> dict[str, Any]:
    reader = AnswerReader(wire, streamed=stream)  # type: ignore[arg-type]
    reader.feed(response.content)
    answer = reader.answer()
    assert answer is not None, response.content[-500:]
    return answer


def _text(wire: str, answer: dict[str, Any]) -> str:
    if wire == "anthropic":
        return "".join(b.get("text", "") for b in answer["content"] if b["type"] == "text")
    if wire == "openai_responses":
        return "".join(p["text"] for i in answer["output"] if i["type"] == "message" for p in i["content"])
    return str(answer["choices"][0]["message"]["content"])


def _called(wire: str, answer: dict[str, Any]) -> list[str]:
    if wire == "anthropic":
        return [b["name"] for b in answer["content"] if b["type"] == "tool_use"]
    if wire == "openai_responses":
        return [i["name"] for i in answer["output"] if i["type"] == "function_call"]
    return [c["function"]["name"] for c in answer["choices"][0]["message"].get("tool_calls") or ()]


def _check_one_stream(wire: str, content: bytes) -> None:
    """The joined stream reads as one answer: one start and one end, blocks and items numbered on, sequence kept."""
    events = [json.loads(data) for _, data in SseParser().feed(content) if data != "[DONE]"]
    if wire == "anthropic":
        kinds = [e["type"] for e in events]
        assert kinds.count("message_start") == 1 and kinds.count("message_stop") == 1 and kinds[-1] == "message_stop"
        starts = [e["index"] for e in events if e["type"] == "content_block_start"]
        assert starts == list(range(len(starts)))
    elif wire == "openai_responses":
        assert [e["sequence_number"] for e in events] == list(range(len(events)))
        kinds = [e["type"] for e in events]
        assert kinds.count("response.created") == 1 and kinds[-1] == "response.completed"
        added = [e["output_index"] for e in events if e["type"] == "response.output_item.added"]
        assert added == list(range(len(added)))
    else:
        assert {e["id"] for e in events} == {events[0]["id"]}  # one completion id throughout
        assert sum(1 for e in events for c in e["choices"] if c.get("finish_reason")) == 1


def _inspected(gateway: Any, wire: str, index: int) -> dict[str, Any]:
    result = CliRunner().invoke(cli_app, ["inspect", str(gateway.store), "-s", SESSION, "-r", str(index), "--wire", wire])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)  # type: ignore[no-any-return]


OUTPUT_LIMITS = {"max_tokens", "max_output_tokens", "max_completion_tokens"}


class ReadingScript:
    """The provider: a tool call, then (seeing the pointer) a read-back, then an answer from what it read."""

    def __init__(self, wire: str, *, mixed: bool = False) -> None:
        self.wire = wire
        self.mixed = mixed
        self.count = 0
        self.read_result_seen = False

    def __call__(self, received: Received) -> Reply:
        self.count += 1
        wire = self.wire
        if self.count == 1:
            return Reply(
                body=_answer(
                    wire, "Listing.", ("call_ls", "shell" if wire != "anthropic" else "Bash", {"command": "ls"}), number=1
                )
            )
        if self.count == 2:
            pointer = POINTER.search(received.body.decode())
            assert pointer is not None, "the engine's request shows the output bounded, with its pointer"
            tools = json.loads(received.body)["tools"]
            names = [t.get("name") or t.get("function", {}).get("name") for t in tools]
            assert names[-1] == READ_TOOL_NAME  # pinned after the client's tools
            read = ("call_read", READ_TOOL_NAME, {"ref": pointer.group(0), "grep": "file_4242."})
            calls = (
                [read, ("call_wc", "shell" if wire != "anthropic" else "Bash", {"command": "wc -l"})] if self.mixed else [read]
            )
            return Reply(body=_answer(wire, "Let me look.", *calls, number=2))
        self.read_result_seen = WANTED in received.body.decode()
        return Reply(body=_answer(wire, "File 4242 is there.", number=self.count))


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("wire", ["anthropic", "openai_responses", "openai_chat"])
def test_a_read_back_is_answered_by_the_gateway_and_the_client_sees_one_answer(
    make_gateway: Any, wire: str, stream: bool
) -> None:
    gateway = make_gateway(mode="manage")
    script = ReadingScript(wire)
    gateway.script(script)
    history = [_user(wire, "What is here?")]
    first = _client_answer(wire, _send(gateway, wire, _body(wire, history, stream=stream)), stream=stream)
    history += _echo(wire, first) + _results(wire, "call_ls", LISTING)

    response = _send(gateway, wire, _body(wire, history, stream=stream))
    assert response.status_code == 200
    assert READ_TOOL_NAME.encode() not in response.content  # the client never sees the engine's tool
    answer = _client_answer(wire, response, stream=stream)
    assert "Let me look." in _text(wire, answer) and "File 4242 is there." in _text(wire, answer)
    assert _called(wire, answer) == []
    if stream:
        _check_one_stream(wire, response.content)
    usage = answer["usage"]
    assert usage.get("input_tokens", usage.get("prompt_tokens")) == 200  # both calls upstream, as the provider counted them
    assert script.count == 3 and script.read_result_seen

    gateway.settled(SESSION, 3)
    read = [e.payload for e in gateway.events(SESSION) if e.type == "tool.result" and e.payload.tool_name == READ_TOOL_NAME]
    assert len(read) == 1 and WANTED in read[0].output
    # Every request that went upstream is what the log says the engine built.
    sent = [r.json for r in gateway.upstream.conversations]
    for index, body in enumerate(sent):
        rebuilt = _inspected(gateway, wire, index)
        assert {k: v for k, v in rebuilt.items() if k not in OUTPUT_LIMITS}.items() <= body.items(), index

    # The client's next request holds the joined answer: the run goes on, nothing is recorded twice.
    history += _echo(wire, answer) + [_user(wire, "Thanks.")]
    assert _send(gateway, wire, _body(wire, history, stream=stream)).status_code == 200
    types = gateway.settled(SESSION, 4)
    assert gateway.log.sessions() == [SESSION]
    assert types.count("message.user") == 2 and types.count("context.request.built") == 4


def test_a_read_back_beside_the_clients_own_call_is_answered_in_the_log_and_sent_with_its_result(make_gateway: Any) -> None:
    gateway = make_gateway(mode="manage")
    gateway.script(ReadingScript("anthropic", mixed=True))
    history: list[dict[str, Any]] = list(FIRST)
    first = _client_answer("anthropic", _send(gateway, "anthropic", claude_body(history)), stream=True)
    history += _echo("anthropic", first) + _results("anthropic", "call_ls", LISTING)
    response = _send(gateway, "anthropic", claude_body(history))
    answer = _client_answer("anthropic", response, stream=True)
    # The client's call only: the gateway did not continue (the provider wants both results together).
    assert _called("anthropic", answer) == ["Bash"] and READ_TOOL_NAME.encode() not in response.content
    assert len(gateway.upstream.conversations) == 2
    gateway.settled(SESSION, 2)
    history += _echo("anthropic", answer) + _results("anthropic", "call_wc", "6000")
    assert _send(gateway, "anthropic", claude_body(history)).status_code == 200
    sent = gateway.upstream.conversations[-1].json["messages"][-1]["content"]
    results = {block["tool_use_id"]: block for block in sent if block["type"] == "tool_result"}
    assert set(results) == {"call_read", "call_wc"} and WANTED in json.dumps(results["call_read"])
    gateway.settled(SESSION, 3)
    assert gateway.log.sessions() == [SESSION]


def test_without_read_backs_the_answer_passes_byte_for_byte(make_gateway: Any) -> None:
    from contextwright.testing.sse import stream_bytes

    gateway = make_gateway(mode="manage")
    answer = anthropic_message(THINKING, CALL, stop_reason="tool_use")
    gateway.replies(Reply(body=answer))
    assert post(gateway.url, claude_body(FIRST)).content == stream_bytes(answer)


def test_a_client_without_tools_gets_no_read_tool(make_gateway: Any) -> None:
    gateway = make_gateway(mode="manage")
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hello."}], "stream": False}
    assert _send(gateway, "openai_chat", body).status_code == 200
    assert "tools" not in gateway.upstream.conversations[-1].json  # nothing to read back: no tool it never asked for
