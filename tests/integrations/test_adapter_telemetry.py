"""The telemetry switch of the OpenAI wrapper, the LangChain middleware and the Agents SDK filter.

``telemetry=True`` reports each answered call to OpenTelemetry: one ``chat`` span per model
call, with the engine's ``contextwright.*`` attributes and the call's ``gen_ai.usage.*``;
without the switch, nothing.
"""

from __future__ import annotations

import asyncio
import types
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason='needs the otel extra: pip install "contextwright[otel]"')

from contextwright.clock import FixedClock
from contextwright.models import openai as openai_model
from contextwright.models import with_window
from contextwright.runtime.engine import Engine
from contextwright.runtime.spec import AgentSpec
from contextwright.telemetry import otel
from contextwright.testing.fakes import TEST_SECRET

TASK = "CI fails on main. Fix it."


@pytest.fixture
def sdk() -> Any:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    yield types.SimpleNamespace(spans=exporter, providers={"tracer_provider": tracer_provider, "meter_provider": meter_provider})
    tracer_provider.shutdown()
    meter_provider.shutdown()


def _engine() -> Engine:
    return Engine.open("memory://", clock=FixedClock("2026-03-01T22:30:00Z"), secret=TEST_SECRET)


def _check(spans: Any, session: Any, calls: int) -> None:
    ours = [span for span in spans.get_finished_spans() if span.instrumentation_scope.name == otel.SCOPE]
    assert len(ours) == calls
    built = [e.payload for e in session.history.events if e.type == "context.request.built"]
    for span, request in zip(ours, built, strict=True):
        assert span.attributes["contextwright.prefix_sha256"] == request.prefix_sha256
        assert span.attributes["gen_ai.conversation.id"] == session.id
        assert "gen_ai.usage.input_tokens" in span.attributes


@pytest.mark.parametrize("telemetry", [True, False])
def test_the_openai_wrapper_reports_each_answered_call(sdk: Any, telemetry: bool) -> None:
    openai = pytest.importorskip("openai")
    httpx2 = pytest.importorskip("httpx2")
    from contextwright.integrations.openai import wrap
    from contextwright.testing.upstream import chat_answer

    session = _engine().session("oai", agent=AgentSpec(policy="Never push to main."), model=openai_model("gpt-5.5"))
    transport = httpx2.MockTransport(lambda request: httpx2.Response(200, json=chat_answer("Done.", model="gpt-5.5")))
    client = openai.OpenAI(api_key="test", base_url="http://oai.test/v1", http_client=httpx2.Client(transport=transport))
    wrapped = wrap(client, session, telemetry=telemetry, **sdk.providers)
    wrapped.chat.completions.create(model="gpt-5.5", messages=[{"role": "user", "content": TASK}])
    if telemetry:
        _check(sdk.spans, session, 1)
    else:
        assert sdk.spans.get_finished_spans() == ()


def test_the_langchain_middleware_reports_each_model_call(sdk: Any, tmp_path: Any) -> None:
    pytest.importorskip("langchain.agents")
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage

    from contextwright.integrations.langchain import ContextwrightMiddleware

    class ToolCallingFake(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    usage = {"input_tokens": 900, "output_tokens": 12, "total_tokens": 912}
    model = ToolCallingFake(messages=iter([AIMessage("Done.", usage_metadata=usage)]))
    engine = _engine()
    middleware = ContextwrightMiddleware(
        engine, model=with_window(openai_model("gpt-5.5"), 32_000), telemetry=True, **sdk.providers
    )
    create_agent(model, middleware=[middleware]).invoke({"messages": [HumanMessage(TASK)]}, {"configurable": {"thread_id": "lc"}})
    _check(sdk.spans, middleware.session("lc"), 1)


def test_the_agents_filter_reports_each_model_call(sdk: Any) -> None:
    pytest.importorskip("agents")
    from agents import Agent, Runner, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call

    from contextwright.integrations.agents import agent_spec_for, model_input_filter

    @function_tool
    def run_tests() -> str:
        """Run the test suite."""
        return "1 failed, 41 passed"

    model = ScriptedModel([[function_call("run_tests", {}, call_id="call_1")], [assistant_message("Fixed.")]])
    agent = Agent(name="fixer", instructions="You fix failing tests.", model=model, tools=[run_tests])
    session = _engine().session("ag", agent=agent_spec_for(agent), model=openai_model("gpt-5.5"))
    view = model_input_filter(session, telemetry=True, **sdk.providers)

    async def run() -> None:
        await Runner.run(agent, TASK, run_config=view.run_config(tracing_disabled=True), hooks=view.hooks())

    asyncio.run(run())
    _check(sdk.spans, session, 2)
