"""Aider chat history (``.aider.chat.history.md``), best effort.

Each ``# aider chat started at <time>`` line opens a session; a file with several yields
several transcripts (ids ``<stem>:<n>``; a single session keeps the plain stem). In a
session, consecutive ``#### `` lines form one user message (a line per line typed);
everything up to the next user message is the assistant turn, Aider's own ``> `` output
(commands run, edits applied, lint and test results) included as text. Output before
the first user message (the start-up banner) becomes a ``meta`` user message, and so do
Aider commands (``/add``, ``/run``, ...), which are addressed to Aider, not the model.
The model named in the banner (``> Model:`` or ``> Models:``) is set on the assistant
messages. The start time is local and has no zone, so messages carry no ``at``.
"""

from __future__ import annotations

import re
from pathlib import Path

from contextwright.importers._common import PathLike, Reader, build_transcript, read_text
from contextwright.importers._markdown import trim_block
from contextwright.importers.model import Transcript, TranscriptMessage

FORMAT = "aider-chat-md"

_START = re.compile(r"^# aider chat started at \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\s*$")
_MODEL = re.compile(r"^> Models?: (?P<model>\S+)")


def looks_like(text: str) -> bool:
    """True when a line opens an Aider session."""
    return any(_START.match(line) for line in text.splitlines())


def parse(path: PathLike, *, lenient: bool = False) -> list[Transcript]:
    """Read an Aider chat history file (one transcript per session in it)."""
    reader = Reader(path=str(path), lenient=lenient)
    lines = read_text(path).splitlines()
    starts = [number for number, line in enumerate(lines) if _START.match(line)]
    if not starts or any(line.strip() for line in lines[: starts[0]]):
        starts.insert(0, 0)  # text before any header is a session of its own
    bounds = list(zip(starts, [*starts[1:], len(lines)]))
    stem = Path(path).stem
    return [
        build_transcript(
            reader,
            format=FORMAT,
            session_id=stem if len(bounds) == 1 else f"{stem}:{index}",
            messages=_session(lines, begin, end),
        )
        for index, (begin, end) in enumerate(bounds, start=1)
    ]


def _session(lines: list[str], begin: int, end: int) -> list[TranscriptMessage]:
    body_start = begin + 1 if begin < len(lines) and _START.match(lines[begin]) else begin
    model = next((m["model"] for line in lines[body_start:end] if (m := _MODEL.match(line))), None)
    messages: list[TranscriptMessage] = []
    block: list[str] = []
    block_start = body_start + 1
    in_user = False

    def flush() -> None:
        if in_user:
            text = trim_block(block)
            messages.append(TranscriptMessage(role="user", text=text, source_line=block_start, meta=text.startswith("/")))
            return
        text = trim_block(block)
        if not text:
            return
        if any(m.role == "user" for m in messages):
            messages.append(TranscriptMessage(role="assistant", text=text, model=model, source_line=block_start))
        else:
            messages.append(TranscriptMessage(role="user", text=text, source_line=block_start, meta=True))

    for number in range(body_start, end):
        line = lines[number]
        is_user = line.startswith("#### ") or line.rstrip() == "####"
        if is_user != in_user:
            flush()
            block, block_start, in_user = [], number + 1, is_user
        # Aider ends each line with a markdown hard break ("  "); it is not content.
        block.append(line[5:].rstrip() if is_user else line)
    flush()
    return messages
