"""Observe mode end to end: real HTTP on loopback, a scripted provider, a SQLite store."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import httpx2
import pytest
from typer.testing import CliRunner

from contextwright.cli import app as cli_app
from contextwright.gateway import GatewayConfig
from contextwright.gateway.identity import claude_code_session
from contextwright.pricing.cache_sim import AnthropicCacheSimulator, SimRequest
from contextwright.runtime.engine import Engine
from contextwright.runtime.reopen import reopen
from contextwright.telemetry.records import store_summary
from contextwright.testing.sse import sse_events, stream_bytes
from contextwright.testing.upstream import (
    Reply,
    anthropic_error,
    anthropic_message,
    chat_answer,
    responses_answer,
)

KEY = "sk-ant-api03-never-store-me-7d1c0ffee"
SESSION = "5b0e7d2a-4c1f-4e8e-9d55-0c2f7a1b9e31"
CC_SESSION = f"claude-code/{SESSION}"

TOOLS = [
    {
        "name": "Bash",
        "description": "Run a shell command.",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
    {
        "name": "Read",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
]
THINKING = {"type": "thinking", "thinking": "List the files first.", "signature": "EqQBCkgIBxABGAIiQL2sig=="}
CALL = {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "ls"}}


def claude_body(messages: list[dict[str, Any]], *, stream: bool = True) -> dict[str, Any]:
    """A request shaped like Claude Code's: system blocks, tools, thinking, metadata.user_id as a JSON string."""
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 32000,
        "stream": stream,
        "system": [{"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}}],
        "tools": TOOLS,
        "thinking": {"type": "adaptive"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "metadata": {"user_id": json.dumps({"device_id": "d" * 64, "account_uuid": "", "session_id": SESSION})},
        "messages": messages,
    }


def post(url: str, body: Any, *, path: str = "/v1/messages?beta=true", headers: dict[str, str] | None = None) -> httpx2.Response:
    base = {
        "x-api-key": KEY,
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "context-management-2025-06-27",
        "content-type": "application/json",
    }
    return httpx2.post(url + path, content=json.dumps(body).encode(), headers={**base, **(headers or {})}, timeout=30)


FIRST = [{"role": "user", "content": "What is here?"}]
ANSWER_1 = anthropic_message(THINKING, CALL, stop_reason="tool_use")
SECOND = FIRST + [
    {"role": "assistant", "content": [THINKING, CALL]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "README.md\nsrc\n" * 2000}]},
]
ANSWER_2 = anthropic_message({"type": "text", "text": "A README and a src folder."})


def test_streamed_request_and_answer_pass_unchanged_and_are_recorded(gateway: Any) -> None:
    gateway.replies(Reply(body=ANSWER_1), Reply(body=ANSWER_2))
    body = claude_body(FIRST)
    response = post(gateway.url, body)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    # The client gets the provider's stream byte for byte, and the provider gets the client's request.
    assert response.content == stream_bytes(ANSWER_1)
    sent = gateway.upstream.received[-1]
    assert sent.path == "/v1/messages" and sent.query == "beta=true"
    assert sent.body == json.dumps(body).encode()
    assert sent.headers["content-length"] == str(len(sent.body)) and "transfer-encoding" not in sent.headers
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["anthropic-beta"] == "context-management-2025-06-27"

    assert gateway.settled(CC_SESSION, 1) == [
        "message.user",
        "framework.history.seen",
        "gateway.request.received",
        "context.plan.created",
        "context.frame.recorded",
        "context.request.built",
        "message.assistant",
        "model.response",
        "framework.history.seen",
    ]
    answer = [e for e in gateway.events(CC_SESSION) if e.type == "message.assistant"][0].payload
    assert answer.tool_calls[0].id == "toolu_01"
    assert [dict(b.block) for b in answer.reasoning] == [THINKING]  # the signature is kept verbatim

    response = post(gateway.url, claude_body(SECOND))
    assert response.content == stream_bytes(ANSWER_2)
    types = gateway.settled(CC_SESSION, 2)
    assert types.count("message.user") == 1  # the first message was not recorded again
    assert types.count("tool.result") == 1 and types.count("context.request.built") == 2
    usage = [e.payload for e in gateway.events(CC_SESSION) if e.type == "model.response"]
    assert [(u.request_index, u.usage.input_tokens, u.usage.output_tokens) for u in usage] == [(0, 100, 20), (1, 100, 20)]
    result = [e for e in gateway.events(CC_SESSION) if e.type == "tool.result"][0].payload
    assert result.artifact is not None  # the whole 28k output is kept as an artifact


