"""Evidence recall on transcripts small enough to read: what counts as used, and what counts as visible."""

from __future__ import annotations

from decimal import Decimal

from contextwright.compare import CEILING, SentRequest, baseline_requests, compare_transcript, timeline_of
from contextwright.compare.evidence import (
    Recall,
    distinctive_strings,
    evidence_recall,
    normalize,
    request_text,
    used_strings,
)
from contextwright.importers.model import ToolCall, ToolResult, Transcript, TranscriptMessage

ERROR = "KeyError: 'invoice_total' in billing/ledger.py line 4417"
SYSTEM = "Always run tests with run_tests_quietly before you finish."


def _transcript(*, filler: int = 0) -> Transcript:
    """The user names a file; a tool shows an error; the assistant uses both; then ``filler`` reads pad the history."""
    messages = [
        TranscriptMessage(role="user", text="Fix the crash in billing/ledger.py, please."),
        TranscriptMessage(
            role="assistant",
            text="I will run the tests.",
            tool_calls=(ToolCall(id="c1", name="bash", arguments={"command": "pytest -x"}),),
        ),
        TranscriptMessage(role="tool", text="", tool_results=(ToolResult(call_id="c1", output=f"FAILED\n{ERROR}\n"),)),
        TranscriptMessage(
            role="assistant",
            # Uses: the path (user), the quoted key and the line number (tool). Writes first: fix_totals.
            # Names the system prompt's run_tests_quietly, which every request shows.
            text="The KeyError for 'invoice_total' comes from billing/ledger.py at 4417; "
            "I add fix_totals and then call run_tests_quietly.",
            tool_calls=(
                ToolCall(
                    id="c2",
                    name="edit",
                    arguments={"path": "billing/ledger.py", "new": "def fix_totals(rows):\n    return sum(rows)"},
                ),
            ),
        ),
        TranscriptMessage(role="tool", text="", tool_results=(ToolResult(call_id="c2", output="edited"),)),
    ]
    for n in range(filler):
        messages.append(
            TranscriptMessage(
                role="assistant", text=f"Reading part {n}.", tool_calls=(ToolCall(id=f"r{n}", name="read", arguments={}),)
            )
        )
        messages.append(TranscriptMessage(role="tool", text="", tool_results=(ToolResult(call_id=f"r{n}", output="x " * 6_000),)))
    messages.append(TranscriptMessage(role="assistant", text="Done: fix_totals now guards the KeyError."))
    return Transcript(session_id="s", format="test", source="test", messages=tuple(messages), system=SYSTEM)


def test_distinctive_strings_takes_paths_identifiers_codes_hashes_numbers_quotes_and_typed_lines():
    text = 'See src/app/main.py, call load_config or parseHeader, E501, abc1234f, 40213 and "the missing key"; 123, a_b.'
    found = distinctive_strings(text)
    assert {"src/app/main.py", "load_config", "parseHeader", "E501", "abc1234f", "40213", "the missing key"} <= found
    assert "call" not in found and "See" not in found  # plain words are not distinctive
    assert "123" not in found and "a_b" not in found  # shorter than four characters
    typed = distinctive_strings("x = 1\n    return compute(values) + 1", typed=True)
    assert "return compute(values) + 1" in typed
    assert "return compute(values) + 1" not in distinctive_strings("x = 1\n    return compute(values) + 1")


def test_only_strings_first_read_in_user_or_tool_content_count():
    timeline = timeline_of(_transcript())
    used = used_strings(timeline)
    second = {u.text for u in used[1]}
    assert {"billing/ledger.py", "invoice_total", "4417"} <= second
    assert "fix_totals" not in second  # the assistant wrote it first
    assert "run_tests_quietly" not in second  # the system prompt shows it every time
    last = {u.text for u in used[max(used)]}
    assert "fix_totals" not in last  # still the assistant's own, however often it repeats it


