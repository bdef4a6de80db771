"""``contextwright compress``: the tool-output compressors for anyone's shell."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from contextwright.canonical import sha256_tagged
from contextwright.cli._common import err_console, friendly_errors
from contextwright.pressure.compressors import KIND_ALIASES, KINDS
from contextwright.pressure.compressors import compress as compress_text


def compress(
    file: Path | None = typer.Argument(None, help="A file with the output; standard input when omitted or '-'."),
    kind: str = typer.Option(
        "auto", "--kind", "-k", help=f"auto, or one of: {', '.join(KINDS)} (aliases: {', '.join(sorted(KIND_ALIASES))})."
    ),
    budget: int | None = typer.Option(
        None, "--budget", "-b", min=1, help="Aim for this many tokens (failure lines are kept whatever it costs)."
    ),
    exit_code: int | None = typer.Option(
        None, "--exit-code", help="The command's exit status; non-zero keeps failure lines verbatim."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON: the text, the kind detected, sizes before and after, and the pointer."
    ),
) -> None:
    """Compress a command's output for an LLM: noise out, every failure line kept.

    Example: pytest -x 2>&1 | contextwright compress --exit-code $?
    """
    with friendly_errors():
        if file is None or str(file) == "-":
            raw = sys.stdin.buffer.read()
        else:
            if not file.exists():
                err_console.print(f"[bold red]error:[/] no such file: {file}")
                raise typer.Exit(code=1)
            if file.is_dir():
                err_console.print(f"[bold red]error:[/] {file} is a directory; give a file, or pipe the output in")
                raise typer.Exit(code=1)
            raw = file.read_bytes()
        text = raw.decode("utf-8", errors="replace")
        pointer = sha256_tagged(text)
        result = compress_text(text, kind=kind, budget_tokens=budget, exit_code=exit_code, pointer=pointer)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "kind": result.kind,
                    "text": result.text,
                    "chars_before": result.original_chars,
                    "chars_after": result.compressed_chars,
                    "tokens_before": result.original_tokens,
                    "tokens_after": result.compressed_tokens,
                    "failed": result.failed,
                    "kept_must_lines": result.kept_must_lines,
                    "omitted_lines": [list(r) for r in result.omitted],
                    "pointer": pointer,
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return
    sys.stdout.write(result.text if result.text.endswith("\n") or not result.text else result.text + "\n")
