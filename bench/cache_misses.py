"""Where Contextwright's prompt-cache misses come from, per window, on the shared transcripts.

Run from the repository root:

    python bench/cache_misses.py                       # 32k and 200k, every transcript
    python bench/cache_misses.py --windows 32000 --quick
    python bench/cache_misses.py --cache-rules lenient     # no minimum, no expiry (see cache_bench.py)

The engine's requests (the same ones ``bench/cache_bench.py`` prices) go through the
offline Anthropic cache simulator with exact o200k counts. Each request is compared
block by block with the one before it:

* the first request of a transcript is all new;
* an *append* keeps every block the previous request placed a cache marker on; anything
  else (a pruning pass, a compaction, a bounded view) is a *change*;
* input after the first changed block (or after the previous request's end) is new;
* input the request shares with the previous one but does not read is split by cause:
  the shared prefix is under the model's minimum cacheable length (the simulator's dated
  table); the gap since the previous request is at least the 5-minute lifetime; the
  previous request wrote an entry inside the shared prefix that no marker of this
  request reaches within the 20-block lookback; or nothing was written there.

Every figure is a share of all input tokens of the window.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from datetime import timedelta

from cache_bench import miss_run

from contextwright.compare import CacheRules, EngineSettings, TokenCounter, engine_requests
from contextwright.importers.model import Transcript
from contextwright.pricing.cache_sim import SimRequest, anthropic_rules_for, render_anthropic_blocks

LIFETIME = timedelta(minutes=5)
LOOKBACK = 20
CAUSES = ("under the minimum", "expired", "outside the lookback", "not written")


def main() -> None:
    run = miss_run(__doc__)
    transcripts = [t for _, t in run.transcripts]
    counter = TokenCounter(counting="o200k")
    for window in run.windows:
        totals: dict[str, int] = defaultdict(int)
        for transcript in transcripts:
            _split(transcript, window, counter, totals, rules=run.rules, engine=run.engine)
        _print(window, len(transcripts), totals)


def _split(
    transcript: Transcript,
    window: int,
    counter: TokenCounter,
    totals: dict[str, int],
    *,
    rules: CacheRules,
    engine: EngineSettings,
) -> None:
    simulator = rules.simulator(counter)
    previous = None
    for sent in engine_requests(transcript, window=window, engine=engine):
        blocks = render_anthropic_blocks(sent.body)
        identities = [b.identity for b in blocks]
        tokens = list(itertools.accumulate(counter(b.text) for b in blocks))
        simulated = simulator.request(SimRequest(at=sent.at, body=sent.body))
        usage = simulated.usage
        totals["input"] += usage.total_input
        totals["read"] += usage.cache_read_tokens
        if previous is None:
            totals["first: new"] += usage.total_input
            totals["first: count"] += 1
        else:
            before, before_at, before_marks, before_written = previous
            common = sum(1 for _ in itertools.takewhile(lambda pair: pair[0] == pair[1], zip(before, identities)))
            shared = tokens[common - 1] if common else 0
            kind = "append" if max(before_marks, default=-1) < common else "change"
            totals[f"{kind}: count"] += 1
            totals[f"{kind}: new"] += usage.total_input - shared
            unread = max(0, shared - usage.cache_read_tokens)
            if unread:
                minimum = rules.min_cacheable_tokens
                if minimum is None:
                    minimum = anthropic_rules_for(str(sent.body["model"])).min_cacheable_on(rules.rules_on or sent.at.date())
                reachable = [w for w in before_written if w < common and tokens[w] > usage.cache_read_tokens]
                if shared < minimum:
                    cause = CAUSES[0]
                elif rules.expiry and sent.at - before_at >= LIFETIME:
                    cause = CAUSES[1]
                elif reachable and not any(0 <= b - w < LOOKBACK for w in reachable for b in simulated.breakpoints):
                    cause = CAUSES[2]
                else:
                    cause = CAUSES[3]
                totals[f"{kind}: {cause}"] += unread
        previous = (identities, sent.at, simulated.breakpoints, simulated.written_blocks)


def _print(window: int, transcripts: int, totals: dict[str, int]) -> None:
    whole = totals["input"] or 1
    print(f"\nwindow {window:,}: {transcripts} transcripts, {totals['input']:,} input tokens, {totals['read'] / whole:.1%} read")
    print("| requests | count | new (or after the first change) | " + " | ".join(f"shared, unread: {c}" for c in CAUSES) + " |")
    print("|---|---:|---:|" + "---:|" * len(CAUSES))
    for kind, label in (("first", "first of a transcript"), ("append", "appends"), ("change", "after a change")):
        cells = [f"{totals[f'{kind}: {cause}'] / whole:.2%}" for cause in CAUSES]
        print(f"| {label} | {totals[f'{kind}: count']:,} | {totals[f'{kind}: new'] / whole:.2%} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
