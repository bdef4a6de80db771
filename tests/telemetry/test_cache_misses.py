"""Cache misses named from the log: engine changes per request, attribution on records, alarms in summaries and spans."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from contextwright.clock import FixedClock
from contextwright.events.catalog import Compacted, LayerTruncated, Pruned, RequestBuilt, UserMessage
from contextwright.log.memory import InMemoryEventLog
from contextwright.pricing.cache_sim.attribution import CAUSES
from contextwright.report.html import render_html
from contextwright.telemetry.misses import attribute_session, engine_changes, session_misses, with_misses
from contextwright.telemetry.records import RequestRecord, cache_alarms, request_records, summarize

T0 = datetime(2026, 8, 1, 12, 0, tzinfo=UTC)


def built(index: int, *, yields: tuple[str, ...] = (), dedupe: int = 0) -> RequestBuilt:
    return RequestBuilt(
        epoch=1,
        request_index=index,
        prefix_sha256="sha256:aa",
        request_sha256=f"sha256:{index:02d}",
        provider="anthropic",
        total_tokens=1000,
        tokens_by_class={"history": 1000},
        yields=yields,
        dedupe_hits=dedupe,
    )


def hand_log(*payloads: object) -> list[Any]:
    log = InMemoryEventLog(clock=FixedClock("2026-08-01T12:00:00Z"))
    return log.append("s", list(payloads), expected_seq=0)


def test_engine_changes_are_put_on_the_next_request() -> None:
    events = hand_log(
        built(0),
        Pruned(epoch=1, upto_seq=1, call_ids=("c1", "c2")),
        built(1),
        UserMessage(text="go on"),
        built(2, yields=("compaction",)),
        LayerTruncated(epoch=1, layer="live", relief="recall", items=3, tokens_before=90, tokens_after=10),
        Compacted(epoch=1, upto_seq=4, summary="s", depth=1, source_event_seqs=(1,)),
        built(3, dedupe=2),
        built(4, dedupe=2),
    )
    changes = engine_changes(events)
    assert changes[0] == [] and changes[4] == []
    assert [c.cause for c in changes[1]] == ["relief_pass"] and "2 tool result(s)" in changes[1][0].detail
    assert [c.cause for c in changes[2]] == ["compaction"]  # the request's own yield
    # Check: a truncated layer, the compaction after it, and the stubs the build added, in that order.
    assert [c.cause for c in changes[3]] == ["relief_pass", "compaction", "relief_pass"]
    assert "dedupe: 2" in changes[3][2].detail


def _body(turns: int, *, system: str = "You are careful.") -> dict[str, Any]:
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": [{"type": "text", "text": f"turn {i}"}]} for i in range(turns)
    ]
    messages[-1]["content"][0]["cache_control"] = {"type": "ephemeral"}
    return {
        "model": "claude-opus-4-6",
        "max_tokens": 64,
        "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
        "messages": messages,
    }


def test_a_session_attributed_and_attached_to_its_records_adds_up() -> None:
    # A long system prompt (so the prefix clears Opus 4.6's 4,096-token minimum) and growing turns.
    system = "rule " * 5000
    times = [T0, T0 + timedelta(seconds=20), T0 + timedelta(minutes=10), T0 + timedelta(minutes=10, seconds=20)]
    bodies = [(i, at, _body(n, system=system)) for i, (at, n) in enumerate(zip(times, (1, 3, 5, 7), strict=True))]
    found = attribute_session(bodies, count_tokens=lambda text: len(text.split()))
    total, by_cause = session_misses(found.values())
    assert total == sum(by_cause.values()) == sum(a.uncached_tokens for a in found.values())
    assert found[2].main_cause == "ttl_expired"  # ten minutes after a 5-minute entry
    assert set(found[3].by_cause) == {"new_content"}

    # Check: attached to records, the summary totals them and names the drop with its cause.
    events = hand_log(*(built(i) for i in range(4)))
    records = [
        replace(r, at=times[r.request_index], input_tokens=0, cache_read_tokens=0, usage_source="simulated")
        for r in request_records(events)
    ]
    records = with_misses(records, found)
    records = [_with_reads(r) for r in records]
    summary = summarize(events, records=records)
    assert summary.uncached_input_tokens == total and summary.uncached_by_cause == by_cause
    assert all(r.uncached_by_cause is not None and sum(r.uncached_by_cause.values()) == r.uncached_input_tokens for r in records)
    html = render_html(summary, records, title="t", plots=False)
    assert "Cache misses by cause" in html and 'class="bar"' in html and "ttl expired" in html


def _with_reads(record: RequestRecord) -> RequestRecord:
    # The simulator's prediction as the record's usage.
    read = record.predicted_cache_read_tokens or 0
    return replace(record, input_tokens=record.uncached_input_tokens or 0, cache_read_tokens=read, usage_source="simulated")


def record(index: int, read: int, uncached: int, *, at: datetime | None = None, **extra: Any) -> RequestRecord:
    return RequestRecord(
        session_id="s",
        request_index=index,
        epoch=1,
        seq=index + 1,
        at=at or T0 + timedelta(seconds=10 * index),
        provider="anthropic",
        model="claude-opus-4-6",
        context_window=200_000,
        prefix_sha256="sha256:aa",
        total_tokens=read + uncached,
        projected_next_tokens=read + uncached,
        input_tokens=uncached,
        cache_read_tokens=read,
        usage_source="provider",
        **extra,
    )


def test_a_drop_below_the_running_level_raises_one_alarm_with_its_cause() -> None:
    steady = [record(i, 9000, 1000) for i in range(5)]
    dropped = record(5, 1000, 9000, changes=("compacted:pressure",))
    after = [record(6, 9000, 1000)]
    alarms = cache_alarms([*steady, dropped, *after])
    assert [(a.request_index, a.cause) for a in alarms] == [(5, "compaction")]
    assert alarms[0].running_level == pytest.approx(0.9) and alarms[0].share == pytest.approx(0.1)
    assert "request 5: cache read 10.0% against a running 90.0%; cause: compaction" == alarms[0].describe()


def test_alarm_causes_come_from_attribution_first_then_the_log() -> None:
    steady = [record(i, 9000, 1000) for i in range(4)]
    attributed = record(
        4, 2000, 8000, uncached_by_cause={"new_content": 1000, "system_changed": 7000}, uncached_input_tokens=8000
    )
    late = record(4, 2000, 8000, at=T0 + timedelta(minutes=20))
    unknown = record(4, 2000, 8000)
    assert cache_alarms([*steady, attributed])[0].cause == "system_changed"
    assert cache_alarms([*steady, late])[0].cause == "ttl_expired"
    assert cache_alarms([*steady, unknown])[0].cause is None


def test_no_alarm_while_warming_up_or_on_a_small_dip() -> None:
    # A cold start (two requests) and a dip of 20 points are not alarms.
    assert cache_alarms([record(0, 9000, 1000), record(1, 0, 10_000)]) == ()
    assert cache_alarms([*(record(i, 9000, 1000) for i in range(5)), record(5, 7000, 3000)]) == ()


def test_predicted_against_reported_is_flagged_on_the_record() -> None:
    close = record(0, 9000, 1000, predicted_cache_read_tokens=8800)
    far = record(1, 9000, 1000, predicted_cache_read_tokens=2000)
    assert close.prediction_gap == pytest.approx(0.02) and not close.prediction_flagged
    assert far.prediction_flagged


def test_cause_names_in_the_docs_are_the_list() -> None:

    doc = (Path(__file__).parents[2] / "docs" / "cache-misses.md").read_text()
    for cause in CAUSES:
        assert f"`{cause}`" in doc, cause


def test_alarms_become_span_events() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from contextwright.telemetry.otel import ALARM_EVENT, emit

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    dropped = record(5, 1000, 9000, changes=("pruned",), uncached_input_tokens=9000)
    dropped = replace(dropped, uncached_by_cause={"relief_pass": 8000, "new_content": 1000})
    records = [*(record(i, 9000, 1000) for i in range(5)), dropped]
    emit(records, tracer_provider=provider, alarms=cache_alarms(records))
    spans = sorted(exporter.get_finished_spans(), key=lambda s: s.attributes["contextwright.request.index"])
    assert [len(s.events) for s in spans] == [0, 0, 0, 0, 0, 1]
    event = spans[5].events[0]
    assert event.name == ALARM_EVENT and event.attributes["contextwright.cache.miss_cause"] == "relief_pass"
    # Check: the span of an attributed request carries its uncached tokens by cause.
    attributes = spans[5].attributes
    assert attributes["contextwright.cache.uncached_tokens"] == 9000
    assert attributes["contextwright.cache.uncached.relief_pass"] == 8000
    assert "contextwright.cache.uncached_tokens" not in spans[0].attributes


def test_a_gateway_view_names_what_the_client_changed() -> None:
    from contextwright.telemetry.misses import SessionMisses

    # A client's conversation seen request by request: a mode switch that adds a tool, then
    # two requests sent in parallel after parallel tool calls.
    def client(turns: int, tools: tuple[str, ...]) -> dict[str, Any]:
        return {**_body(turns, system="rule " * 5000), "tools": [{"name": t, "input_schema": {"type": "object"}} for t in tools]}

    session = SessionMisses(count_tokens=lambda text: len(text.split()))
    first = session.add(T0, client(1, ("read",)), first_token_after=timedelta(seconds=3))
    switched = session.add(T0 + timedelta(seconds=30), client(3, ("read", "plan_mode")), first_token_after=timedelta(seconds=3))
    parallel = session.add(T0 + timedelta(seconds=31), client(5, ("read", "plan_mode")))
    assert set(first.by_cause) == {"new_content"}
    # The unchanged first tool is shared but far under the minimum on its own.
    assert switched.main_cause == "tools_changed"
    assert set(switched.by_cause) == {"below_minimum", "tools_changed", "new_content"}
    assert parallel.main_cause == "in_flight"
    for found in (first, switched, parallel):
        assert sum(found.by_cause.values()) == found.uncached_tokens


def test_stats_prints_the_alarm_of_a_stored_session(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from contextwright.cli import app
    from contextwright.events.catalog import ModelResponse, UsageRecord
    from contextwright.log.sqlite import SQLiteEventLog

    def answer(index: int, read: int) -> ModelResponse:
        usage = UsageRecord(input_tokens=10_000 - read, cache_read_tokens=read, output_tokens=5)
        return ModelResponse(provider="anthropic", model="claude-opus-4-6", usage=usage, request_index=index)

    path = tmp_path / "s.db"
    log = SQLiteEventLog(path, clock=FixedClock("2026-08-01T12:00:00Z"))
    payloads: list[Any] = []
    for index in range(6):
        if index == 5:
            payloads.append(Pruned(epoch=1, upto_seq=1, call_ids=("c1",)))
        payloads += [built(index), answer(index, 1_000 if index == 5 else 9_000)]
    log.append("alarmed", payloads, expected_seq=0)
    log.close()
    result = CliRunner().invoke(app, ["stats", str(path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Cache alarm, alarmed, request 5: cache read 10.0% against a running 90.0%; cause: relief pass" in result.output


def test_a_request_built_before_the_previous_answer_pays_the_write_in_flight() -> None:
    from contextwright.events.catalog import ModelResponse, UsageRecord
    from contextwright.telemetry.misses import answer_delays

    # Two requests built 2 s apart (parallel tool calls), the first answered after 8 s.
    clock = FixedClock("2026-08-01T12:00:00Z")
    log = InMemoryEventLog(clock=clock)
    log.append("s", [built(0)], expected_seq=0)
    clock.advance(2)
    log.append("s", [built(1)], expected_seq=1)
    clock.advance(6)
    answer = ModelResponse(
        provider="anthropic", model="claude-opus-4-6", usage=UsageRecord(input_tokens=1, output_tokens=1), request_index=0
    )
    log.append("s", [answer], expected_seq=2)
    events = log.read("s")
    delays = answer_delays(events)
    assert delays == {0: timedelta(seconds=8)}
    times = {e.payload.request_index: e.at for e in events if e.type == "context.request.built"}
    bodies = [(i, times[i], _body(n, system="rule " * 5000)) for i, n in ((0, 1), (1, 3))]
    found = attribute_session(bodies, count_tokens=lambda text: len(text.split()), answered_after=delays)
    assert found[1].main_cause == "in_flight"
    # Check: without the answer's time the same bodies read the prefix.
    assert "in_flight" not in attribute_session(bodies, count_tokens=lambda text: len(text.split()))[1].by_cause


def test_a_client_body_stored_as_its_change_comes_back_exactly() -> None:
    from contextwright.telemetry.misses import apply_delta, body_delta

    base = {"model": "m", "tools": [{"name": "a"}, {"name": "b"}], "messages": [{"n": 1}, {"n": 2}], "thinking": {"x": 1}}
    body = {"model": "m", "tools": [{"name": "b"}, {"name": "a"}], "messages": [{"n": 1}, {"n": 2, "c": 1}, {"n": 3}]}
    fields, lists, dropped = body_delta(base, body)
    # Reordered tools are stored whole; the messages keep the first one they share; thinking is gone.
    assert fields == {"tools": body["tools"]}
    assert lists == {"messages": {"kept": 1, "items": [{"n": 2, "c": 1}, {"n": 3}]}}
    assert dropped == ["thinking"]
    assert apply_delta(base, fields, lists, dropped) == body
    assert apply_delta(None, *body_delta(None, body)) == body
