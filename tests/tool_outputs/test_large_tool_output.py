"""19.6: one very large tool output costs bounded memory, and its failure lines still reach the model."""

from __future__ import annotations

import tracemalloc

import pytest

from contextwright.events import AssistantMessage, ToolCall
from contextwright.testing.fakes import open_session
from contextwright.tool_outputs.cap import MARKER_RE
from contextwright.tool_outputs.scan_window import (
    _SCAN_CHUNK_CHARS,
    COMPRESS_WINDOW_CHARS,
    VIEW_CHARS_PER_LINE,
    bounded_view,
    view_chars,
)

REF = "sha256:" + "ab" * 32


def _pytest_log(size: int, *, failure_at: float) -> str:
    block = "".join(f"tests/test_mod_{i % 97}.py::test_case_{i} PASSED [{i % 100:3d}%]\n" for i in range(2000))
    output = (block * (size // len(block) + 1))[:size]
    cut = output.index("\n", int(size * failure_at)) + 1
    return output[:cut] + "tests/test_pay.py::test_refund FAILED - AssertionError: 3 != 4\n" + output[cut:]


def test_a_short_output_is_its_own_view():
    text = _pytest_log(200_000, failure_at=0.5)
    assert bounded_view(text, ref=REF) is text


def test_a_long_output_keeps_head_tail_and_the_failures_of_its_middle():
    text = _pytest_log(5_000_000, failure_at=0.5)
    view = bounded_view(text, ref=REF)
    assert len(view) <= COMPRESS_WINDOW_CHARS + 300 * 510
    assert view.startswith(text[:1000]) and view.endswith(text[-1000:])
    assert "tests/test_pay.py::test_refund FAILED - AssertionError: 3 != 4" in view
    marker = next(line for line in view.splitlines() if MARKER_RE.match(line))
    found = MARKER_RE.match(marker)
    assert found is not None and found["pointer"] == REF and int(found["total"]) == len(text)


def test_a_middle_of_one_huge_line_is_scanned_once():
    # No newline at all: the cut falls mid-line, and the scan still ends.
    text = "x" * 3_000_000 + " error here " + "y" * 3_000_000
    view = bounded_view(text, ref=REF)
    assert len(view) < COMPRESS_WINDOW_CHARS + 1000


def test_a_20_mb_tool_result_peaks_under_three_times_its_size():
    _, session, _ = open_session()
    session.user("run the tests")
    session.next_request()
    session.adapter.record_assistant(AssistantMessage(tool_calls=(ToolCall(id="c1", name="run_tests", arguments={}),)))
    output = _pytest_log(20_000_000, failure_at=0.6)
    tracemalloc.start()
    try:
        event = session.tool_result("c1", output, exit_code=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Before the bounded view, compressing the whole output cost about 12 times its size.
    assert peak <= 3 * len(output), f"peak {peak / len(output):.1f}× the output"
    assert "test_refund FAILED" in event.payload.output
    assert session.setup.log.get_artifact(event.payload.artifact.ref) == output


def test_a_view_of_short_lines_is_bounded_by_lines_too():
    # A line costs the compressor more than its text: a view of tiny lines keeps fewer of them.
    text = "x\n" * 1_000_000
    view = bounded_view(text, ref=REF)
    assert view.count("\n") <= view_chars(len(text)) // VIEW_CHARS_PER_LINE + 2
    assert view.startswith("x\nx\n") and view.endswith("x\nx\n")


@pytest.mark.parametrize("word", ["ERROR", "Fail", "exception", "TraceBack", "panic", "FATAL"])
def test_the_middle_scan_finds_a_failure_word_in_any_case_across_a_chunk_seam(word):
    # The middle is scanned a chunk at a time from where the head ends: put the word across the first seam.
    text = ("." * 99 + "\n") * 40_000
    found = MARKER_RE.match(next(line for line in bounded_view(text, ref=REF).splitlines() if MARKER_RE.match(line)))
    assert found is not None
    seam = int(found["first"]) - 1 + _SCAN_CHUNK_CHARS
    for start in (seam - len(word) + 1, seam - 1):
        marked = text[:start] + word + text[start + len(word) :]
        assert word in bounded_view(marked, ref=REF)


def test_the_middle_scan_reads_non_ascii_chunks_with_the_same_rule():
    # Lowering "İ" changes a length, so such a chunk is searched case-blind by the regex.
    filler = "İ" * 99 + "\n"
    text = filler * 40_000
    cut = len(text) // 2
    text = text[:cut] + "\nKaboom: Fatal signal\n" + text[cut:]
    view = bounded_view(text, ref=REF)
    assert "Kaboom: Fatal signal" in view
