"""What the fuzz suite feeds: one function per door, each raising only Contextwright's typed errors.

Shared by the hypothesis suite (tests/fuzz), the regression corpus (tests/fuzz/corpus) and
the longer atheris run (bench/fuzz_atheris.py).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from contextwright.assembly.envelope import contains_tag, escape, unescape
from contextwright.errors import ContextwrightError
from contextwright.events.registry import decode_payload, known_types
from contextwright.importers import FORMATS, load_transcripts
from contextwright.log import InMemoryEventLog
from contextwright.log.base import EventLog


def payload_decoder(type_name: str, data: Any) -> None:
    """Decode raw JSON as a payload: a typed payload or a typed error."""
    try:
        decode_payload(type_name, data)
    except ContextwrightError:
        pass


def log_append(log: EventLog, session_id: str, type_name: str, data: Any, key: Any = None) -> None:
    """Append one raw event: stored and read back unchanged, or refused with nothing written."""
    from contextwright.events import NewEvent

    before = log.read(session_id) if _valid_session(session_id) else None
    try:
        stored = log.append(
            session_id, [NewEvent(type=type_name, payload=data, idempotency_key=key)], expected_seq=len(before or [])
        )
    except ContextwrightError:
        if before is not None:
            assert log.read(session_id) == before, "a refused append changed the log"
        return
    assert log.read(session_id)[-1] == stored[-1]


def importer(content: bytes, suffix: str) -> None:
    """Load a file in every format and auto-detected: transcripts or a typed error, never a crash."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"input{suffix}"
        path.write_bytes(content)
        for fmt in ("auto", *FORMATS):
            for lenient in (False, True):
                try:
                    load_transcripts([path], format=fmt, lenient=lenient)
                except ContextwrightError:
                    pass


def envelope_escape(text: str) -> None:
    """Escaped text round-trips and holds no tag."""
    escaped = escape(text)
    assert unescape(escaped) == text
    assert not contains_tag(escaped)


def _valid_session(session_id: str) -> bool:
    return bool(session_id) and session_id.isprintable() and session_id == session_id.strip() and len(session_id) <= 200


TYPES = known_types()


def new_log() -> InMemoryEventLog:
    """A fresh in-memory log (the contract makes every backend refuse the same inputs)."""
    return InMemoryEventLog()


def dumps(value: Any) -> bytes:
    """JSON bytes as a careless writer would produce them (surrogates escaped, not refused)."""
    return json.dumps(value, ensure_ascii=True).encode("ascii")
