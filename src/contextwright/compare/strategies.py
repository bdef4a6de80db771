"""Contextwright against common context strategies, on the Anthropic wire, offline.

Every strategy replays the same transcript: the same model calls at the same times
(:mod:`contextwright.compare.timeline`), the same tools and system prompt, and the
same model (``claude-sonnet-4-6`` unless told otherwise) with the window under test
(:func:`~contextwright.models.with_window`, so the output reserve shrinks with small
windows exactly as it does for the engine). Each strategy turns each call into an
Anthropic Messages body; :class:`~contextwright.pricing.cache_sim.AnthropicCacheSimulator`
predicts what each body reads from and writes to the prompt cache, and prices it.

The strategies:

``keep_all_single_breakpoint``
    The whole history every time, one ``cache_control`` on the system prompt: the
    default of many frameworks. Counts overflows instead of shrinking.
``volatile_after_system``
    Keep-all, plus a block that changes on every call (date and time, working notes,
    a retrieved snippet) as a second system block, right after the cached one, with
    breakpoints on the system prompt and the last message: how memory and RAG are
    often wired. The changing block sits before the history, so no history entry
    is ever read again.
``sliding_window``
    Appends until a request would pass ``window - output reserve``, then drops the
    oldest whole groups (a user turn, or a tool call with its results) until it fills at
    most :data:`SLIDE_TO` of that limit, and appends again; breakpoints on the system
    prompt and the ends of the last two messages. Trimming in one large step is the
    usual form (a condenser that keeps the recent half): the history is rewritten once
    per trim instead of on nearly every call once the window is full, as a window that
    drops one group at a time would.
``summarize_at_threshold``
    When a request passes :data:`SUMMARY_AT` of the input limit, everything but the
    most recent :data:`SUMMARY_KEEP` messages (rounded to whole groups) is replaced
    by a summary, again whenever needed; breakpoints on the system prompt, the
    summary and the last message. The summary is a deterministic stand-in of about
    :data:`SUMMARY_TOKENS` tokens (no model call) that quotes no message, so its
    ``task_visible`` is a lower bound: a real summarizer may copy the task.
``append_only_ceiling``
    Keep everything with rolling breakpoints (system prompt and the ends of the last
    two messages) and no window limit: the most that sending the whole transcript can
    read from cache. A strategy that sends fewer tokens can cost less, and can even
    show a slightly higher share when what it drops is the uncached part.
``contextwright``
    The engine itself: :func:`~contextwright.replay.replay` and
    :meth:`~contextwright.runtime.session.BuiltRequest.anthropic` for each request,
    run as a live loop runs it: after each request the provider's input total (the
    comparison's counter over what was sent) is recorded as its ``model.response``,
    as ``Session.send`` records a real provider's usage, so the engine reconciles its
    estimates from the second response on. Without those reports the estimator stays
    at its uncorrected upper bound (Claude: the o200k fit times 1.3) for a whole
    transcript, and relief starts while the request is still well inside the window.
    The engine's clock follows the timeline too (for a timed transcript, its own times),
    so it sees a pause that outlasts the provider's cache as a live loop would.

Measures, per strategy: requests; the token-weighted cache-read share; the input
cost (uncached + cache reads + cache writes, from the simulator's dated price
table; output is the same for every strategy and left out); that cost relative to
the ceiling's; the peak request; overflows (requests whose input is over ``window -
output reserve``, plus, for Contextwright, model calls it could not build at all);
``task_visible``, the share of requests after the task was stated that carry
the task text verbatim; and ``evidence`` (:mod:`contextwright.compare.evidence`): the
share of the strings the recorded model used at each call that the request built for
that call still shows, its misses by cause, and the read-backs through
``context_read_artifact`` a pointer would cost (``relative_cost_with_read_backs`` adds
them to the input cost).

Token counting: every block of every body, the engine's and the baselines' alike, is
counted by one shared :class:`TokenCounter`. By default it is exact: the o200k encoding
(tiktoken, the ``tiktoken`` extra) applied to what the model reads of the block, that
is each string in it as written (not JSON-escaped) plus the block's JSON skeleton
with the strings emptied. Claude has no public tokenizer; o200k is the closest public
one, and the same counter for every strategy is what makes the comparison fair.
``counting="heuristic"`` counts with the engine's own
:class:`~contextwright.budget.estimator.HeuristicEstimator` instead (the only choice
when tiktoken is not installed); it over-counts, and not by the same share for every
strategy, so its figures are for a quick look only. :attr:`TokenCounter.counting`
names the counter, and every report states it.

Cache rules: the simulator applies each model's minimum cacheable length as in effect
on each request's date. ``cache_rules_on`` applies one date's rules to every request of
every strategy instead (a replay of old logs on a current model at today's prices; see
:class:`~contextwright.pricing.cache_sim.AnthropicCacheSimulator`). ``cache_rules``
takes a whole rule set (:mod:`contextwright.compare.cache_rules`: the documented rules,
or the lenient ones an outside measurement used), the same for every strategy.

Overflowing requests of keep-all strategies are still simulated as if the provider
accepted them, so their cost shows what keeping everything would cost.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Final, Literal

from contextwright.budget.estimator import HeuristicEstimator
from contextwright.canonical import canonical_json
from contextwright.clock import TranscriptClock
from contextwright.compare.cache_rules import CacheRules
from contextwright.compare.engine_settings import EngineSettings
from contextwright.compare.evidence import Recall, evidence_recall, used_strings
from contextwright.compare.nonces import reproducible_secret, transcript_digest
from contextwright.compare.timeline import PACE_START, Timeline, Unit, timeline_of
from contextwright.errors import UsageError
from contextwright.importers.model import Transcript
from contextwright.log import open_log
from contextwright.models import ResolvedModel, anthropic, with_window
from contextwright.pricing.cache_sim import SimRequest, render_anthropic_blocks
from contextwright.pricing.cache_sim.base import default_price_lookup, price_and_cost
from contextwright.providers.usage import Usage
from contextwright.replay import replay, visible_in
from contextwright.runtime.engine import Engine
from contextwright.runtime.session import BuiltRequest

__all__ = [
    "CEILING",
    "COUNTINGS",
    "DEFAULT_MODEL",
    "SLIDE_TO",
    "STRATEGIES",
    "SUMMARY_AT",
    "SUMMARY_KEEP",
    "SUMMARY_TOKENS",
    "SentRequest",
    "StrategyResult",
    "TokenCounter",
    "Counting",
    "aggregate",
    "baseline_requests",
    "exact_counting_available",
    "compare",
    "compare_transcript",
    "compare_windows",
    "comparison_rows",
    "counted_usage",
    "engine_requests",
    "sliding_window_requests",
]

DEFAULT_MODEL: Final = "claude-sonnet-4-6"
"""The model every strategy talks to unless told otherwise."""
CEILING: Final = "append_only_ceiling"
"""The strategy input costs are measured against."""
STRATEGIES: Final[tuple[str, ...]] = (
    "keep_all_single_breakpoint",
    "volatile_after_system",
    "sliding_window",
    "summarize_at_threshold",
    CEILING,
    "contextwright",
)
"""Every strategy, in report order."""
SLIDE_TO: Final = 0.5
"""Share of the input limit the sliding window trims down to once a request would pass the limit."""
SUMMARY_AT: Final = 0.8
"""Share of the input limit (window minus output reserve) at which the summarizer fires."""
SUMMARY_KEEP: Final = 6
"""Most recent messages the summarizer keeps verbatim (more when a group is larger)."""
SUMMARY_TOKENS: Final = 1_500
"""Size of the stand-in summary."""
VOLATILE_SNIPPET_CHARS: Final = 1_200
"""Characters of the latest message quoted in the volatile block (a retrieved snippet)."""
LEAD_IN: Final = "(The conversation so far continues below.)"
"""Opening user text when the kept history would start with the assistant (the API needs a user first)."""

_MARK: Final[Mapping[str, str]] = {"type": "ephemeral"}

Counting = Literal["o200k", "heuristic"]
"""How a comparison counts tokens: exactly with o200k, or with the engine's heuristic estimator."""
COUNTINGS: Final[tuple[str, ...]] = ("o200k", "heuristic")


