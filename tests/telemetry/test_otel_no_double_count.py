"""Issue 12, item 8: with an SDK's own GenAI tracing on, one span per request carries ``gen_ai.usage.*``."""

from __future__ import annotations

import types
from typing import Any

import pytest

from contextwright.telemetry import otel
from contextwright.telemetry.records import request_records
from contextwright.testing.fakes import open_session

pytest.importorskip("opentelemetry.sdk", reason='needs the otel extra: pip install "contextwright[otel]"')
pytest.importorskip("anthropic", reason="needs the anthropic SDK (the anthropic extra)")
pytest.importorskip("httpx2", reason="needs the anthropic SDK (the anthropic extra)")

ANSWER = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-6",
    "content": [{"type": "text", "text": "Done."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 12,
        "output_tokens": 30,
        "cache_read_input_tokens": 4096,
        "cache_creation_input_tokens": 2048,
        "cache_creation": {"ephemeral_5m_input_tokens": 2048, "ephemeral_1h_input_tokens": 0},
        "output_tokens_details": {"thinking_tokens": 20},
    },
}


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
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    yield types.SimpleNamespace(tracer_provider=tracer_provider, meter_provider=meter_provider, spans=exporter, metrics=reader)
    tracer_provider.shutdown()
    meter_provider.shutdown()


def with_usage(spans: Any) -> list[Any]:
    return [span for span in spans if any(key.startswith("gen_ai.usage.") for key in span.attributes)]


def answered_session() -> Any:
    import anthropic

    _, session, _ = open_session()
    session.user("Fix the build.")
    session.next_request()
    session.record(anthropic.types.Message.model_validate(ANSWER))
    return session


def test_inside_an_sdk_style_genai_span_the_engine_annotates_it(sdk: Any) -> None:
    from opentelemetry.trace import SpanKind

    record = request_records(answered_session().history.events)[-1]
    tracer = sdk.tracer_provider.get_tracer("an.instrumentation")
    sdk_usage = {"gen_ai.usage.input_tokens": 6156, "gen_ai.usage.output_tokens": 30}
    with tracer.start_as_current_span(
        "chat claude-sonnet-4-6", kind=SpanKind.CLIENT, attributes={"gen_ai.operation.name": "chat", **sdk_usage}
    ):
        outcome = otel.observe(record, tracer_provider=sdk.tracer_provider, meter_provider=sdk.meter_provider)
    assert outcome == "annotated"
    spans = sdk.spans.get_finished_spans()
    # Check: one span in all, the SDK's; its usage is untouched and the engine's view rides on it.
    assert len(spans) == 1 and len(with_usage(spans)) == 1
    attributes = dict(spans[0].attributes)
    assert {k: attributes[k] for k in sdk_usage} == sdk_usage
    assert attributes["contextwright.prefix_sha256"] == record.prefix_sha256
    assert attributes["contextwright.epoch"] == record.epoch
    assert attributes["contextwright.tokens.class.history"] == record.tokens_by_class["history"]
    assert tuple(attributes["contextwright.yields"]) == record.yields
    # Check: no second gen_ai.client.token.usage either; the request-size histogram is ours.
    data = sdk.metrics.get_metrics_data()
    names = {m.name for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    assert names == {"contextwright.request.tokens"}


def test_without_sdk_tracing_the_standalone_client_span_carries_the_usage(sdk: Any) -> None:
    record = request_records(answered_session().history.events)[-1]
    tracer = sdk.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("agent step"):  # an ordinary span is not a model call
        outcome = otel.observe(record, tracer_provider=sdk.tracer_provider, meter_provider=sdk.meter_provider)
    assert outcome == "emitted"
    usage_spans = with_usage(sdk.spans.get_finished_spans())
    assert [span.name for span in usage_spans] == ["chat claude-sonnet-4-6"]
    attributes = dict(usage_spans[0].attributes)
    assert attributes["gen_ai.usage.input_tokens"] == 12 + 4096 + 2048
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 4096
    assert attributes["gen_ai.usage.cache_write.input_tokens"] == 2048
    assert attributes["gen_ai.usage.reasoning.output_tokens"] == 20


def test_the_anthropic_sdk_span_is_annotated_from_middleware_and_counts_once(sdk: Any) -> None:
    import anthropic
    import httpx2

    _, session, _ = open_session()
    session.user("Fix the build.")
    body = session.next_request().anthropic()

    def middleware(request: Any, call_next: Any) -> Any:
        # Inside the SDK call its own span is current: record the answer, then annotate.
        response = call_next(request)
        session.record(response.parse())
        otel.observe(
            request_records(session.history.events)[-1], tracer_provider=sdk.tracer_provider, meter_provider=sdk.meter_provider
        )
        return response

    client = anthropic.Anthropic(
        api_key="test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(lambda request: httpx2.Response(200, json=ANSWER))),
        open_telemetry={"tracer_provider": sdk.tracer_provider},
        middleware=[middleware],
    )
    client.messages.create(**body)
    spans = sdk.spans.get_finished_spans()
    usage_spans = with_usage(spans)
    assert len(usage_spans) == 1, [(s.name, s.instrumentation_scope.name) for s in spans]
    attributes = dict(usage_spans[0].attributes)
    assert usage_spans[0].instrumentation_scope.name != otel.SCOPE
    assert attributes["gen_ai.usage.input_tokens"] == 12 + 4096 + 2048
    built = [e.payload for e in session.history.events if e.type == "context.request.built"][-1]
    assert attributes["contextwright.prefix_sha256"] == built.prefix_sha256
    assert attributes["contextwright.epoch"] == built.epoch


def _middleware_client(sdk: Any, *, sdk_tracing: bool, answer: dict[str, Any] = ANSWER) -> tuple[Any, Any]:
    import anthropic
    import httpx2

    from contextwright.integrations.anthropic import ContextwrightMiddleware
    from contextwright.testing.sse import sse_events

    _, session, _ = open_session()

    def handler(request: Any) -> Any:
        if b'"stream":true' in request.content.replace(b" ", b""):
            return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=b"".join(sse_events(answer)))
        return httpx2.Response(200, json=answer)

    middleware = ContextwrightMiddleware(
        session, telemetry=True, tracer_provider=sdk.tracer_provider, meter_provider=sdk.meter_provider
    )
    options: dict[str, Any] = {"open_telemetry": {"tracer_provider": sdk.tracer_provider}} if sdk_tracing else {}
    client = anthropic.Anthropic(
        api_key="test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        middleware=[middleware],
        **options,
    )
    return client, session