def test_non_streamed_answer_and_a_retry_that_records_nothing(gateway: Any) -> None:
    overloaded = anthropic_error(529, "overloaded_error", "Overloaded")
    overloaded = Reply(status=529, body=overloaded.body, headers={"retry-after": "7", "request-id": "req_0123"})
    gateway.replies(overloaded, Reply(body=ANSWER_1))
    body = claude_body(FIRST, stream=False)
    failed = post(gateway.url, body)
    assert failed.status_code == 529
    assert failed.headers["retry-after"] == "7" and failed.headers["request-id"] == "req_0123"
    assert failed.json() == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    retried = post(gateway.url, body)
    assert retried.status_code == 200 and retried.json() == ANSWER_1
    types = gateway.settled(CC_SESSION, 1)
    # One user message, one request built for both attempts, the answer once.
    assert types.count("message.user") == 1
    assert types.count("context.request.built") == 1
    assert types.count("model.response") == 1


def test_a_stream_cut_midway_records_no_answer_and_the_retry_records_one(gateway: Any) -> None:
    gateway.replies(Reply(body=ANSWER_1, cut_after=4), Reply(body=ANSWER_1))
    cut = post(gateway.url, claude_body(FIRST))
    assert cut.content == b"".join(sse_events(ANSWER_1)[:4])  # what the provider sent, and no more
    gateway.wait_for(lambda: "context.request.built" in gateway.types(CC_SESSION))
    assert post(gateway.url, claude_body(FIRST)).content == stream_bytes(ANSWER_1)
    types = gateway.settled(CC_SESSION, 1)
    assert types.count("message.assistant") == 1 and types.count("context.request.built") == 1
    (answer,) = [e.payload for e in gateway.events(CC_SESSION) if e.type == "message.assistant"]
    assert answer.tool_calls[0].id == "toolu_01"  # the whole answer of the retry, not the cut one
    assert gateway.log.sessions() == [CC_SESSION]


def test_a_context_length_error_reaches_the_client_with_its_status_and_body(gateway: Any) -> None:
    error = anthropic_error(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")
    gateway.replies(error)
    response = post(gateway.url, claude_body(FIRST))
    assert response.status_code == 400
    assert response.json() == error.body
    gateway.wait_for(lambda: "context.request.built" in gateway.types(CC_SESSION))
    assert "message.assistant" not in gateway.types(CC_SESSION)


def test_a_rewritten_history_continues_in_a_new_run_and_the_old_one_stays(gateway: Any) -> None:
    gateway.replies(Reply(body=ANSWER_1), Reply(body=ANSWER_2), Reply(body=ANSWER_2))
    post(gateway.url, claude_body(FIRST))
    post(gateway.url, claude_body(SECOND))
    before = gateway.settled(CC_SESSION, 2)
    # The client compacted its own history: one summary message instead of everything.
    compacted = [{"role": "user", "content": "Summary of the conversation so far: we listed the files."}]
    response = post(gateway.url, claude_body(compacted))
    assert response.status_code == 200
    assert gateway.settled(f"{CC_SESSION}~2", 1)[0] == "message.user"
    assert gateway.types(CC_SESSION) == before  # archived as it was, nothing edited
    assert [e.payload.text for e in gateway.events(f"{CC_SESSION}~2") if e.type == "message.user"] == [compacted[0]["content"]]


def test_openai_responses_streamed_with_prompt_cache_key(gateway: Any) -> None:
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "shell",
        "arguments": '{"command":["ls"]}',
        "status": "completed",
    }
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAB-opaque"}
    message = {
        "type": "message",
        "id": "msg_2",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
    }
    first = responses_answer(reasoning, call, response_id="resp_1")
    gateway.replies(Reply(body=first), Reply(body=responses_answer(message, response_id="resp_2")))
    tools = [
        {"type": "function", "name": "shell", "description": "Run a command", "parameters": {"type": "object", "properties": {}}}
    ]
    body = {
        "model": "gpt-5",
        "instructions": "You are Codex.",
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]}],
        "tools": tools,
        "stream": True,
        "store": False,
        "prompt_cache_key": "0199a1b2-conv",
    }
    headers = {"authorization": "Bearer sk-openai-test"}
    response = httpx2.post(gateway.url + "/v1/responses", json=body, headers=headers, timeout=30)
    assert response.content == stream_bytes(first)
    body["input"] = body["input"] + [
        reasoning,
        call,
        {"type": "function_call_output", "call_id": "call_1", "output": "a.txt\nb.txt"},
    ]
    httpx2.post(gateway.url + "/v1/responses", json=body, headers=headers, timeout=30)
    types = gateway.settled("openai/0199a1b2-conv", 2)
    assert types.count("message.user") == 1 and types.count("tool.result") == 1 and types.count("model.response") == 2
    assert gateway.upstream.received[-1].headers["authorization"] == "Bearer sk-openai-test"


