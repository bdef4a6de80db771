"""The strategies, on synthetic coding sessions small enough to read in a test."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta

import pytest

from contextwright.clock import FixedClock
from contextwright.compare import (
    CACHE_RULES,
    CEILING,
    MODEL_CALL_PACE,
    SLIDE_TO,
    STRATEGIES,
    CacheRules,
    EngineSettings,
    TokenCounter,
    aggregate,
    baseline_requests,
    cache_rules_named,
    compare,
    compare_transcript,
    comparison_rows,
    counted_usage,
    engine_requests,
    exact_counting_available,
    sliding_window_requests,
    timeline_of,
)
from contextwright.errors import UsageError
from contextwright.importers.model import ToolCall, ToolResult, Transcript, TranscriptMessage
from contextwright.log import open_log
from contextwright.models import anthropic, with_window
from contextwright.pricing.cache_sim import AnthropicCacheSimulator, SimRequest, render_anthropic_blocks
from contextwright.replay import replay
from contextwright.replay.transcript import REPLAY_BUDGETS
from contextwright.report.html import COMPARISON_COLUMNS
from contextwright.runtime.engine import Engine

TASK = "Fix the rounding error in the invoice totals. You must not change the public API of billing."
SYSTEM = "\n".join(
    f"Rule {i}: when you work on module {i}, read its tests first, keep the change small and explain why it is safe."
    for i in range(60)
)
SMALL = 16_000
LARGE = 200_000
START = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)


def _output(rng: random.Random, turn: int, chars: int) -> str:
    words = (
        "total",
        "amount",
        "invoice",
        "rounding",
        "Decimal",
        "quantize",
        "customer",
        "ledger",
        "tax",
        "line",
    )
    lines = [f"# billing/module_{turn}.py"]
    while sum(len(line) + 1 for line in lines) < chars:
        lines.append(
            f"def {rng.choice(words)}_{rng.randrange(10_000)}(x): return x * {rng.randrange(1000)} + {rng.choice(words)}"
        )
    return "\n".join(lines)


def session(
    *,
    turns: int = 30,
    chars: int = 6_000,
    timed: bool = True,
    gap: timedelta = timedelta(seconds=10),
) -> Transcript:
    """A coding session: the task, then ``turns`` file reads with big outputs, then an answer."""
    rng = random.Random(turns * 1_000 + chars)
    clock = iter(START + i * gap for i in range(10 * turns + 10))

    def at() -> str | None:
        return next(clock).strftime("%Y-%m-%dT%H:%M:%S.%fZ") if timed else None

    messages = [TranscriptMessage(role="user", text=TASK, at=at())]
    for turn in range(turns):
        call = ToolCall(id=f"call_{turn}", name="read_file", arguments={"path": f"billing/module_{turn}.py"})
        messages.append(TranscriptMessage(role="assistant", text=f"Reading module {turn}.", tool_calls=(call,), at=at()))
        messages.append(
            TranscriptMessage(
                role="tool",
                text="",
                tool_results=(ToolResult(call_id=call.id, output=_output(rng, turn, chars)),),
                at=at(),
            )
        )
    messages.append(TranscriptMessage(role="assistant", text="The rounding now uses Decimal.quantize; tests pass.", at=at()))
    return Transcript(
        session_id=f"synthetic-{turns}",
        format="synthetic",
        source="test",
        messages=tuple(messages),
        system=SYSTEM,
        task=TASK,
    )


@pytest.fixture(scope="module")
def small() -> dict[str, object]:
    return {r.name: r for r in compare_transcript(session(), window=SMALL)}


@pytest.fixture(scope="module")
def large() -> dict[str, object]:
    return {r.name: r for r in compare_transcript(session(), window=LARGE)}


def _limit(window: int) -> int:
    model = with_window(anthropic("claude-sonnet-4-6"), window)
    return model.context_window - model.output_reserve


def test_every_strategy_makes_the_same_model_calls(small, large):
    assert tuple(small) == STRATEGIES and tuple(large) == STRATEGIES
    assert {r.requests for r in (*small.values(), *large.values())} == {31}


def test_the_ceiling_reads_the_most_from_cache(small, large):
    for results in (small, large):
        ceiling = results[CEILING]
        assert ceiling.relative_input_cost == 1.0 and ceiling.overflows == 0
        for name, result in results.items():
            if name not in (CEILING, "contextwright"):
                assert result.cache_read_share <= ceiling.cache_read_share, name
    assert large[CEILING].cache_read_share > 0.9


def test_keep_all_overflows_at_a_small_window_and_caches_only_the_system_prompt(small, large):
    keep_all = small["keep_all_single_breakpoint"]
    assert keep_all.overflows > 10 and keep_all.peak_request_tokens > _limit(SMALL)
    assert large["keep_all_single_breakpoint"].overflows == 0
    assert keep_all.cache_read_share < 0.15
    assert keep_all.relative_input_cost > 3


def test_a_volatile_block_after_the_system_prompt_breaks_every_history_read(large):
    volatile = large["volatile_after_system"]
    system_tokens = TokenCounter().block({"type": "text", "text": timeline_of(session()).system})
    tools_tokens = sum(TokenCounter().block(t) for t in timeline_of(session()).tools)
    # Nothing beyond the system prompt (and the tools before it) is ever read back.
    assert volatile.usage.cache_read_tokens <= volatile.requests * (system_tokens + tools_tokens)
    assert volatile.cache_read_share < 0.15
    assert volatile.input_cost > large["keep_all_single_breakpoint"].input_cost  # and it writes the history every time


def test_the_sliding_window_fits_but_loses_the_task(small, large):
    sliding = small["sliding_window"]
    assert sliding.overflows == 0 and sliding.peak_request_tokens <= _limit(SMALL)
    assert sliding.task_visible is not None and sliding.task_visible < 0.5
    assert large["sliding_window"].task_visible == 1.0
    # Each trim rewrites the history after the system prompt: less is read back than keeping all.
    assert sliding.cache_read_share < small[CEILING].cache_read_share


def test_the_summarizer_fires_and_keeps_reading_its_summary(small, large):
    summary, keep_all = small["summarize_at_threshold"], small["keep_all_single_breakpoint"]
    # It shrinks the request far below keep-all's, but the newest messages it keeps
    # verbatim can still be too big for a small window on their own.
    assert summary.peak_request_tokens < keep_all.peak_request_tokens / 4
    assert summary.task_visible is not None and summary.task_visible < 1.0  # the stand-in summary quotes nothing
    assert summary.cache_read_share > small["keep_all_single_breakpoint"].cache_read_share
    assert large["summarize_at_threshold"].task_visible == 1.0  # never fired at 200k


@pytest.mark.skipif(
    not exact_counting_available(),
    reason='the fit is measured with exact o200k counts (pip install "contextwright[tiktoken]"); '
    "the heuristic fallback over-counts JSON bodies, so it is a quick look only",
)
def test_contextwright_never_overflows_and_keeps_the_task_visible(small, large):
    for results, window in ((small, SMALL), (large, LARGE)):
        engine = results["contextwright"]
        assert engine.overflows == 0
        assert engine.peak_request_tokens <= _limit(window)
        assert engine.task_visible == 1.0
    assert small["contextwright"].input_cost < small["sliding_window"].input_cost


def test_contextwright_reads_as_much_as_the_ceiling_when_the_window_is_roomy():
    # Thirty results that fit their share (B2) at 200k: nothing is pruned, and appends read what the ceiling reads.
    fits = {r.name: r for r in compare_transcript(session(chars=2_500), window=LARGE, strategies=("contextwright", CEILING))}
    assert fits["contextwright"].cache_read_share >= 0.99 * fits[CEILING].cache_read_share


def test_a_pass_over_the_tool_result_share_reads_everything_in_front_of_its_change(large):
    # Thirty 6,000-character results are over their share even at 200k: the build prunes the
    # oldest in one deep pass, below any pressure. The request after it reads every block it
    # still shares with the request before (the settled cache marker), and the session costs
    # about what keeping everything costs: a pass now leaves half the share whole (the model
    # keeps more of what it reads), so the rewrites it pays for are no longer all won back.
    transcript = session()
    timeline = timeline_of(transcript)
    clock = FixedClock(step=1)
    engine = Engine(open_log("memory://", clock=clock), clock=clock, secret=b"s" * 32)
    built = replay(transcript, engine=engine, model=with_window(anthropic("claude-sonnet-4-6"), LARGE)).requests
    counter = TokenCounter()
    simulator = AnthropicCacheSimulator(count_tokens=counter, check_context_window=False)
    previous: list[object] | None = None
    passes = 0
    for request, call in zip(built, timeline.calls, strict=True):
        body = request.anthropic()
        usage = simulator.request(SimRequest(at=call.at, body=body)).usage
        blocks = render_anthropic_blocks(body)
        identities = [b.identity for b in blocks]
        if "tool_results_to_pointers" in request.result.yields:
            passes += 1
            assert request.result.pressure == "none"
            assert previous is not None
            shared = next(i for i, (a, b) in enumerate(zip(identities, previous, strict=False)) if a != b)
            assert usage.cache_read_tokens == sum(counter(b.text) for b in blocks[:shared])
        previous = identities
    assert passes >= 1
    assert large["contextwright"].relative_input_cost < 1.01


def test_results_are_deterministic():
    first = compare_transcript(session(turns=12), window=SMALL)
    second = compare_transcript(session(turns=12), window=SMALL)
    assert first == second


def test_untimed_transcripts_get_a_fixed_pace_and_long_gaps_expire_the_cache():
    untimed = timeline_of(session(turns=4, timed=False))
    gaps = {b.at - a.at for a, b in zip(untimed.calls, untimed.calls[1:])}
    assert not untimed.timed and gaps == {MODEL_CALL_PACE}
    # Ten minutes between messages: every 5-minute cache entry is gone by the next call.
    slow = {r.name: r for r in compare_transcript(session(turns=6, gap=timedelta(minutes=10)), window=LARGE)}
    assert slow[CEILING].usage.cache_read_tokens == 0


def test_aggregate_sums_and_weights_by_tokens():
    one, two = session(turns=5), session(turns=9, chars=3_000)
    per = [compare_transcript(t, window=LARGE) for t in (one, two)]
    rows = {r.name: r for r in aggregate(per)}
    assert [r.name for r in compare([one, two], window=LARGE)] == list(STRATEGIES)
    for name, row in rows.items():
        parts = [next(r for r in results if r.name == name) for results in per]
        assert row.transcripts == 2 and row.requests == sum(p.requests for p in parts)
        assert row.input_cost == sum(p.input_cost for p in parts)
        assert row.cache_read_share == pytest.approx(
            sum(p.usage.cache_read_tokens for p in parts) / sum(p.usage.total_input for p in parts)
        )
        assert row.peak_request_tokens == max(p.peak_request_tokens for p in parts)
    assert rows[CEILING].relative_input_cost == 1.0


def test_comparison_rows_have_the_report_columns(large):
    rows = comparison_rows(large.values())
    assert [row["strategy"] for row in rows] == list(STRATEGIES)
    assert all(set(row) == set(COMPARISON_COLUMNS) for row in rows)


def test_unknown_strategies_are_refused():
    with pytest.raises(UsageError, match="unknown strategy 'lru'"):
        compare_transcript(session(turns=2), window=LARGE, strategies=("lru",))


def test_engine_requests_are_the_ones_the_contextwright_row_prices(small):
    sent = engine_requests(session(), window=SMALL)
    counter = TokenCounter()
    simulator = AnthropicCacheSimulator(count_tokens=counter, check_context_window=False)
    usage = [simulator.request(SimRequest(at=s.at, body=s.body)).usage for s in sent]
    row = small["contextwright"]
    assert len(sent) == row.requests
    assert sum(u.cache_read_tokens for u in usage) == row.usage.cache_read_tokens
    assert sum(u.total_input for u in usage) == row.usage.total_input


def test_baseline_requests_are_the_ones_the_ceiling_row_prices(large):
    sent = baseline_requests(session(), CEILING)
    simulator = AnthropicCacheSimulator(count_tokens=TokenCounter(), check_context_window=False)
    usage = [simulator.request(SimRequest(at=s.at, body=s.body)).usage for s in sent]
    assert len(sent) == large[CEILING].requests
    assert sum(u.cache_read_tokens for u in usage) == large[CEILING].usage.cache_read_tokens
    assert all(s.relief == () for s in sent)
    with pytest.raises(UsageError, match="unknown baseline 'contextwright'"):
        baseline_requests(session(turns=2), "contextwright")


def test_engine_requests_name_the_relief_their_build_took():
    sent = engine_requests(session(), window=SMALL)
    relieved = [s.relief for s in sent if s.relief]
    # A 16k window cannot keep thirty 6k-character reads: some builds prune or compact.
    assert any("tool_results_to_pointers" in r or "compaction" in r for r in relieved)
    assert not sent[0].relief


def test_cache_rules_of_one_date_apply_to_every_strategy():
    # The session is dated 2026-05-04, when Sonnet 4.6 cached from 2,048 tokens; from
    # 2026-05-13 on it caches from 1,024, so short prefixes are read only under the later rules.
    transcript = session(turns=6, chars=400)
    by_request = {r.name: r for r in compare_transcript(transcript, window=LARGE, strategies=(CEILING,))}
    later = {
        r.name: r for r in compare_transcript(transcript, window=LARGE, strategies=(CEILING,), cache_rules_on=date(2026, 11, 30))
    }
    earlier = {
        r.name: r for r in compare_transcript(transcript, window=LARGE, strategies=(CEILING,), cache_rules_on=date(2026, 3, 13))
    }
    assert earlier[CEILING].usage == by_request[CEILING].usage
    assert later[CEILING].usage.cache_read_tokens > by_request[CEILING].usage.cache_read_tokens
    assert later[CEILING].usage.total_input == by_request[CEILING].usage.total_input


def _trims(sent) -> list[int]:
    """Indices of requests whose messages are not an extension of the previous request's."""

    def plain(body):
        return [[{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]] for m in body["messages"]]

    out = []
    for i in range(1, len(sent)):
        before, now = plain(sent[i - 1].body), plain(sent[i].body)
        shared = before[:-1]  # the last message may grow by merged blocks
        if now[: len(shared)] != shared:
            out.append(i)
    return out