class TokenCounter:
    """Tokens of one text for the compared model, shared by every strategy of a comparison."""

    def __init__(self, model_id: str = DEFAULT_MODEL, *, counting: Counting | None = None) -> None:
        """Count exactly with o200k (the default when tiktoken is installed) or with the heuristic."""
        self.model_id = model_id
        self.counting: Counting = counting or ("o200k" if exact_counting_available() else "heuristic")
        if self.counting == "o200k":
            from contextwright.budget._tokenizers import exact_token_counter

            self._count = exact_token_counter("o200k_base")
        elif self.counting == "heuristic":
            estimator = HeuristicEstimator(memo_size=0)
            self._count = lambda text: estimator.estimate(text, model=model_id)
        else:
            raise UsageError(f"unknown token counting {self.counting!r}; choose from {', '.join(COUNTINGS)}")
        # Memoized by text: the simulator counts the same blocks on every request.
        self._memo: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        """The token count of ``text`` (a block's canonical JSON, as the simulator passes it)."""
        count = self._memo.get(text)
        if count is None:
            count = self._memo[text] = self._count_block(text) if self.counting == "o200k" else self._count(text)
        return count

    def block(self, block: Mapping[str, Any]) -> int:
        """Tokens of one content block, exactly as the simulator counts it."""
        return self(canonical_json({k: v for k, v in block.items() if k != "cache_control"}))

    def _count_block(self, text: str) -> int:
        # The model reads a block's strings as written; JSON escaping (quotes, newlines) is
        # wire syntax, and counting it would charge text full of quotes more than plain text.
        try:
            value = json.loads(text)
        except ValueError:
            return self._count(text)
        strings: list[str] = []
        skeleton = _hollow(value, strings)
        return self._count(canonical_json(skeleton)) + sum(self._count(s) for s in strings)


