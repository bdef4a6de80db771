"""O1: per-request telemetry and session summaries are folds over the log, nothing more."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from telemetry_sessions import (
    ROTATE_AT_TURN,
    ROTATED_WINDOW,
    UNINDEXED_RESPONSE_AT,
    WINDOW,
    reported_usage,
)

from contextwright.clock import FixedClock
from contextwright.errors import UsageError
from contextwright.events.catalog import (
    AssistantMessage,
    Compacted,
    ContextOverflow,
    MemoryCandidates,
    ModelResponse,
    Pruned,
    RequestBuilt,
    ToolCall,
    ToolResult,
    UsageRecord,
    UserMessage,
)
from contextwright.log.memory import InMemoryEventLog
from contextwright.log.sqlite import SQLiteEventLog
from contextwright.pricing.prices import cost, price_for
from contextwright.providers.usage import Usage
from contextwright.telemetry.records import (
    RequestRecord,
    request_records,
    store_summary,
    summarize,
    with_usage,
)


class CharEstimator:
    """Four characters a token: easy to check by hand."""

    def estimate(self, text: str, *, model: str, kind: str | None = None) -> int:
        return len(text) // 4


def built(index: int, total: int, *, epoch: int = 1, yields: tuple[str, ...] = (), prefix: str = "sha256:aa") -> RequestBuilt:
    return RequestBuilt(
        epoch=epoch,
        request_index=index,
        prefix_sha256=prefix,
        request_sha256=f"sha256:{index:02d}",
        provider="anthropic",
        total_tokens=total,
        tokens_by_class={"tools": 10, "history": total - 10},
        tokens_by_layer={"live": total},
        yields=yields,
    )


def hand_log(*payloads: object, session_id: str = "hand") -> list:
    log = InMemoryEventLog(clock=FixedClock("2026-03-01T10:00:00Z"))
    return log.append(session_id, list(payloads), expected_seq=0)


# -- request records from a real session --------------------------------------------------


def test_one_record_per_built_request_mirrors_the_events(driven):
    records = request_records(driven.events)
    events = [e for e in driven.events if e.type == "context.request.built"]

    # Check: same count, same order, and every copied field equals the event's.
    assert [r.request_index for r in records] == list(range(len(events))) == [r.index for r in driven.report.requests]
    for record, event in zip(records, events):
        assert record.seq == event.seq and record.at == event.at
        assert record.prefix_sha256 == event.payload.prefix_sha256
        assert record.total_tokens == event.payload.total_tokens
        assert record.tokens_by_class == dict(event.payload.tokens_by_class)
        assert record.tokens_by_layer == dict(event.payload.tokens_by_layer)
        assert record.yields == tuple(event.payload.yields)
        assert record.pressure == event.payload.pressure
        assert record.model == "claude-sonnet-4-6" and record.provider == "anthropic"


def test_records_follow_the_plan_of_their_epoch(driven):
    records = request_records(driven.events)
    rotated = next(r for r in records if r.epoch == 2)

    # Check: the window changes with the epoch, and the rotation is named on the first request after it.
    assert {r.context_window for r in records if r.epoch == 1} == {WINDOW}
    assert {r.context_window for r in records if r.epoch == 2} == {ROTATED_WINDOW}
    assert "epoch:model_changed" in rotated.changes
    assert rotated.epochs_so_far == 2 and records[0].epochs_so_far == 1
    assert sum(1 for e in driven.events if e.type == "message.user" and e.seq < rotated.seq) == ROTATE_AT_TURN


def test_relief_counters_and_changes_match_the_log(driven):
    records = request_records(driven.events)
    for record in records:
        before = [e for e in driven.events if e.seq < record.seq]
        assert record.compactions_so_far == sum(1 for e in before if e.type == "context.compacted")
        assert record.prunes_so_far == sum(1 for e in before if e.type == "context.pruned")
    # Check: every change is reported once, on the first request after it.
    changes = [c for r in records for c in r.changes]
    assert changes.count("pruned") == sum(1 for e in driven.events if e.type == "context.pruned")
    compactions = [f"compacted:{e.payload.trigger}" for e in driven.events if e.type == "context.compacted"]
    assert sorted(c for c in changes if c.startswith("compacted:")) == sorted(compactions)
    assert "compacted:manual" in changes


def test_provider_usage_is_matched_by_index_or_to_the_latest_request(driven):
    records = request_records(driven.events)
    by_index = {r.index: r for r in driven.report.requests}
    for record in records:
        if record.request_index % 2 and record.request_index != UNINDEXED_RESPONSE_AT:
            # Check: no response, no usage and no cost.
            assert record.usage is None and record.cost_usd is None and record.usage_source is None
            assert record.cache_read_share is None
            continue
        expected = reported_usage(by_index[record.request_index])
        assert (
            record.input_tokens,
            record.cache_read_tokens,
            record.cache_write_5m_tokens,
            record.cache_write_1h_tokens,
            record.output_tokens,
        ) == (expected.input_tokens, expected.cache_read_tokens, expected.cache_write_5m_tokens, 0, expected.output_tokens)
        assert record.usage_source == "provider"
        assert record.responded_at is not None and record.responded_at > record.at
        # Check: the cost is the pricing table's, exactly, on the request's day.
        assert record.cost_usd == cost(record.usage, price_for("claude-sonnet-4-6", record.at.date()))
    assert records[UNINDEXED_RESPONSE_AT].usage is not None


def test_projection_adds_what_the_log_grew_by_before_the_next_request():
    user = UserMessage(text="x" * 400)
    call = AssistantMessage(tool_calls=(ToolCall(id="c1", name="grep", arguments={}),))
    # The call costs 10 tokens here, so the answer is 40 characters short of 800 to keep the growth at +300.
    answer = ToolResult(call_id="c1", tool_name="grep", output="y" * 760)
    events = hand_log(built(0, 1000), user, built(1, 1200), call, answer, user, built(2, 1500), UserMessage(text="late " * 100))
    records = request_records(events, estimator=CharEstimator())

    # Check: +100 tokens after request 0, +300 after request 1, the last gets their mean (200).
    assert [r.projected_next_tokens for r in records] == [1100, 1500, 1700]


def test_a_single_request_projects_no_growth():
    [record] = request_records(hand_log(built(0, 900), UserMessage(text="z" * 80)), estimator=CharEstimator())
    assert record.projected_next_tokens == 900
    assert record.model == "unknown" and record.context_window is None


def test_sessions_are_kept_apart_and_records_are_deterministic(driven):
    log = InMemoryEventLog(clock=FixedClock("2026-03-01T10:00:00Z"))
    log.append("a", [built(0, 100), UserMessage(text="hello there")], expected_seq=0)
    log.append("b", [built(0, 200)], expected_seq=0)
    records = request_records([*log.read("a"), *log.read("b")])
    assert [(r.session_id, r.request_index, r.total_tokens) for r in records] == [("a", 0, 100), ("b", 0, 200)]
    # Check: a second fold gives equal records (no clock, no randomness).
    assert request_records(driven.events) == request_records(driven.events)


def test_unpriced_models_have_usage_but_no_cost():
    usage = UsageRecord(input_tokens=10, output_tokens=5)
    events = hand_log(built(0, 100), ModelResponse(provider="anthropic", model="no-such-model", usage=usage, request_index=0))
    [record] = request_records(events)
    assert record.model == "no-such-model"  # no plan in the log: the response names the model
    assert record.usage == Usage(input_tokens=10, output_tokens=5) and record.cost_usd is None
    [unpriced] = request_records(events, price_lookup=None)
    assert unpriced.cost_usd is None and unpriced.usage is not None


# -- summaries -------------------------------------------------------------------------------


def test_summary_of_a_real_session(driven):
    summary = summarize(driven.events)
    records = request_records(driven.events)
    events = driven.events

    assert summary.session_id == "telemetry" and summary.events == len(events)
    assert summary.requests == len(records) and summary.epochs == 2
    assert summary.prefix_hashes_by_epoch == {1: 1, 2: 1} and not summary.prefix_drift
    assert summary.model == "claude-sonnet-4-6" and summary.context_window == ROTATED_WINDOW
    assert summary.started_at == events[0].at and summary.ended_at == events[-1].at
    assert summary.compactions_by_trigger["manual"] == 1
    assert summary.compactions == sum(1 for e in events if e.type == "context.compacted")
    assert summary.prunes == sum(1 for e in events if e.type == "context.pruned")
    assert summary.yields_by_kind == {
        kind: sum(r.yields.count(kind) for r in records) for kind in {y for r in records for y in r.yields}
    }
    assert summary.peak_request_tokens == max(r.total_tokens for r in records)
    assert summary.memory_candidates_offered == len(next(e for e in events if e.type == "memory.candidates").payload.facts)

    # Check: the cache share is token-weighted, not a mean of per-request shares.
    measured = [r for r in records if r.usage is not None]
    assert summary.requests_with_usage == len(measured) == 20
    assert summary.cache_read_share == pytest.approx(
        sum(r.cache_read_tokens for r in measured) / sum(r.usage.total_input for r in measured)
    )
    assert summary.total_cost_usd == sum((r.cost_usd for r in measured), Decimal(0))


def test_summary_sizes_no_text_and_equals_the_summary_of_full_records(driven, driven_without_usage, monkeypatch):
    # A summary reads no projection, so it never estimates the texts the log grew by.
    expected = [summarize(d.events, records=request_records(d.events)) for d in (driven, driven_without_usage)]

    class RefusingEstimator:
        def estimate(self, text: str, *, model: str, kind: str | None = None) -> int:
            raise AssertionError("a summary sized a text")

    monkeypatch.setattr("contextwright.telemetry.records.HeuristicEstimator", RefusingEstimator)
    assert [summarize(d.events) for d in (driven, driven_without_usage)] == expected


def test_summary_without_usage_says_none(driven_without_usage):
    summary = summarize(driven_without_usage.events)
    assert summary.requests_with_usage == 0
    assert summary.cache_read_share is None and summary.total_cost_usd is None
    assert summary.epochs == 1


@pytest.mark.moves_cache_prefix(reason="a hand-made log with two prefix hashes in one epoch, to see the drift reported")
def test_overflows_archive_failures_denials_and_withheld_candidates_are_counted():
    def compacted(trigger: str, *, failed: bool = False) -> Compacted:
        return Compacted(
            epoch=1, upto_seq=1, summary="s", depth=1, source_event_seqs=(1,), trigger=trigger, archive_failed=failed
        )

    events = hand_log(
        built(0, 100),
        compacted("overflow"),
        ContextOverflow(request_index=0, recovered=True),
        compacted("pressure", failed=True),
        Pruned(epoch=1, upto_seq=1, call_ids=("c1",)),
        built(1, 120, yields=("recall", "compaction"), prefix="sha256:bb"),
        AssistantMessage(tool_calls=(ToolCall(id="c9", name="deploy", arguments={}),)),
        ToolResult(call_id="c9", tool_name="deploy", output="Permission denied", is_error=True, denied=True),
        MemoryCandidates(facts=("a", "b"), withheld=3),
    )
    summary = summarize(events)
    assert summary.overflow_recoveries == 1 and summary.overflows == 1 and summary.archive_failures == 1
    assert summary.compactions_by_trigger == {"overflow": 1, "pressure": 1}
    assert summary.prunes == 1 and summary.denied_tool_calls == 1
    assert summary.memory_candidates_offered == 2 and summary.memory_candidates_withheld == 3
    assert summary.yields_by_kind == {"compaction": 1, "recall": 1}
    # Check: two prefix hashes in one epoch is reported as drift.
    assert summary.prefix_hashes_by_epoch == {1: 2} and summary.prefix_drift
    assert summary.model is None and summary.epochs == 1  # no plan event: epochs come from the requests


def test_summarize_refuses_mixed_or_empty_input(driven):
    other = hand_log(built(0, 100), session_id="other")
    with pytest.raises(UsageError, match="one session"):
        summarize([*driven.events, *other])
    with pytest.raises(UsageError, match="without events"):
        summarize([])
    with pytest.raises(UsageError, match="another session"):
        summarize(driven.events, records=request_records(other))


def test_store_summary_covers_every_session(tmp_path):
    with SQLiteEventLog(tmp_path / "store.db", clock=FixedClock("2026-03-01T10:00:00Z")) as log:
        log.append("b", [built(0, 300)], expected_seq=0)
        log.append("a", [built(0, 100), built(1, 150)], expected_seq=0)
        summaries = store_summary(log)
    assert [(s.session_id, s.requests, s.peak_request_tokens) for s in summaries] == [("a", 2, 150), ("b", 1, 300)]


# -- simulated usage -------------------------------------------------------------------------


def test_with_usage_fills_only_the_gaps(driven):
    records = request_records(driven.events)
    simulated = {r.request_index: Usage(input_tokens=50, cache_read_tokens=r.total_tokens, output_tokens=10) for r in records}
    filled = with_usage(records, simulated)

    for before, after in zip(records, filled):
        if before.usage is not None:
            # Check: what the provider reported is never overwritten.
            assert after == before
        else:
            assert after.usage_source == "simulated" and after.usage == simulated[before.request_index]
            assert after.cost_usd == cost(after.usage, price_for(after.model, after.at.date()))
            assert after.responded_at is None
    summary = summarize(driven.events, records=filled)
    assert summary.requests_with_usage == len(records)


def test_with_usage_uses_the_given_price_lookup():
    [record] = request_records(hand_log(built(0, 100)))
    seen: list[tuple[str, date]] = []

    def lookup(model: str, day: date):
        seen.append((model, day))
        return price_for("claude-haiku-4-5", day)

    [priced] = with_usage([record], {0: Usage(input_tokens=1_000_000)}, lookup)
    assert priced.cost_usd == Decimal("1.00") and seen == [("unknown", date(2026, 3, 1))]
    [free] = with_usage([record], {0: Usage(input_tokens=1_000_000)}, None)
    assert free.cost_usd is None and free.usage is not None


def test_with_usage_refuses_unknown_indexes_and_mixed_sessions():
    [record] = request_records(hand_log(built(0, 100)))
    with pytest.raises(UsageError, match=r"\[1\]"):
        with_usage([record], {1: Usage()})
    other = RequestRecord(**{**{f: getattr(record, f) for f in RequestRecord.__dataclass_fields__}, "session_id": "x"})
    with pytest.raises(UsageError, match="one session"):
        with_usage([record, other], {})
