"""OpenTelemetry spans and metrics for built requests, with the GenAI semantic conventions.

Needs the ``otel`` extra (``pip install "contextwright[otel]"``); the import happens
when :func:`emit` is called, so this module loads without it.

One ``chat {model}`` client span per :class:`~contextwright.telemetry.records.RequestRecord`,
timed from the events (built → provider response), with the ``gen_ai.*`` request and
usage attributes plus ``contextwright.*`` attributes for what only this engine knows
(prefix hash, epoch, pressure, yields, tokens by class and layer). Token usage also
goes to the ``gen_ai.client.token.usage`` histogram.

When an SDK's own GenAI instrumentation already traces the call (the Anthropic SDK's
``open_telemetry=`` option, or an instrumentation library), its span carries the
``gen_ai.usage.*`` counts. A second span with the same counts would double them in
every backend, so :func:`observe`, called while that span is current (inside the
call, e.g. from SDK middleware), only adds the ``contextwright.*`` attributes to it;
without such a span it emits the standalone client span as :func:`emit` does.

Conventions followed (all still "development" status upstream):
https://github.com/open-telemetry/semantic-conventions-genai (``model/gen-ai/registry.yaml``,
``model/gen-ai/metrics.yaml``). ``gen_ai.usage.input_tokens`` counts the whole prompt,
cached tokens included; cache writes use the newer ``cache_write`` name, not
``cache_creation`` (the name the Anthropic SDK 2.x emits, ``anthropic/_tracing.py``);
``gen_ai.usage.reasoning.output_tokens`` is the reasoning part of the output.
"""

from __future__ import annotations

import datetime as dt
import importlib
from collections.abc import Iterable
from typing import Any, Literal

from contextwright._optional import require
from contextwright._version import __version__
from contextwright.telemetry.records import CacheAlarm, RequestRecord

__all__ = [
    "ALARM_EVENT",
    "TOKEN_USAGE_BUCKETS",
    "alarm_attributes",
    "annotate",
    "annotation_attributes",
    "current_genai_span",
    "emit",
    "observe",
    "provider_attribute",
    "span_attributes",
]

SCOPE = "contextwright"
"""Instrumentation scope name of the tracer and the meter."""
OPERATION = "chat"
"""``gen_ai.operation.name`` of a model request."""
TOKEN_USAGE_BUCKETS: tuple[float, ...] = (
    1,
    4,
    16,
    64,
    256,
    1024,
    4096,
    16384,
    65536,
    262144,
    1048576,
    4194304,
    16777216,
    67108864,
)
"""Histogram boundaries advised for ``gen_ai.client.token.usage`` by the GenAI metrics conventions."""

ALARM_EVENT = "contextwright.cache.alarm"
"""Name of the span event a cache-read drop raises (see :func:`~contextwright.telemetry.records.cache_alarms`)."""

_FEATURE = "OpenTelemetry export"


def provider_attribute() -> str:
    """The provider attribute name: ``gen_ai.provider.name``, or ``gen_ai.system`` for old semconv packages."""
    try:
        names = importlib.import_module("opentelemetry.semconv._incubating.attributes.gen_ai_attributes")
    except ImportError:
        return "gen_ai.provider.name"  # no constants installed: use the current name
    # gen_ai.system was renamed gen_ai.provider.name; a package that predates the
    # rename only knows the old one, and so do the backends that pin it.
    if hasattr(names, "GEN_AI_PROVIDER_NAME"):
        return "gen_ai.provider.name"
    return "gen_ai.system"


def span_attributes(record: RequestRecord, *, provider_key: str = "gen_ai.provider.name") -> dict[str, Any]:
    """The span attributes of one request (semconv ``gen_ai.*`` plus ``contextwright.*``)."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": OPERATION,
        provider_key: record.provider,
        "gen_ai.request.model": record.model,
        "gen_ai.conversation.id": record.session_id,
        "contextwright.request.index": record.request_index,
        "contextwright.epoch": record.epoch,
        "contextwright.prefix_sha256": record.prefix_sha256,
        "contextwright.pressure": record.pressure,
        "contextwright.yields": list(record.yields),
        "contextwright.tokens.total": record.total_tokens,
        "contextwright.tokens.projected_next": record.projected_next_tokens,
        "contextwright.compactions_so_far": record.compactions_so_far,
        "contextwright.prunes_so_far": record.prunes_so_far,
    }
    if record.context_window is not None:
        attributes["contextwright.context_window"] = record.context_window
    for name, tokens in record.tokens_by_class.items():
        attributes[f"contextwright.tokens.class.{name}"] = tokens
    for name, tokens in record.tokens_by_layer.items():
        attributes[f"contextwright.tokens.layer.{name}"] = tokens
    usage = record.usage
    if usage is not None:
        attributes.update(
            {
                "gen_ai.usage.input_tokens": usage.total_input,
                "gen_ai.usage.output_tokens": usage.output_tokens,
                "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
                "gen_ai.usage.cache_write.input_tokens": usage.cache_write_tokens,
                "contextwright.usage.source": record.usage_source or "provider",
            }
        )
        if usage.reasoning_output_tokens:
            attributes["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_output_tokens
    if record.uncached_by_cause is not None:
        attributes["contextwright.cache.uncached_tokens"] = record.uncached_input_tokens or 0
        for cause, tokens in record.uncached_by_cause.items():
            attributes[f"contextwright.cache.uncached.{cause}"] = tokens
    if record.cost_usd is not None:
        # A string keeps the Decimal exact; backends that chart it can parse it.
        attributes["contextwright.cost_usd"] = str(record.cost_usd)
    return attributes


def annotation_attributes(record: RequestRecord) -> dict[str, Any]:
    """What only this engine knows about a request (``contextwright.*``), for a span someone else owns."""
    # gen_ai.* is the owning instrumentation's to set; repeating it would double the counts.
    return {key: value for key, value in span_attributes(record).items() if key.startswith("contextwright.")}


def current_genai_span() -> Any | None:
    """The current span when it is a recording GenAI span from another instrumentation, else None."""
    trace = require("opentelemetry.trace", extra="otel", feature=_FEATURE)
    span = trace.get_current_span()
    if not span.is_recording():
        return None
    # SDK spans expose their attributes (ReadableSpan); gen_ai.operation.name is required
    # on every GenAI span by the conventions, so it tells a model call from any other span.
    attributes = getattr(span, "attributes", None) or {}
    if attributes.get("gen_ai.operation.name") is None:
        return None
    if getattr(span, "instrumentation_scope", None) is not None and span.instrumentation_scope.name == SCOPE:
        return None  # our own span: the caller is emitting, not observing
    return span


def observe(
    record: RequestRecord,
    *,
    tracer_provider: Any = None,
    meter_provider: Any = None,
) -> Literal["annotated", "emitted"]:
    """Report one request: annotate the SDK's current GenAI span, or emit the standalone client span.

    Call it inside the model call (for example from SDK middleware) to annotate the
    SDK's own span; anywhere else it emits a span like :func:`emit`. Either way exactly
    one span carries the request's ``gen_ai.usage.*`` counts.
    """
    span = current_genai_span()
    if span is None:
        emit([record], tracer_provider=tracer_provider, meter_provider=meter_provider)
        return "emitted"
    annotate(span, record, meter_provider=meter_provider)
    return "annotated"


def annotate(span: Any, record: RequestRecord, *, meter_provider: Any = None) -> None:
    """Add the engine's ``contextwright.*`` attributes to ``span``, a GenAI span another instrumentation owns."""
    span.set_attributes(annotation_attributes(record))
    # The instrumentation records gen_ai.client.token.usage itself; only our own size histogram goes here.
    _request_tokens_histogram(meter_provider).record(record.total_tokens, _metric_attributes(record, provider_attribute()))