def test_the_sliding_window_trims_in_one_step_then_appends():
    sent = baseline_requests(session(), "sliding_window", window=SMALL)
    trims = _trims(sent)
    counter = TokenCounter()
    limit = _limit(SMALL)
    assert trims, "thirty 6,000-character reads overflow a 16k window"
    # Once full it does not slide on every call: a trim makes room for several appends.
    assert len(trims) <= (len(sent) - trims[0]) / 2
    for i in trims:
        assert _request_tokens(sent[i].body, counter) <= SLIDE_TO * limit


def _request_tokens(body, counter) -> int:
    tokens = sum(counter.block(b) for b in body["system"]) + sum(counter.block(t) for t in body.get("tools", ()))
    return tokens + sum(counter.block(b) for m in body["messages"] for b in m["content"])


def test_lenient_cache_rules_read_across_gaps_and_short_prefixes():
    # Twelve minutes between calls: every entry expires under the documented rules.
    transcript = session(turns=6, chars=400, gap=timedelta(minutes=12))
    documented = compare_transcript(transcript, window=LARGE, strategies=(CEILING,))[0]
    lenient = compare_transcript(transcript, window=LARGE, strategies=(CEILING,), cache_rules=cache_rules_named("lenient"))[0]
    assert documented.usage.cache_read_tokens == 0
    assert lenient.usage.cache_read_tokens > 0.5 * lenient.usage.total_input
    assert lenient.usage.total_input == documented.usage.total_input
    assert CACHE_RULES["documented"] == CacheRules()


