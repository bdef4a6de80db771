"""Issue 19 item 1: a tool name a provider rejects never wedges a session; it is mapped at render time, reversibly."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("openai", reason="needs the openai SDK (the openai extra)")
pytest.importorskip("httpx2", reason="needs the openai SDK (the openai extra)")

import httpx2
import openai

from contextwright.events import AssistantMessage, ToolCall
from contextwright.models import openai as openai_model
from contextwright.providers.tool_names import safe_tool_name, wire_tool_name
from contextwright.replay import safe_tool_name as replay_safe_tool_name
from contextwright.testing.fakes import open_session, sample_agent
from contextwright.testing.provider import ScriptedProvider

WIRE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
PARALLEL = "multi_tool_use.parallel"


def _names(body, wire):
    if wire == "anthropic":
        tools = [t["name"] for t in body.get("tools", [])]
        calls = [b["name"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"]
    elif wire == "openai_chat":
        tools = [t["function"]["name"] for t in body.get("tools", [])]
        calls = [c["function"]["name"] for m in body["messages"] for c in m.get("tool_calls") or ()]
    else:
        tools = [t["name"] for t in body.get("tools", [])]
        calls = [i["name"] for i in body["input"] if i.get("type") == "function_call"]
    return tools + calls


def test_a_call_named_multi_tool_use_parallel_renders_on_every_wire_and_answers_map_back():
    engine, _, clock = open_session()
    session = engine.session("oa", agent=sample_agent(), model=openai_model("gpt-4.1"))
    parallel_args = {"tool_uses": [{"recipient_name": "functions.grep", "parameters": {"pattern": "TODO"}}]}
    provider = ScriptedProvider(
        [AssistantMessage(tool_calls=(ToolCall(id="call_1", name=PARALLEL, arguments=parallel_args),))],
        provider="openai",
        clock=clock,
    )
    client = openai.OpenAI(
        api_key="t", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(provider.handler))
    )
    session.user("Find the TODOs.")
    session.send(client.chat.completions.create)
    # The log keeps the name the model used.
    assert [c.name for c in session.pending_tool_calls()] == [PARALLEL]
    session.tool_result("call_1", "a.py:1: TODO")
    request = session.next_request()
    mapped = wire_tool_name(PARALLEL)
    assert WIRE_NAME.match(mapped) and mapped.startswith("multi_tool_use_parallel_")
    # Check every wire renders, with only valid names, the same bytes every time.
    for wire in ("openai_chat", "openai_responses"):
        body = request.render(wire)
        assert all(WIRE_NAME.match(n) for n in _names(body, wire)) and mapped in _names(body, wire)
        assert request.render(wire) == body
    # The SDK accepts the body end to end, and an answer using the mapped name is recorded under the original.
    provider.push(AssistantMessage(tool_calls=(ToolCall(id="call_2", name=mapped, arguments=parallel_args),)))
    session.send(client.chat.completions.create, request)
    assert [c.name for c in session.pending_tool_calls()] == [PARALLEL]
    assert provider.bodies[-1]["messages"][-2]["tool_calls"][0]["function"]["name"] == mapped


def test_the_anthropic_wire_maps_a_recorded_name_too():
    _, session, _ = open_session()
    session.user("List files.")
    session.next_request()
    session.adapter.record_assistant(AssistantMessage(tool_calls=(ToolCall(id="c1", name="mcp.fs/list dir", arguments={}),)))
    session.tool_result("c1", "a.py")
    body = session.next_request().render("anthropic")
    assert all(WIRE_NAME.match(n) for n in _names(body, "anthropic"))
    assert wire_tool_name("mcp.fs/list dir") in _names(body, "anthropic")
    session.adapter.record_assistant(
        AssistantMessage(tool_calls=(ToolCall(id="c2", name=wire_tool_name("mcp.fs/list dir"), arguments={}),))
    )
    assert [c.name for c in session.pending_tool_calls()] == ["mcp.fs/list dir"]


def test_the_mapping_is_deterministic_keeps_valid_names_and_keeps_names_apart():
    assert wire_tool_name("run_tests") == "run_tests"
    assert wire_tool_name("a.b") != wire_tool_name("a:b") and safe_tool_name("a.b") == safe_tool_name("a:b")
    assert wire_tool_name("a.b") == wire_tool_name("a.b")
    assert len(wire_tool_name("x." * 100)) == 64 and WIRE_NAME.match(wire_tool_name("\ud800"))
    # Replay cleans imported names with the same function.
    assert replay_safe_tool_name is safe_tool_name
