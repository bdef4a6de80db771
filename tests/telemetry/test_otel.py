"""O3: OpenTelemetry spans and metrics with the GenAI semantic conventions ([otel] extra)."""

from __future__ import annotations

import sys
import types

import pytest

from contextwright.errors import MissingDependencyError
from contextwright.telemetry import otel
from contextwright.telemetry.records import request_records


@pytest.fixture
def sdk():
    """A tracer provider and a meter provider that keep everything in memory."""
    pytest.importorskip("opentelemetry.sdk", reason='needs the otel extra: pip install "contextwright[otel]"')
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


def _nanos(at) -> int:
    return int(at.timestamp()) * 1_000_000_000 + at.microsecond * 1_000


def test_one_client_span_per_request_with_genai_attributes(driven, sdk):
    from opentelemetry.trace import SpanKind

    records = request_records(driven.events)
    count = otel.emit(records, tracer_provider=sdk.tracer_provider, meter_provider=sdk.meter_provider)
    spans = sdk.spans.get_finished_spans()

    assert count == len(spans) == len(records)
    for span, record in zip(spans, records):
        attributes = dict(span.attributes)
        assert span.name == "chat claude-sonnet-4-6" and span.kind is SpanKind.CLIENT
        assert span.instrumentation_scope.name == "contextwright"
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.provider.name"] == "anthropic"
        assert attributes["gen_ai.request.model"] == "claude-sonnet-4-6"
        assert attributes["gen_ai.conversation.id"] == record.session_id
        # Check: the engine's own view of the request rides along.
        assert attributes["contextwright.prefix_sha256"] == record.prefix_sha256
        assert attributes["contextwright.epoch"] == record.epoch
        assert attributes["contextwright.pressure"] == record.pressure
        assert tuple(attributes["contextwright.yields"]) == record.yields
        assert attributes["contextwright.tokens.total"] == record.total_tokens
        assert {
            k.removeprefix("contextwright.tokens.class."): v
            for k, v in attributes.items()
            if k.startswith("contextwright.tokens.class.")
        } == record.tokens_by_class
        # Check: times come from the events, not from the clock at export time.
        assert span.start_time == _nanos(record.at)
        assert span.end_time == _nanos(record.responded_at or record.at)
        usage = record.usage
        if usage is None:
            assert not any(k.startswith("gen_ai.usage.") for k in attributes)
            continue
        # Check: input_tokens is the whole prompt, cached tokens included; writes use the cache_write name.
        assert attributes["gen_ai.usage.input_tokens"] == usage.total_input
        assert attributes["gen_ai.usage.output_tokens"] == usage.output_tokens
        assert attributes["gen_ai.usage.cache_read.input_tokens"] == usage.cache_read_tokens
        assert attributes["gen_ai.usage.cache_write.input_tokens"] == usage.cache_write_tokens
        assert "gen_ai.usage.cache_creation.input_tokens" not in attributes
        assert attributes["contextwright.cost_usd"] == str(record.cost_usd)


def test_token_usage_histogram_by_token_type(driven, sdk):
    records = request_records(driven.events)
    otel.emit(records, tracer_provider=sdk.tracer_provider, meter_provider=sdk.meter_provider)
    data = sdk.metrics.get_metrics_data()
    metrics = {m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}

    usage = metrics["gen_ai.client.token.usage"]
    assert usage.unit == "{token}"
    points = {p.attributes["gen_ai.token.type"]: p for p in usage.data.data_points}
    measured = [r.usage for r in records if r.usage is not None]
    # Check: one input and one output observation per request with usage, summing to the totals.
    assert points["input"].count == points["output"].count == len(measured)
    assert points["input"].sum == sum(u.total_input for u in measured)
    assert points["output"].sum == sum(u.output_tokens for u in measured)
    assert points["input"].attributes["gen_ai.request.model"] == "claude-sonnet-4-6"
    assert tuple(points["input"].explicit_bounds) == otel.TOKEN_USAGE_BUCKETS
    sizes = metrics["contextwright.request.tokens"]
    assert sum(p.count for p in sizes.data.data_points) == len(records)


def test_records_without_usage_still_give_spans_but_no_usage_metric(driven_without_usage, sdk):
    records = request_records(driven_without_usage.events)
    assert otel.emit(records, tracer_provider=sdk.tracer_provider, meter_provider=sdk.meter_provider) == len(records)
    data = sdk.metrics.get_metrics_data()
    names = {m.name for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    assert "gen_ai.client.token.usage" not in names and "contextwright.request.tokens" in names


def test_a_missing_extra_names_the_pip_command(driven, monkeypatch):
    # Simulate an environment without OpenTelemetry: None in sys.modules blocks the import.
    for name in [n for n in sys.modules if n == "opentelemetry" or n.startswith("opentelemetry.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(MissingDependencyError, match=r'pip install "contextwright\[otel\]"') as caught:
        otel.emit(request_records(driven.events))
    assert isinstance(caught.value, ImportError) and caught.value.extra == "otel"


def test_provider_attribute_follows_the_installed_conventions(monkeypatch):
    module = "opentelemetry.semconv._incubating.attributes.gen_ai_attributes"
    old = types.ModuleType(module)
    old.GEN_AI_SYSTEM = "gen_ai.system"
    monkeypatch.setitem(sys.modules, module, old)
    assert otel.provider_attribute() == "gen_ai.system"
    new = types.ModuleType(module)
    new.GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
    monkeypatch.setitem(sys.modules, module, new)
    assert otel.provider_attribute() == "gen_ai.provider.name"
    monkeypatch.setitem(sys.modules, module, None)
    assert otel.provider_attribute() == "gen_ai.provider.name"