def test_the_diagnostic_rule_sets_each_drop_one_documented_rule():
    # Long gaps over a large history: only expiry stops reads. A short history without gaps: only the minimum does.
    gapped = session(turns=6, chars=4_000, gap=timedelta(minutes=12))
    short = session(turns=2, chars=100)

    def read(transcript: Transcript, name: str) -> int:
        rules = cache_rules_named(name)
        return compare_transcript(transcript, window=LARGE, strategies=(CEILING,), cache_rules=rules)[0].usage.cache_read_tokens

    assert read(gapped, "documented") == read(gapped, "no_minimum") == 0 < read(gapped, "no_expiry")
    assert read(short, "documented") == read(short, "no_expiry") == 0 < read(short, "no_minimum")
    assert cache_rules_named("no_expiry", rules_on=date(2026, 11, 30)).expiry is False


def test_cache_rule_sets_refuse_what_they_cannot_mean():
    with pytest.raises(UsageError, match="unknown cache rules"):
        cache_rules_named("strict")
    with pytest.raises(UsageError, match="no minimum to date"):
        cache_rules_named("lenient", rules_on=date(2026, 11, 30))
    assert cache_rules_named("documented", rules_on=date(2026, 11, 30)).rules_on == date(2026, 11, 30)
    with pytest.raises(UsageError, match="not both"):
        compare_transcript(
            session(turns=2),
            window=LARGE,
            strategies=(CEILING,),
            cache_rules=CacheRules(),
            cache_rules_on=date(2026, 11, 30),
        )


