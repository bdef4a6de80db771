"""Which of Contextwright's relief passes its prompt-cache misses follow, per window and transcript format.

Run from the repository root:

    python bench/relief_misses.py                      # 32k and 200k, every transcript
    python bench/relief_misses.py --windows 32000 --quick
    python bench/relief_misses.py --cache-rules lenient     # no minimum, no expiry (see cache_bench.py)

The engine's requests (the ones ``bench/cache_bench.py`` prices) go through the offline
Anthropic cache simulator with exact o200k counts, and so do the append-only ceiling's.
Each engine request is labelled by what its build did: ``compaction``,
``tool_results_to_pointers`` (a pruning pass), or ``append`` when neither ran (oversized
items are bounded on arrival, a rule rather than a yield, so they add no label). The previous request of the
transcript is compared block by block with it: the *rewritten* part is the input after
the first block that changed. Per label the table gives the requests, their share of
all input tokens, and the misses (cache writes plus uncached input) as a share of all
input; the last rows give the same for the ceiling, so the gap per format shows where
the engine loses.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

from cache_bench import miss_run

from contextwright.compare import CEILING, CacheRules, SentRequest, TokenCounter, baseline_requests, engine_requests
from contextwright.pricing.cache_sim import SimRequest, render_anthropic_blocks

LABELS = ("first", "append", "tool_results_to_pointers", "compaction")


def main() -> None:
    run = miss_run(__doc__)
    transcripts = run.transcripts
    counter = TokenCounter(counting="o200k")
    ceiling: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for kind, transcript in transcripts:
        _tally(baseline_requests(transcript, CEILING), counter, ceiling[kind], window=None, rules=run.rules)
    for window in run.windows:
        per_format: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for kind, transcript in transcripts:
            _tally(
                engine_requests(transcript, window=window, engine=run.engine),
                counter,
                per_format[kind],
                window=window,
                rules=run.rules,
            )
        _print(window, per_format, ceiling)


def _label(sent: SentRequest, first: bool) -> str:
    if first:
        return "first"
    for label in reversed(LABELS[2:]):
        if label in sent.relief:
            return label
    return "append"


def _tally(
    requests: tuple[SentRequest, ...], counter: TokenCounter, totals: dict[str, int], *, window: int | None, rules: CacheRules
) -> None:
    simulator = rules.simulator(counter)
    before: list[str] | None = None
    for sent in requests:
        blocks = render_anthropic_blocks(sent.body)
        identities = [b.identity for b in blocks]
        tokens = list(itertools.accumulate(counter(b.text) for b in blocks))
        usage = simulator.request(SimRequest(at=sent.at, body=sent.body)).usage
        label = _label(sent, before is None)
        common = sum(1 for _ in itertools.takewhile(lambda pair: pair[0] == pair[1], zip(before or [], identities)))
        shared = tokens[common - 1] if common else 0
        totals["input"] += usage.total_input
        totals["read"] += usage.cache_read_tokens
        totals[f"{label}: count"] += 1
        totals[f"{label}: input"] += usage.total_input
        totals[f"{label}: missed"] += usage.total_input - usage.cache_read_tokens
        totals[f"{label}: rewritten"] += usage.total_input - shared
        if window is not None:
            totals["peak"] = max(totals["peak"], usage.total_input)
        before = identities


def _print(window: int, per_format: dict[str, dict[str, int]], ceiling: dict[str, dict[str, int]]) -> None:
    print(f"\nwindow {window:,}: misses (writes + uncached) per kind of request, as a share of the format's input")
    print("| format | read (ceiling) | peak | " + " | ".join(f"{label}: n / missed / rewritten" for label in LABELS) + " |")
    print("|---|---:|---:|" + "---:|" * len(LABELS))
    everything: dict[str, int] = defaultdict(int)
    whole_ceiling: dict[str, int] = defaultdict(int)
    for kind in sorted(per_format):
        totals = per_format[kind]
        for key, value in totals.items():
            everything[key] = max(everything[key], value) if key == "peak" else everything[key] + value
        for key, value in ceiling[kind].items():
            whole_ceiling[key] += value
        print(_row(kind, totals, ceiling[kind]))
    print(_row("all", everything, whole_ceiling))


def _row(kind: str, totals: dict[str, int], ceiling: dict[str, int]) -> str:
    whole = totals["input"] or 1
    share = totals["read"] / whole
    ceiling_share = ceiling["read"] / (ceiling["input"] or 1)
    cells = [
        f"{totals[f'{label}: count']:,} / {totals[f'{label}: missed'] / whole:.2%} / {totals[f'{label}: rewritten'] / whole:.2%}"
        for label in LABELS
    ]
    return f"| {kind} | {share:.1%} ({ceiling_share:.1%}) | {totals['peak']:,} | " + " | ".join(cells) + " |"


if __name__ == "__main__":
    main()
