"""How the form of a sliding window moves its figures, under both cache rule sets.

Run from the repository root:

    python bench/sliding_forms.py            # every shared transcript, 32k window
    python bench/sliding_forms.py --quick    # two transcripts per format

The sliding-window baseline (:mod:`contextwright.compare.strategies`) replayed with other
trim depths and limits: dropping one group at a time (a trim to 100% of the limit, sliding
on nearly every call once full: the baseline's form before 2026-12-01), down to half (the
baseline now) or a third of the limit; the limit is the window minus the output reserve, or
the whole window (a client that counts only the prompt against it), or 17,000 tokens (about the
largest request the engine sends at 32k, to see what request size alone is worth). Each form is simulated
under the documented cache rules and the lenient ones (no minimum cacheable length, no
expiry; :mod:`contextwright.compare.cache_rules`) with exact o200k counts, on the same
timeline; costs are relative to the append-only ceiling under the same rules. "Over" counts
requests above the window minus the output reserve.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from decimal import Decimal

from cache_bench import load_traces

from contextwright.compare import (
    CACHE_RULES,
    CEILING,
    CacheRules,
    SentRequest,
    TokenCounter,
    baseline_requests,
    sliding_window_requests,
)
from contextwright.models import anthropic, with_window
from contextwright.pricing.cache_sim import SimRequest
from contextwright.testing.corpus import corpus_path, missing_reason

# (label, share of the limit a trim goes down to, limit: None for window minus output reserve, 0 for the whole
# window, else that many tokens)
FORMS: tuple[tuple[str, float, int | None], ...] = (
    ("one group per call, window minus reserve", 1.0, None),
    ("down to half, window minus reserve (the baseline)", 0.5, None),
    ("down to a third, window minus reserve", 0.3, None),
    ("down to half, whole window", 0.5, 0),
    ("down to a third, whole window", 0.3, 0),
    ("down to half, limit 17,000 (about the engine's peak at 32k)", 0.5, 17_000),
)


@dataclass
class _Tally:
    read: int = 0
    total: int = 0
    cost: Decimal = Decimal(0)
    over: int = 0
    checks: int = 0
    seen: int = 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="two transcripts per format instead of all")
    parser.add_argument("--window", type=int, default=32_000, help="window size (default 32000)")
    args = parser.parse_args()
    traces = corpus_path("traces")
    if traces is None:
        raise SystemExit(f"skipped: {missing_reason('traces')}")
    transcripts = [t for _, t in load_traces(traces, quick=args.quick)]
    counter = TokenCounter(counting="o200k")
    model = with_window(anthropic("claude-sonnet-4-6"), args.window)
    reserve_limit = model.context_window - model.output_reserve
    tallies: dict[tuple[str, str], _Tally] = {}
    for transcript in transcripts:
        runs = {CEILING: baseline_requests(transcript, CEILING)}
        for label, slide_to, limit in FORMS:
            runs[label] = sliding_window_requests(
                transcript, window=args.window, slide_to=slide_to, input_limit=args.window if limit == 0 else limit
            )
        for rules in CACHE_RULES.values():
            for label, sent in runs.items():
                _tally(sent, rules, counter, tallies.setdefault((label, rules.name), _Tally()), limit=reserve_limit)
    print(f"sliding-window forms, {len(transcripts)} transcripts, window {args.window:,}, o200k counts")
    print("| form | cache rules | cache-read share | input cost vs ceiling | over | task visible |")
    print("|---|---|---:|---:|---:|---:|")
    for label, _, _ in FORMS:
        for name in CACHE_RULES:
            t, ceiling = tallies[label, name], tallies[CEILING, name]
            print(
                f"| {label} | {name} | {t.read / t.total:.1%} | {float(t.cost / ceiling.cost):.2f}x | {t.over} | "
                f"{t.seen / t.checks:.1%} |"
            )


def _tally(sent: tuple[SentRequest, ...], rules: CacheRules, counter: TokenCounter, tally: _Tally, *, limit: int) -> None:
    simulator = rules.simulator(counter)
    for request in sent:
        predicted = simulator.request(SimRequest(at=request.at, body=request.body))
        tally.read += predicted.usage.cache_read_tokens
        tally.total += predicted.usage.total_input
        tally.cost += predicted.cost or Decimal(0)
        tally.over += predicted.usage.total_input > limit
        if request.task is not None:
            tally.checks += 1
            tally.seen += request.task


if __name__ == "__main__":
    main()
