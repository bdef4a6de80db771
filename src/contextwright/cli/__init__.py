"""The ``contextwright`` command line (typer and rich)."""

from __future__ import annotations

import gc
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from contextwright._version import __version__
from contextwright.cli import (
    _artifacts,
    _compact,
    _compress,
    _demo,
    _gateway,
    _inspect,
    _keys,
    _replay,
    _run,
    _serve,
    _store,
    _why,
)
from contextwright.cli._common import refresh_width


def _without_bool_placeholders(params: list) -> None:
    # A flag takes no value: the help should not show a <bool> type after it.
    for param in params:
        if getattr(param, "is_flag", False):
            param.metavar = ""


class _Command(TyperCommand):
    """A command whose help shows flags as flags."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _without_bool_placeholders(self.params)

    def get_help_option(self, ctx: Any) -> Any:
        """The --help flag, shown without a type."""
        option = super().get_help_option(ctx)
        _without_bool_placeholders([option])
        return option


class _Group(TyperGroup):
    """The top-level group, with the same help conventions."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _without_bool_placeholders(self.params)

    def get_help_option(self, ctx: Any) -> Any:
        """The --help flag, shown without a type."""
        option = super().get_help_option(ctx)
        _without_bool_placeholders([option])
        return option


app = typer.Typer(
    cls=_Group,
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
    refresh_width()


app.command("demo", cls=_Command)(_demo.demo)
app.command("replay", cls=_Command)(_replay.replay)
app.command("inspect", cls=_Command)(_inspect.inspect)
app.command("why", cls=_Command)(_why.why)
app.command("stats", cls=_Command)(_inspect.stats)
app.command("compress", cls=_Command)(_compress.compress)
# Everything after the command's name is its own: `run pytest -x` passes -x to pytest.
app.command("run", cls=_Command, context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True})(_run.run)
app.command("show-artifact", cls=_Command)(_artifacts.show_artifact)
app.command("compact", cls=_Command)(_compact.compact)
app.command("sessions", cls=_Command)(_store.sessions)
app.command("events", cls=_Command)(_store.events)
app.command("verify", cls=_Command)(_store.verify)
app.command("serve", cls=_Command)(_serve.serve)
app.command("gateway", cls=_Command)(_gateway.gateway)
app.add_typer(_keys.app, name="keys")


def main() -> None:
    """Console-script entry point."""
    # The modules, classes and functions loaded so far live as long as the process: frozen, they
    # are left out of the collector's full passes, which a long replay runs again and again.
    gc.freeze()
    try:
        app()
    finally:
        # What the command built is left for the operating system to reclaim: at exit the interpreter
        # would otherwise run one more full collection over all of it, which only delays the exit.
        gc.freeze()
