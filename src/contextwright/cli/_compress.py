"""``contextwright compress``: the tool-output compressors for anyone's shell."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Literal

import typer

from contextwright.cli._artifacts import save_original
from contextwright.cli._common import err_console, friendly_errors
from contextwright.errors import UsageError
from contextwright.tool_outputs.compressors import KIND_ALIASES, KINDS, calibrated_token_count
from contextwright.tool_outputs.compressors import compress as compress_text
from contextwright.tool_outputs.compressors.binary import escape_controls, sniff_binary
from contextwright.tool_outputs.compressors.pipeline import AUTO_MAX_TOKENS, AUTO_MIN_TOKENS, AUTO_SHARE, NOISY_KINDS

SAVE_ENV = "CONTEXTWRIGHT_SAVE_DIR"
"""Environment variable that sets ``--save`` for every run."""
DEFAULT_BUDGET = "keep"
"""``--budget`` when not given: keep the content, drop only what carries none and the noise of noisy kinds."""

_BUDGET_HELP = (
    "What may go. 'keep' (the default) keeps the content: colour codes, carriage-return redraws, trailing "
    "blanks and runs of one repeated line (folded into a counted marker) go, and so does the noise of the "
    f"kinds that print it ({', '.join(sorted(NOISY_KINDS))}: passing tests, download progress, build "
    "chatter); a listing, a search, a diff or a JSON answer comes back whole. A number asks for a lossy cut "
    f"to about that many tokens; 'auto' for one to {AUTO_SHARE:.0%} of the input ({AUTO_MIN_TOKENS} to "
    f"{AUTO_MAX_TOKENS} tokens). Tokens are the engine's calibrated estimate for o200k models (GPT-4o and "
    "newer), which errs high, not characters/4. Failure, warning, location and total lines are kept at "
    "every setting."
)


def _budget(value: str) -> int | Literal["auto", "keep"]:
    spelled = value.strip().lower()
    if spelled in ("auto", "keep"):
        return "auto" if spelled == "auto" else "keep"
    if spelled in ("none", "0"):
        return "keep"  # the old spelling of "drop noise only"
    if spelled.isdigit():
        return int(spelled)
    raise UsageError(f"--budget takes 'keep', 'auto' or a number of tokens, not {value!r}", budget=value)


def _pointer(path: Path) -> str:
    # The marker names the saved file itself when its path has no spaces, so `cat` follows it.
    shown = str(path)
    return shown if not any(c.isspace() for c in shown) else f"sha256:{path.name}"


# Shared with 'contextwright run', which compresses the same way.
KIND_OPTION = typer.Option(
    "auto", "--kind", "-k", help=f"auto, or one of: {', '.join(KINDS)} (aliases: {', '.join(sorted(KIND_ALIASES))})."
)
BUDGET_OPTION = typer.Option(DEFAULT_BUDGET, "--budget", "-b", help=_BUDGET_HELP)


def compress(
    file: Path | None = typer.Argument(None, help="A file with the output; standard input when omitted or '-'."),
    kind: str = KIND_OPTION,
    budget: str = BUDGET_OPTION,
    exit_code: int | None = typer.Option(
        None,
        "--exit-code",
        help="The command's exit status; non-zero keeps its last lines, marks the run failed, and is this "
        "command's own exit status too (1 when it is outside 1-255), so a failure stays visible to the caller.",
    ),
    save: Path | None = typer.Option(
        None,
        "--save",
        "-s",
        envvar=SAVE_ENV,
        help="Keep the original in this directory, named by its SHA-256; omission markers then name the file "
        "(read it back with 'contextwright show-artifact DIR HASH --lines A:B').",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON: the text, the kind detected, sizes before and after, and the pointer."
    ),
) -> None:
    """Compress a command's output for an LLM: noise out, every failure line kept.

    With no options nothing of the content is lost (--budget N asks for a cut to a size); binary input is described, not printed.

    Example: pytest -x > out.txt 2>&1; contextwright compress out.txt --exit-code $?
    (exits with pytest's status, so `&&` and CI steps still see the failure). In a pipe, $? is the
    status of the command before the pipe, not pytest's: use `contextwright run -- pytest -x` instead.
    """
    with friendly_errors():
        _budget(budget)  # a bad --budget fails before the input is read
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
    emit(raw, kind=kind, budget=budget, exit_code=exit_code, save=save, as_json=as_json)


def emit(raw: bytes, *, kind: str, budget: str, exit_code: int | None, save: Path | None, as_json: bool) -> None:
    """Compress ``raw`` (a command's output), print it, and exit with ``exit_code`` when it is not 0."""
    with friendly_errors():
        aim = _budget(budget)
        digest = "sha256:" + hashlib.sha256(raw).hexdigest()
        pointer = _pointer(save_original(save, raw)) if save is not None else None
        binary = sniff_binary(raw)
        if binary is not None:
            _print(as_json, binary.describe(pointer), kind="binary", raw=raw, digest=digest, pointer=pointer)
            _pass_on(exit_code)
            return
        # A few NULs or stray controls leave text text; shown escaped, not sent to the terminal.
        text = escape_controls(raw.decode("utf-8", errors="replace"))
        result = compress_text(
            text,
            kind=kind,
            budget_tokens=None if aim == "keep" else aim,
            keep_content=aim == "keep",
            exit_code=exit_code,
            pointer=pointer,
            count_tokens=calibrated_token_count,
        )
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
                    "budget_tokens": result.budget_tokens,
                    "failed": result.failed,
                    "kept_must_lines": result.kept_must_lines,
                    "omitted_lines": [list(r) for r in result.omitted],
                    "pointer": digest,
                    "saved": pointer,
                },
                indent=2,
                ensure_ascii=False,
            )
        )
    else:
        sys.stdout.write(result.text if result.text.endswith("\n") or not result.text else result.text + "\n")
    _pass_on(exit_code)


def _pass_on(exit_code: int | None) -> None:
    # `cmd > out.txt; contextwright compress out.txt --exit-code $?` stands in for the command,
    # so it fails when the command did. A status the shell cannot carry (256 would read as 0)
    # becomes 1.
    if exit_code:
        raise typer.Exit(code=exit_code if 1 <= exit_code <= 255 else 1)


def _print(as_json: bool, text: str, *, kind: str, raw: bytes, digest: str, pointer: str | None) -> None:
    if not as_json:
        sys.stdout.write(text + "\n")
        return
    typer.echo(
        json.dumps(
            {"kind": kind, "text": text, "bytes_before": len(raw), "pointer": digest, "saved": pointer},
            indent=2,
            ensure_ascii=False,
        )
    )
