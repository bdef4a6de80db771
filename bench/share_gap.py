"""Where Contextwright's cache-read share falls short of the append-only ceiling's, per transcript format.

Run from the repository root:

    python bench/share_gap.py                          # 200k, every transcript
    python bench/share_gap.py --windows 32000 --quick
    python bench/share_gap.py --cache-rules lenient    # no minimum, no expiry (see cache_bench.py)

The share is a ratio: misses (cache writes plus uncached input) over all input. The engine
and the ceiling are replayed on the same timeline, counted with o200k and simulated; each
request is compared block by block with the one before it, so the misses split into the
first request of each transcript, the new tail of an append (split again into envelope
markup and the rest), requests that show an oversized item bounded (a new item's view is new
content; a cached item's view rewrites the history after it) and what follows a relief pass
(pruning, compaction).
Per format the table gives both strategies' input and misses, and what the engine's share
would be with its own misses over the ceiling's input: the part of the gap that comes from
sending less, not from missing more.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from collections.abc import Sequence

from cache_bench import miss_run
from overhead_bench import markup_tokens

from contextwright.compare import CEILING, CacheRules, SentRequest, TokenCounter, baseline_requests, engine_requests
from contextwright.pricing.cache_sim import SimRequest, render_anthropic_blocks

PARTS = ("first", "tail: markup", "tail: content", "bounded views", "after relief")
RELIEF_PASSES = frozenset({"tool_results_to_pointers", "compaction"})
"""The yields that are relief passes (a bounded view is a yield of the build, not a pass)."""


def main() -> None:
    run = miss_run(__doc__)
    counter = TokenCounter(counting="o200k")
    ceiling: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for kind, transcript in run.transcripts:
        _tally(baseline_requests(transcript, CEILING), counter, ceiling[kind], rules=run.rules)
    for window in run.windows:
        engine: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for kind, transcript in run.transcripts:
            _tally(engine_requests(transcript, window=window, engine=run.engine), counter, engine[kind], rules=run.rules)
        _print(window, engine, ceiling)


def _tally(requests: Sequence[SentRequest], counter: TokenCounter, totals: dict[str, int], *, rules: CacheRules) -> None:
    simulator = rules.simulator(counter)
    before: list[str] | None = None
    for sent in requests:
        blocks = render_anthropic_blocks(sent.body)
        identities = [b.identity for b in blocks]
        usage = simulator.request(SimRequest(at=sent.at, body=sent.body)).usage
        missed = usage.total_input - usage.cache_read_tokens
        totals["input"] += usage.total_input
        totals["missed"] += missed
        if before is None:
            totals["first"] += missed
        elif RELIEF_PASSES.intersection(sent.relief):
            totals["after relief"] += missed
        elif sent.relief:
            totals["bounded views"] += missed
        else:
            common = sum(1 for _ in itertools.takewhile(lambda pair: pair[0] == pair[1], zip(before, identities)))
            markup = sum(markup_tokens(json.loads(b.text), counter) for b in blocks[common:])
            # Markup is new only where the tail is; a miss below it (expiry, the minimum) is content.
            totals["tail: markup"] += min(markup, missed)
            totals["tail: content"] += missed - min(markup, missed)
        before = identities


def _print(window: int, engine: dict[str, dict[str, int]], ceiling: dict[str, dict[str, int]]) -> None:
    print(f"\nwindow {window:,}: engine against the append-only ceiling (misses = cache writes + uncached input)")
    heads = ["format", "engine share", "ceiling share", "engine input", "ceiling input", "engine misses", "ceiling misses"]
    heads += [f"engine misses: {p}" for p in PARTS] + ["ceiling misses: first", "engine misses over the ceiling's input"]
    print("| " + " | ".join(heads) + " |")
    print("|---|" + "---:|" * (len(heads) - 1))
    whole_engine: dict[str, int] = defaultdict(int)
    whole_ceiling: dict[str, int] = defaultdict(int)
    for kind in sorted(engine):
        for key, value in engine[kind].items():
            whole_engine[key] += value
        for key, value in ceiling[kind].items():
            whole_ceiling[key] += value
        print(_row(kind, engine[kind], ceiling[kind]))
    print(_row("all", whole_engine, whole_ceiling))


def _row(kind: str, engine: dict[str, int], ceiling: dict[str, int]) -> str:
    def share(missed: int, whole: int) -> str:
        return f"{1 - missed / whole:.2%}" if whole else "n/a"

    cells = [
        kind,
        share(engine["missed"], engine["input"]),
        share(ceiling["missed"], ceiling["input"]),
        f"{engine['input']:,}",
        f"{ceiling['input']:,}",
        f"{engine['missed']:,}",
        f"{ceiling['missed']:,}",
        *(f"{engine[p]:,}" for p in PARTS),
        f"{ceiling['first']:,}",
        share(engine["missed"], ceiling["input"]),
    ]
    return "| " + " | ".join(cells) + " |"


if __name__ == "__main__":
    main()
