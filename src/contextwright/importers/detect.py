"""Pick the importer for a file, by extension and content, and load transcripts with it.

Detection order: ``.traj`` is SWE-agent; ``.md`` is SpecStory or Aider by their
markers; anything else is sniffed. A JSON document is matched by shape (a recorded
completion call, a trajectory, an OpenHands event stream, then OpenAI chat messages);
JSONL is matched by its first records (Claude Code record types, chat messages,
OpenHands evaluation records). Markdown content is recognised under any extension.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from itertools import islice
from pathlib import Path
from typing import Any

from contextwright.importers import (
    _aider_chat,
    _claude_code,
    _cursor_specstory,
    _openai_chat,
    _openhands_completions,
    _openhands_events,
    _swe_agent,
)
from contextwright.importers._common import PathLike, read_text
from contextwright.importers.errors import TranscriptError
from contextwright.importers.model import Transcript

_PARSERS: dict[str, Callable[..., list[Transcript]]] = {
    _claude_code.FORMAT: _claude_code.parse,
    _openhands_completions.FORMAT: _openhands_completions.parse,
    _openhands_events.FORMAT: _openhands_events.parse,
    _swe_agent.FORMAT: _swe_agent.parse,
    _openai_chat.FORMAT: _openai_chat.parse,
    _cursor_specstory.FORMAT: _cursor_specstory.parse,
    _aider_chat.FORMAT: _aider_chat.parse,
}

FORMATS: tuple[str, ...] = tuple(sorted(_PARSERS))
"""Every format name :func:`load_transcript` accepts (besides ``"auto"``)."""

# Claude Code record types seen in the first lines of a session file.
_CLAUDE_RECORD_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "summary",
        "file-history-snapshot",
        "queue-operation",
        "progress",
    }
)
_SNIFF_LINES = 20


def detect_format(path: PathLike) -> str:
    """Return the format name of a transcript file, or raise TranscriptError."""
    text = read_text(path)
    suffix = Path(path).suffix.lower()
    if suffix == ".traj":
        return _swe_agent.FORMAT
    found = _sniff(text)
    if found is None:
        raise TranscriptError(str(path), f"cannot tell the transcript format; known formats: {', '.join(FORMATS)}")
    return found


def _sniff(text: str) -> str | None:
    if text.lstrip().startswith(("{", "[")):
        try:
            document: Any = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            return _sniff_jsonl(text)
        # A one-line JSONL file is also a JSON document; judge it as a record too.
        return _sniff_document(document) or _sniff_jsonl(text)
    if _cursor_specstory.looks_like(text):
        return _cursor_specstory.FORMAT
    if _aider_chat.looks_like(text):
        return _aider_chat.FORMAT
    return None


def _sniff_document(document: Any) -> str | None:
    # Most specific shapes first: a completion call also has chat "messages".
    if _openhands_completions.looks_like(document):
        return _openhands_completions.FORMAT
    if _swe_agent.looks_like(document):
        return _swe_agent.FORMAT
    if _openhands_events.looks_like(document):
        return _openhands_events.FORMAT
    if _openai_chat.looks_like(document):
        return _openai_chat.FORMAT
    return None


def _sniff_jsonl(text: str) -> str | None:
    records = []
    for line in islice((line for line in text.splitlines() if line.strip()), _SNIFF_LINES):
        try:
            value = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue  # the importer reports bad lines with their numbers
        if isinstance(value, dict):
            records.append(value)
    for record in records:
        if record.get("type") in _CLAUDE_RECORD_TYPES and ("uuid" in record or "sessionId" in record or "leafUuid" in record):
            return _claude_code.FORMAT
        if "role" in record or isinstance(record.get("messages"), list):
            return _openai_chat.FORMAT
        if _openhands_events.looks_like(record):
            return _openhands_events.FORMAT
    return None


def load_transcripts(
    paths: Iterable[PathLike] | PathLike, *, format: str = "auto", lenient: bool = False, strict: bool = False
) -> list[Transcript]:
    """Load every session in the given files, in order (a file may hold several).

    ``format="auto"`` detects each file's format; ``lenient=True`` skips malformed or
    unknown records and counts them in :attr:`Transcript.skipped` instead of raising.
    Content blocks of unknown types are carried as opaque parts
    (:attr:`Transcript.unsupported_blocks`); ``strict=True`` fails on them instead.
    """
    if isinstance(paths, str | Path):
        paths = [paths]
    transcripts: list[Transcript] = []
    for path in paths:
        if format != "auto" and format not in _PARSERS:
            raise TranscriptError(str(path), f"unknown format {format!r}; known formats: {', '.join(FORMATS)}")
        chosen = detect_format(path) if format == "auto" else format
        options = {"strict": strict} if chosen == _claude_code.FORMAT else {}
        transcripts.extend(_PARSERS[chosen](path, lenient=lenient, **options))
    return transcripts


def load_transcript(path: PathLike, *, format: str = "auto", lenient: bool = False, strict: bool = False) -> Transcript:
    """Load a file holding exactly one session (see :func:`load_transcripts`)."""
    transcripts = load_transcripts([path], format=format, lenient=lenient, strict=strict)
    if len(transcripts) != 1:
        raise TranscriptError(str(path), f"holds {len(transcripts)} sessions; use load_transcripts() to read them all")
    return transcripts[0]
