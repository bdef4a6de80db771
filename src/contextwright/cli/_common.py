"""What every command shares: the consoles, and turning errors into one line."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import typer
from rich.console import Console

from contextwright.errors import ContextwrightError

# Tables need room: when output is not a terminal (pipes, CI logs), do not squeeze them to 80 columns.
console = Console(width=None if sys.stdout.isatty() else 140)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 140)


@contextlib.contextmanager
def friendly_errors() -> Iterator[None]:
    """Print a Contextwright error as one line on stderr and exit with status 1."""
    try:
        yield
    except ContextwrightError as exc:
        err_console.print(f"[bold red]error:[/] {exc.message}", highlight=False, soft_wrap=True)
        raise typer.Exit(code=1) from None


def shorten(text: str, width: int = 70) -> str:
    """One line of at most ``width`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"
