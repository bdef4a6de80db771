"""OpenAI chat-format logs.

Accepted shapes:

* a JSON list of messages, or one object with a ``messages`` list (and optionally
  ``tools`` and an ``id``/``session_id``): one session;
* a JSON list of such objects: one session each;
* JSONL with one message per line: one session;
* JSONL with one ``{"messages": [...]}`` object per line (fine-tuning style): one
  session per line.

Leading ``system``/``developer`` messages become :attr:`Transcript.system`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from contextwright.importers._common import (
    PathLike,
    Reader,
    build_transcript,
    entries,
    iter_jsonl,
    read_text,
)
from contextwright.importers._openai import map_chat_messages
from contextwright.importers.model import Transcript

FORMAT = "openai-chat"


def looks_like(document: object) -> bool:
    """True for a message list, a conversation object, or a list of conversations."""
    if isinstance(document, dict):
        return isinstance(document.get("messages"), list) or "role" in document
    if isinstance(document, list) and document:
        first = document[0]
        return isinstance(first, dict) and ("role" in first or isinstance(first.get("messages"), list))
    return False


def parse(path: PathLike, *, lenient: bool = False) -> list[Transcript]:
    """Read an OpenAI chat-format file (JSON or JSONL)."""
    reader = Reader(path=str(path), lenient=lenient)
    text = read_text(path)
    stem = Path(path).stem
    try:
        document: Any = json.loads(text)
    except RecursionError:
        raise reader.fail("JSON nested too deep to read") from None
    except json.JSONDecodeError:
        return _parse_jsonl(reader, text, stem)
    if isinstance(document, dict) and "role" in document:
        document = [document]  # a one-line JSONL file parses as a single message
    if isinstance(document, list) and document and all(_is_conversation(d) for d in document):
        return [
            _conversation(reader, item, f"{stem}:{index}", where=f"[{index - 1}].messages")
            for index, item in enumerate(document, start=1)
        ]
    if isinstance(document, list):
        system, messages = map_chat_messages(reader, document, where="")
        return [_transcript(reader, stem, system, messages, tools=())]
    if _is_conversation(document):
        return [_conversation(reader, document, stem, where="messages")]
    raise reader.fail("not OpenAI chat format: expected a list of messages or an object with 'messages'")


def _is_conversation(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("messages"), list)


def _parse_jsonl(reader: Reader, text: str, stem: str) -> list[Transcript]:
    rows = list(iter_jsonl(reader, text))
    if rows and all(_is_conversation(value) for _, value in rows):
        transcripts = [_conversation(reader, value, f"{stem}:{line}", where="messages", line=line) for line, value in rows]
        # Unparseable lines belong to no session; report them with the first one.
        if reader.skipped:
            transcripts[0] = replace(transcripts[0], skipped=transcripts[0].skipped + reader.skipped)
        return transcripts
    lines = [line for line, _ in rows]
    system, messages = map_chat_messages(reader, [value for _, value in rows], lines=lines, where="line")
    return [_transcript(reader, stem, system, messages, tools=())]


def _conversation(
    reader: Reader,
    document: dict[str, Any],
    default_id: str,
    *,
    where: str,
    line: int | None = None,
) -> Transcript:
    raw = document["messages"]
    lines = [line] * len(raw) if line is not None else None
    # Each session counts its own skipped records.
    reader = Reader(path=reader.path, lenient=reader.lenient)
    system, messages = map_chat_messages(reader, raw, lines=lines, where=where)
    session = document.get("session_id") or document.get("id")
    tools = [tool for tool in entries(document.get("tools"), where="tools") if isinstance(tool, dict)]
    return _transcript(reader, session if isinstance(session, str) else default_id, system, messages, tools=tools)


def _transcript(reader: Reader, session_id: str, system: str | None, messages: list[Any], *, tools: Any) -> Transcript:
    return build_transcript(reader, format=FORMAT, session_id=session_id, messages=messages, system=system, tools=tools)
