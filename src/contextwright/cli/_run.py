"""``contextwright run -- CMD ARGS...``: run a command, print its output compressed, exit with its status."""

from __future__ import annotations

import contextlib
import shlex
import signal
import subprocess
from pathlib import Path

import typer
from rich.markup import escape

from contextwright.cli._common import err_console
from contextwright.cli._compress import BUDGET_OPTION, KIND_OPTION, SAVE_ENV, emit

NOT_FOUND = 127
"""The shell's status for a command that does not exist."""
NOT_EXECUTABLE = 126
"""The shell's status for a command that exists but cannot be run."""


def run(
    command: list[str] = typer.Argument(
        ..., metavar="CMD", help="The command to run and its arguments (-- first keeps them all the command's)."
    ),
    kind: str = KIND_OPTION,
    budget: str = BUDGET_OPTION,
    save: Path | None = typer.Option(
        None,
        "--save",
        "-s",
        envvar=SAVE_ENV,
        help="Keep the original output in this directory, named by its SHA-256 (see 'contextwright show-artifact').",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON, as 'contextwright compress --json' does."),
) -> None:
    """Run a command, print its output (stdout and stderr, in order) compressed, and exit with its status.

    Example: contextwright run -- pytest -x

    The compressor is the one 'compress' runs, told the command's real exit status; in a pipe such as `pytest | contextwright compress --exit-code $?` the shell passes the status of the command before the pipe instead. A command that cannot be found exits 127, one that cannot be run 126, as in a shell.
    """
    shown = shlex.join(command)
    status = err_console.status(f"Running {escape(shown)}") if err_console.is_terminal else contextlib.nullcontext()
    try:
        with status:
            # One pipe for both streams keeps their lines in the order the command wrote them.
            done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    except KeyboardInterrupt:
        err_console.print(f"interrupted: {shown} was stopped before it finished", markup=False, highlight=False)
        raise typer.Exit(code=130) from None
    except FileNotFoundError:
        err_console.print(f"[bold red]error:[/] command not found: {escape(command[0])}", highlight=False)
        raise typer.Exit(code=NOT_FOUND) from None
    except PermissionError:
        err_console.print(f"[bold red]error:[/] cannot run {escape(command[0])}: permission denied", highlight=False)
        raise typer.Exit(code=NOT_EXECUTABLE) from None
    except OSError as exc:
        err_console.print(f"[bold red]error:[/] cannot run {escape(command[0])}: {escape(exc.strerror or str(exc))}")
        raise typer.Exit(code=NOT_EXECUTABLE) from None
    code = done.returncode
    if code < 0:
        # Killed by a signal: a shell reports 128 + its number.
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        err_console.print(f"{shown} was stopped by {name}", markup=False, highlight=False)
        code = 128 - code
    emit(done.stdout, kind=kind, budget=budget, exit_code=code, save=save, as_json=as_json)