def test_sliding_window_forms_for_measuring_how_its_form_matters():
    transcript = session()
    one_at_a_time = sliding_window_requests(transcript, window=SMALL, slide_to=1.0)
    default = sliding_window_requests(transcript, window=SMALL)
    assert [s.body for s in default] == [s.body for s in baseline_requests(transcript, "sliding_window", window=SMALL)]
    # Dropping one group at a time slides on every call once full.
    first = _trims(one_at_a_time)[0]
    assert _trims(one_at_a_time) == list(range(first, len(one_at_a_time)))
    assert len(_trims(default)) < len(_trims(one_at_a_time))
    counter = TokenCounter()
    tight = sliding_window_requests(transcript, window=SMALL, input_limit=8_000)
    sizes = [_request_tokens(s.body, counter) for s in tight]
    assert max(sizes) <= 8_000 < max(_request_tokens(s.body, counter) for s in default)
    with pytest.raises(UsageError, match="slide_to"):
        sliding_window_requests(transcript, window=SMALL, slide_to=0)


def _estimates_over_counted(*, reported: bool) -> list[float]:
    """Each request's estimated input over its counted input, in a replay with or without provider reports."""
    counter = TokenCounter()
    clock = FixedClock(step=1)
    engine = Engine(open_log("memory://", clock=clock), clock=clock, secret=b"s" * 32)
    try:

        def provider(built):
            return counted_usage(built.anthropic(), counter=counter)

        result = replay(
            session(turns=12, chars=2_000),
            engine=engine,
            model=with_window(anthropic("claude-sonnet-4-6"), LARGE),
            provider_usage=provider if reported else None,
        )
        return [b.result.total_tokens / provider(b).input_tokens for b in result.requests]
    finally:
        engine.close()


