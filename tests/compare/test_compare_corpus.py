"""The acceptance targets of the cache benchmark, on a handful of real transcripts (one or more per format)."""

from __future__ import annotations

import pytest

from contextwright.compare import CEILING, aggregate, compare_windows, exact_counting_available
from contextwright.importers import load_transcripts

pytestmark = pytest.mark.corpus

HANDFUL = (
    "django__django-11299.json",  # openhands-llm-completions, 50 calls, big tool outputs
    "ponylang__ponyc-4595.json",  # openhands-events
    "12a546d1-83a7-49a6-abba-5400db340b43.jsonl",  # claude-code-jsonl
    "session_2024-08-13_13-42-45.md",  # aider-chat-md
    "demo__ctf__web__i_got_id_demo.traj",  # swe-agent-traj
    "2025-04-29_18-53-starting-task-002.md",  # cursor-specstory-md
)
STRATEGIES = ("sliding_window", CEILING, "contextwright")


@pytest.fixture(scope="module")
def rows(traces_dir):
    per: dict[int, list] = {32_000: [], 200_000: []}
    for name in HANDFUL:
        [path] = sorted(traces_dir.rglob(name))
        for transcript in load_transcripts([path]):
            for window, results in compare_windows(transcript, windows=tuple(per), strategies=STRATEGIES).items():
                per[window].append(results)
    return {window: {row.name: row for row in aggregate(results)} for window, results in per.items()}


@pytest.mark.skipif(
    not exact_counting_available(),
    reason='the fit is measured with exact o200k counts (pip install "contextwright[tiktoken]"); '
    "the heuristic fallback over-counts JSON bodies, so it is a quick look only",
)
def test_at_32k_contextwright_fits_keeps_the_task_and_costs_less_than_the_sliding_window(rows):
    engine, sliding = rows[32_000]["contextwright"], rows[32_000]["sliding_window"]
    assert engine.transcripts == len(HANDFUL)
    assert engine.overflows == 0
    assert engine.task_visible == 1.0
    assert engine.input_cost <= sliding.input_cost


def test_at_200k_contextwright_reads_at_least_99_percent_of_the_ceiling(rows):
    engine, ceiling = rows[200_000]["contextwright"], rows[200_000][CEILING]
    assert engine.cache_read_share >= 0.99 * ceiling.cache_read_share
