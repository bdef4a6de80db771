"""What the append-only ceiling reads under looser cache rules than the research notes give.

Run from the repository root:

    python bench/ceiling_rules.py            # every shared transcript
    python bench/ceiling_rules.py --quick

The ceiling (every message kept, markers on the system prompt and the ends of the last two
messages; :mod:`contextwright.compare.strategies`) is replayed through the offline Anthropic
simulator with exact o200k counts, once with the simulator's rules and then with each rule
relaxed: the minimum cacheable length forced to 1,024 or to 0 (``min_cacheable_tokens``),
and no expiry (every request re-timed at the fixed pace untimed transcripts get, so no gap
reaches the 5-minute lifetime). A ceiling measured elsewhere that is higher than ours by
about the sum of these is a simulator without those rules, not a better strategy.
``python bench/cache_bench.py --cache-rules lenient`` applies the last row's rules to every
strategy.
"""

from __future__ import annotations

from collections.abc import Sequence

from cache_bench import miss_run

from contextwright.compare import CEILING, SentRequest, TokenCounter, baseline_requests
from contextwright.compare.timeline import MODEL_CALL_PACE
from contextwright.pricing.cache_sim import AnthropicCacheSimulator, SimRequest

VARIANTS: tuple[tuple[str, int | None, bool], ...] = (
    ("the simulator's rules (dated minimum, 5-minute lifetime)", None, False),
    ("minimum 1,024", 1_024, False),
    ("no minimum", 0, False),
    ("no expiry", None, True),
    ("minimum 1,024, no expiry", 1_024, True),
    ("no minimum, no expiry", 0, True),
)


def main() -> None:
    run = miss_run(__doc__)
    counter = TokenCounter(counting="o200k")
    runs = [baseline_requests(t, CEILING) for _, t in run.transcripts]
    print(f"append-only ceiling, {len(runs)} transcripts, o200k counts")
    print("| rules | cache-read share |")
    print("|---|---:|")
    for label, minimum, paced in VARIANTS:
        print(f"| {label} | {_share(runs, counter, minimum, paced=paced):.2%} |")


def _share(runs: Sequence[Sequence[SentRequest]], counter: TokenCounter, minimum: int | None, *, paced: bool) -> float:
    read = total = 0
    for sent in runs:
        simulator = AnthropicCacheSimulator(count_tokens=counter, check_context_window=False, min_cacheable_tokens=minimum)
        start = sent[0].at if sent else None
        for number, request in enumerate(sent):
            at = start + number * MODEL_CALL_PACE if paced and start is not None else request.at
            usage = simulator.request(SimRequest(at=at, body=request.body)).usage
            read += usage.cache_read_tokens
            total += usage.total_input
    return read / total if total else 0.0


if __name__ == "__main__":
    main()
