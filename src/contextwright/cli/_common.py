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

    In the table, headers and text wrap between words, never inside one, and numbers never
    wrap; only the first column (the row's name) may fold a word, past 40 characters. Space
    the terminal has left widens the first column, then the others, up to their longest values.
    """

    def words(text: str) -> list[int]:
        return [len(word) for word in text.split()] or [0]

    def least(index: int) -> int:
        head, cells = max(words(headers[index])), [row[index] for row in rows]
        if headers[index] in numeric:
            return max(head, *(len(cell) for cell in cells), 1)
        longest_word = max((n for cell in cells for n in words(cell)), default=1)
        return max(head, min(longest_word, 40) if index == 0 else longest_word)

    widths = [least(i) for i in range(len(headers))]
    # Each column pads one space on either side (none at the table's edges).
    spare = console.width - sum(widths) - 2 * (len(headers) - 1)
    if spare >= 0:
        for index in range(len(headers)):
            grow = min(spare, max((len(row[index]) for row in rows), default=0) - widths[index])
            if grow > 0:
                widths[index] += grow
                spare -= grow
        columns = [
            Column(
                h.replace(" ", "\n"),
                justify="right" if h in numeric else "left",
                no_wrap=h in numeric,
                overflow="fold",
                width=width,  # fixed: the layout is exactly the one measured above
            )
            for h, width in zip(headers, widths, strict=True)
        ]
        table = Table(*columns, title=title, box=None, pad_edge=False, header_style="bold")
        for row in rows:
            table.add_row(*row)
        console.print(table)
        return
    console.print(escape(title), highlight=False, overflow="fold")
    for row in rows:
        plain = plain_block(headers, row, console)
        if plain is None:
            print_block(headers, row, console)
        else:
            console.file.write(plain)
    console.file.flush()


def print_block(headers: Sequence[str], row: Sequence[str], target: Console) -> None:
    """One row as a two-column block (header, value), laid out by rich, and a blank line."""
    block = Table(Column("", no_wrap=True), Column("", overflow="fold"), show_header=False, box=None, padding=(0, 1))
    for header, value in zip(headers, row, strict=True):
        block.add_row(header, value)
    target.print(block)
    target.print()


def plain_block(headers: Sequence[str], row: Sequence[str], target: Console) -> str | None:
    """What :func:`print_block` writes to ``target``, built as plain text; None when rich must lay it out.

    Rich costs about 2 ms a block (a replay prints one per transcript). Without colour, a
    block whose cells are single words or words joined by single spaces, in printable ASCII
    without markup or emoji marks, and that fits the width, is only padded cells: " key  value ".
    """
    if target.color_system is not None or target.record or target.quiet or target.is_terminal:
        return None
    if not all(_plain_cell(cell) for cell in (*headers, *row)):
        return None
    key_width = max(len(header) for header in headers)
    value_width = max(len(value) for value in row)
    if key_width + value_width + 4 > target.width:
        return None
    lines = [f" {header.ljust(key_width)}  {value.ljust(value_width)} \n" for header, value in zip(headers, row, strict=True)]
    return "".join(lines) + "\n"


def _plain_cell(text: str) -> bool:
    # Markup opens with "[", emoji codes with ":"; anything wrapped or spaced unevenly is rich's to lay out.
    return (
        bool(text)
        and text.isascii()
        and text.isprintable()
        and "[" not in text
        and ":" not in text
        and text == " ".join(text.split())
    )


def shorten(text: str, width: int = 70) -> str:
    """One line of at most ``width`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"