CALL = {"model": "claude-sonnet-4-6", "max_tokens": 1024, "messages": [{"role": "user", "content": "Fix the build."}]}


def test_the_middleware_annotates_the_sdk_span_when_sdk_tracing_is_on(sdk: Any) -> None:
    client, session = _middleware_client(sdk, sdk_tracing=True)
    client.messages.create(**CALL)
    spans = sdk.spans.get_finished_spans()
    # Check: one span carries the usage, the SDK's, and it has the engine's attributes.
    [span] = with_usage(spans)
    assert span.instrumentation_scope.name != otel.SCOPE and len(spans) == 1
    built = [e.payload for e in session.history.events if e.type == "context.request.built"][-1]
    assert span.attributes["contextwright.prefix_sha256"] == built.prefix_sha256
    assert span.attributes["gen_ai.usage.input_tokens"] == 12 + 4096 + 2048


def test_the_middleware_emits_its_own_span_without_sdk_tracing(sdk: Any) -> None:
    client, _ = _middleware_client(sdk, sdk_tracing=False)
    client.messages.create(**CALL)
    [span] = with_usage(sdk.spans.get_finished_spans())
    assert span.instrumentation_scope.name == otel.SCOPE
    assert span.attributes["gen_ai.usage.cache_write.input_tokens"] == 2048


@pytest.mark.parametrize("sdk_tracing", [True, False])
def test_a_streamed_call_through_the_middleware_counts_once(sdk: Any, sdk_tracing: bool) -> None:
    client, session = _middleware_client(sdk, sdk_tracing=sdk_tracing)
    with client.messages.stream(**CALL) as stream:
        assert "".join(stream.text_stream) == "Done."
    assert [e.type for e in session.history.events].count("model.response") == 1
    # Check: exactly one span carries the usage, with or without the SDK's tracing.
    assert len(with_usage(sdk.spans.get_finished_spans())) == 1


def test_a_streamed_call_with_sdk_tracing_carries_the_engine_attributes_on_the_sdk_span(sdk: Any) -> None:
    client, session = _middleware_client(sdk, sdk_tracing=True)
    with client.messages.stream(**CALL) as stream:
        assert "".join(stream.text_stream) == "Done."
    [span] = with_usage(sdk.spans.get_finished_spans())
    built = [e.payload for e in session.history.events if e.type == "context.request.built"][-1]
    # Check: the SDK's span (the only one with usage) has the request's contextwright.* attributes too.
    assert span.instrumentation_scope.name != otel.SCOPE
    assert span.attributes["contextwright.prefix_sha256"] == built.prefix_sha256
    assert span.attributes["contextwright.epoch"] == built.epoch


def test_an_async_streamed_call_with_sdk_tracing_carries_the_engine_attributes(sdk: Any) -> None:
    import asyncio

    import anthropic
    import httpx2

    from contextwright.integrations.anthropic import ContextwrightMiddleware
    from contextwright.testing.sse import sse_events

    _, session, _ = open_session()

    async def handler(request: Any) -> Any:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=b"".join(sse_events(ANSWER)))

    client = anthropic.AsyncAnthropic(
        api_key="test",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
        middleware=[
            ContextwrightMiddleware(
                session, telemetry=True, tracer_provider=sdk.tracer_provider, meter_provider=sdk.meter_provider
            )
        ],
        open_telemetry={"tracer_provider": sdk.tracer_provider},
    )

    async def call() -> None:
        async with client.messages.stream(**CALL) as stream:
            assert "".join([text async for text in stream.text_stream]) == "Done."

    asyncio.run(call())
    assert [e.type for e in session.history.events].count("model.response") == 1
    [span] = with_usage(sdk.spans.get_finished_spans())
    built = [e.payload for e in session.history.events if e.type == "context.request.built"][-1]
    assert span.attributes["contextwright.prefix_sha256"] == built.prefix_sha256
