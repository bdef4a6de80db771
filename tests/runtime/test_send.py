"""R6 and C4 at the runtime: send through the official SDKs, record usage, recover from one overflow."""

from __future__ import annotations

import pytest

pytest.importorskip("anthropic", reason="needs the anthropic and openai SDKs (the anthropic and openai extras)")
pytest.importorskip("httpx2", reason="needs the anthropic and openai SDKs (the anthropic and openai extras)")
pytest.importorskip("openai", reason="needs the anthropic and openai SDKs (the anthropic and openai extras)")

import anthropic
import httpx2
import openai

from contextwright.budget._reconcile import UsageFold, reconciled_total
from contextwright.errors import ContextLengthExceeded, OverflowNotRecovered
from contextwright.events import AssistantMessage, ToolCall
from contextwright.models import openai as openai_model
from contextwright.testing.fakes import open_session, sample_agent
from contextwright.testing.provider import ScriptedProvider


def anthropic_client(provider):
    return anthropic.Anthropic(
        api_key="test", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(provider.handler))
    )


def openai_client(provider):
    return openai.OpenAI(
        api_key="test", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(provider.handler))
    )


def _busy_session():
    engine, session, clock = open_session()
    for turn in range(3):
        session.user(f"Turn {turn}: please look at billing.")
        session.next_request()
        session.adapter.record_assistant(AssistantMessage(text=f"Done {turn}."))
    session.user("Now fix the export.")
    return engine, session, clock


def test_one_overflow_is_recovered_by_compacting_and_retrying_once():
    _, session, clock = _busy_session()
    provider = ScriptedProvider([AssistantMessage(text="Fixed.")], clock=clock, overflow_calls={0})
    session.send(anthropic_client(provider).messages.create)
    types = [e.type for e in session.history.events]
    overflow = [e.payload for e in session.history.events if e.type == "context.overflow"]
    assert len(overflow) == 1 and overflow[0].recovered
    assert [e.payload.trigger for e in session.history.events if e.type == "context.compacted"] == ["overflow"]
    assert types[-2:] == ["message.assistant", "model.response"] and len(provider.bodies) == 2
    assert session.stats().overflow_recoveries == 1


def test_a_second_overflow_surfaces_as_a_typed_error():
    _, session, clock = _busy_session()
    before = len(session.history.events)
    provider = ScriptedProvider([AssistantMessage(text="never")], clock=clock, overflow_calls={0, 1})
    with pytest.raises(OverflowNotRecovered) as info:
        session.send(anthropic_client(provider).messages.create)
    assert isinstance(info.value, ContextLengthExceeded)
    overflow = [e.payload.recovered for e in session.history.events[before:] if e.type == "context.overflow"]
    assert overflow == [True, False]
    assert not any(e.type == "message.assistant" for e in session.history.events[before:])


def test_an_overflow_that_relief_cannot_shrink_is_not_resent():
    # A fresh session holds only the task statement: nothing to compact, nothing to prune.
    _, session, clock = open_session("tiny")
    session.user("Fix the export.")
    provider = ScriptedProvider([AssistantMessage(text="never")], clock=clock, overflow_calls={0, 1})
    with pytest.raises(OverflowNotRecovered, match="freed nothing"):
        session.send(anthropic_client(provider).messages.create)
    # One call only: the same bytes were not sent a second time.
    assert len(provider.bodies) == 1
    assert [e.payload.recovered for e in session.history.events if e.type == "context.overflow"] == [False]
    stats = session.stats()
    assert stats.overflows == 1 and stats.overflow_recoveries == 0


def test_an_overflow_in_a_run_of_two_tool_rounds_prunes_the_older_kept_round():
    # One instruction, two tool rounds: nothing to compact (a compaction keeps a run's two newest
    # rounds), and both are rounds that pruning keeps whole. The provider's refusal is the last
    # resort: the older one yields.
    _, session, clock = open_session("kept-overflow")
    session.user("Read the two billing modules, then fix the export.")
    for turn in range(2):
        session.next_request()
        call = ToolCall(id=f"c{turn}", name="read_file", arguments={"path": f"billing/m{turn}.py"})
        session.adapter.record_assistant(AssistantMessage(text="", tool_calls=(call,)))
        session.tool_result(call.id, "".join(f"def f_{turn}_{i}(v):\n    return v * {i}\n\n" for i in range(60)))
    provider = ScriptedProvider([AssistantMessage(text="Fixed.")], clock=clock, overflow_calls={0})
    session.send(anthropic_client(provider).messages.create)
    [pruned] = [e.payload.call_ids for e in session.history.events if e.type == "context.pruned"]
    assert pruned == ("c0",)
    assert [e.payload.recovered for e in session.history.events if e.type == "context.overflow"] == [True]
    assert len(provider.bodies) == 2 and "def f_1_59(v)" in str(provider.bodies[1])


def test_failed_recoveries_are_not_counted_as_recoveries():
    _, session, clock = _busy_session()
    provider = ScriptedProvider([AssistantMessage(text="never")], clock=clock, overflow_calls={0, 1})
    with pytest.raises(OverflowNotRecovered):
        session.send(anthropic_client(provider).messages.create)
    stats = session.stats()
    assert stats.overflows == 2 and stats.overflow_recoveries == 0


