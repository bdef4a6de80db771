"""The ``contextwright`` command line (typer and rich)."""

from __future__ import annotations

import typer

from contextwright._version import __version__
from contextwright.cli import compact as _compact
from contextwright.cli import compress as _compress
from contextwright.cli import demo as _demo
from contextwright.cli import inspect as _inspect
from contextwright.cli import replay as _replay
from contextwright.cli import store as _store

app = typer.Typer(
    name="contextwright",
    help="Contextwright: a context engine for LLM agents. Every command works offline.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"contextwright {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Contextwright: a context engine for LLM agents. Every command works offline."""


app.command("demo")(_demo.demo)
app.command("replay")(_replay.replay)
app.command("inspect")(_inspect.inspect)
app.command("stats")(_inspect.stats)
app.command("compress")(_compress.compress)
app.command("compact")(_compact.compact)
app.command("sessions")(_store.sessions)
app.command("events")(_store.events)
app.command("verify")(_store.verify)


def main() -> None:
    """Console-script entry point."""
    app()
