"""Originals saved by ``compress --save DIR``, and ``contextwright show-artifact`` to read them back.

A saved original is a plain file named by the SHA-256 of its bytes, so a shell user
can follow the pointer a compressed output names with ``cat``, ``sed -n`` or this
command, which also takes a hash prefix and a line range.
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

import typer

from contextwright.cli._common import friendly_errors
from contextwright.errors import UsageError

_MIN_PREFIX = 8
_HEX = re.compile(r"^[0-9a-f]+$")
_RANGE = re.compile(r"^(?P<first>\d*):(?P<last>\d*)$|^(?P<only>\d+)$")


def save_original(directory: Path, data: bytes) -> Path:
    """Store ``data`` under ``directory/<sha256 hex>`` (once) and return its path."""
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"--save needs a directory, and {directory} is a file", path=str(directory))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / hashlib.sha256(data).hexdigest()
    if not path.exists():
        # Write beside it and rename, so a reader never sees half a file.
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(data)
        partial.replace(path)
    return path


def find_original(directory: Path, ref: str) -> Path:
    """The saved original that ``ref`` names: a path, ``sha256:<hex>``, a hex digest or a unique prefix of one."""
    as_path = Path(ref)
    if as_path.is_file() and as_path.parent.resolve() == directory.resolve():
        return as_path
    if not directory.is_dir():
        raise UsageError(f"no such directory: {directory}", path=str(directory))
    digest = as_path.name.removeprefix("sha256:").lower()
    if not _HEX.match(digest) or not _MIN_PREFIX <= len(digest) <= 64:
        raise UsageError(
            f"{ref!r} is not a saved output's hash: give 'sha256:<hex>', the hex digest or at least {_MIN_PREFIX} of its first digits",
            ref=ref,
        )
    matches = sorted(p for p in directory.iterdir() if p.name.startswith(digest) and len(p.name) == 64 and _HEX.match(p.name))
    if not matches:
        raise UsageError(f"no saved output {digest} in {directory}", ref=ref)
    if len(matches) > 1:
        raise UsageError(f"{digest} matches {len(matches)} saved outputs in {directory}; give more digits", ref=ref)
    return matches[0]


def _line_range(spec: str, total: int) -> tuple[int, int]:
    match = _RANGE.match(spec.strip())
    if match is None:
        raise UsageError(f"--lines takes A:B, A:, :B or N (1-based, inclusive), not {spec!r}", lines=spec)
    if match["only"]:
        first = last = int(match["only"])
    else:
        first = int(match["first"]) if match["first"] else 1
        last = int(match["last"]) if match["last"] else total
    if first < 1 or last < first:
        raise UsageError(f"--lines {spec!r} is empty: lines are numbered from 1 and A must not exceed B", lines=spec)
    if first > total:
        raise UsageError(f"--lines {spec!r} starts after the last line ({total:,} lines saved)", lines=spec)
    return first, min(last, total)


def show_artifact(
    directory: Path = typer.Argument(..., help="The directory given to 'compress --save'."),
    ref: str = typer.Argument(..., help="The pointer: its path, 'sha256:<hex>', the hex digest or a unique prefix (8+ digits)."),
    lines: str | None = typer.Option(
        None,
        "--lines",
        "-l",
        help="Only these lines, 1-based and inclusive: A:B, A:, :B or N (the numbers omission markers give).",
    ),
    numbered: bool = typer.Option(False, "--numbered", "-n", help="Prefix every line with its number."),
) -> None:
    """Print an original saved by 'compress --save', whole or by line range.

    Example: contextwright show-artifact .cw-outputs 3f9a1c2b --lines 120:180
    """
    with friendly_errors():
        path = find_original(directory, ref)
        data = path.read_bytes()
        if lines is None and not numbered:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
            return
        text = data.decode("utf-8", errors="replace")
        rows = text.split("\n")
        if rows and rows[-1] == "":
            rows.pop()
        first, last = _line_range(lines, len(rows)) if lines is not None else (1, len(rows))
    width = len(str(last))
    out = [f"{n:>{width}}  {rows[n - 1]}" if numbered else rows[n - 1] for n in range(first, last + 1)]
    sys.stdout.write("\n".join(out) + "\n")
