"""LangChain 1.x: graph state keeps the whole history while the model receives the engine's request."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("langchain.agents", reason="needs LangChain (the langchain extra)")

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from contextwright.clock import FixedClock
from contextwright.integrations.errors import ConflictingCacheMiddleware, ConflictingContextMiddleware, HistoryRewritten
from contextwright.integrations.langchain import ContextwrightMiddleware
from contextwright.models import anthropic as anthropic_model
from contextwright.models import with_window
from contextwright.runtime.engine import Engine
from contextwright.testing.fakes import TEST_SECRET

TASK = "Make the billing tests pass without changing the public API."


def pytest_output(turn: int) -> str:
    """A verbose pytest run of 601 tests with one failure (about 27,000 characters)."""
    lines = ["=" * 29 + " test session starts " + "=" * 30, "collected 601 items", ""]
    lines += [f"tests/test_billing.py::test_case_{i} PASSED" for i in range(600)]
    lines.insert(303, f"tests/test_billing.py::test_rounding_{turn} FAILED")
    lines += [
        "=" * 27 + " short test summary info " + "=" * 28,
        f"FAILED tests/test_billing.py::test_rounding_{turn} - assert 10.01 == 10.0",
        "=" * 24 + " 1 failed, 600 passed in 2.31s " + "=" * 24,
    ]
    return "\n".join(lines)


@tool
def run_tests(turn: int) -> str:
    """Run the billing test suite."""
    return pytest_output(turn)


class ToolCallingFakeModel(GenericFakeChatModel):
    """A scripted chat model that accepts tools and remembers every message list it was given."""

    seen: list[list[Any]] = []

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> ToolCallingFakeModel:
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def scripted(turns: int) -> ToolCallingFakeModel:
    answers = []
    for turn in range(turns):
        answers.append(AIMessage("", tool_calls=[{"name": "run_tests", "args": {"turn": turn}, "id": f"call_{turn}"}]))
        answers.append(AIMessage(f"Turn {turn}: one rounding test fails; fixing it next."))
    model = ToolCallingFakeModel(messages=iter(answers))
    model.seen = []
    return model


def open_engine(tmp_path) -> Engine:
    return Engine.open(f"sqlite:///{tmp_path / 'cw.db'}", clock=FixedClock("2026-03-01T22:30:00Z"), secret=TEST_SECRET)


def _types(messages) -> list[str]:
    return [type(m).__name__ for m in messages]


def _check_one_turn(engine, model, state) -> None:
    # Check: graph state holds the full history, the tool output whole.
    assert _types(state["messages"]) == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    assert state["messages"][2].content == pytest_output(0)
    # Check: the model received the engine's request: its system text, enveloped and bounded tool output.
    second = model.seen[1]
    assert isinstance(second[0], SystemMessage) and "Never push to main" in second[0].content
    [shown] = [m for m in second if isinstance(m, ToolMessage)]
    assert len(shown.content) < len(pytest_output(0)) // 4
    assert "test_rounding_0 FAILED" in shown.content and "sha256:" in shown.content and "<cw-data" in shown.content
    # Check: the log holds each message once.
    types = [e.type for e in engine.log.read("t1")]
    assert types.count("message.user") == 1 and types.count("message.assistant") == 2 and types.count("tool.result") == 1


def middleware(engine, **options) -> ContextwrightMiddleware:
    from contextwright.runtime.spec import AgentSpec
    from contextwright.runtime.spec import Tool as CwTool

    spec = AgentSpec(
        policy="You are a careful billing engineer. Never push to main.",
        tools=[
            CwTool("run_tests", "Run the billing test suite.", {"type": "object", "properties": {"turn": {"type": "integer"}}})
        ],
    )
    window = options.pop("window", 32_000)
    return ContextwrightMiddleware(engine, spec, model=with_window(anthropic_model("claude-sonnet-4-6"), window), **options)


def test_invoke_records_once_and_the_model_sees_the_engine_request(tmp_path):
    engine = open_engine(tmp_path)
    model = scripted(1)
    agent = create_agent(model, tools=[run_tests], system_prompt="original", middleware=[middleware(engine)])
    state = agent.invoke({"messages": [HumanMessage(TASK)]}, {"configurable": {"thread_id": "t1"}})
    _check_one_turn(engine, model, state)


def test_ainvoke_records_once_and_the_model_sees_the_engine_request(tmp_path):
    engine = open_engine(tmp_path)
    model = scripted(1)
    agent = create_agent(model, tools=[run_tests], system_prompt="original", middleware=[middleware(engine)])
    state = asyncio.run(agent.ainvoke({"messages": [HumanMessage(TASK)]}, {"configurable": {"thread_id": "t1"}}))
    _check_one_turn(engine, model, state)


def test_control_tools_are_answered_by_the_engine_without_running(tmp_path):
    engine = open_engine(tmp_path)
    update = {"add_constraints": ["Do not change the public API."], "next_action": "Fix rounding."}
    model = ToolCallingFakeModel(
        messages=iter(
            [
                AIMessage("", tool_calls=[{"name": "context_update_working_state", "args": update, "id": "ws_1"}]),
                AIMessage("Noted."),
            ]
        )
    )
    model.seen = []
    cw = middleware(engine)
    agent = create_agent(model, tools=[run_tests], middleware=[cw])
    state = agent.invoke({"messages": [HumanMessage(TASK)]}, {"configurable": {"thread_id": "t1"}})
    # Check: the tool node got the engine's answer, and the working state holds the constraint.
    assert state["messages"][2].content == "Working state saved."
    assert cw.session("t1").working_state.constraints[0] == "Do not change the public API."
    types = [e.type for e in engine.log.read("t1")]
    assert types.count("tool.result") == 1


def test_forty_turns_under_an_8k_window_stay_within_it_and_keep_the_task(tmp_path):
    engine = open_engine(tmp_path)
    turns = 40
    model = scripted(turns)
    cw = middleware(engine, window=8_000)
    agent = create_agent(model, tools=[run_tests], middleware=[cw], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    for turn in range(turns):
        text = TASK if turn == 0 else f"Continue with step {turn}."
        state = agent.invoke({"messages": [HumanMessage(text)]}, config)
    # Check: graph state holds all 160 messages with every output whole.
    assert len(state["messages"]) == 4 * turns
    assert [m.content for m in state["messages"] if isinstance(m, ToolMessage)] == [pytest_output(t) for t in range(turns)]
    session = cw.session("t1")
    plan = session.setup.plan
    limit = plan.model.context_window - plan.model.output_reserve
    built = [e.payload for e in session.history.events if e.type == "context.request.built"]
    assert len(built) == 2 * turns
    # Check: every request was within the window, and the task statement was visible in every one.
    assert max(b.total_tokens for b in built) <= limit
    assert all(TASK in json.dumps([m.content for m in seen]) for seen in model.seen)
    assert any(b.yields for b in built)  # pressure relief had to act


def test_a_history_rewritten_in_state_is_a_typed_error(tmp_path):
    engine = open_engine(tmp_path)
    model = scripted(2)
    agent = create_agent(model, tools=[run_tests], middleware=[middleware(engine)], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    agent.invoke({"messages": [HumanMessage(TASK)]}, config)
    other = create_agent(scripted(1), tools=[run_tests], middleware=[middleware(engine)])
    with pytest.raises(HistoryRewritten, match="no longer start with"):
        other.invoke({"messages": [HumanMessage("A different first message.")]}, config)


@pytest.mark.parametrize("ours_first", [False, True])
def test_combining_with_anthropic_prompt_caching_is_refused(tmp_path, ours_first):
    from langchain_anthropic import ChatAnthropic
    from langchain_anthropic.middleware import AnthropicPromptCachingMiddleware

    engine = open_engine(tmp_path)
    chat = ChatAnthropic(model="claude-sonnet-4-6", api_key="test", max_tokens=1024)
    stack = [AnthropicPromptCachingMiddleware(), middleware(engine)]
    agent = create_agent(chat, tools=[run_tests], middleware=stack[::-1] if ours_first else stack)
    with pytest.raises(ConflictingCacheMiddleware, match="at most 4"):
        agent.invoke({"messages": [HumanMessage(TASK)]}, {"configurable": {"thread_id": "t1"}})


THINKING = {
    "type": "thinking",
    "thinking": "The rounding test is the only failure; run it first.",
    "signature": "EqQBCkYIBxgCKkD+sig==",
}


def _anthropic_reply(n: int, content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 40,
            "output_tokens": 12,
            "cache_read_input_tokens": 900 * n,
            "cache_creation_input_tokens": 300,
            "cache_creation": {"ephemeral_5m_input_tokens": 300, "ephemeral_1h_input_tokens": 0},
        },
    }


def _cache_markers(body: dict[str, Any]) -> int:
    text = json.dumps({k: v for k, v in body.items() if k != "cache_control"})
    return text.count('"cache_control"') + (1 if "cache_control" in body else 0)


def test_chat_anthropic_on_the_wire_gets_the_engine_body_and_thinking_back_unchanged(tmp_path):
    anthropic = pytest.importorskip("anthropic")
    httpx2 = pytest.importorskip("httpx2")
    from langchain_anthropic import ChatAnthropic

    bodies: list[dict[str, Any]] = []
    replies = [
        [THINKING, {"type": "tool_use", "id": "toolu_1", "name": "run_tests", "input": {"turn": 0}}],
        [{"type": "text", "text": "One rounding test fails; fixing it next."}],
    ]

    def handler(request):
        bodies.append(json.loads(request.content))
        n = len(bodies) - 1
        return httpx2.Response(200, json=_anthropic_reply(n, replies[n], "tool_use" if n == 0 else "end_turn"))

    chat = ChatAnthropic(model="claude-sonnet-4-6", api_key="test", max_tokens=1024, max_retries=0)
    chat.__dict__["_client"] = anthropic.Anthropic(
        api_key="test",
        base_url="http://anthropic.test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    engine = open_engine(tmp_path)
    cw = middleware(engine)
    agent = create_agent(chat, tools=[run_tests], system_prompt="original", middleware=[cw])
    state = agent.invoke({"messages": [HumanMessage(TASK)]}, {"configurable": {"thread_id": "t1"}})

    assert _types(state["messages"]) == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    assert len(bodies) == 2
    for body in bodies:
        # Check: the engine's system blocks and breakpoints went out, never more than 4.
        assert "Never push to main" in json.dumps(body["system"]) and "original" not in json.dumps(body["system"])
        assert 1 <= _cache_markers(body) <= 4
        assert {t["name"] for t in body["tools"]} >= {"run_tests", "context_update_working_state", "context_read_artifact"}
    # Check: the signed thinking block went back byte-identical, first in its assistant turn.
    assistant = bodies[1]["messages"][1]
    assert assistant["role"] == "assistant" and assistant["content"][0] == THINKING
    assert [b["type"] for b in assistant["content"]] == ["thinking", "tool_use"]
    # Check: the log holds the thinking block with its call, verbatim.
    from contextwright.canonical import to_plain

    recorded = next(e.payload for e in engine.log.read("t1") if e.type == "message.assistant")
    assert [to_plain(r.block) for r in recorded.reasoning] == [THINKING]
    # Check: the tool result on the wire is the engine's bounded, enveloped view.
    [result] = [b for b in bodies[1]["messages"][2]["content"] if b["type"] == "tool_result"]
    shown = json.dumps(result["content"])
    assert "<cw-data" in shown and "test_rounding_0 FAILED" in shown and len(shown) < len(pytest_output(0)) // 2
    # Check: the prefix hash stayed one per epoch, and the usage with its cache figures was recorded.
    session = cw.session("t1")
    assert len({e.payload.prefix_sha256 for e in session.history.events if e.type == "context.request.built"}) == 1
    usage = [e.payload.usage for e in session.history.events if e.type == "model.response"]
    assert [(u.input_tokens, u.cache_read_tokens, u.cache_write_5m_tokens) for u in usage] == [(40, 0, 300), (40, 900, 300)]


def test_forty_turns_of_chat_anthropic_on_the_wire_stay_within_an_8k_window(tmp_path):
    anthropic = pytest.importorskip("anthropic")
    httpx2 = pytest.importorskip("httpx2")
    from langchain_anthropic import ChatAnthropic

    from contextwright.events import AssistantMessage, ReasoningBlock, ToolCall
    from contextwright.testing.provider import ScriptedProvider

    turns = 40
    clock = FixedClock("2026-03-01T22:30:00Z")
    thinking = [{**THINKING, "thinking": f"Turn {t}: run the suite first.", "signature": f"sig-{t}=="} for t in range(turns)]
    answers = []
    for turn in range(turns):
        call = ToolCall(id=f"toolu_{turn}", name="run_tests", arguments={"turn": turn})
        reasoning = (ReasoningBlock(provider="anthropic", block=thinking[turn], position=0),)
        answers += [AssistantMessage(tool_calls=(call,), reasoning=reasoning), AssistantMessage(text=f"Turn {turn} done.")]
    # The provider's usage is its cache simulator's count of each body it received.
    provider = ScriptedProvider(answers, clock=clock)
    chat = ChatAnthropic(model="claude-sonnet-4-6", api_key="test", max_tokens=1024, max_retries=0)
    chat.__dict__["_client"] = anthropic.Anthropic(
        api_key="test",
        base_url="http://anthropic.test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(provider.handler)),
    )
    engine = Engine.open(f"sqlite:///{tmp_path / 'cw.db'}", clock=clock, secret=TEST_SECRET)
    cw = middleware(engine, window=8_000)
    agent = create_agent(chat, tools=[run_tests], middleware=[cw], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    for turn in range(turns):
        state = agent.invoke({"messages": [HumanMessage(TASK if turn == 0 else f"Continue with step {turn}.")]}, config)
    # Check: graph state kept all 160 messages, every tool output whole.
    assert len(state["messages"]) == 4 * turns
    assert [m.content for m in state["messages"] if isinstance(m, ToolMessage)] == [pytest_output(t) for t in range(turns)]
    session = cw.session("t1")
    limit = session.setup.plan.model.context_window - session.setup.plan.model.output_reserve
    built = [e.payload for e in session.history.events if e.type == "context.request.built"]
    assert len(provider.bodies) == len(built) == 2 * turns and any(b.yields for b in built)
    # Check: no body on the wire was over the window, by the engine's count and by the provider's.
    assert max(b.total_tokens for b in built) <= limit
    usage = [e.payload.usage for e in session.history.events if e.type == "model.response"]
    prompt = [u.input_tokens + u.cache_read_tokens + u.cache_write_5m_tokens + u.cache_write_1h_tokens for u in usage]
    assert len(prompt) == 2 * turns and max(prompt) <= limit
    for body in provider.bodies:
        # Check: each body is the engine's, marks 1 to 4 blocks and shows the task.
        assert 1 <= _cache_markers(body) <= 4
        assert TASK in json.dumps(body)
        # Check: every thinking block on the wire is one the API returned, unchanged, first in its turn.
        for message in body["messages"]:
            content = message["content"] if isinstance(message["content"], list) else []
            shown = [b for b in content if b["type"] == "thinking"]
            assert all(b in thinking for b in shown)
            assert [b["type"] for b in content[: len(shown)]] == ["thinking"] * len(shown)


def test_chat_anthropic_overflow_is_recovered_once(tmp_path):
    import anthropic
    import httpx2
    from langchain_anthropic import ChatAnthropic

    bodies: list[dict[str, Any]] = []
    too_long = {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "prompt is too long: 208310 tokens > 200000 maximum"},
    }

    def handler(request):
        bodies.append(json.loads(request.content))
        if len(bodies) == 3:
            return httpx2.Response(400, json=too_long)
        n = len(bodies)
        content = (
            [{"type": "tool_use", "id": f"toolu_{n}", "name": "run_tests", "input": {"turn": n}}]
            if n < 4
            else [{"type": "text", "text": "Done."}]
        )
        return httpx2.Response(200, json=_anthropic_reply(n, content, "tool_use" if n < 4 else "end_turn"))

    chat = ChatAnthropic(model="claude-sonnet-4-6", api_key="test", max_tokens=1024, max_retries=0)
    chat.__dict__["_client"] = anthropic.Anthropic(
        api_key="test",
        base_url="http://anthropic.test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    engine = open_engine(tmp_path)
    cw = middleware(engine)
    agent = create_agent(chat, tools=[run_tests], middleware=[cw])
    state = agent.invoke({"messages": [HumanMessage(TASK)]}, {"configurable": {"thread_id": "t1"}})
    # Check: the graph never saw the failure; the engine relieved once and sent again.
    assert state["messages"][-1].content == "Done."
    types = [e.type for e in cw.session("t1").history.events]
    assert types.count("context.overflow") == 1
    assert any(t in ("context.compacted", "context.pruned") for t in types)
    assert len(bodies) == 4 and bodies[3] != bodies[2]


def test_an_openai_plan_reaches_the_model_as_chat_messages(tmp_path):
    from contextwright.models import openai as openai_model

    engine = open_engine(tmp_path)
    model = scripted(1)
    cw = ContextwrightMiddleware(engine, model=with_window(openai_model("gpt-5.5"), 32_000))
    agent = create_agent(model, tools=[run_tests], system_prompt="You fix billing bugs.", middleware=[cw])
    state = agent.invoke({"messages": [HumanMessage(TASK)]}, {"configurable": {"thread_id": "t1"}})
    assert _types(state["messages"]) == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    # Check: the spec came from the graph's own prompt, and the bounded output reached the model.
    second = model.seen[1]
    assert isinstance(second[0], SystemMessage) and "You fix billing bugs." in second[0].content
    [shown] = [m for m in second if isinstance(m, ToolMessage)]
    assert "<cw-data" in shown.content and len(shown.content) < len(pytest_output(0)) // 4


def test_threads_get_their_own_sessions_and_an_evicted_one_resumes_from_the_log(tmp_path, monkeypatch):
    import contextwright.integrations.langchain as adapter

    monkeypatch.setattr(adapter, "_OPEN_SESSIONS", 1)
    engine = open_engine(tmp_path)
    cw = middleware(engine)
    answers = [AIMessage(f"Answer {i}.") for i in range(3)]
    model = ToolCallingFakeModel(messages=iter(answers))
    model.seen = []
    agent = create_agent(model, tools=[run_tests], middleware=[cw], checkpointer=InMemorySaver())
    agent.invoke({"messages": [HumanMessage(TASK)]}, {"configurable": {"thread_id": "a"}})
    agent.invoke({"messages": [HumanMessage("Another task.")]}, {"configurable": {"thread_id": "b"}})
    # Check: thread a's session was evicted, reopens from the log and records only the new message.
    agent.invoke({"messages": [HumanMessage("And a follow-up.")]}, {"configurable": {"thread_id": "a"}})
    a = [e.type for e in engine.log.read("a")]
    b = [e.type for e in engine.log.read("b")]
    assert (a.count("message.user"), a.count("message.assistant")) == (2, 2)
    assert (b.count("message.user"), b.count("message.assistant")) == (1, 1)
    assert TASK in json.dumps([m.content for m in model.seen[2]])


def test_thinking_the_engine_leaves_out_as_stale_does_not_come_back_from_graph_state(tmp_path):
    # On a model that checks thinking prefixes a compaction voids the thinking after the change
    # (platform.claude.com .../preserved-thinking/prefix-checks); graph state still holds it.
    from contextwright.models import anthropic as anthropic_model

    answers = []
    for turn in range(8):
        thinking = {"type": "thinking", "thinking": f"step {turn}", "signature": f"sig-{turn}-" * 20}
        call = {"name": "run_tests", "args": {"turn": turn}, "id": f"call_{turn}", "type": "tool_call"}
        answers.append(AIMessage(content=[thinking], tool_calls=[call]))
    model = ToolCallingFakeModel(messages=iter(answers))
    model.seen = []
    engine = open_engine(tmp_path)
    cw = middleware(engine)
    cw.model = anthropic_model("claude-opus-5-5", context_window=1_000_000)
    agent = create_agent(model, tools=[run_tests], middleware=[cw], checkpointer=InMemorySaver(), name="stale")
    config = {"configurable": {"thread_id": "t1"}, "recursion_limit": 100}

    def thinking_of(seen: list[Any]) -> list[bool]:
        turns = [m for m in seen if isinstance(m, AIMessage)]
        return [isinstance(m.content, list) and any(b.get("type") == "thinking" for b in m.content) for m in turns]

    graph = agent.with_config(config)
    steps = graph.stream({"messages": [HumanMessage(TASK)]}, stream_mode="updates")
    for _ in range(2 * 6):
        next(steps)
    assert all(thinking_of(model.seen[-1]))
    assert cw.session("t1").compact() is not None
    for _ in range(4):
        next(steps)
    # Check: the kept turns reached the model without their stale thinking; the newest turn kept its own.
    shown = thinking_of(model.seen[-1])
    assert shown[-1] and not any(shown[:-1])
    # Check: graph state still holds every thinking block.
    state = agent.get_state(config).values
    assert all(thinking_of(state["messages"]))


def _chat_completion(n: int, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-5.5",
        "choices": [{"index": 0, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop", "message": message}],
        "usage": {
            "prompt_tokens": 1200,
            "completion_tokens": 9,
            "total_tokens": 1209,
            "prompt_tokens_details": {"cached_tokens": 1024 * n},
        },
    }


def test_chat_openai_on_the_wire_carries_the_sessions_prompt_cache_key(tmp_path):
    httpx2 = pytest.importorskip("httpx2")
    pytest.importorskip("langchain_openai", reason="needs langchain-openai (the langchain extra)")
    from langchain_openai import ChatOpenAI

    from contextwright.models import openai as openai_model

    bodies: list[dict[str, Any]] = []
    replies = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "run_tests", "arguments": '{"turn": 0}'}}],
        },
        {"role": "assistant", "content": "One rounding test fails; fixing it next."},
    ]

    def handler(request):
        bodies.append(json.loads(request.content))
        return httpx2.Response(200, json=_chat_completion(len(bodies) - 1, replies[len(bodies) - 1]))

    chat = ChatOpenAI(
        model="gpt-5.5",
        api_key="test",
        base_url="http://oai.test/v1",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    engine = open_engine(tmp_path)
    cw = ContextwrightMiddleware(engine, model=with_window(openai_model("gpt-5.5"), 32_000))
    agent = create_agent(chat, tools=[run_tests], system_prompt="You fix billing bugs.", middleware=[cw])
    agent.invoke({"messages": [HumanMessage(TASK)]}, {"configurable": {"thread_id": "t1"}})

    assert len(bodies) == 2
    session = cw.session("t1")
    engine_key = session.history.rebuild(session.history.requests_built - 1)[0].cache_key
    # Check: every body ChatOpenAI sent carries the session's own cache key (one per epoch).
    assert {body.get("prompt_cache_key") for body in bodies} == {engine_key}
    assert engine_key and "<cw-data" in json.dumps(bodies[1]["messages"])


@pytest.mark.parametrize("fired", [False, True], ids=["before-it-fires", "after-it-fired"])
def test_combining_with_summarization_middleware_is_refused_naming_it(tmp_path, fired):
    from langchain.agents.middleware import SummarizationMiddleware

    engine = open_engine(tmp_path)
    model = scripted(2)
    summarizer = SummarizationMiddleware(
        GenericFakeChatModel(messages=iter([AIMessage("Summary.")])), trigger=("messages", 2 if fired else 500)
    )
    agent = create_agent(model, tools=[run_tests], middleware=[summarizer, middleware(engine)])
    with pytest.raises(ConflictingContextMiddleware, match="SummarizationMiddleware is on the same agent"):
        agent.invoke(
            {"messages": [HumanMessage(TASK), AIMessage("Noted."), HumanMessage("Go on.")]}, {"configurable": {"thread_id": "t1"}}
        )
    # Refused before anything was recorded.
    assert [e for e in engine.log.read("t1") if e.type == "message.user"] == []
