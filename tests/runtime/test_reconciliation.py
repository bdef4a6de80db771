"""Estimates reconciled from provider usage: the split, learning on the estimated part, rebuilt from the log."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from contextwright.budget._reconcile import DEFAULT_MARGIN, UsageFold, reconciled_total
from contextwright.budget.estimator import HeuristicEstimator
from contextwright.clock import FixedClock
from contextwright.log.memory import InMemoryEventLog
from contextwright.models import openai as openai_model
from contextwright.runtime.engine import Engine
from contextwright.runtime.session import Session
from contextwright.testing.fakes import TEST_SECRET, sample_agent, sample_model


def _answer(session: Session, total_input: int, *, text: str = "Done.") -> None:
    """Record an Anthropic-shaped answer whose usage reports ``total_input`` input tokens."""
    cached = total_input // 2
    session.record(
        {
            "id": f"msg_{len(session.history.events)}",
            "type": "message",
            "role": "assistant",
            "model": session.model.id,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": total_input - cached, "cache_read_input_tokens": cached, "output_tokens": 7},
        }
    )


def _built(session: Session) -> list[Any]:
    return [e.payload for e in session.history.events if e.type == "context.request.built"]


def _turns(session: Session, ratio: float, rounds: int) -> None:
    """``rounds`` user turns, each answered with a provider total of exact part + ``ratio`` x raw estimate."""
    for turn in range(rounds):
        session.user(f"Turn {turn}: look at the billing export and tell me what fails. " * 20)
        session.next_request()
        last = _built(session)[-1]
        _answer(session, last.exact_tokens + round(ratio * last.raw_estimate_tokens))


def _engine(log: Any) -> Engine:
    return Engine(log, clock=FixedClock("2026-03-01T22:30:00Z"), secret=TEST_SECRET)


def test_a_supplied_empty_estimator_is_kept() -> None:
    # An empty HeuristicEstimator has a length of 0 and is falsy: it must still be the one used.
    estimator = HeuristicEstimator()
    assert not estimator
    engine = Engine(InMemoryEventLog(), clock=FixedClock(), secret=TEST_SECRET, estimator=estimator)
    assert engine.estimator is estimator
    session = engine.session("s", agent=sample_agent(), model=sample_model())
    assert session.setup.estimator is estimator
    direct = Session(
        log=InMemoryEventLog(),
        session_id="d",
        agent=sample_agent(),
        model=sample_model(),
        clock=FixedClock(),
        secret=TEST_SECRET,
        estimator=estimator,
    )
    assert direct.setup.estimator is estimator


def test_an_estimated_prefix_joins_the_estimated_part() -> None:
    session = _engine(InMemoryEventLog()).session("s", agent=sample_agent(), model=sample_model())
    session.user("Fix CI.")
    request = session.next_request()
    [built] = _built(session)
    # Check Claude has no public tokenizer: the prefix is estimated, so nothing is exact.
    assert request.plan.measured_by.startswith("estimate")
    assert built.exact_tokens == 0
    assert built.raw_estimate_tokens >= request.plan.prefix_token_total + request.result.body_tokens // 2
    assert built.estimate_factor == 1.0
    assert reconciled_total(built) == built.raw_estimate_tokens


def test_an_exactly_counted_prefix_is_kept_apart() -> None:
    pytest.importorskip("tiktoken", reason="exact prefix counts need the tiktoken extra")
    session = _engine(InMemoryEventLog()).session("s", agent=sample_agent(), model=openai_model("gpt-4.1"))
    session.user("Fix CI.")
    request = session.next_request()
    [built] = _built(session)
    assert request.plan.measured_by.startswith("exact")
    assert built.exact_tokens == request.plan.prefix_token_total > 0
    assert built.raw_estimate_tokens > 0
    assert reconciled_total(built) == built.exact_tokens + built.raw_estimate_tokens


def test_learning_on_the_estimated_part_converges_to_the_true_ratio() -> None:
    pytest.importorskip("tiktoken", reason="exact prefix counts need the tiktoken extra")
    # A true ratio of 1.2 on the estimated part, with a large exactly counted prefix: the
    # factor settles just above 1.2 (not at the 2.0 clamp, which dividing the whole total did).
    session = _engine(InMemoryEventLog()).session("s", agent=sample_agent(), model=openai_model("gpt-4.1"))
    _turns(session, 1.2, 6)
    session.user("And the summary?")
    session.next_request()
    factor = _built(session)[-1].estimate_factor
    assert 1.2 < factor <= 1.2 * math.exp(DEFAULT_MARGIN) + 1e-9
    # Check the projected total covers what the provider will report, with little slack.
    last = _built(session)[-1]
    actual = last.exact_tokens + round(1.2 * last.raw_estimate_tokens)
    assert actual <= reconciled_total(last) <= actual * math.exp(DEFAULT_MARGIN)


def test_an_overestimate_shrinks_only_after_the_warmup() -> None:
    session = _engine(InMemoryEventLog()).session("s", agent=sample_agent(), model=sample_model())
    _turns(session, 0.8, 3)
    factors = [b.estimate_factor for b in _built(session)]
    # No report before the first request, one before the second: both stay uncorrected.
    assert factors[:2] == [1.0, 1.0]
    assert 0.8 < factors[2] < 0.9
    assert [r.payload.estimated_input_tokens for r in session.history.events if r.type == "model.response"] == [
        reconciled_total(b) for b in _built(session)
    ]


def test_a_response_to_a_request_logged_before_the_split_teaches_nothing() -> None:
    session = _engine(InMemoryEventLog()).session("s", agent=sample_agent(), model=sample_model())
    _turns(session, 0.8, 1)
    events = session.history.events
    assert UsageFold().feed(events).correction(session.model.id).observations == 1
    # Strip the split as an older log has it: its total mixes both parts, so the fold skips it.
    old = [
        replace(e, payload=replace(e.payload, exact_tokens=None, raw_estimate_tokens=None, estimate_factor=None))
        if e.type == "context.request.built"
        else e
        for e in events
    ]
    assert UsageFold().feed(old).correction(session.model.id).observations == 0


def _log_opener(tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> Callable[[], Any]:
    """Opens independent handles on one store (two workers, or before and after a restart)."""
    if backend == "sqlite":
        from contextwright.log.sqlite import SQLiteEventLog

        path = tmp_path / "store.db"
        return lambda: SQLiteEventLog(path, clock=FixedClock())
    from contextwright.log.postgres import PostgresEventLog

    dsn = request.getfixturevalue("postgres_dsn")
    schema = request.getfixturevalue("postgres_schema")
    return lambda: PostgresEventLog(dsn, schema=schema, clock=FixedClock())


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_factor_is_rebuilt_from_the_log_after_a_restart(tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> None:
    open_log = _log_opener(tmp_path, backend, request)
    with _engine(open_log()) as engine:
        session = engine.session("s", agent=sample_agent(), model=sample_model())
        _turns(session, 0.8, 4)
        learned = UsageFold().feed(session.history.events).factor(session.model.id)
    assert learned < 1.0
    # Check a restarted process, with a fresh estimator, lands on the same factor and builds with it.
    with _engine(open_log()) as engine:
        reopened = engine.session("s", agent=sample_agent(), model=sample_model())
        reopened.user("One more thing.")
        reopened.next_request()
        assert _built(reopened)[-1].estimate_factor == learned


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_two_workers_on_one_store_land_on_the_same_factor(tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> None:
    open_log = _log_opener(tmp_path, backend, request)
    with _engine(open_log()) as first, _engine(open_log()) as second:
        a = first.session("s", agent=sample_agent(), model=sample_model())
        b = second.session("s", agent=sample_agent(), model=sample_model())  # opened before any usage
        _turns(a, 0.8, 3)
        b.user("Worker two takes the next turn.")
        b.next_request()
        _answer(b, _built(b)[-1].raw_estimate_tokens * 4 // 5)
        a.user("Worker one again.")  # a reads b's request and b's usage like its own
        a.next_request()
        factors_b = [p.estimate_factor for p in _built(b)]
        factors_a = [p.estimate_factor for p in _built(a)]
        assert factors_a == factors_b
        assert factors_a[-1] < 1.0
        # And the request b built rebuilds byte for byte on a.
        rebuilt, record = a.history.rebuild(3)
        assert rebuilt.sha256() == record.request_sha256


def test_a_replayed_transcripts_usage_teaches_nothing() -> None:
    session = _engine(InMemoryEventLog()).session("s", agent=sample_agent(), model=sample_model())
    _turns(session, 0.8, 1)
    events = session.history.events
    # The same report, marked as belonging to a replayed transcript's original request.
    replayed = [replace(e, payload=replace(e.payload, replayed=True)) if e.type == "model.response" else e for e in events]
    assert UsageFold().feed(replayed).correction(session.model.id).observations == 0
    assert UsageFold().feed(events).correction(session.model.id).observations == 1