def test_chat_completions_without_session_hints_use_the_fallback_session(gateway: Any) -> None:
    gateway.replies(Reply(body=chat_answer("Hello.")), Reply(body=chat_answer("Sure.")))
    messages = [{"role": "system", "content": "You are aider."}, {"role": "user", "content": "hi"}]
    body = {"model": "gpt-4o", "messages": messages, "stream": True}
    response = httpx2.post(gateway.url + "/v1/chat/completions", json=body, headers={"authorization": "Bearer sk-x"}, timeout=30)
    assert response.content == stream_bytes(chat_answer("Hello."))
    body["messages"] = messages + [{"role": "assistant", "content": "Hello."}, {"role": "user", "content": "more"}]
    httpx2.post(gateway.url + "/v1/chat/completions", json=body, headers={"authorization": "Bearer sk-x"}, timeout=30)
    (session,) = gateway.wait_for(lambda: [s for s in gateway.log.sessions() if s.startswith("anon/")])
    types = gateway.settled(session, 2)
    assert types.count("message.user") == 2 and types.count("message.assistant") == 2


def test_the_session_header_names_the_session(gateway: Any) -> None:
    post(gateway.url, claude_body(FIRST), headers={"x-contextwright-session": "my-agent/run-7"})
    gateway.settled("my-agent/run-7", 1)
    assert "x-contextwright-session" not in gateway.upstream.received[-1].headers


def test_other_endpoints_pass_through_unchanged(gateway: Any) -> None:
    body = {"model": "claude-sonnet-4-5", "messages": FIRST}
    counted = post(gateway.url, body, path="/v1/messages/count_tokens?beta=true")
    assert counted.status_code == 200 and counted.json() == {"input_tokens": 42}
    listed = httpx2.get(gateway.url + "/v1/models", headers={"authorization": "Bearer sk-x"}, timeout=30)
    assert listed.json() == {"path": "/v1/models"}
    assert [r.path for r in gateway.upstream.received] == ["/v1/messages/count_tokens", "/v1/models"]
    assert gateway.log.sessions() == []