def test_other_provider_errors_are_translated_not_retried():
    _, session, clock = _busy_session()

    def unauthorized(request):
        return httpx2.Response(
            401, json={"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
        )

    client = anthropic.Anthropic(
        api_key="bad", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(unauthorized))
    )
    from contextwright.errors import ProviderError

    with pytest.raises(ProviderError) as info:
        session.send(client.messages.create)
    assert not isinstance(info.value, ContextLengthExceeded)
    assert not any(e.type == "context.overflow" for e in session.history.events)


def test_anthropic_usage_is_recorded_for_reconciliation():
    engine, session, clock = open_session()
    provider = ScriptedProvider(
        [
            AssistantMessage(text="Running.", tool_calls=(ToolCall(id="toolu_1", name="run_tests", arguments={}),)),
            AssistantMessage(text="Done."),
        ],
        clock=clock,
    )
    client = anthropic_client(provider)
    session.user("Fix CI.")
    session.send(client.messages.create)
    session.tool_result("toolu_1", "ok")
    session.send(client.messages.create)
    responses = [e.payload for e in session.history.events if e.type == "model.response"]
    assert [r.request_index for r in responses] == [0, 1]
    assert responses[0].usage.input_tokens + responses[0].usage.cache_read_tokens + responses[0].usage.cache_write_5m_tokens > 0
    built = [e.payload for e in session.history.events if e.type == "context.request.built"]
    assert [r.estimated_input_tokens for r in responses] == [reconciled_total(b) for b in built]
    # Both reports are folded from the log into the factor later requests are sized with.
    assert UsageFold().feed(session.history.events).correction("claude-sonnet-4-6").observations == 2


def test_openai_chat_round_trip_through_the_sdk():
    engine, _, clock = open_session()
    session = engine.session("oa", agent=sample_agent(), model=openai_model("gpt-4.1"))
    provider = ScriptedProvider(
        [
            AssistantMessage(text="", tool_calls=(ToolCall(id="call_1", name="grep", arguments={"pattern": "TODO"}),)),
            AssistantMessage(text="Found two TODOs."),
        ],
        provider="openai",
        clock=clock,
    )
    client = openai_client(provider)
    session.user("Find the TODOs.")
    session.send(client.chat.completions.create)
    assert [c.arguments for c in session.pending_tool_calls()] == [{"pattern": "TODO"}]
    session.tool_result("call_1", "a.py:1: TODO\nb.py:9: TODO")
    session.send(client.chat.completions.create)
    body = provider.bodies[-1]
    assert body["prompt_cache_key"].startswith("cw-") and body["messages"][0]["role"] in ("system", "developer")
    assert [m["role"] for m in body["messages"]].count("tool") == 1
    assert session.history.events[-1].type == "model.response"


def test_record_accepts_sdk_objects_of_every_wire():
    from openai.types.chat import ChatCompletion
    from openai.types.responses import Response

    engine, session, _ = open_session()
    session.user("hello")
    session.next_request()
    message = anthropic.types.Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "content": [{"type": "text", "text": "Hi."}],
            "usage": {"input_tokens": 10, "output_tokens": 2, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 0},
        }
    )
    session.record(message)
    assert session.history.events[-1].payload.usage.cache_read_tokens == 1000
    session.user("again")
    session.next_request()
    session.record(
        ChatCompletion.model_validate(
            {
                "id": "c",
                "object": "chat.completion",
                "created": 1,
                "model": "gpt-4.1",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Hello again."}}],
                "usage": {
                    "prompt_tokens": 1200,
                    "completion_tokens": 3,
                    "total_tokens": 1203,
                    "prompt_tokens_details": {"cached_tokens": 1024},
                },
            }
        )
    )
    usage = session.history.events[-1].payload.usage
    assert (usage.input_tokens, usage.cache_read_tokens) == (176, 1024)
    session.user("and the responses API")
    session.next_request()
    session.record(
        Response.model_validate(
            {
                "id": "r",
                "object": "response",
                "created_at": 1,
                "model": "gpt-4.1",
                "status": "completed",
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
                "output": [
                    {
                        "type": "message",
                        "id": "m",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
                    }
                ],
                "usage": {
                    "input_tokens": 50,
                    "output_tokens": 5,
                    "total_tokens": 55,
                    "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                    "output_tokens_details": {"reasoning_tokens": 0},
                },
            }
        )
    )
    assert [e.payload.text for e in session.history.events if e.type == "message.assistant"][-1] == "Done."


def test_the_async_twin_sends_through_the_async_sdk():
    import asyncio

    # Earlier turns give the forced relief something to fold (an overflow with nothing to fold is not resent).
    engine, session, clock = _busy_session()
    provider = ScriptedProvider(
        [
            AssistantMessage(text="Running.", tool_calls=(ToolCall(id="toolu_1", name="run_tests", arguments={}),)),
            AssistantMessage(text="Done."),
        ],
        clock=clock,
        overflow_calls={1},
    )

    async def handler(request):
        return provider.handler(request)

    client = anthropic.AsyncAnthropic(
        api_key="test", max_retries=0, http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    )

    async def loop():
        aio = session.aio
        await aio.user("Fix CI.")
        await aio.send(client.messages.create)
        for call in await aio.pending_tool_calls():
            await aio.tool_result(call.id, "ok")
        await aio.send(client.messages.create)  # the first try overflows; one compaction, one retry

    asyncio.run(loop())
    texts = [e.payload.text for e in session.history.events if e.type == "message.assistant"]
    assert texts[-2:] == ["Running.", "Done."]
    assert [e.payload.recovered for e in session.history.events if e.type == "context.overflow"] == [True]
