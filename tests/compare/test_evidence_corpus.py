"""Evidence recall on a few real transcripts: keeping everything sees all, keeping two messages does not, the engine is measured."""

from __future__ import annotations

import pytest

from contextwright.compare import CEILING, SentRequest, compare_windows, timeline_of
from contextwright.compare.evidence import evidence_recall, used_strings
from contextwright.importers import load_transcripts

pytestmark = pytest.mark.corpus

FEW = (
    "fe869ecb-c176-478f-9734-7e4b8ef12cff.jsonl",  # claude-code-jsonl, a Read the engine bounds at 32k
    "django__django-10097.json",  # openhands-llm-completions, 50 calls
    "ponylang__ponyc-4593.json",  # openhands-events
    "session_2024-08-13_13-42-45.md",  # aider-chat-md
)


@pytest.fixture(scope="module")
def transcripts(traces_dir):
    found = []
    for name in FEW:
        [path] = sorted(traces_dir.rglob(name))
        found += load_transcripts([path])
    return found


def test_keeping_everything_sees_every_pair_and_the_last_two_messages_far_fewer(transcripts):
    pairs = seen_all = seen_two = 0
    for transcript in transcripts:
        timeline = timeline_of(transcript)
        used = used_strings(timeline)
        everything = [_sent(timeline, 0, call.upto, call) for call in timeline.calls]
        last_two = [_sent(timeline, max(0, call.upto - 2), call.upto, call) for call in timeline.calls]
        full = evidence_recall(timeline, everything, strategy="keep_everything", used=used)
        two = evidence_recall(timeline, last_two, strategy="last_two_messages", used=used)
        assert full.pairs == two.pairs
        assert full.seen == full.pairs, transcript.source
        pairs += full.pairs
        seen_all += full.seen
        seen_two += two.seen
    assert pairs >= 300  # the transcripts use real evidence, enough to measure
    assert seen_all == pairs
    assert seen_two / pairs < 0.6  # 43% on these four


def test_every_strategy_is_measured_on_the_same_pairs_and_the_engine_is_reported(transcripts):
    for transcript in transcripts:
        per_window = compare_windows(transcript, windows=(32_000, 200_000))
        for window, results in per_window.items():
            by_name = {r.name: r for r in results}
            ceiling = by_name[CEILING].evidence
            assert ceiling.share == 1.0
            for result in results:
                assert result.evidence.pairs == ceiling.pairs, (result.name, window)
                missed = sum(result.evidence.misses.values())
                assert result.evidence.seen + missed == result.evidence.pairs
            engine = by_name["contextwright"]
            assert engine.evidence.share is not None
            assert engine.relative_cost_with_read_backs is not None
            assert engine.relative_input_cost is not None
            assert engine.relative_cost_with_read_backs >= engine.relative_input_cost


def _sent(timeline, start, upto, call) -> SentRequest:
    """The system prompt and units ``start..upto`` as one plain request (no merging: recall reads text only)."""
    messages = [{"role": unit.role, "content": [dict(b) for b in unit.blocks]} for unit in timeline.units[start:upto]]
    body = {"system": [{"type": "text", "text": timeline.system}], "messages": messages}
    return SentRequest(at=call.at, body=body, task=None, ordinal=call.ordinal)
