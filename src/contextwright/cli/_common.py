"""What every command shares: the consoles, and turning errors into one line."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from typing import TextIO

import typer
from rich.console import Console
from rich.markup import escape

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


def shorten(text: str, width: int = 70) -> str:
    """One line of at most ``width`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"