def test_the_engine_row_reconciles_its_estimates_from_the_reports_a_live_provider_sends():
    # The comparison runs the engine as a live loop does: each response reports the request's
    # input total, so from the third request on the estimate comes down towards the counter.
    unreported = _estimates_over_counted(reported=False)
    reported = _estimates_over_counted(reported=True)
    assert unreported[0] == reported[0]  # nothing reported yet: the uncorrected upper bound
    assert min(unreported[2:]) > 1.3  # the Claude profile's 1.3 on top of an o200k fit that errs high
    assert all(1.0 <= ours < theirs for ours, theirs in zip(reported[2:], unreported[2:], strict=True))
    assert reported[-1] < 1.15  # the learned factor keeps a margin above the counter, never below it


def test_engine_settings_read_budgets_from_the_command_line():
    settings = EngineSettings.parse(["tool_results_share=0.5", "keep_recent_rounds=2"], reconcile_margin=0.0)
    assert settings.budget_config().tool_results_share == 0.5
    assert settings.budget_config().keep_recent_rounds == 2
    assert settings.estimator().reconciler.margin == 0.0
    assert "tool_results_share=0.5" in settings.describe() and "reconcile margin 0" in settings.describe()
    assert EngineSettings().default and EngineSettings().estimator() is None
    assert EngineSettings().budget_config() == REPLAY_BUDGETS


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("tool_results_share", "expected NAME=VALUE"),
        ("=0.5", "expected NAME=VALUE"),
        ("tool_result_share=0.5", "no budget named 'tool_result_share'; choose from"),
        ("tool_results_share=half", "needs a number, got 'half'"),
        ("keep_recent_rounds=1.5", "needs a number, got '1.5'"),
        ("tool_results_share=1.5", "tool_results_share must be between 0 and 1"),
    ],
)
def test_bad_engine_settings_are_refused_with_the_reason(assignment, message):
    with pytest.raises(UsageError, match=message):
        EngineSettings.parse([assignment])


def test_settings_made_directly_are_checked_too():
    with pytest.raises(UsageError, match="reconcile margin must be 0 or more"):
        EngineSettings(reconcile_margin=-0.1)
    with pytest.raises(UsageError, match="no budget named 'nope'; choose from"):
        EngineSettings(budgets={"nope": 1})


def test_engine_settings_change_the_engine_row_only(small):
    # Without the absolute floor the results are held to the share, so passes come more often;
    # the baselines do not move.
    share_only = EngineSettings.parse(["tool_results_floor_tokens=0"])
    default_passes = [s.relief for s in engine_requests(session(), window=SMALL) if "tool_results_to_pointers" in s.relief]
    share_passes = [
        s.relief for s in engine_requests(session(), window=SMALL, engine=share_only) if "tool_results_to_pointers" in s.relief
    ]
    assert default_passes and len(default_passes) < len(share_passes)
    rows = {r.name: r for r in compare_transcript(session(), window=SMALL, engine=share_only)}
    assert all(rows[name] == small[name] for name in STRATEGIES if name != "contextwright")
    assert rows["contextwright"] != small["contextwright"]
