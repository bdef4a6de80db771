"""``contextwright why``: where a text entered the log and what became of it by request N."""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.table import Table

from contextwright.cli._common import console, friendly_errors
from contextwright.cli._store import STORE_HELP, open_existing
from contextwright.errors import UsageError
from contextwright.runtime.engine import Engine
from contextwright.runtime.reopen import reopen
from contextwright.telemetry.why import Explainer, Step, Why, artifact_reader


def why(
    store: str = typer.Argument(..., help=STORE_HELP),
    text: str = typer.Argument(..., help="The text to look for (compared with whitespace folded)."),
    session: str = typer.Option(..., "--session", "-s", help="The session id."),
    request: int | None = typer.Option(
        None, "--request", "-r", min=0, help="The request to explain; without it, the last one recorded."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the answer as JSON."),
) -> None:
    """Where TEXT entered the session's log and what became of it by request N: shown, compressed, bounded, pruned, compacted, read back.

    The answer comes from the log alone and names the step that hid the text and the pointer to its original,
    for example: contextwright why agent.db "KeyError: 'total'" --session s1 --request 28
    """
    with friendly_errors(), open_existing(store) as log:
        reopened = reopen(Engine(log), session)
        answer = explain(reopened, text, request, read=artifact_reader(log))
    if as_json:
        typer.echo(json.dumps(answer.to_dict(), indent=2, ensure_ascii=False))
        return
    print_why(answer)


def explain(session: Any, text: str, index: int | None, *, read: Any) -> Why:
    """The answer for ``text`` in request ``index`` of ``session`` (the last request when None)."""
    count = session.history.requests_built
    if index is not None and index >= count:
        raise UsageError(f"session {session.id!r} has {count} recorded requests; there is no request {index}")
    if index is None and count:
        index = count - 1
    neutral = session.inspect(index) if index is not None else None
    try:
        return Explainer(session.history.events, read_artifact=read).why(text, request_index=index, request=neutral)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


_STEPS_SHOWN = 12
"""The most steps the table shows: the first, then the latest."""
_FATE_STYLE = {"shown": "green", "read_back": "green", "summary": "yellow", "not_entered": "cyan", "not_in_log": "cyan"}


def print_why(answer: Why) -> None:
    """The answer: one sentence, then the steps as a table, then what is left and the pointer."""
    style = _FATE_STYLE.get(answer.fate, "red")
    console.print(f"[{style}]{answer.fate.replace('_', ' ')}[/]: ", end="")
    console.print(answer.summary, markup=False, highlight=False, soft_wrap=True)
    if answer.steps or answer.later:
        table = Table("seq", "step", "what happened", "pointer", title="From the log")
        steps: list[Step | None] = list(answer.steps)
        if len(steps) > _STEPS_SHOWN:
            # A common text has a long history: its first step and its latest ones say what happened.
            steps = [steps[0], None, *steps[-(_STEPS_SHOWN - 1) :]]
        for step in steps:
            if step is None:
                skipped = len(answer.steps) - _STEPS_SHOWN
                table.add_row("…", "", f"{skipped} more step(s) (--json lists them all)", "", style="dim")
                continue
            mark = " ◀" if answer.hidden_by is not None and step == answer.hidden_by else ""
            table.add_row(str(step.seq), step.what + mark, step.detail, step.pointer or "")
        for step in answer.later:
            table.add_row(str(step.seq), f"{step.what} (after)", step.detail, step.pointer or "", style="dim")
        console.print(table)
    for where in answer.shown_in:
        console.print(f"  shown in {where}", markup=False, highlight=False, soft_wrap=True)
    for line in answer.left:
        console.print(f"  left of it: {line}", markup=False, highlight=False, soft_wrap=True)
    if answer.pointer:
        console.print(f"  the original: {answer.pointer}", markup=False, highlight=False, soft_wrap=True)
