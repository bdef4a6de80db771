"""What every command shares: the consoles, and turning errors into one line."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator, Sequence
from typing import TextIO

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Column, Table

from contextwright.errors import ContextwrightError


def terminal_width(stream: TextIO) -> int:
    """$COLUMNS when set, else the terminal's width; 140 when output is not a terminal (pipes, CI logs)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return shutil.get_terminal_size().columns if tty else 140


console = Console(width=terminal_width(sys.stdout))
err_console = Console(stderr=True, width=terminal_width(sys.stderr))


def refresh_width() -> None:
    """Measure the output again (each command runs this: the width may differ from import time)."""
    console.width = terminal_width(sys.stdout)
    err_console.width = terminal_width(sys.stderr)


@contextlib.contextmanager
def friendly_errors() -> Iterator[None]:
    """Print a Contextwright error as one line on stderr and exit with status 1."""
    try:
        yield
    except ContextwrightError as exc:
        # The message is data: "contextwright[postgres]" or "[unsupported block: ...]" must not be read as markup.
        err_console.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False, soft_wrap=True)
        raise typer.Exit(code=1) from None


def print_rows(headers: Sequence[str], rows: Sequence[Sequence[str]], *, title: str, numeric: Sequence[str] = ()) -> None:
    """Rows as one table when it fits the terminal, else one block per row: nothing is ever cut.

    In the table, headers wrap between words (never inside one), numbers never wrap, the
    first column keeps the width of its longest value (up to 40 characters) and other text
    wraps between words.
    """

    def width(index: int) -> int:
        # The first column names the row; other text may wrap between words past 12 characters.
        cap = 40 if index == 0 or headers[index] in numeric else 12
        return min(max((len(r[index]) for r in rows), default=1), cap)

    minimums = [max(width(i), *(len(word) for word in h.split())) for i, h in enumerate(headers)]
    # Each column pads one space on either side (none at the table's edges).
    if sum(minimums) + 2 * (len(headers) - 1) <= console.width:
        columns = [
            Column(
                h.replace(" ", "\n"),
                justify="right" if h in numeric else "left",
                no_wrap=h in numeric,
                overflow="fold",
                width=minimum,  # fixed: the layout is exactly the one measured above
            )
            for h, minimum in zip(headers, minimums, strict=True)
        ]
        table = Table(*columns, title=title, box=None, pad_edge=False, header_style="bold")
        for row in rows:
            table.add_row(*row)
        console.print(table)
        return
    console.print(escape(title), highlight=False, overflow="fold")
    for row in rows:
        block = Table(Column("", no_wrap=True), Column("", overflow="fold"), show_header=False, box=None, padding=(0, 1))
        for header, value in zip(headers, row, strict=True):
            block.add_row(header, value)
        console.print(block)
        console.print()


def shorten(text: str, width: int = 70) -> str:
    """One line of at most ``width`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"
