"""Relief comes early when the provider's cache has expired since the previous request.

After a pause longer than the cache lifetime the next request writes its whole history
again whatever it carries, so pruning (and, above the level, compacting) then costs no
cache read, where the same pass a few requests later would rewrite a cached history.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from contextwright.budget.allocator import allocate
from contextwright.errors import UsageError
from contextwright.events import AssistantMessage, ToolCall
from contextwright.models import openai, with_window
from contextwright.plan.budgets import BudgetConfig
from contextwright.providers.capabilities import capabilities_for
from contextwright.runtime.engine import Engine
from contextwright.runtime.facts import LogFacts
from contextwright.telemetry.records import summarize
from contextwright.testing.fakes import TEST_SECRET, open_session, sample_agent, sample_model

WINDOW = 32_000
SHORT = 4 * 60
"""A pause the Anthropic cache (5 minutes) outlives."""
LONG = 6 * 60


def _module(turn: int) -> str:
    return "".join(f"def total_{turn}_{i}(rows):\n    return sum(r.amount for r in rows) * {i}\n\n" for i in range(12))


def _write_modules(session, clock, rounds: int, *, results_mark: int | None = 16_000) -> None:
    if results_mark is not None:
        # A results mark that this run's edits reach: then relief after a pause is a pruning pass,
        # not a compaction of the calls' arguments.
        session.setup.budgets = replace(session.setup.budgets, tool_results_floor_tokens=results_mark)
    session.user("Write the billing modules one by one.")
    for turn in range(rounds):
        session.next_request()
        call = ToolCall(id=f"w{turn}", name="edit_file", arguments={"path": f"billing/m{turn}.py", "content": _module(turn)})
        session.adapter.record_assistant(AssistantMessage(text=f"Writing module {turn}.", tool_calls=(call,)))
        session.tool_result(call.id, _module(turn))
        clock.advance(20)
    session.next_request()
    session.adapter.record_assistant(AssistantMessage(text="Done with the first batch."))


def _after_pause(session, clock, pause: float):
    clock.advance(pause)
    session.user("Now check the totals.")
    return session.next_request()


def _relief(session) -> list[str]:
    return [e.payload.relief for e in session.history.events if e.type == "context.layer.truncated"]


@pytest.mark.parametrize(("pause", "expected"), [(SHORT, ()), (LONG, ("tool_results_to_pointers",))])
def test_a_pause_longer_than_the_cache_lifetime_prunes_before_pressure(pause, expected):
    _, session, clock = open_session("pause", window=WINDOW)
    _write_modules(session, clock, rounds=20)
    before = _relief(session)
    built = _after_pause(session, clock, pause)
    # Check the request fits without pressure, and relieves only when the cache has expired.
    assert built.result.pressure == "none"
    assert built.result.yields == expected
    assert _relief(session)[len(before) :] == list(expected)
    assert session.inspect(built.index).sha256() == built.neutral.sha256()


def test_compaction_follows_when_pruning_leaves_the_request_above_the_level():
    _, session, clock = open_session("pause", window=WINDOW)
    # A deep low-water mark, so the results stand above it and the pass runs before the compaction.
    session.setup.budgets = BudgetConfig(relief_tool_results_target=0.25, tool_results_floor_tokens=0)
    _write_modules(session, clock, rounds=27, results_mark=None)
    before = [e for e in session.history.events if e.type == "context.request.built"][-1].payload
    built = _after_pause(session, clock, LONG)
    assert built.result.yields == ("tool_results_to_pointers", "compaction")
    # The older part is folded: the request stands at the relief target, well under half what it was.
    assert built.result.total_tokens < min(before.total_tokens // 2, built.plan.budgets.relief_target * WINDOW)
    # Check the log says why a body that fit was folded.
    [compacted] = [e.payload for e in session.history.events if e.type == "context.compacted"]
    assert compacted.trigger == "cache_expired"
    assert summarize(session.history.events).compactions_by_trigger == {"cache_expired": 1}
    assert session.inspect(built.index).sha256() == built.neutral.sha256()


def test_a_second_worker_decides_alike(tmp_path):
    # One process builds every request; another reopens the session from the store (its
    # checkpoint) for the request after the pause. Both read the pause from the log.
    requests = {}
    for name, reopen in (("one", False), ("two", True)):
        url = f"sqlite:///{tmp_path / name}.db"
        engine, session, clock = open_session("pause", url=url, window=WINDOW)
        _write_modules(session, clock, rounds=20)
        if reopen:
            engine.close()
            engine = Engine.open(url, clock=clock, secret=TEST_SECRET)
            session = engine.session("pause", agent=sample_agent(), model=sample_model(WINDOW))
        requests[name] = _after_pause(session, clock, LONG)
        engine.close()
    assert requests["one"].result.yields == requests["two"].result.yields == ("tool_results_to_pointers",)
    assert requests["one"].neutral.sha256() == requests["two"].neutral.sha256()


def test_an_openai_cache_outlives_the_same_pause():
    engine, _, clock = open_session("unused", window=WINDOW)
    session = engine.session("openai", agent=sample_agent(), model=with_window(openai("gpt-4.1"), WINDOW))
    _write_modules(session, clock, rounds=20)
    built = _after_pause(session, clock, LONG)
    assert built.result.yields == ()


def test_the_level_can_turn_early_relief_off():
    _, session, clock = open_session("pause", window=WINDOW)
    session.setup.budgets = BudgetConfig(expired_cache_relief=1.0)
    _write_modules(session, clock, rounds=20)
    assert _after_pause(session, clock, LONG).result.yields == ()
    with pytest.raises(UsageError, match="expired_cache_relief"):
        BudgetConfig(expired_cache_relief=1.5)
    with pytest.raises(UsageError, match="expired_results_relief"):
        BudgetConfig(expired_results_relief=1.5)


def test_cache_lifetimes_follow_each_providers_rules():
    assert capabilities_for(sample_model()).history_cache_lifetime == timedelta(minutes=5)
    assert capabilities_for(openai("gpt-5")).history_cache_lifetime == timedelta(hours=24)
    assert capabilities_for(openai("gpt-4o")).history_cache_lifetime == timedelta(hours=1)
    assert capabilities_for(openai("gpt-5"), cache_retention="in_memory").history_cache_lifetime == timedelta(hours=1)


def test_a_checkpoint_keeps_when_the_last_request_and_event_were_recorded():
    _, session, clock = open_session("pause", window=WINDOW)
    _write_modules(session, clock, rounds=3)
    folded = LogFacts().follow(session.history.events)
    restored = LogFacts.restore(folded.snapshot())
    built = [e for e in session.history.events if e.type == "context.request.built"][-1]
    assert (restored.last_built_at, restored.last_event_at) == (built.at, session.history.events[-1].at)
    assert (folded.last_built_at, folded.last_event_at) == (built.at, session.history.events[-1].at)


def _view(turn: int) -> str:
    return "".join(f"{n:4d}  def check_{turn}_{n}(ledger):  return ledger.balance({n}) >= 0\n" for n in range(1, 101))


def _read_views(session, clock):
    """Ten file views, about 38k tokens of results at 200k: near their high-water mark, far under the input limit."""
    session.user("Read the ledger checks one file at a time.")
    for turn in range(10):
        session.next_request()
        call = ToolCall(id=f"r{turn}", name="read_file", arguments={"path": f"ledger/checks_{turn}.py"})
        session.adapter.record_assistant(AssistantMessage(text=f"Reading file {turn}.", tool_calls=(call,)))
        session.tool_result(call.id, _view(turn))
        clock.advance(20)
    last = session.next_request()
    session.adapter.record_assistant(AssistantMessage(text="All read."))
    return last


@pytest.mark.parametrize(("pause", "expected"), [(SHORT, ()), (LONG, ("tool_results_to_pointers",))])
def test_with_a_large_window_results_near_their_mark_are_pruned_after_a_pause(pause, expected):
    # At 200k the request stands far below the expired level of its input limit, but the tool
    # results stand near their own high-water mark (B2): the pass that mark soon asks for is free now.
    _, session, clock = open_session("pause-wide", window=200_000)
    last = _read_views(session, clock)
    allocation, budgets = allocate(last.plan), last.plan.budgets
    results = last.result.tokens_by_class["tool_results"]
    assert allocation.tool_results_high * budgets.expired_results_relief < results < allocation.tool_results_high
    assert last.result.total_tokens < allocation.input_limit * budgets.expired_cache_relief
    built = _after_pause(session, clock, pause)
    assert built.result.yields == expected
    if expected:
        assert built.result.tokens_by_class["tool_results"] < results
    assert session.inspect(built.index).sha256() == built.neutral.sha256()


def test_the_results_level_can_be_turned_off():
    _, session, clock = open_session("pause-wide", window=200_000)
    session.setup.budgets = BudgetConfig(expired_results_relief=1.0)
    _read_views(session, clock)
    assert _after_pause(session, clock, LONG).result.yields == ()