def exact_counting_available() -> bool:
    """True when the exact o200k counter can run here (the ``tiktoken`` extra is installed)."""
    return importlib.util.find_spec("tiktoken") is not None and importlib.util.find_spec("bpe_openai") is not None


def _hollow(value: Any, strings: list[str]) -> Any:
    """``value`` with every string value emptied (collected into ``strings``); keys are kept."""
    if isinstance(value, str):
        strings.append(value)
        return ""
    if isinstance(value, dict):
        return {k: _hollow(v, strings) for k, v in value.items()}
    if isinstance(value, list):
        return [_hollow(v, strings) for v in value]
    return value


@dataclass(frozen=True, kw_only=True, slots=True)
class StrategyResult:
    """How one strategy fared at one window: on one transcript, or summed over many by :func:`aggregate`."""

    name: str
    """The strategy (one of :data:`STRATEGIES`)."""
    requests: int
    """Requests sent (simulated)."""
    cache_read_share: float
    """Token-weighted share of all input tokens read from cache."""
    input_cost: Decimal
    """Input-side cost in USD: uncached input, cache reads and cache writes."""
    relative_input_cost: float | None
    """``input_cost`` divided by the ceiling's (None when the ceiling cost nothing)."""
    peak_request_tokens: int
    """The largest request, in input tokens."""
    overflows: int
    """Requests over ``window - output reserve``, plus calls that could not be built."""
    task_visible: float | None
    """Share of requests after the task was stated that carry it verbatim (None: no such request)."""
    usage: Usage = field(default_factory=Usage)
    """Summed input usage of all requests."""
    task_checks: int = 0
    """Requests after the task was stated."""
    task_seen: int = 0
    """Of those, requests that carry the task verbatim."""
    counting: str = "o200k"
    """The token counter every strategy was counted with (:data:`COUNTINGS`)."""
    evidence: Recall = field(default_factory=Recall)
    """Evidence recall of its requests (:mod:`contextwright.compare.evidence`)."""
    relative_cost_with_read_backs: float | None = None
    """``input_cost`` plus the read-backs' cost, divided by the ceiling's input cost."""
    transcripts: int = 1
    """Transcripts it covers (more than one once :func:`aggregate` has summed them)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SentRequest:
    """One request a strategy sends: when, the body, and whether the task is in it (None: not yet stated)."""

    at: datetime
    body: Mapping[str, Any]
    task: bool | None
    relief: tuple[str, ...] = ()
    """The yields the engine took to build it (relief passes, bounded views); empty for the baselines."""
    ordinal: int | None = None
    """The assistant message it was built for (:attr:`ModelCall.ordinal`); None: the baselines send one per call, in order."""


@dataclass(frozen=True, kw_only=True, slots=True)
class _Run:
    """A strategy's requests on one transcript, before the window's overflow count."""

    sent: tuple[SentRequest, ...]
    unbuilt: int = 0
    """Model calls the strategy could not turn into a request at all."""


@dataclass(frozen=True, kw_only=True, slots=True)
class _Simulated:
    usage: Usage
    cost: Decimal
    totals: tuple[int, ...]
    task_checks: int
    task_seen: int
    evidence: Recall = field(default_factory=Recall)


def compare_transcript(
    transcript: Transcript,
    *,
    window: int,
    model_id: str = DEFAULT_MODEL,
    strategies: Sequence[str] = STRATEGIES,
    seed: int = 0,
    sent_by_engine: Sequence[SentRequest] | None = None,
    counter: TokenCounter | None = None,
    cache_rules_on: date | None = None,
    cache_rules: CacheRules | None = None,
    engine: EngineSettings | None = None,
) -> tuple[StrategyResult, ...]:
    """Every strategy in ``strategies`` on ``transcript`` at ``window`` (the ceiling is always computed).

    ``sent_by_engine`` gives the requests the engine really sent for this transcript (a
    recorded session): the Contextwright row then prices those, instead of a fresh replay.
    ``cache_rules_on`` applies the simulator's cache rules of that date to every request
    (:class:`~contextwright.pricing.cache_sim.AnthropicCacheSimulator`'s ``rules_on``);
    ``cache_rules`` gives a whole rule set instead (not both). ``engine`` changes what the
    engine row runs with (:class:`~contextwright.compare.engine_settings.EngineSettings`).
    """
    return compare_windows(
        transcript,
        windows=(window,),
        model_id=model_id,
        strategies=strategies,
        seed=seed,
        sent_by_engine=sent_by_engine,
        counter=counter,
        cache_rules_on=cache_rules_on,
        cache_rules=cache_rules,
        engine=engine,
    )[window]


def compare_windows(
    transcript: Transcript,
    *,
    windows: Sequence[int],
    model_id: str = DEFAULT_MODEL,
    strategies: Sequence[str] = STRATEGIES,
    seed: int = 0,
    sent_by_engine: Sequence[SentRequest] | None = None,
    counter: TokenCounter | None = None,
    cache_rules_on: date | None = None,
    cache_rules: CacheRules | None = None,
    engine: EngineSettings | None = None,
) -> dict[int, tuple[StrategyResult, ...]]:
    """:func:`compare_transcript` at several windows; window-independent strategies are simulated once.

    The engine's replays draw their envelope secret from the transcript's content and
    ``seed`` (:mod:`contextwright.compare.nonces`): the same input gives the same bytes.
    """
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        raise UsageError(f"unknown strategy {unknown[0]!r}; choose from {', '.join(STRATEGIES)}")
    if not windows:
        raise UsageError("give at least one window size")
    if sent_by_engine is not None and len(windows) != 1:
        raise UsageError("requests sent by the engine belong to one window; compare one window at a time")
    rules = _rules(cache_rules, cache_rules_on)
    counter = counter or TokenCounter(model_id)
    timeline = timeline_of(transcript)
    used = used_strings(timeline)
    models = {w: with_window(anthropic(model_id), w) for w in windows}
    wanted = [s for s in STRATEGIES if s in strategies or s == CEILING]

    def measured(name: str, run: _Run) -> _Simulated:
        recall = evidence_recall(timeline, run.sent, strategy=name, used=used, count=counter, price=_read_back_price(model_id))
        return replace(_simulate(run, counter, rules), evidence=recall)

    shared: dict[str, _Simulated] = {}
    for name in ("keep_all_single_breakpoint", "volatile_after_system", CEILING):
        if name in wanted:
            # Keeping everything does not depend on the window (only max_tokens differs, and the
            # simulator ignores it for these models): simulate once, count overflows per window.
            shared[name] = measured(name, _BUILDERS[name](timeline, models[windows[0]], counter))
    out: dict[int, tuple[StrategyResult, ...]] = {}
    for window in windows:
        model = models[window]
        limit = model.context_window - model.output_reserve
        results: dict[str, StrategyResult] = {}
        for name in wanted:
            if name in shared:
                simulated, unbuilt = shared[name], 0
            elif name == "contextwright" and sent_by_engine is not None:
                simulated, unbuilt = measured(name, _Run(sent=tuple(sent_by_engine))), 0
            elif name == "contextwright":
                run = _contextwright(transcript, timeline, model, seed=seed, counter=counter, settings=engine)
                simulated, unbuilt = measured(name, run), run.unbuilt
            else:
                run = _BUILDERS[name](timeline, model, counter)
                simulated, unbuilt = measured(name, run), run.unbuilt
            # The ceiling has no window: it shows the best case, not a deployable strategy.
            over = 0 if name == CEILING else sum(1 for total in simulated.totals if total > limit)
            results[name] = replace(_result(name, simulated, overflows=over + unbuilt), counting=counter.counting)
        ceiling = results[CEILING].input_cost
        out[window] = tuple(_shares(r, ceiling=ceiling) for name, r in results.items() if name in strategies)
    return out


def aggregate(per_transcript: Iterable[Sequence[StrategyResult]]) -> list[StrategyResult]:
    """Sum per-transcript results into one per strategy (shares token- or request-weighted), in report order."""
    sums: dict[str, StrategyResult] = {}
    for results in per_transcript:
        for r in results:
            total = sums.get(r.name)
            sums[r.name] = r if total is None else _summed(total, r)
    ceiling = sums[CEILING].input_cost if CEILING in sums else None
    order = sorted(sums, key=lambda n: STRATEGIES.index(n) if n in STRATEGIES else len(STRATEGIES))
    return [_shares(sums[name], ceiling=ceiling) for name in order]


def _summed(a: StrategyResult, b: StrategyResult) -> StrategyResult:
    """The counts of two results of one strategy added; the shares are set by :func:`_shares`."""
    if a.counting != b.counting:
        raise UsageError(f"results counted with {a.counting} and {b.counting} cannot be summed")
    return replace(
        a,
        transcripts=a.transcripts + b.transcripts,
        requests=a.requests + b.requests,
        usage=a.usage + b.usage,
        input_cost=a.input_cost + b.input_cost,
        peak_request_tokens=max(a.peak_request_tokens, b.peak_request_tokens),
        overflows=a.overflows + b.overflows,
        task_checks=a.task_checks + b.task_checks,
        task_seen=a.task_seen + b.task_seen,
        evidence=a.evidence + b.evidence,
    )


def _shares(r: StrategyResult, *, ceiling: Decimal | None) -> StrategyResult:
    """``r`` with its shares worked out from its counts, and its costs relative to the ceiling's."""
    return replace(
        r,
        cache_read_share=r.usage.cache_read_share,
        task_visible=r.task_seen / r.task_checks if r.task_checks else None,
        relative_input_cost=float(r.input_cost / ceiling) if ceiling else None,
        relative_cost_with_read_backs=float((r.input_cost + r.evidence.read_back_cost) / ceiling) if ceiling else None,
    )


def compare(
    transcripts: Iterable[Transcript],
    *,
    window: int,
    model_id: str = DEFAULT_MODEL,
    seed: int = 0,
    counter: TokenCounter | None = None,
    cache_rules_on: date | None = None,
    cache_rules: CacheRules | None = None,
) -> list[StrategyResult]:
    """Every strategy on every transcript at ``window``, aggregated per strategy, with one counter."""
    counter = counter or TokenCounter(model_id)
    return aggregate(
        compare_transcript(
            t,
            window=window,
            model_id=model_id,
            seed=seed,
            counter=counter,
            cache_rules_on=cache_rules_on,
            cache_rules=cache_rules,
        )
        for t in transcripts
    )


def engine_requests(
    transcript: Transcript,
    *,
    window: int,
    model_id: str = DEFAULT_MODEL,
    seed: int = 0,
    engine: EngineSettings | None = None,
) -> tuple[SentRequest, ...]:
    """The Anthropic requests the engine sends for ``transcript`` at ``window``, timed as in :func:`compare_windows`."""
    timeline = timeline_of(transcript)
    model = with_window(anthropic(model_id), window)
    return _contextwright(transcript, timeline, model, seed=seed, counter=TokenCounter(model_id), settings=engine).sent


def baseline_requests(
    transcript: Transcript, name: str, *, window: int = 200_000, model_id: str = DEFAULT_MODEL
) -> tuple[SentRequest, ...]:
    """The Anthropic requests the baseline strategy ``name`` sends for ``transcript`` at ``window``."""
    if name not in _BUILDERS:
        raise UsageError(f"unknown baseline {name!r}; choose from {', '.join(_BUILDERS)}")
    model = with_window(anthropic(model_id), window)
    return _BUILDERS[name](timeline_of(transcript), model, TokenCounter(model_id)).sent


def sliding_window_requests(
    transcript: Transcript,
    *,
    window: int,
    slide_to: float = SLIDE_TO,
    input_limit: int | None = None,
    model_id: str = DEFAULT_MODEL,
) -> tuple[SentRequest, ...]:
    """The sliding window's requests with another trim depth or limit, to measure how its form matters.

    ``slide_to`` is the share of the limit a trim goes down to (1.0 drops one group at a time,
    sliding on nearly every call once full); ``input_limit`` replaces ``window - output reserve``.
    """
    if not 0 < slide_to <= 1:
        raise UsageError(f"slide_to must be in (0, 1], got {slide_to}")
    model = with_window(anthropic(model_id), window)
    timeline = timeline_of(transcript)
    run = _sliding_window(timeline, model, TokenCounter(model_id), slide_to=slide_to, input_limit=input_limit)
    return run.sent


def comparison_rows(rows: Iterable[StrategyResult]) -> list[dict[str, Any]]:
    """Plain rows for the HTML report's comparison table (:data:`contextwright.report.html.COMPARISON_COLUMNS`)."""
    return [
        {
            "strategy": r.name,
            "cache_read_share": r.cache_read_share,
            "input_cost_usd": r.input_cost,
            "relative_input_cost": r.relative_input_cost,
            "peak_request_tokens": r.peak_request_tokens,
            "overflows": r.overflows,
            "task_visible": r.task_visible,
            "evidence_recall": r.evidence.share,
            "relative_cost_with_read_backs": r.relative_cost_with_read_backs,
            "read_backs": r.evidence.read_backs,
        }
        for r in rows
    ]


# -- simulation ---------------------------------------------------------------------


def _rules(cache_rules: CacheRules | None, cache_rules_on: date | None) -> CacheRules:
    if cache_rules is not None and cache_rules_on is not None:
        raise UsageError("give cache_rules or cache_rules_on, not both (a rule set carries its own date)")
    return cache_rules or CacheRules(rules_on=cache_rules_on)


def _read_back_price(model_id: str) -> Callable[[datetime, int], Decimal]:
    """Read-back tokens priced as uncached input on the day of the call that needs them."""

    def price(at: datetime, tokens: int) -> Decimal:
        return price_and_cost(default_price_lookup, model_id, at, Usage(input_tokens=tokens)) or Decimal(0)

    return price


def _simulate(run: _Run, counter: TokenCounter, rules: CacheRules) -> _Simulated:
    # No window check here: overflows are counted per window by the caller.
    simulator = rules.simulator(counter)
    usage, cost, totals = Usage(), Decimal(0), []
    for sent in run.sent:
        predicted = simulator.request(SimRequest(at=sent.at, body=sent.body))
        usage = usage + predicted.usage
        assert predicted.cost is not None  # the default price lookup always prices
        cost += predicted.cost
        totals.append(predicted.usage.total_input)
    checks = [s.task for s in run.sent if s.task is not None]
    return _Simulated(usage=usage, cost=cost, totals=tuple(totals), task_checks=len(checks), task_seen=sum(checks))


def _result(name: str, simulated: _Simulated, *, overflows: int) -> StrategyResult:
    """A strategy's counts on one transcript; its shares follow from them (:func:`_shares`)."""
    return _shares(
        StrategyResult(
            name=name,
            requests=len(simulated.totals),
            cache_read_share=0.0,
            input_cost=simulated.cost,
            relative_input_cost=None,
            peak_request_tokens=max(simulated.totals, default=0),
            overflows=overflows,
            task_visible=None,
            usage=simulated.usage,
            task_checks=simulated.task_checks,
            task_seen=simulated.task_seen,
            evidence=simulated.evidence,
        ),
        ceiling=None,
    )


# -- baselines ------------------------------------------------------------------------


def _keep_all(timeline: Timeline, model: ResolvedModel, counter: TokenCounter) -> _Run:
    sent = []
    for call in timeline.calls:
        messages = _messages(timeline.units[: call.upto])
        sent.append(
            _sent(
                timeline,
                call.at,
                call.after_task,
                model,
                [_system(timeline.system, marked=True)],
                messages,
            )
        )
    return _Run(sent=tuple(sent))


def _volatile_after_system(timeline: Timeline, model: ResolvedModel, counter: TokenCounter) -> _Run:
    sent = []
    for number, call in enumerate(timeline.calls):
        history = timeline.units[: call.upto]
        system = [
            _system(timeline.system, marked=True),
            _system(_volatile_text(number, call.at, history), marked=False),
        ]
        messages = _messages(history)
        _mark_last(messages, 1)
        sent.append(_sent(timeline, call.at, call.after_task, model, system, messages))
    return _Run(sent=tuple(sent))


def _sliding_window(
    timeline: Timeline,
    model: ResolvedModel,
    counter: TokenCounter,
    *,
    slide_to: float = SLIDE_TO,
    input_limit: int | None = None,
) -> _Run:
    limit = input_limit or model.context_window - model.output_reserve
    sizes, fixed, lead = _sizes(timeline, counter)
    sent = []
    start = 0
    for call in timeline.calls:
        units = timeline.units[: call.upto]
        if _size(units, start, sizes, fixed, lead) > limit:
            starts = [i for i in range(start, len(units)) if i == 0 or units[i].group != units[i - 1].group]
            # Drop whole groups from the front down to SLIDE_TO of the limit; the newest group always stays.
            for candidate in starts:
                start = candidate
                if _size(units, start, sizes, fixed, lead) <= slide_to * limit:
                    break
        messages = _messages(units[start:])
        _mark_last(messages, 2)
        sent.append(
            _sent(
                timeline,
                call.at,
                call.after_task,
                model,
                [_system(timeline.system, marked=True)],
                messages,
            )
        )
    return _Run(sent=tuple(sent))


def _summarize_at_threshold(timeline: Timeline, model: ResolvedModel, counter: TokenCounter) -> _Run:
    limit = model.context_window - model.output_reserve
    sizes, fixed, lead = _sizes(timeline, counter)
    sent = []
    cut = 0  # units before this index are summarized
    summary: dict[str, Any] | None = None
    summaries = 0
    for call in timeline.calls:
        units = timeline.units[: call.upto]
        extra = counter.block(summary) if summary else 0
        if _size(units, cut, sizes, fixed + extra, 0 if summary else lead) > SUMMARY_AT * limit:
            # Keep the newest SUMMARY_KEEP messages, widened to the start of their group.
            newest = max(0, len(units) - SUMMARY_KEEP)
            boundary = next((i for i in range(newest, cut, -1) if units[i].group != units[i - 1].group), None)
            if boundary is not None and boundary > cut:
                cut = boundary
                summaries += 1
                summary = {"type": "text", "text": _summary_text(summaries, units[:cut], counter)}
        lead_blocks = (summary,) if summary else ()
        messages = _messages(units[cut:], lead=lead_blocks)
        if summary is not None:
            messages[0]["content"][0]["cache_control"] = dict(_MARK)
        _mark_last(messages, 1)
        sent.append(
            _sent(
                timeline,
                call.at,
                call.after_task,
                model,
                [_system(timeline.system, marked=True)],
                messages,
            )
        )
    return _Run(sent=tuple(sent))


def _append_only_ceiling(timeline: Timeline, model: ResolvedModel, counter: TokenCounter) -> _Run:
    sent = []
    for call in timeline.calls:
        messages = _messages(timeline.units[: call.upto])
        _mark_last(messages, 2)
        sent.append(
            _sent(
                timeline,
                call.at,
                call.after_task,
                model,
                [_system(timeline.system, marked=True)],
                messages,
            )
        )
    return _Run(sent=tuple(sent))


_BUILDERS: Final[dict[str, Callable[[Timeline, ResolvedModel, TokenCounter], _Run]]] = {
    "keep_all_single_breakpoint": _keep_all,
    "volatile_after_system": _volatile_after_system,
    "sliding_window": _sliding_window,
    "summarize_at_threshold": _summarize_at_threshold,
    CEILING: _append_only_ceiling,
}


def _sent(
    timeline: Timeline,
    at: datetime,
    after_task: bool,
    model: ResolvedModel,
    system: list[dict[str, Any]],
    messages: list[dict[str, Any]],
) -> SentRequest:
    body: dict[str, Any] = {"model": model.id, "max_tokens": model.output_reserve, "system": system}
    if timeline.tools:
        body["tools"] = [dict(tool) for tool in timeline.tools]
    body["messages"] = messages
    task = None
    if after_task and timeline.task is not None:
        task = any(
            block.get("type") == "text" and timeline.task in block.get("text", "")
            for message in messages
            for block in message["content"]
        )
    return SentRequest(at=at, body=body, task=task)


def _system(text: str, *, marked: bool) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if marked:
        block["cache_control"] = dict(_MARK)
    return block


def _messages(units: Sequence[Unit], *, lead: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """Wire messages: consecutive same-role units merge, tool results open their user turn."""
    turns: list[dict[str, Any]] = []
    if lead:
        turns.append({"role": "user", "content": [dict(b) for b in lead]})
    for unit in units:
        blocks = [dict(b) for b in unit.blocks]
        if turns and turns[-1]["role"] == unit.role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": unit.role, "content": blocks})
    if turns and turns[0]["role"] == "assistant":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": LEAD_IN}]})
    for turn in turns:
        if turn["role"] == "user":
            turn["content"].sort(key=lambda b: b.get("type") != "tool_result")  # stable: order kept otherwise
    return turns


def _mark_last(messages: list[dict[str, Any]], count: int) -> None:
    """Breakpoints on the last block of each of the last ``count`` messages."""
    for message in messages[-count:]:
        message["content"][-1]["cache_control"] = dict(_MARK)


def _sizes(timeline: Timeline, counter: TokenCounter) -> tuple[list[int], int, int]:
    """Tokens per unit, of the tools and system prompt, and of the lead-in turn."""
    sizes = [sum(counter.block(b) for b in unit.blocks) for unit in timeline.units]
    fixed = sum(counter.block(t) for t in timeline.tools) + counter.block(_system(timeline.system, marked=False))
    lead = counter.block({"type": "text", "text": LEAD_IN})
    return sizes, fixed, lead


def _size(units: Sequence[Unit], start: int, sizes: Sequence[int], fixed: int, lead: int) -> int:
    body = sum(sizes[start : len(units)])
    opens_with_assistant = start < len(units) and units[start].role == "assistant"
    return fixed + body + (lead if opens_with_assistant else 0)


def _volatile_text(number: int, at: datetime, history: Sequence[Unit]) -> str:
    """A block that differs on every call: clock, working notes, a retrieved snippet."""
    latest = history[-1].text if history else ""
    tools = sum(1 for u in history if u.kind == "tool_result")
    snippet = " ".join(latest.split())[-VOLATILE_SNIPPET_CHARS:]
    return (
        f"Current date and time: {at:%A, %Y-%m-%d %H:%M:%S} UTC.\n"
        f"Working notes: step {number + 1}; {len(history)} messages and {tools} tool results so far.\n"
        f"Retrieved context for this step:\n{snippet}"
    )


def _summary_text(number: int, units: Sequence[Unit], counter: TokenCounter) -> str:
    """A deterministic stand-in for a model-written summary of ``units``, about SUMMARY_TOKENS long."""
    lines = [f"Summary {number} of the {len(units)} earlier messages of this session:"]
    kinds = {
        "user": "a request or remark from the user",
        "assistant": "a step the assistant took",
        "tool_result": "a tool output it read",
    }
    index = 0
    while counter("\n".join(lines)) < SUMMARY_TOKENS:
        unit = units[index % len(units)] if units else None
        what = kinds[unit.kind] if unit else "an earlier exchange"
        size = f"{len(unit.text):,}" if unit else "0"
        lines.append(
            f"- Point {index + 1}: {what} ({size} characters) was considered; "
            "its outcome is folded into the current plan and need not be repeated."
        )
        index += 1
    return "\n".join(lines)


# -- the engine ------------------------------------------------------------------------


def counted_usage(body: Mapping[str, Any], *, counter: TokenCounter) -> Usage:
    """What a simulated provider reports for a Messages ``body``: its whole input, counted as the simulator counts it.

    Reported back for each request (``replay(..., provider_usage=...)``), it lets a replayed
    session reconcile its estimates as a live one does from real usage."""
    return Usage(input_tokens=sum(counter(block.text) for block in render_anthropic_blocks(body)))


def _contextwright(
    transcript: Transcript,
    timeline: Timeline,
    model: ResolvedModel,
    *,
    seed: int,
    counter: TokenCounter,
    settings: EngineSettings | None = None,
) -> _Run:
    settings = settings or EngineSettings()
    # The engine sees the timeline's pauses, as a live loop sees real ones (a pause longer than the
    # cache lifetime makes relief free): a timed transcript moves the clock along its own times.
    clock = TranscriptClock(PACE_START)
    if timeline.timed:
        clock.restart(next((m.at for m in transcript.messages if m.at), None))
    secret = reproducible_secret("compare", [transcript_digest(transcript)], seed=seed)
    engine = Engine(open_log("memory://", clock=clock), clock=clock, secret=secret, estimator=settings.estimator())
    # Each body is rendered once: for the report and for the request the simulator prices.
    bodies: dict[int, dict[str, Any]] = {}

    def report(built: BuiltRequest) -> Usage:
        # As a live loop: each response reports the request's input, counted as the simulator counts it.
        body = bodies[built.index] = built.anthropic()
        return counted_usage(body, counter=counter)

    try:
        result = replay(
            transcript,
            engine=engine,
            model=model,
            provider_usage=report,
            budgets=settings.budget_config(),
            follow_times=clock.follow if timeline.timed else None,
        )
        events = result.session.history.events
    finally:
        engine.close()
    task = timeline.task
    stated = next(
        (e.seq for e in events if task is not None and e.type == "message.user" and e.payload.text.strip() == task),
        None,
    )
    # Each recorded assistant message follows the request built for it, if one was built;
    # its ordinal gives the call's start time, the same one the baselines use.
    times: list[datetime] = []
    ordinals: list[int] = []
    built_since = False
    ordinal = 0
    for event in events:
        if event.type == "context.request.built":
            built_since = True
        elif event.type == "message.assistant":
            if built_since:
                times.append(timeline.assistant_times[ordinal])
                ordinals.append(ordinal)
            built_since = False
            ordinal += 1
    sent = []
    for built, at, number in zip(result.requests, times, ordinals, strict=True):
        seen = None
        if task is not None and stated is not None and built.result.upto_seq >= stated:
            seen = visible_in(built.neutral, task)
        sent.append(SentRequest(at=at, body=bodies[built.index], task=seen, relief=built.result.yields, ordinal=number))
    return _Run(sent=tuple(sent), unbuilt=result.overflows)
