"""The replay table's per-row blocks, written as plain text where rich would only pad them."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from contextwright.cli._common import plain_block, print_block

HEADERS = ["file", "format", "messages", "peak request", "cache read", "cost"]


def _rich(headers, row, width):
    out = io.StringIO()
    print_block(headers, row, Console(file=out, width=width))
    return out.getvalue()


@pytest.mark.parametrize(
    "row",
    [
        ["session_2024-08-06_08-47-10.md", "aider-chat-md", "39", "18,833", "n/a", "n/a"],
        ["a.jsonl", "claude-code-jsonl", "1", "0", "12.5%", "$0.0123"],
        ["b (empty)", "x", "0", "0", "n/a", "n/a"],
        ["django__django-11133.json", "openhands-llm-completions", "120", "1,234,567", "0.0%", "$12.3456"],
        ["w" * 44, "x", "1", "2", "n/a", "n/a"],  # exactly the width of a 60-column console
    ],
)
@pytest.mark.parametrize("width", [140, 60])
def test_plain_blocks_are_what_rich_prints(row, width):
    plain = plain_block(HEADERS, row, Console(file=io.StringIO(), width=width))
    assert plain == _rich(HEADERS, row, width)


@pytest.mark.parametrize(
    "cell",
    [
        "a [bold]b[/bold]",  # markup
        "x :smile: y",  # emoji code
        "two  spaces",
        " leading",
        "tab\there",
        "naïve.md",
        "",
        "w" * 200,  # wider than the console: rich wraps it
    ],
)
def test_cells_rich_would_change_are_left_to_rich(cell):
    row = ["ok.md", cell, "1", "2", "n/a", "n/a"]
    assert plain_block(HEADERS, row, Console(file=io.StringIO(), width=140)) is None
    assert _rich(HEADERS, row, 140)  # and rich still prints them


def test_a_console_with_colour_is_left_to_rich():
    row = ["ok.md", "aider-chat-md", "1", "2", "n/a", "n/a"]
    assert plain_block(HEADERS, row, Console(file=io.StringIO(), width=140, force_terminal=True)) is None


def test_a_replay_prints_the_same_blocks_when_one_row_needs_rich(tmp_path):
    # One long name must not send every other row through rich, nor change any row's bytes.
    from contextwright.cli import _common

    rows = [["short.md", "aider-chat-md", "1", "2", "n/a", "n/a"], ["w" * 100, "x", "1", "2", "n/a", "n/a"]]
    out = io.StringIO()
    saved = _common.console
    _common.console = Console(file=out, width=60)
    try:
        _common.print_rows(HEADERS, rows, title="t", numeric=HEADERS[2:])
    finally:
        _common.console = saved
    assert out.getvalue() == "t\n" + _rich(HEADERS, rows[0], 60) + _rich(HEADERS, rows[1], 60)
