"""The comparison's token counter: one exact counter for every strategy, named in every result."""

from __future__ import annotations

import pytest

from contextwright.compare import TokenCounter, aggregate, compare_transcript, exact_counting_available
from contextwright.errors import UsageError
from contextwright.importers.model import Transcript, TranscriptMessage

needs_tiktoken = pytest.mark.skipif(not exact_counting_available(), reason="exact counts need the tiktoken extra")


def _transcript() -> Transcript:
    messages = (
        TranscriptMessage(role="user", text='Fix "rounding" in invoice.py, please.'),
        TranscriptMessage(role="assistant", text="Done: the totals now round half up."),
    )
    return Transcript(format="synthetic", source="test", session_id="count", messages=messages, task=messages[0].text)


@needs_tiktoken
def test_exact_counts_read_strings_as_written_not_json_escaped():
    from contextwright.budget._tokenizers import exact_token_counter

    count = exact_token_counter("o200k_base")
    counter = TokenCounter(counting="o200k")
    text = 'She said "stop"\nthen "go" \\ done'
    skeleton = count('{"text":"","type":""}')  # every string emptied, keys kept
    assert counter.block({"type": "text", "text": text}) == skeleton + count("text") + count(text)
    # JSON escaping would have charged the quotes, newline and backslash.
    assert counter.block({"type": "text", "text": text}) < count(
        '{"text":' + '"She said \\"stop\\"\\nthen \\"go\\" \\\\ done"' + ',"type":"text"}'
    )


@needs_tiktoken
def test_every_result_names_its_counter_and_exact_is_the_default():
    results = compare_transcript(_transcript(), window=32_000)
    assert {r.counting for r in results} == {"o200k"}


def test_the_heuristic_counter_is_a_choice_and_counts_differently():
    heuristic = compare_transcript(_transcript(), window=32_000, counter=TokenCounter(counting="heuristic"))
    assert {r.counting for r in heuristic} == {"heuristic"}
    if exact_counting_available():
        exact = compare_transcript(_transcript(), window=32_000, counter=TokenCounter(counting="o200k"))
        assert [r.peak_request_tokens for r in exact] != [r.peak_request_tokens for r in heuristic]


def test_results_counted_differently_cannot_be_summed():
    heuristic = compare_transcript(_transcript(), window=32_000, counter=TokenCounter(counting="heuristic"))
    relabelled = tuple(r.__class__(**{**{f: getattr(r, f) for f in r.__slots__}, "counting": "o200k"}) for r in heuristic)
    with pytest.raises(UsageError, match="cannot be summed"):
        aggregate([heuristic, relabelled])


def test_an_unknown_counter_is_refused():
    with pytest.raises(UsageError, match="unknown token counting"):
        TokenCounter(counting="words")  # type: ignore[arg-type]