def test_the_api_key_is_forwarded_and_never_stored_or_logged(gateway: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    gateway.replies(Reply(body=ANSWER_1), Reply(body=ANSWER_2))
    post(gateway.url, claude_body(FIRST))
    post(gateway.url, claude_body(SECOND), headers={"authorization": f"Bearer {KEY}"})
    gateway.settled(CC_SESSION, 2)
    assert all(r.headers.get("x-api-key") == KEY for r in gateway.upstream.received)
    stored = b"".join(p.read_bytes() for p in gateway.store.parent.glob(gateway.store.name + "*"))
    assert SESSION.encode() in stored  # the store is readable here: the check below can fail
    assert KEY.encode() not in stored
    assert KEY not in caplog.text


def test_gateway_key(make_gateway: Any) -> None:
    gateway = make_gateway(gateway_key="gw-key-0123456789abcdef")
    refused = post(gateway.url, claude_body(FIRST))
    assert refused.status_code == 401 and refused.json()["type"] == "error"
    assert gateway.upstream.received == []
    ok = post(gateway.url, claude_body(FIRST), headers={"x-contextwright-key": "gw-key-0123456789abcdef"})
    assert ok.status_code == 200
    assert "x-contextwright-key" not in gateway.upstream.received[-1].headers


def test_body_limit(make_gateway: Any) -> None:
    gateway = make_gateway(max_body_bytes=4096)
    response = post(gateway.url, claude_body([{"role": "user", "content": "x" * 5000}]))
    assert response.status_code == 413 and response.json()["error"]["type"] == "request_too_large"
    assert gateway.upstream.received == []


def test_body_limit_without_a_declared_length(make_gateway: Any) -> None:
    gateway = make_gateway(max_body_bytes=4096)
    data = json.dumps(claude_body([{"role": "user", "content": "x" * 5000}])).encode()

    def chunks() -> Any:
        for start in range(0, len(data), 1000):
            yield data[start : start + 1000]

    headers = {"x-api-key": KEY, "content-type": "application/json"}
    response = httpx2.post(gateway.url + "/v1/messages", content=chunks(), headers=headers, timeout=30)
    assert response.status_code == 413
    assert gateway.log.sessions() == []


def test_an_unreachable_upstream_is_a_502_in_the_providers_shape(tmp_path: Any) -> None:
    from contextwright.gateway import GatewayConfig, create_gateway_app
    from contextwright.testing.service import free_port, serving

    dead = f"http://127.0.0.1:{free_port()}"
    config = GatewayConfig(store=str(tmp_path / "g.db"), mode="observe", anthropic_upstream=dead, openai_upstream=dead)
    with serving(create_gateway_app(config)) as url:
        response = post(url, claude_body(FIRST))
    assert response.status_code == 502
    assert response.json()["type"] == "error" and "could not reach" in response.json()["error"]["message"]


def test_inspect_and_stats_read_gateway_sessions_like_any_other(gateway: Any) -> None:
    gateway.replies(Reply(body=ANSWER_1), Reply(body=ANSWER_2))
    post(gateway.url, claude_body(FIRST))
    post(gateway.url, claude_body(SECOND))
    gateway.settled(CC_SESSION, 2)
    engine = Engine(gateway.log)
    session = reopen(engine, CC_SESSION)
    assert session.inspect(1).sha256() == session.history.last_request.request_sha256
    (summary,) = store_summary(gateway.log)
    assert summary.session_id == CC_SESSION and summary.requests == 2
    runner = CliRunner()
    inspected = runner.invoke(cli_app, ["inspect", str(gateway.store), "--session", CC_SESSION, "--request", "1"])
    assert inspected.exit_code == 0, inspected.output
    assert "rebuilt from the log; it matches the recorded hash" in inspected.output
    stats = runner.invoke(cli_app, ["stats", str(gateway.store)])
    assert stats.exit_code == 0 and SESSION[:8] in stats.output
    # The cache simulator reads the session's rebuilt provider bodies like any other session's.
    simulator = AnthropicCacheSimulator(count_tokens=lambda text: max(1, len(text) // 4))
    simulated = []
    for index in (0, 1):
        wire = runner.invoke(cli_app, ["inspect", str(gateway.store), "-s", CC_SESSION, "-r", str(index), "--wire", "anthropic"])
        assert wire.exit_code == 0, wire.output
        body = json.loads(wire.output)
        assert body["model"] == "claude-sonnet-4-5" and [t["name"] for t in body["tools"]] == ["Bash", "Read"]
        simulated.append(simulator.request(SimRequest(at=gateway.events(CC_SESSION)[0].at, body=body)).usage)
    assert simulated[1].total_input > simulated[0].total_input > 0
    assert simulated[1].cache_write_5m_tokens + simulated[1].cache_write_1h_tokens > 0  # the 28k output is cached from here
    listed = runner.invoke(cli_app, ["sessions", str(gateway.store), "--json"])
    assert listed.exit_code == 0, listed.output
    (row,) = [json.loads(line) for line in listed.output.splitlines()]
    assert row["session_id"] == CC_SESSION and row["requests"] == 2
    assert row["events"] == len(gateway.events(CC_SESSION))


def test_claude_code_session_ids() -> None:
    assert claude_code_session(json.dumps({"device_id": "x", "session_id": "abc-1"})) == "abc-1"
    assert claude_code_session("user_9f2_account__session_0a1b-2c3d") == "0a1b-2c3d"
    assert claude_code_session("someone") is None


def test_a_restarted_gateway_continues_the_runs_in_the_log(tmp_path: Any) -> None:
    from contextwright.gateway import GatewayConfig, create_gateway_app
    from contextwright.log import open_log
    from contextwright.testing.service import serving
    from contextwright.testing.upstream import FakeUpstream

    replies = [Reply(body=ANSWER_1), Reply(body=ANSWER_2)]
    upstream = FakeUpstream(lambda received: replies.pop(0))
    store = tmp_path / "restart.db"
    with serving(upstream) as provider:
        config = GatewayConfig(store=str(store), mode="observe", anthropic_upstream=provider)
        with serving(create_gateway_app(config)) as url:
            post(url, claude_body(FIRST))
        # The first gateway has stopped (its answer recorded before shutdown); a new one reads the run back.
        with serving(create_gateway_app(config)) as url:
            post(url, claude_body(SECOND))
            log = open_log(str(store), read_only=True)
            try:
                deadline = time.monotonic() + 15
                while [e.type for e in log.read(CC_SESSION)].count("model.response") < 2 and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert log.sessions() == [CC_SESSION]
                types = [e.type for e in log.read(CC_SESSION)]
            finally:
                log.close()
    assert types.count("message.user") == 1 and types.count("message.assistant") == 2 and types.count("tool.result") == 1


def test_previous_response_id_finds_the_session_of_the_response(gateway: Any) -> None:
    text = {"type": "output_text", "text": "Hi.", "annotations": []}
    message = {"type": "message", "id": "msg_a", "role": "assistant", "status": "completed", "content": [text]}
    gateway.replies(Reply(body=responses_answer(message, response_id="resp_first")), Reply(body=responses_answer(message)))
    headers = {"authorization": "Bearer sk-x", "x-contextwright-session": "agents/alpha"}
    first = {"model": "gpt-5", "input": "hello", "stream": False}
    httpx2.post(gateway.url + "/v1/responses", json=first, headers=headers, timeout=30)
    gateway.settled("agents/alpha", 1)
    # A stored conversation: the client sends only what is new, naming the response it follows.
    follow = {"model": "gpt-5", "input": "and then?", "previous_response_id": "resp_first", "stream": False}
    httpx2.post(gateway.url + "/v1/responses", json=follow, headers={"authorization": "Bearer sk-x"}, timeout=30)
    types = gateway.settled("agents/alpha", 2)
    assert gateway.log.sessions() == ["agents/alpha"]  # the same run, not a rewrite
    texts = [e.payload.text for e in gateway.events("agents/alpha") if e.type == "message.user"]
    assert texts == ["hello", "and then?"] and types.count("context.request.built") == 2


def test_sessions_evicted_from_memory_continue_from_the_log(tmp_path: Any) -> None:
    from contextwright.gateway.recorder import Recorder
    from contextwright.gateway.wires import parse_request
    from contextwright.log import open_log

    log = open_log(str(tmp_path / "evict.db"))
    recorder = Recorder(Engine(log), max_keys=1)
    history = {"a": list(FIRST), "b": [{"role": "user", "content": "Another task."}]}
    try:
        for _ in range(3):
            for key in ("a", "b"):  # each key pushes the other out of memory
                ticket = recorder.record_request(key, parse_request("anthropic", claude_body(history[key])))
                answer = anthropic_message({"type": "text", "text": f"Answer {len(history[key])}."})
                recorder.record_answer(ticket, answer)
                history[key] += [{"role": "assistant", "content": answer["content"]}, {"role": "user", "content": "Go on."}]
        assert sorted(log.sessions()) == ["a", "b"]  # no new runs: each continued its own
        assert [e.type for e in log.read("a")].count("context.request.built") == 3
    finally:
        log.close()


def test_manage_mode_sends_the_engines_request_with_the_clients_options(make_gateway: Any) -> None:
    assert GatewayConfig().mode == "manage"  # the default
    gateway = make_gateway(mode="manage")
    gateway.replies(Reply(body=ANSWER_1), Reply(body=ANSWER_2))
    assert post(gateway.url, claude_body(FIRST)).content == stream_bytes(ANSWER_1)
    response = post(gateway.url, claude_body(SECOND))
    assert response.content == stream_bytes(ANSWER_2)  # the answer still comes back unchanged
    gateway.settled(CC_SESSION, 2)
    sent = gateway.upstream.received[-1].json
    client = claude_body(SECOND)
    # The client's options are kept, the engine's request replaces the conversation.
    for name in ("stream", "thinking", "context_management", "metadata"):
        assert sent[name] == client[name]
    assert sent["max_tokens"] < client["max_tokens"]  # the engine's output reserve
    result = sent["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_01"
    assert sent["messages"][1]["content"][0] == THINKING  # signed thinking goes back as it came
    # What went upstream is what the log says the engine built: inspect rebuilds it.
    rebuilt = CliRunner().invoke(cli_app, ["inspect", str(gateway.store), "-s", CC_SESSION, "-r", "1", "--wire", "anthropic"])
    assert rebuilt.exit_code == 0, rebuilt.output
    body = json.loads(rebuilt.output)
    assert sent["messages"] == body["messages"] and sent["system"] == body["system"] and sent["tools"] == body["tools"]
    assert sent["system"] != client["system"]  # the engine's framing is part of its prefix


def test_manage_mode_relieves_a_request_the_provider_finds_too_long_and_sends_it_again(make_gateway: Any) -> None:
    gateway = make_gateway(mode="manage")
    too_long = anthropic_error(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")
    calls = [{"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"command": f"cat part{n}"}} for n in range(3)]
    done = anthropic_message({"type": "text", "text": "Read all three parts."})
    gateway.replies(*(Reply(body=anthropic_message(c, stop_reason="tool_use")) for c in calls), too_long, Reply(body=done))
    history = list(FIRST)
    for n, call in enumerate(calls):
        assert post(gateway.url, claude_body(history)).status_code == 200
        output = f"part {n}: " + " ".join(f"word{n}x{i}" for i in range(4000))
        history += [
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": output}]},
        ]
    response = post(gateway.url, claude_body(history))
    # The client never sees the refusal: the engine relieved the session and the second attempt answered.
    assert response.status_code == 200 and response.content == stream_bytes(done)
    refused, resent = gateway.upstream.received[-2:]
    assert len(resent.json["messages"]) < len(refused.json["messages"])  # earlier rounds folded into a summary
    types = gateway.settled(CC_SESSION, 4)
    overflow = [e.payload for e in gateway.events(CC_SESSION) if e.type == "context.overflow"]
    assert [o.recovered for o in overflow] == [True]
    after = types[types.index("context.overflow") :]
    assert "context.compacted" in types and after.count("context.request.built") == 1  # relieved, then rebuilt once
    assert gateway.log.sessions() == [CC_SESSION]


def test_manage_mode_passes_on_an_overflow_relief_cannot_help(make_gateway: Any) -> None:
    gateway = make_gateway(mode="manage")
    too_long = anthropic_error(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")
    gateway.replies(too_long)
    response = post(gateway.url, claude_body(FIRST))  # one message: nothing to prune or compact
    assert response.status_code == 400 and response.json() == too_long.body
    assert len(gateway.upstream.received) == 1