def _request_tokens_histogram(meter_provider: Any) -> Any:
    metrics = require("opentelemetry.metrics", extra="otel", feature=_FEATURE)
    meter = (meter_provider or metrics.get_meter_provider()).get_meter(SCOPE, __version__)
    return meter.create_histogram(
        "contextwright.request.tokens",
        unit="{token}",
        description="Estimated size of each built request",
        explicit_bucket_boundaries_advisory=list(TOKEN_USAGE_BUCKETS),
    )


def _metric_attributes(record: RequestRecord, provider_key: str) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": OPERATION,
        provider_key: record.provider,
        "gen_ai.request.model": record.model,
        "contextwright.pressure": record.pressure,
    }


def alarm_attributes(alarm: CacheAlarm) -> dict[str, Any]:
    """The attributes of a ``contextwright.cache.alarm`` span event."""
    return {
        "contextwright.request.index": alarm.request_index,
        "contextwright.cache.read_share": alarm.share,
        "contextwright.cache.running_level": alarm.running_level,
        "contextwright.cache.miss_cause": alarm.cause or "unknown",
    }


def emit(
    records: Iterable[RequestRecord],
    *,
    tracer_provider: Any = None,
    meter_provider: Any = None,
    alarms: Iterable[CacheAlarm] = (),
) -> int:
    """Emit one span per record and the token-usage histogram; return the number of spans.

    Without providers, the globally configured OpenTelemetry ones are used. Each of
    ``alarms`` (:attr:`~contextwright.telemetry.records.SessionSummary.cache_alarms`) becomes a
    ``contextwright.cache.alarm`` event on the span of the request it names.
    """
    alarmed = {alarm.request_index: alarm for alarm in alarms}
    trace = require("opentelemetry.trace", extra="otel", feature=_FEATURE)
    metrics = require("opentelemetry.metrics", extra="otel", feature=_FEATURE)
    tracer = (tracer_provider or trace.get_tracer_provider()).get_tracer(SCOPE, __version__)
    meter = (meter_provider or metrics.get_meter_provider()).get_meter(SCOPE, __version__)
    token_usage = meter.create_histogram(
        "gen_ai.client.token.usage",
        unit="{token}",
        description="Number of input and output tokens used",
        explicit_bucket_boundaries_advisory=list(TOKEN_USAGE_BUCKETS),
    )
    context_tokens = _request_tokens_histogram(meter_provider)
    provider_key = provider_attribute()
    count = 0
    for record in records:
        attributes = span_attributes(record, provider_key=provider_key)
        span = tracer.start_span(
            f"{OPERATION} {record.model}",
            kind=trace.SpanKind.CLIENT,
            attributes=attributes,
            start_time=_nanos(record.at),
        )
        alarm = alarmed.get(record.request_index)
        if alarm is not None:
            span.add_event(ALARM_EVENT, attributes=alarm_attributes(alarm), timestamp=_nanos(record.at))
        span.end(end_time=_nanos(record.responded_at or record.at))
        count += 1
        common = {"gen_ai.operation.name": OPERATION, provider_key: record.provider, "gen_ai.request.model": record.model}
        context_tokens.record(record.total_tokens, _metric_attributes(record, provider_key))
        usage = record.usage
        if usage is not None:
            token_usage.record(usage.total_input, {**common, "gen_ai.token.type": "input"})
            token_usage.record(usage.output_tokens, {**common, "gen_ai.token.type": "output"})
    return count


def _nanos(at: dt.datetime) -> int:
    # Integer arithmetic: a float timestamp loses the microseconds at this magnitude.
    delta = at - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000