def test_keeping_everything_sees_every_pair_and_a_request_without_the_tool_output_misses_its_strings():
    transcript = _transcript()
    timeline = timeline_of(transcript)
    keep = baseline_requests(transcript, "keep_all_single_breakpoint")
    everything = evidence_recall(timeline, keep, strategy="keep_all_single_breakpoint")
    assert everything.pairs > 0 and everything.share == 1.0
    # The same requests with the failing output replaced by a pointer stub.
    pruned = [
        _replace_output(s, "c1", "[bash output (tool, 60 chars) out of context; read: context_read_artifact ref=x]") for s in keep
    ]
    recall = evidence_recall(timeline, pruned, strategy="contextwright")
    assert recall.seen < everything.seen
    assert set(recall.misses) == {"pruned"}
    assert recall.read_backs == 1  # one output, read back once however many strings it held
    # Shortened without any pointer: nothing to read back.
    cut = [_replace_output(s, "c1", "FAILED") for s in keep]
    shortened = evidence_recall(timeline, cut, strategy="contextwright")
    assert set(shortened.misses) == {"compressed"} and shortened.read_backs == 0
    # A bounded view of its head and tail, naming the read tool.
    view = "FAILED\n[... 52 of 60 characters not shown here; the whole text: context_read_artifact ref=#3 ...]\n"
    bounded = evidence_recall(timeline, [_replace_output(s, "c1", view) for s in keep], strategy="contextwright")
    assert set(bounded.misses) == {"bounded"} and bounded.read_backs == 1


def test_a_call_with_no_request_misses_everything_it_used():
    transcript = _transcript()
    timeline = timeline_of(transcript)
    keep = baseline_requests(transcript, "keep_all_single_breakpoint")
    second = timeline.calls[1].ordinal
    kept = [
        SentRequest(at=s.at, body=s.body, task=s.task, ordinal=c.ordinal)
        for s, c in zip(keep, timeline.calls, strict=True)
        if c.ordinal != second
    ]
    recall = evidence_recall(timeline, kept, strategy="contextwright")
    assert recall.misses == {"not_built": len(used_strings(timeline)[second])}


def test_envelope_escaping_and_whitespace_do_not_hide_a_string():
    assert normalize("a &amp; b\n\n  c") == "a & b c"
    body = {"system": [{"type": "text", "text": "s"}], "messages": [{"role": "user", "content": "x &lt;y>  z"}]}
    assert request_text(body) == "s x <y> z"


def test_the_sliding_window_misses_what_it_trimmed_and_the_comparison_reports_recall_for_every_strategy():
    transcript = _transcript(filler=12)
    results = {r.name: r for r in compare_transcript(transcript, window=16_000)}
    ceiling = results[CEILING]
    assert ceiling.evidence.share == 1.0 and ceiling.relative_cost_with_read_backs == 1.0
    sliding = results["sliding_window"].evidence
    assert sliding.share is not None and sliding.share < 1.0
    assert set(sliding.misses) == {"trimmed"}
    engine = results["contextwright"]
    assert engine.evidence.pairs == ceiling.evidence.pairs  # one counter, the same pairs for every strategy
    assert engine.relative_cost_with_read_backs is not None
    assert engine.relative_cost_with_read_backs >= (engine.relative_input_cost or 0)


def test_recalls_add_up():
    a = Recall(pairs=4, seen=3, misses={"pruned": 1}, read_backs=1, read_back_tokens=10, read_back_cost=Decimal("0.1"))
    b = Recall(pairs=2, seen=1, misses={"trimmed": 1})
    total = a + b
    assert (total.pairs, total.seen, total.share) == (6, 4, 4 / 6)
    assert total.misses == {"pruned": 1, "trimmed": 1}
    assert Recall().share is None


def _replace_output(sent: SentRequest, call_id: str, text: str) -> SentRequest:
    messages = []
    for message in sent.body["messages"]:
        blocks = []
        for block in message["content"]:
            if block.get("type") == "tool_result" and block.get("tool_use_id") == call_id:
                block = {**block, "content": text}
            blocks.append(block)
        messages.append({**message, "content": blocks})
    return SentRequest(at=sent.at, body={**sent.body, "messages": messages}, task=sent.task)
